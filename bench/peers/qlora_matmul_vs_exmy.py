#!/usr/bin/env python3
"""bitsandbytes' matmul_4bit (captured by bench/peers/qlora_matmul_capture.py) against
`exmy gemm --b-format nf4|fp4 --compat bnb-cuda` (docs/SEMANTICS.md 7.17), bit for bit.

    python3 bench/peers/qlora_matmul_vs_exmy.py --exmy build/cli/exmy --caps CAPDIR --out OUT
    python3 bench/peers/qlora_matmul_vs_exmy.py --exmy build/cli/exmy --fresh --seed S --out OUT
        [--quick] [--only SUBSTR] [--sms N --sm MAJMIN]

--caps: a capture directory (manifest.json, weights/, cases/). --fresh: run the capture now (needs
CUDA and bitsandbytes) into OUT/capture with the given seed, then compare. For every case exmy runs
with --path auto (bitsandbytes' dispatch as exmy models it for --sms/--sm, default H200: 132 SMs,
sm_90) and the path exmy took is checked against the kernels the profiler saw. Y_linear (F.linear
on bitsandbytes' own dequantized weight, M in 1, 8, 64) is checked against exmy's
--path dequant-linear (the dequantization and exmy's cuBLAS model). Cases whose path exmy does not
model (the MMA kernel) are counted, not compared.

Writes OUT/summary.md and OUT/summary.json: differing elements per case, counts by path and dtype;
exit 0 when every compared element is equal, 1 when one differs, 2 on a script error.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL_PATH = {"simt": "simt", "mma_sm80": "mma_sm80", "mma_sm75": "mma_sm75",
               "dequant+linear": "dequant_linear"}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--out", required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--caps")
    g.add_argument("--fresh", action="store_true")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--sms", default="132")
    ap.add_argument("--sm", default="90")
    return ap.parse_args()


def save(path, arr):
    np.save(path, np.ascontiguousarray(arr))
    return path


def weight_files(tmp, wname, wz):
    d = os.path.join(tmp, wname)
    os.makedirs(d, exist_ok=True)
    N, K = (int(v) for v in wz["shape"])
    args = ["--b", save(os.path.join(d, "q.npy"), wz["packed"].astype(np.uint8).reshape(-1)),
            "--b-format", str(wz["quant_type"]), "--b-shape", f"{N}x{K}",
            "--block", str(int(wz["blocksize"])),
            "--block-scale-b", save(os.path.join(d, "absmax.npy"), wz["absmax"].reshape(-1))]
    if "state2_absmax" in wz:
        args += ["--double-quant",
                 "--state2", save(os.path.join(d, "s2.npy"), wz["state2_absmax"].astype(np.float32)),
                 "--offset", save(os.path.join(d, "off.npy"), wz["offset"].astype(np.float32).reshape(1))]
    return args


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype.itemsize == 4 else np.uint16).reshape(-1)


def run_exmy(exmy, wargs, x, dtype, tmp, name, bias=None, path="auto", sm=("132", "90")):
    xp = save(os.path.join(tmp, name + "_x.npy"), x)
    yp = os.path.join(tmp, name + "_y.npy")
    cmd = [exmy, "gemm", "--a", xp, "--a-format", dtype, *wargs, "--compat", "bnb-cuda",
           "--out-format", dtype, "--out", yp, "--path", path, "--json", "--sms", sm[0], "--sm", sm[1]]
    if bias is not None:
        cmd += ["--bias", save(os.path.join(tmp, name + "_b.npy"), bias)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, None, (r.stderr.strip().splitlines() or ["?"])[-1]
    info = json.loads(r.stdout.strip().splitlines()[-1])
    return np.load(yp), info["path"], None


def main():
    a = parse_args()
    os.makedirs(a.out, exist_ok=True)
    caps = a.caps
    if a.fresh:
        caps = os.path.join(a.out, "capture")
        cmd = [sys.executable, os.path.join(HERE, "qlora_matmul_capture.py"), "--out", caps,
               "--seed", str(a.seed)] + (["--quick"] if a.quick else [])
        print(" ".join(cmd), flush=True)
        if subprocess.run(cmd).returncode != 0:
            print("qlora_matmul_vs_exmy: the capture failed", file=sys.stderr)
            return 2
    man = json.load(open(os.path.join(caps, "manifest.json")))
    if man.get("dry_run"):
        print("note: a --cpu-dry-run capture (no bitsandbytes output): plumbing only", flush=True)
    rows = []
    counts = collections.Counter()
    diff_counts = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        wargs = {}
        for c in man["cases"]:
            if a.only and a.only not in c["case"]:
                continue
            wn = c["weight"]
            if wn not in wargs:
                wargs[wn] = weight_files(tmp, wn, np.load(os.path.join(caps, "weights", wn + ".npz")))
            cz = np.load(os.path.join(caps, "cases", c["case"] + ".npz"))
            want_path = KERNEL_PATH.get(c["path"], c["path"])
            y, got_path, err = run_exmy(a.exmy, wargs[wn], cz["X"], c["dtype"], tmp, "c",
                                        cz["bias"] if "bias" in cz else None, sm=(a.sms, a.sm))
            row = {"case": c["case"], "dtype": c["dtype"], "M": c["M"], "lib_path": want_path,
                   "exmy_path": got_path, "error": err}
            key = (want_path, c["dtype"])
            if err is not None:
                row["status"] = "not-modelled" if "does not model" in err else "exmy-error"
            else:
                d = int(np.count_nonzero(bits(y) != bits(cz["Y"])))
                row.update(differ=d, elements=int(y.size),
                           status="equal" if d == 0 else "differs")
                if got_path != want_path and not man.get("dry_run"):
                    row["status"] += " (path mismatch)"
                diff_counts[key] += d
            counts[(key, row["status"])] += 1
            rows.append(row)
            if "Y_linear" in cz:
                yl, _, errl = run_exmy(a.exmy, wargs[wn], cz["X"], c["dtype"], tmp, "l",
                                       path="dequant-linear", sm=(a.sms, a.sm))
                r2 = {"case": c["case"] + " [F.linear on dequantize_4bit]", "dtype": c["dtype"],
                      "M": c["M"], "lib_path": "linear", "exmy_path": "dequant_linear", "error": errl}
                if errl is None:
                    d = int(np.count_nonzero(bits(yl) != bits(cz["Y_linear"])))
                    r2.update(differ=d, elements=int(yl.size), status="equal" if d == 0 else "differs")
                    diff_counts[("linear", c["dtype"])] += d
                else:
                    r2["status"] = "exmy-error"
                counts[(("linear", c["dtype"]), r2["status"])] += 1
                rows.append(r2)
            print(f"{row['case']}: {row['status']}"
                  + (f" {row.get('differ')}/{row.get('elements')}" if err is None else f" ({err})"),
                  flush=True)
    bad = [r for r in rows if r["status"] not in ("equal", "not-modelled")]
    lines = ["# bitsandbytes matmul_4bit vs exmy gemm --b-format nf4|fp4 --compat bnb-cuda", "",
             f"capture: {caps} (bitsandbytes {man.get('bitsandbytes', '-')}, torch {man['torch']}, "
             f"device {man.get('device', '-')}, seed {man['seed']})", "",
             "| path | dtype | status | cases | differing elements (all cases of the path/dtype) |",
             "|---|---|---|---|---|"]
    for ((p, dt), st), n in sorted(counts.items()):
        lines.append(f"| {p} | {dt} | {st} | {n} | {diff_counts[(p, dt)]} |")
    lines += ["", f"{len(rows)} comparisons, {len(bad)} not equal."]
    for r in bad[:40]:
        lines.append(f"- {r['case']}: {r['status']} {r.get('differ', '')}/{r.get('elements', '')} "
                     f"lib {r['lib_path']} exmy {r['exmy_path']} {r['error'] or ''}")
    tmpf = os.path.join(a.out, "summary.md.tmp")
    open(tmpf, "w").write("\n".join(lines) + "\n")
    os.replace(tmpf, os.path.join(a.out, "summary.md"))
    tmpf = os.path.join(a.out, "summary.json.tmp")
    json.dump({"rows": rows}, open(tmpf, "w"), indent=1)
    os.replace(tmpf, os.path.join(a.out, "summary.json"))
    print("\n".join(lines[4:]), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
