#!/usr/bin/env python3
"""The offline check of bitsandbytes' dequantize + F.linear path with F.linear's own launch
records (issue 33 item 2, issue 30; docs/SEMANTICS.md 7.17.4, 15.6):

    python3 bench/peers/qlora_linear_check.py --launch LAUNCHDIR --caps CAPDIR --exmy EXMY \\
        --out OUT [--tpython PY]

LAUNCHDIR: bench/peers/qlora_linear_launch_capture.py's output (launch.json, launch_bias.json,
cases.json). CAPDIR: a bench/peers/qlora_matmul_capture.py capture with outputs (e.g. last
session's /work/caps/qlora). Steps, all on the CPU:

1. OUT/profile.json: a copy of the compiled-in H100 profile's entries
   (golden/profiles/sm90/cublaslt-h100-gemm.json: the nearest-shape rule's shapes) with the
   capture's launch records merged in by tools/gemm_launch.py --from launch.json
   launch_bias.json --out OUT/profile.json (the user's route of SEMANTICS 15.6: a GPU's own
   records through $EXMY_GEMM_PROFILE).
2. bench/peers/qlora_matmul_vs_exmy.py --linear-only --profile OUT/profile.json on CAPDIR:
   every dequantize + F.linear output of the capture (Y on that path, Y_linear), differing
   elements per case, the model exmy applied and whether it called the shape verified
   (OUT/vs/summary.md, summary.json).
3. OUT/check.md: per case the launch the capture recorded for its GEMM (family, kernel, CTAs or
   split, reduction) beside the result, and the counts by kernel family.

Exit: the comparison's (0 all equal, 1 some differ, 2 error).
"""
import argparse
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gemm_launch as G  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launch", required=True, help="qlora_linear_launch_capture.py's --out")
    ap.add_argument("--caps", required=True, help="a qlora_matmul_capture.py capture")
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tpython", default=sys.executable, help="python with torch (CPU is enough)")
    ap.add_argument("--entries", default=os.path.join(ROOT, "golden", "profiles", "sm90",
                                                      "cublaslt-h100-gemm.json"))
    ap.add_argument("--only", default="", help="cases whose name holds this (qlora_matmul_vs_exmy)")
    ap.add_argument("--compiled-in", action="store_true",
                    help="skip step 1: exmy's compiled-in profile (records merged into "
                         "golden/profiles/sm90/cublaslt-h200-launch.json and exmy rebuilt)")
    return ap.parse_args()


def main():
    a = parse_args()
    os.makedirs(a.out, exist_ok=True)
    files = [os.path.join(a.launch, f) for f in ("launch.json", "launch_bias.json")]
    for f in files:
        if not os.path.exists(f):
            print("qlora_linear_check: %s: missing (run qlora_linear_launch_capture.py)" % f,
                  file=sys.stderr)
            return 2
    prof = os.path.join(a.out, "profile.json")
    if not a.compiled_in:
        ent = json.load(open(a.entries))
        tmp = prof + ".tmp"
        with open(tmp, "w") as f:
            json.dump({k: v for k, v in ent.items() if k != "launch"}, f, indent=1)
        os.replace(tmp, prof)
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gemm_launch.py"),
                            "--from", *files, "--out", prof,
                            "--source", "bench/peers/qlora_linear_launch_capture.py " + a.launch])
        if r.returncode != 0:
            return 2
    cmd = [a.tpython, os.path.join(HERE, "qlora_matmul_vs_exmy.py"), "--exmy", a.exmy, "--caps",
           a.caps, "--out", os.path.join(a.out, "vs"), "--linear-only"]
    if not a.compiled_in:
        cmd += ["--profile", prof]
    if a.only:
        cmd += ["--only", a.only]
    print(" ".join(cmd), flush=True)
    rc = subprocess.run(cmd).returncode
    if rc == 2:
        return 2
    rows = json.load(open(os.path.join(a.out, "vs", "summary.json")))["rows"]
    recs = {}
    for f in files:
        for k, ks in G.launches(G.open_capture(f)["types"]).items():
            recs[k] = G.record_of(ks)
    lines = ["# dequantize + F.linear with F.linear's launch records", "",
             "launch records: %s; capture: %s; exmy: %s%s" % (
                 a.launch, a.caps, a.exmy, " (compiled-in profile)" if a.compiled_in
                 else " with EXMY_GEMM_PROFILE=" + prof), "",
             "| case | M×N×K | record (family, kernel, S, reduce) | exmy's model | verified | "
             "differ / compared |", "|---|---|---|---|---|---|"]
    by = collections.defaultdict(lambda: [0, 0, 0, 0])  # cases, equal, differing elts, compared
    for r in rows:
        if "N" not in r:
            continue
        t = r["dtype"]
        key = (t, t + ("+bias" if r["bias"] else ""), r["M"], r["N"], r["K"])
        rec = recs.get(key)
        fam = rec[0] if rec else "no record"
        b = by[(fam, t, r["verified"])]
        b[0] += 1
        b[1] += r["status"].startswith("equal")
        b[2] += r.get("differ") or 0
        b[3] += r.get("compared") or 0
        lines.append("| %s | %d×%d×%d%s | %s | `%s` | %s | %s / %s |" % (
            r["case"], r["M"], r["N"], r["K"], " +bias" if r["bias"] else "",
            "%s %s S %s%s" % (rec[0], rec[1][:60], rec[3], " + " + rec[2] if rec[2] else "")
            if rec else "none", r["accum_model"], "yes" if r["verified"] else "no",
            r.get("differ"), r.get("compared")))
    lines += ["", "| family | dtype | exmy verified | cases | equal | differing / compared |",
              "|---|---|---|---|---|---|"]
    for (fam, t, v), (n, eq, d, c) in sorted(by.items(), key=str):
        lines.append("| %s | %s | %s | %d | %d | %d / %d |" % (fam, t, "yes" if v else "no", n, eq,
                                                               d, c))
    tmp = os.path.join(a.out, "check.md.tmp")
    open(tmp, "w").write("\n".join(lines) + "\n")
    os.replace(tmp, os.path.join(a.out, "check.md"))
    print("\n".join(lines[-(len(by) + 2):]))
    return rc


if __name__ == "__main__":
    sys.exit(main())
