"""Check one kernel family's rule (sim/gemm/launch_rules.cpp, docs/SEMANTICS.md 15.6) with
`exmy gemm` on every captured output of the family in a random-shape capture (issue 30). Off the
GPU:

    python3 bench/peers/gemm_family_check.py EXMY --capture DIR --families wmma,s1688gemm \
        [--types fp16,bf16] [--launch LAUNCH.json,...] [--check-products 2e6] [--jobs 2] \
        --out CHECK.json

Per captured shape (gemm_kernel_select_capture.py: outputs as codes, kernel names per output)
whose fp32 output ran a kernel of one of --families (tools/gemm_launch.py's FAMILIES), for each
output type: the launch record (family, name, reduction, S = gridDim.z) from the --launch files
(gemm_launch_probe.py's launch.json of the same GPU and library, or a profile's "launch"
section); the rule's model (gemm_launch_select_check.family_rule, the replica of
launch_rules.cpp); `exmy gemm --accum MODEL` on the shape's first rows (every row up to
--check-products products), compared with the capture bit for bit.

A shape without a record (the held-out capture's shapes were never launch-probed) has its
kernels from the capture but no S: where the kernel is followed by splitKreduce, S is fitted —
each part size the rule gives for S = 1 .. min(K, 512) on the first row of the fp32
output (then of the 16-bit output, starting from the fp32 output's S), the first that
reproduces every output checked is kept. Those shapes are reported as "S fitted"; they check the
rule's arithmetic and part structure, not the record. Writes per shape and output: model, S and
its source (record / fitted / none), outputs, mismatches; and a summary per family and output.
"""
import argparse
import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import gemm_kernel_select_fit as fit  # noqa: E402
import gemm_launch  # noqa: E402
from gemm_launch_select_check import family_rule  # noqa: E402

# The type index of the capture's counter hash (gemm_kernel_select_capture.py's type order).
TYPE_INDEX = {"bf16": 0, "fp16": 1, "tf32": 2, "fp32": 3, "e4m3fn": 4}


def load_launch(paths, t):
    """{(out, M, N, K): (family, key, reduce, S)} of input type t from launch.json files (probe
    output: types -> rows with kernels [name, grid, block]) or profiles ("launch" section)."""
    recs = {}
    for p in [x for x in paths.split(",") if x]:
        d = json.load(open(p))
        if "types" in d:
            for r in d["types"].get(t, []):
                for o, ks in r["kernels"].items():
                    rec = gemm_launch.record_of(ks)
                    if rec:
                        recs[(o, r["M"], r["N"], r["K"])] = rec
        else:
            for (ti, o, M, N, K), rec in gemm_launch.expand(d["launch"]).items():
                if ti == t:
                    recs[(o, M, N, K)] = rec
    return recs


def s_candidates(rec, t, o, K, M=0, N=0):
    """S = 1 .. min(K, 512), one per distinct model of the rule (one per part size)."""
    out, seen = [], set()
    for S in range(1, min(K, 512) + 1):
        rule = family_rule(rec[:3] + (S,), t, o, K, {}, M, N)
        if rule is not None and rule[0] not in seen:
            seen.add(rule[0])
            out.append(S)
    return out


def check_shape(args, t, seed, e, want, recs):
    M, N, K = e["M"], e["N"], e["K"]
    a, b = fit.inputs(t, seed, TYPE_INDEX[t], e["i"], M, N, K)
    res = {"i": e["i"], "M": M, "N": N, "K": K, "outs": {}}
    codes = a.view(np.uint32) if a.dtype == np.float32 else a  # tf32: the fp32 codes
    if int(codes.astype(np.int64).sum()) != e["sum_a"]:
        res["error"] = "input checksum differs"
        return res
    rows = max(1, min(M, e.get("rows", M), int(args.check_products // max(1, N * K))))
    fitted_S = None
    with tempfile.TemporaryDirectory() as tmp:
        for o in sorted(want, key=lambda x: x != "fp32"):  # fp32 first: its S seeds the fit
            w = want[o].reshape(-1, N)  # the captured rows (all M, or the entry's "rows")
            rec = recs.get((o, M, N, K))
            src = "record"
            if rec is None:
                rec = gemm_launch.record_of([[n, None, None] for n in e["kernels"][o]])
                src = "none" if not rec[2].startswith("splitKreduce/") else "fitted"
            r = {"record": list(rec), "S_source": src, "outputs": rows * N}
            if src == "fitted":
                cands = s_candidates(rec, t, o, K, M, N)
                if fitted_S in cands:
                    cands = [fitted_S] + [s for s in cands if s != fitted_S]
                best = None
                for S in cands:
                    rule = family_rule(rec[:3] + (S,), t, o, K, {}, M, N)
                    if rule is None:
                        break
                    got = fit.run_exmy(args.exmy, tmp, t, a[:1], b, rule[0], o)
                    if (got != w[:1].ravel()).any():
                        continue
                    got = fit.run_exmy(args.exmy, tmp, t, a[:rows], b, rule[0], o)
                    bad = int((got != w[:rows].ravel()).sum())
                    if best is None or bad < best[0]:
                        best = (bad, S, rule[0])
                    if bad == 0:
                        break
                if best is None:
                    r["error"] = "no S reproduces the first row"
                else:
                    r["mismatches"], r["S"], r["model"] = best
                    if o == "fp32":
                        fitted_S = best[1]
            else:
                rule = family_rule(rec, t, o, K, {}, M, N)
                if rule is None:
                    r["error"] = "no family rule"
                else:
                    r["model"], r["S"] = rule[0], rec[3]
                    got = fit.run_exmy(args.exmy, tmp, t, a[:rows], b, rule[0], o)
                    r["mismatches"] = int((got != w[:rows].ravel()).sum())
            res["outs"][o] = r
    return res


def main():
    p = argparse.ArgumentParser()
    p.add_argument("exmy")
    p.add_argument("--capture", required=True)
    p.add_argument("--families", required=True)
    p.add_argument("--types", default="fp16,bf16")
    p.add_argument("--launch", default="")
    p.add_argument("--check-products", type=float, default=2e6)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    fams = set(args.families.split(","))
    result = {}
    for t in args.types.split(","):
        meta, entries = fit.capture_entries(args.capture, t)
        seed = meta["info"]["seed"]
        recs = load_launch(args.launch, t)
        jobs = [(e, w) for e, w in entries
                if gemm_launch.family_of(e["kernels"]["fp32"][0]) in fams]
        with ThreadPoolExecutor(args.jobs) as ex:
            rs = list(ex.map(lambda j: check_shape(args, t, seed, j[0], j[1], recs), jobs))
        summ = {}
        for r in rs:
            for o, x in r.get("outs", {}).items():
                fam = x["record"][0]
                s = summ.setdefault("%s %s>%s" % (fam, t, o), {
                    "shapes": 0, "clean": 0, "outputs": 0, "mismatching_outputs": 0,
                    "errors": 0, "S_fitted": 0, "S_fitted_clean": 0, "unclean": []})
                s["shapes"] += 1
                s["outputs"] += x["outputs"]
                if "error" in x:
                    s["errors"] += 1
                    s["unclean"].append([r["M"], r["N"], r["K"], x["error"]])
                    continue
                s["mismatching_outputs"] += x["mismatches"]
                s["clean"] += x["mismatches"] == 0
                s["S_fitted"] += x["S_source"] == "fitted"
                s["S_fitted_clean"] += x["S_source"] == "fitted" and x["mismatches"] == 0
                if x["mismatches"]:
                    s["unclean"].append([r["M"], r["N"], r["K"], x["model"], x["mismatches"]])
        result[t] = {"summary": summ, "shapes": rs}
        print(t, json.dumps(summ), flush=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(result, f)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
