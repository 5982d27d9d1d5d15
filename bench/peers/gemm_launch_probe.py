"""Launch geometry and summation trees of cuBLAS GEMMs through torch (issue 30; docs/SEMANTICS.md
15.6). Run on the GPU machine:

    python3 bench/peers/gemm_launch_probe.py --plan PLAN.json --out DIR [--budget-s 480]

PLAN.json: {"launch": {TYPE: [[M, N, K], ...]}, "fprev": {TYPE: [[M, N, K], ...]}} with TYPE in
bf16, fp16, tf32, fp32 (the types of gemm_kernel_select_capture.py: 16-bit inputs give a 16-bit
and an fp32 output, tf32 and fp32 an fp32 output).

Part 1, launch geometry: per shape and output, the CUDA kernels one torch.mm launches, with their
grid and block dimensions (torch.profiler's trace). The kernel choice does not depend on the
values, so the inputs are zeros. Split-K parts, tile counts and reduction kernels are read off
the grid: they are the per-shape facts the accumulation model needs (the kernel -> model map is
the model; the grid says which instance ran).

Part 2, summation trees (FPRev, Xie et al., USENIX ATC 2025): for one output (r, c), the product
at k = i is +BIG, at k = j is -BIG and 1 at every other k, with BIG = 2^40 (exact in bf16, tf32
and fp32; 2^40 > 2^17 * 16384, so any partial sum of units added to a partial holding BIG is
absorbed, also inside a tensor-core sum that aligns to the largest exponent). The output is then
the number of units outside the smallest sub-sum that holds both i and j: K - |leaves(lca(i, j))|.
Row r of A holds BIG at its anchor i_r, column c of B holds -BIG at its sweep index j_c (ones
elsewhere, so the products at i_r and j_c are +-BIG and the rest 1; anchors and sweep indices are
disjoint). The sweep runs along the larger of M and N; the other dimension holds up to 16
anchors, repeated. Only the anchor rows (or columns) are stored: DIR/fprev_<type>.npz holds per
shape the anchors, the sweep indices and the counts (int16).

fp16 cannot hold 2^40: there the operands are BIG = 2^15 and SMALL = 2^-23 (an fp16 subnormal,
exact), so the products are +-2^-8 and 2^-46 = SMALL^2; BIG/SMALL = 2^38 > 2^23 * 16384, so the
absorption argument above holds unchanged and the output divided by SMALL^2 is the count.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

BIG = 2.0 ** 40
# (BIG, SMALL) per input type: the operands at the anchor/sweep index and everywhere else.
OPERANDS = {"bf16": (BIG, 1.0), "tf32": (BIG, 1.0), "fp32": (BIG, 1.0), "fp16": (2.0 ** 15, 2.0 ** -23)}
ANCHORS_MAX = 16


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
# The launch capture (kernels, grid, block per shape and output) is exmy probe gemm --launch's.
from gemm_launch import info_block, launch_chunk, mm, outs_of  # noqa: E402,F401

DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32,
      "fp32": torch.float32}


def fprev_shape(t, M, N, K, max_calls):
    """Counts K - |leaves(lca(anchor, j))| for the anchors and every swept j (or a sample)."""
    dt = DT[t]
    sweep_rows = M > N  # sweep along the larger dimension
    S, A = (M, N) if sweep_rows else (N, M)  # sweep slots, anchor slots
    na = min(A, ANCHORS_MAX)
    cand = [0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, K // 2, K - 1]
    anchors = []
    for x in cand:
        if 0 <= x < K and x not in anchors:
            anchors.append(x)
    anchors = anchors[:na]
    if K < len(anchors) + 1 or not anchors:
        return None
    aset = set(anchors)
    sweep = [k for k in range(K) if k not in aset]
    calls = -(-len(sweep) // S)
    if calls > max_calls:  # sample evenly, keep both ends
        idx = np.unique(np.linspace(0, len(sweep) - 1, max_calls * S).round().astype(int))
        sweep = [sweep[i] for i in idx]
    anc_slot = torch.tensor([anchors[s % len(anchors)] for s in range(A)], device="cuda")
    counts = np.full((len(anchors), len(sweep)), -1, dtype=np.int16)  # K <= 16384
    for c0 in range(0, len(sweep), S):
        js = sweep[c0:c0 + S]
        sw = torch.tensor(js + [-1] * (S - len(js)), device="cuda")
        big, small = OPERANDS[t]
        big_side = torch.full((A, K), small, device="cuda")
        big_side[torch.arange(A, device="cuda"), anc_slot] = big
        neg_side = torch.full((S, K), small, device="cuda")
        ok = sw >= 0
        neg_side[torch.arange(S, device="cuda")[ok], sw[ok]] = -big
        if sweep_rows:
            a, b = neg_side, big_side  # rows of A sweep, columns of B hold anchors
        else:
            a, b = big_side, neg_side
        out = mm(t, a.to(dt), b.to(dt), "fp32").double()
        o = out.cpu().numpy() / (small * small)
        blk = o[:len(js), :len(anchors)].T if sweep_rows else o[:len(anchors), :len(js)]
        counts[:, c0:c0 + len(js)] = np.rint(blk).astype(np.int16)
        if not np.all(np.abs(blk - np.rint(blk)) == 0):
            counts[:, c0:c0 + len(js)][np.abs(blk - np.rint(blk)) > 0] = -2
    return {"anchors": np.array(anchors, np.int32), "sweep": np.array(sweep, np.int32),
            "counts": counts, "sweep_rows": sweep_rows}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--plan", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--budget-s", type=float, default=480)
    p.add_argument("--max-calls", type=int, default=400)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(args.plan) as f:
        plan = json.load(f)
    t0 = time.time()
    info = info_block()
    print(json.dumps(info), flush=True)
    launch = {"info": info, "types": {}}
    n_launch = sum(len(v) for v in plan.get("launch", {}).values())
    done = 0
    for t, shapes in plan.get("launch", {}).items():
        rows = []
        for c0 in range(0, len(shapes), 400):
            chunk = [tuple(s) for s in shapes[c0:c0 + 400]]
            for s, per in zip(chunk, launch_chunk(t, chunk)):
                rows.append({"M": s[0], "N": s[1], "K": s[2],
                             "kernels": dict(zip(outs_of(t), per))})
            done += len(chunk)
            el = time.time() - t0
            print("launch %s %d/%d  %.0f s (eta %.0f s)" % (t, done, n_launch, el,
                                                            el / done * (n_launch - done)),
                  flush=True)
        launch["types"][t] = rows
    tmp = os.path.join(args.out, "launch.json.tmp")
    with open(tmp, "w") as f:
        json.dump(launch, f)
    os.replace(tmp, os.path.join(args.out, "launch.json"))
    print("launch done %.0f s" % (time.time() - t0), flush=True)
    for t, shapes in plan.get("fprev", {}).items():
        arrays, meta = {}, []
        for si, (M, N, K) in enumerate(shapes):
            if time.time() - t0 > args.budget_s:
                print("budget reached at %s shape %d" % (t, si), flush=True)
                break
            ts = time.time()
            r = fprev_shape(t, M, N, K, args.max_calls)
            if r is None:
                continue
            key = "s%d" % si
            for name in ("anchors", "sweep", "counts"):
                arrays[key + "_" + name] = r[name]
            meta.append({"key": key, "M": M, "N": N, "K": K, "sweep_rows": r["sweep_rows"],
                         "bad": int((r["counts"] == -2).sum()), "s": round(time.time() - ts, 2)})
            print("fprev %s %dx%dx%d %.1f s" % (t, M, N, K, time.time() - ts), flush=True)
        arrays["meta"] = np.array(json.dumps({"info": info, "type": t, "shapes": meta}))
        tmp = os.path.join(args.out, "fprev_%s.tmp.npz" % t)
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, os.path.join(args.out, "fprev_%s.npz" % t))
    print("total %.0f s" % (time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
