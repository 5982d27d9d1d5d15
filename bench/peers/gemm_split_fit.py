"""Evidence for a split-K family rule where the launch record (its split count S) is missing
(issue 30; docs/SEMANTICS.md 15.6): for each captured shape of a family whose kernels end in
splitKreduce, try every split count S (every distinct part size P = g ceil(ceil(K/S)/g), largest
P first) with the family rule's model and report the part sizes that reproduce every checked
output. A rule that some S reproduces at every shape is consistent with the captures; it is
verified only with the GPU's recorded S (gemm_gpu_campaign.py). Off the GPU:

    python3 bench/peers/gemm_split_fit.py EXMY --capture DIR --type tf32 --family s1688gemm_tf32 \
        --out FIT.json [--check-products 2e6] [--jobs 2] [--limit N]
"""
import argparse
import json
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_gpu_campaign as camp  # noqa: E402
import gemm_launch_rules as rules  # noqa: E402


def fit_shape(args, t, ti, seed, e, want):
    M, N, K = e["M"], e["N"], e["K"]
    a, b = camp.inputs(t, seed, ti, e["i"], M, N, K)
    rows = max(1, min(M, int(args.check_products // max(1, N * K))))
    res = {"M": M, "N": N, "K": K, "outs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for o, w in want.items():
            ks = e["kernels"][o]
            w = w.reshape(M, N)[:rows].ravel()
            g = rules.RULES[(args.family, t, o)][1]
            seen, fits = set(), []
            for S in range(1, -(-K // g) + 1):
                P = rules.split_part(K, S, g)
                if P in seen:
                    continue
                seen.add(P)
                rec = (args.family, camp.gemm_launch.key_of(ks[0]), "splitKreduce/f32", S)
                model = rules.family_rule(rec, t, o, K)[0]
                # the first row first (cheap), then every checked row
                got, _ = camp.run(args.exmy, tmp, t, a[:1], b, model, o)
                if (got != w[:N]).any():
                    continue
                got, _ = camp.run(args.exmy, tmp, t, a[:rows], b, model, o)
                if (got == w).all():
                    fits.append({"S": S, "P": P, "model": model})
            res["outs"][o] = {"outputs": int(w.size), "fits": fits, "kernel": ks[0]}
    return res


def main():
    p = argparse.ArgumentParser()
    p.add_argument("exmy")
    p.add_argument("--capture", required=True)
    p.add_argument("--type", required=True)
    p.add_argument("--family", required=True)
    p.add_argument("--check-products", type=float, default=2e6)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    t = args.type
    meta, entries = camp.capture_entries(args.capture, t)
    sel = [(e, w) for e, w in entries
           if all(ks and camp.gemm_launch.family_of(ks[0]) == args.family and len(ks) == 2 and
                  "splitKreduce" in ks[1] for ks in e["kernels"].values())]
    if args.limit:
        sel = sel[:args.limit]
    ti = camp.ALL_TYPES.index(t)
    with ThreadPoolExecutor(args.jobs) as ex:
        rs = list(ex.map(lambda j: fit_shape(args, t, ti, meta["info"]["seed"], *j), sel))
    n = len(rs)
    fitted = sum(all(v["fits"] for v in r["outs"].values()) for r in rs)
    summ = {"shapes": n, "some_S_reproduces_every_output": fitted,
            "outputs": sum(v["outputs"] for r in rs for v in r["outs"].values())}
    print(json.dumps(summ))
    with open(args.out, "w") as f:
        json.dump({"summary": summ, "shapes": rs}, f)


if __name__ == "__main__":
    main()
