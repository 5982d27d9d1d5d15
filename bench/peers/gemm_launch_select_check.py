"""Check `exmy gemm --accum cublas-sm90` with the launch records against random-shape cuBLAS
captures (issue 30; docs/SEMANTICS.md 15.6). Off the GPU:

    python3 bench/peers/gemm_launch_select_check.py EXMY --captures DIR1,DIR2 --out CHECK.json \
        [--types fp32,tf32,bf16,fp16] [--full-products 2e6] [--check-products 2e6] [--jobs 2]

Per captured shape and output type (the captures of gemm_kernel_select_capture.py; the launch
records compiled into EXMY came from the same GPU and library):
- after: the model `--accum cublas-sm90` applies (launch_model below, a replica of
  accum_model.cpp's selection) and whether it is announced; on every shape up to
  --full-products products, `exmy gemm --accum cublas-sm90` itself runs too and must give the
  same outputs and print a line on stderr exactly when announced (`replica_agrees`);
- before: the model the profile without launch records (golden/profiles/sm90/
  cublaslt-h100-gemm.json) gives: the shape's verified entry, or the nearest-shape rule;
- rule: where the shape has a launch record with a family rule (verified or not), that rule's
  model (the evidence for the rule table of sim/gemm/launch_rules.cpp).
Models run explicitly on the first rows of A (all rows up to --check-products products). Summaries per type and output: shapes, clean shapes, silent and
announced shapes with their mismatching outputs (a silent shape must never mismatch).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gemm_kernel_select_fit as fit  # noqa: E402
import gemm_kernel_select_merge as merge  # noqa: E402
import gemm_launch  # noqa: E402
import gemm_launch_rules as rules  # noqa: E402

ALL_TYPES = ["bf16", "fp16", "tf32", "fp32", "e4m3fn"]


def family_rule(rec, t, o, K, verified_table, M=0, N=0):
    """Replica of sim/gemm/launch_rules.cpp (gemm_launch_rules.py): (model, verified) or None;
    verified as --verified says."""
    r = rules.family_rule(rec, t, o, K, M, N)
    if r is None:
        return None
    return r[0], verified_table.get((rec[0], t, o), False)


def launch_model(args, t, o, M, N, K):
    """Replica of model_for_shape (accum_model.cpp): (model, silent, rule, launch record)."""
    rec = args.launch.get((t, o, M, N, K))
    rule = family_rule(rec, t, o, K, args.verified, M, N) if rec else None
    if rule and rule[1]:
        return rule[0], True, rule, rec
    ent = [e for e in args.entries if e["type"] == t and (e["M"], e["N"], e["K"]) == (M, N, K)
           and isinstance(e.get("model"), str)]
    if ent:
        return ent[0]["model"], True, rule, rec
    if rule:
        return rule[0], False, rule, rec
    return before_model(args, t, M, N, K), False, rule, rec


def before_model(args, t, M, N, K):
    b = merge.nearest(args.entries, t, M, N, K, True, None)
    if b is None:
        b = merge.nearest(args.entries, t, M, N, K, False, None)
    return b["model"]


def run(args, tmp, t, a, b, accum, o, env=None):
    pa, pb, pc = (os.path.join(tmp, n) for n in ("a.npy", "b.npy", "c.npy"))
    np.save(pa, a)
    np.save(pb, b)
    # An explicit CUDA-core model of a TF32 request reads the fp32 values unrounded (as the
    # preset does when a launch rule or a profile entry names fp32-seq).
    fmt = "fp32" if t == "tf32" and accum.startswith("fp32-seq") else t
    r = subprocess.run([args.exmy, "gemm", "--a", pa, "--b", pb, "--out", pc, "--a-format", fmt,
                        "--b-format", fmt, "--out-format", o, "--accum", accum],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    c = np.load(pc)
    got = c.view(np.uint32).ravel() if c.dtype == np.float32 else c.astype(np.uint32).ravel()
    return got, [x for x in r.stderr.splitlines() if x.strip()]


def check_shape(args, t, ti, seed, e, want):
    M, N, K = e["M"], e["N"], e["K"]
    a, b = fit.inputs(t, seed, ti, e["i"], M, N, K)
    codes = a.view(np.uint32) if a.dtype == np.float32 else a
    res = {"i": e["i"], "M": M, "N": N, "K": K, "outs": {}}
    if int(codes.astype(np.int64).sum()) != e["sum_a"]:
        res["error"] = "input checksum differs"
        return res
    full = M * N * K <= args.full_products
    rows = max(1, min(M, int(args.check_products // max(1, N * K))))
    with tempfile.TemporaryDirectory() as tmp:
        for o, w in want.items():
            w = w.reshape(M, N)[:rows].ravel()
            model, silent, rule, rec = launch_model(args, t, o, M, N, K)
            bm = [x for x in args.entries if x["type"] == t and
                  (x["M"], x["N"], x["K"]) == (M, N, K) and isinstance(x.get("model"), str)]
            bmodel = bm[0]["model"] if bm else before_model(args, t, M, N, K)
            r = {"outputs": int(w.size), "full": full, "model": model, "before_model": bmodel,
                 "record": list(rec) if rec else None, "announced": not silent,
                 "before_announced": not bm}
            try:
                mism = {}
                for m in dict.fromkeys([model, bmodel] + ([rule[0]] if rule else [])):
                    got, _ = run(args, tmp, t, a[:rows], b, m, o)
                    mism[m] = got
                r["after"] = int((mism[model] != w).sum())
                r["before"] = int((mism[bmodel] != w).sum())
                if full:
                    # The preset itself: the same outputs as the replica's model, and a line on
                    # stderr exactly when the replica says announced.
                    got, lines = run(args, tmp, t, a, b, "cublas-sm90", o)
                    r["line"] = lines[0] if lines else ""
                    r["preset_mismatches"] = int((got != w).sum())
                    r["replica_agrees"] = bool((got == mism[model]).all()) and (
                        (len(lines) > 0) == r["announced"])
                if rule:
                    r["rule"] = rule[0]
                    r["rule_verified"] = rule[1]
                    r["rule_mismatches"] = int((mism[rule[0]] != w).sum())
            except RuntimeError as ex:
                r["error"] = str(ex)
            res["outs"][o] = r
    return res


def summarize(rs, outs):
    s = {}
    for o in outs:
        rows = [r["outs"][o] for r in rs if o in r.get("outs", {}) and "error" not in r["outs"][o]]
        d = {"shapes": len(rows), "errors": sum(1 for r in rs if "error" in r.get("outs", {}).get(
            o, {"error": 1}))}
        for when in ("before", "after"):
            ann = "announced" if when == "after" else "before_announced"
            d[when] = {
                "clean": sum(r[when] == 0 for r in rows),
                "silent": sum(not r[ann] for r in rows),
                "silent_clean": sum(not r[ann] and r[when] == 0 for r in rows),
                "silent_mismatching_outputs": sum(r[when] for r in rows if not r[ann]),
                "announced": sum(bool(r[ann]) for r in rows),
                "announced_clean": sum(bool(r[ann]) and r[when] == 0 for r in rows),
            }
        d["preset_runs"] = sum(r["full"] for r in rows)
        d["preset_disagrees"] = sum(r["full"] and not r["replica_agrees"] for r in rows)
        d["preset_silent_mismatching_outputs"] = sum(
            r["preset_mismatches"] for r in rows if r["full"] and not r["line"])
        fam = {}
        for r in rows:
            if "rule" in r:
                k = r["record"][0]
                f = fam.setdefault(k, {"shapes": 0, "clean": 0, "verified": r["rule_verified"],
                                       "nearest_clean": 0})
                f["shapes"] += 1
                f["clean"] += r["rule_mismatches"] == 0
                f["nearest_clean"] += r["before"] == 0
        d["family_rules"] = fam
        s[o] = d
    return s


def main():
    p = argparse.ArgumentParser()
    p.add_argument("exmy")
    p.add_argument("--captures", required=True)
    p.add_argument("--types", default="fp32,tf32,bf16,fp16")
    p.add_argument("--full-products", type=float, default=2e6)
    p.add_argument("--check-products", type=float, default=2e6)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--limit", type=int, default=0, help="first N shapes per capture (a trial)")
    p.add_argument("--out", required=True)
    p.add_argument("--profile", default=os.path.join(ROOT, "golden", "profiles", "sm90",
                                                     "cublaslt-h100-gemm.json"))
    p.add_argument("--launch-profile", default=os.path.join(ROOT, "golden", "profiles", "sm90",
                                                            "cublaslt-h100-launch.json"))
    p.add_argument("--verified", default="simt_sgemm:fp32:fp32,simt_sgemm:tf32:fp32,"
                   "s1688gemm:bf16:bf16,s1688gemm:fp16:fp16,s1688gemm:bf16:fp32,"
                   "s1688gemm:fp16:fp32,wmma:bf16:bf16,wmma:bf16:fp32,wmma:fp16:fp16,"
                   "wmma:fp16:fp32,xmma_tf32:tf32:fp32",
                   help="family:in:out triples verified in launch_rules.cpp (the replica's)")
    args = p.parse_args()
    args.profile = os.path.abspath(args.profile)
    args.entries = json.load(open(args.profile))["entries"]
    args.launch = gemm_launch.expand(json.load(open(args.launch_profile))["launch"])
    args.verified = {tuple(v.split(":")): True for v in args.verified.split(",") if v}
    result = {}
    for t in args.types.split(","):
        ti = ALL_TYPES.index(t)
        rs, outs = [], None
        for cap in args.captures.split(","):
            meta, entries = fit.capture_entries(cap, t)
            outs = meta["outs"]
            seed = meta["info"]["seed"]
            if args.limit:
                entries = entries[:args.limit]
            with ThreadPoolExecutor(args.jobs) as ex:
                part = list(ex.map(lambda j: check_shape(args, t, ti, seed, j[0], j[1]), entries))
            for r in part:
                r["capture"] = os.path.basename(cap.rstrip("/"))
            rs += part
        summ = summarize(rs, outs)
        result[t] = {"summary": summ, "shapes": rs}
        print(t, json.dumps(summ), flush=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(result, f)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
