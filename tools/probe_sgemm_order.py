#!/usr/bin/env python3
"""Reveals the summation order of an fp32 SGEMM (cuBLAS through torch, TF32 off) by FPRev-style
cancellation probes, per shape (M, N, K), at exactly that shape (cuBLAS picks kernels by shape).

Output (m, n) of C = A·Bᵀ probes one pair of k positions (i, j): B is all ones, A's row m is ones
except A[m, i] = +BIG and A[m, j] = -BIG with BIG = 2^40, so a partial sum that holds ±BIG
absorbs every 1 added to it, and BIG - BIG cancels exactly. Whatever order and tree the kernel
sums in, C[m, n] = K - L(i, j), where L(i, j) is the number of leaves under the lowest common
node of i and j in its summation tree (a k-ordered FMA chain: L = j + 1 for i = 0). Every column
n holds the same pair, so the columns show whether the order depends on the output's column.

Probed per shape: L(0, j) and L(j - 1, j) for j = 1..K-1 and L(i, K - 1) for i = 0..K-2 (rows of
several GEMMs of the same shape); each pair family is run twice with the rows permuted, to show
that the order does not depend on the output's row either.

    tools/probe_sgemm_order.py OUT.json [M,N,K ...]

Writes OUT.json atomically: device, versions, per shape the three L arrays and the checks.
"""
import json
import os
import sys
import time

import numpy as np
import torch

BIG = 2.0 ** 40
DEFAULT_SHAPES = [(256, 128, 32), (256, 128, 256), (256, 128, 1024), (256, 128, 4096),
                  (256, 128, 8192), (64, 32, 32), (64, 32, 8192), (32, 64, 8192),
                  (128, 64, 2048), (64, 128, 512)]


def lca_sizes(M, N, K, pairs, perm_seed):
    """L(i, j) for each pair, running GEMMs of shape (M, N, K); rows assigned by a permutation."""
    rng = np.random.default_rng(perm_seed)
    order = rng.permutation(len(pairs))
    out = np.zeros(len(pairs), dtype=np.int64)
    col_dep = 0
    b = torch.ones((N, K), device="cuda", dtype=torch.float32)
    for start in range(0, len(pairs), M):
        idx = order[start:start + M]
        a = np.ones((M, K), dtype=np.float32)
        for r, p in enumerate(idx):
            i, j = pairs[p]
            a[r, i] = BIG
            a[r, j] = -BIG
        c = torch.mm(torch.from_numpy(a).cuda(), b.t()).cpu().numpy()
        rows = c[:len(idx)]
        col_dep += int((rows != rows[:, :1]).any(axis=1).sum())
        for r, p in enumerate(idx):
            v = rows[r, 0]
            if v != np.round(v) or not (0 <= v <= K - 2):
                raise SystemExit(f"shape {M}x{N}x{K} pair {pairs[p]}: result {v} is not a count")
            out[p] = K - int(v)
    return out, col_dep


def kernel_names(M, N, K):
    """The CUDA kernels one torch.mm of this shape launches (torch.profiler)."""
    a = torch.randn((M, K), device="cuda")
    b = torch.randn((N, K), device="cuda")
    torch.mm(a, b.t())
    torch.cuda.synchronize()
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            torch.mm(a, b.t())
            torch.cuda.synchronize()
        return sorted({e.name for e in prof.events()
                       if e.device_type == torch.autograd.DeviceType.CUDA})
    except Exception as e:  # the profiler is evidence, not a requirement
        return ["(profiler failed: %s)" % e]


def main():
    path = sys.argv[1]
    shapes = [tuple(int(x) for x in s.split(",")) for s in sys.argv[2:]] or DEFAULT_SHAPES
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    res = {"what": "FPRev cancellation probes of torch.mm fp32 (TF32 off): L(i, j) = leaves under "
                   "the lowest common node of k = i and k = j (tools/probe_sgemm_order.py)",
           "device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "cublas": torch._C._cuda_getCompiledVersion(),
           "date": time.strftime("%Y-%m-%d"), "big": BIG, "shapes": []}
    t0 = time.time()
    for si, (M, N, K) in enumerate(shapes):
        fam = {"first": [(0, j) for j in range(1, K)],
               "adjacent": [(j - 1, j) for j in range(1, K)],
               "last": [(i, K - 1) for i in range(0, K - 1)]}
        entry = {"M": M, "N": N, "K": K, "column_dependent_rows": 0, "row_dependent": 0,
                 "kernels": kernel_names(M, N, K)}
        for name, pairs in fam.items():
            l1, c1 = lca_sizes(M, N, K, pairs, 1)
            l2, c2 = lca_sizes(M, N, K, pairs, 2)
            entry[name] = l1.tolist()
            entry["column_dependent_rows"] += c1 + c2
            entry["row_dependent"] += int((l1 != l2).sum())
        res["shapes"].append(entry)
        el = time.time() - t0
        print(f"[{si + 1}/{len(shapes)}] {M}x{N}x{K}: first L(0,j) head {entry['first'][:8]} "
              f"col-dep {entry['column_dependent_rows']} row-dep {entry['row_dependent']} "
              f"{el:.0f}s, ETA {el / (si + 1) * (len(shapes) - si - 1):.0f}s", flush=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
