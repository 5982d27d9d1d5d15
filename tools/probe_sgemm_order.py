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
    tools/probe_sgemm_order.py --merge OUT.json PROFILE.json [MILLION.json]   (no GPU: adds the
        inferred models as type "fp32" entries of a cublas-sm90 profile, golden/profiles/sm90/,
        with the per-shape random-input check of bench/peers/gemm_million_check.py --types SGEMM)

Writes OUT.json atomically: device, versions, per shape the three L arrays, the checks, the kernels
torch.profiler saw, the sign of an all-(-0) result, and the inferred model: the chunked FMA chain
`fp32-seq:chunk=C` whose L(i, j) equals every probed value (docs/SEMANTICS.md 15.4), or none with
the first pair it misfits.
"""
import json
import os
import sys
import time

import numpy as np

if "--merge" not in sys.argv:
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


def chunk_model_L(K, C, i, j):
    """L(i, j) of 'fp32-seq:chunk=C': FMA chains over chunks of C k from +0, added in order."""
    ci, cj = i // C, j // C
    if ci == cj:
        return j - cj * C + 1
    return min((cj + 1) * C, K)


def infer_model(entry):
    """The chunked-chain model that predicts every probed L, or None (with the first misfit)."""
    K = entry["K"]
    first = entry["first"]
    C = next((j for j in range(1, K) if first[j - 1] != j + 1), K)
    fams = {"first": [(0, j) for j in range(1, K)],
            "adjacent": [(j - 1, j) for j in range(1, K)],
            "last": [(i, K - 1) for i in range(0, K - 1)]}
    for name, pairs in fams.items():
        for (i, j), got in zip(pairs, entry[name]):
            want = chunk_model_L(K, C, i, j)
            if got != want:
                return None, "%s pair (%d, %d): L = %d, chunk=%d predicts %d" % (name, i, j, got,
                                                                                C, want)
    return "fp32-seq:chunk=%d" % C, None


def zero_sign(M, N, K):
    """Sign of C when every product is a negative value below fp32's range (each FMA chain
    ends at -0): 1 if the outputs are -0, 0 if +0 (how the partial sums are combined)."""
    a = torch.full((M, K), -2.0 ** -100, device="cuda")
    b = torch.full((N, K), 2.0 ** -100, device="cuda")
    c = torch.mm(a, b.t()).cpu().numpy().view(np.uint32)
    vals = set(int(x) for x in np.unique(c))
    return 1 if vals == {0x80000000} else 0 if vals == {0} else sorted(vals)[:4]


def merge(probe_path, profile_path, million_path=None):
    """Replaces the profile's fp32 entries by the probe's inferred models (atomic write)."""
    probe = json.load(open(probe_path))
    prof = json.load(open(profile_path))
    checks = {}
    if million_path:
        million = json.load(open(million_path))
        if million["device"] != prof["device"]:
            raise SystemExit(f"{million_path}: run on {million['device']}")
        for row in million["results"]:
            if "SGEMM" in row["type"]:
                checks = row["per_shape"]
    if probe["device"] != prof["device"]:
        raise SystemExit(f"{probe_path}: probed on {probe['device']}, the profile is "
                         f"{prof['device']}'s")
    entries = [e for e in prof["entries"] if e["type"] != "fp32"]
    for e in probe["shapes"]:
        if e.get("model") is None:
            raise SystemExit(f"{probe_path}: {e['M']}x{e['N']}x{e['K']} has no model "
                             f"({e.get('misfit')})")
        entries.append({"type": "fp32", "M": e["M"], "N": e["N"], "K": e["K"],
                        "model": e["model"], "kernels": e["kernels"],
                        "zero_sign": e.get("zero_sign", "not probed"),
                        "evidence": "tools/probe_sgemm_order.py %s: L(i, j) of %d pairs" %
                                    (probe["date"], 3 * (e["K"] - 1))})
        key = "%dx%dx%d" % (e["M"], e["N"], e["K"])
        if key in checks:
            entries[-1]["check"] = {"fp32": {"outputs": checks[key][0],
                                             "mismatches": checks[key][1]}}
    prof["entries"] = entries
    prof["sgemm_probe"] = {k: probe[k] for k in ("what", "device", "torch", "cuda", "cublas",
                                                 "date", "big")}
    tmp = profile_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    os.replace(tmp, profile_path)
    print(f"{profile_path}: {len(probe['shapes'])} fp32 entries")


def probe_shape(M, N, K):
    """Every probe of one shape, the inferred model (None if no chunked chain fits) and why."""
    torch.backends.cuda.matmul.allow_tf32 = False
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
    entry["zero_sign"] = zero_sign(M, N, K)
    entry["model"], misfit = infer_model(entry)
    if entry["column_dependent_rows"] or entry["row_dependent"]:
        entry["model"], misfit = None, "the order depends on the output's position"
    if misfit:
        entry["misfit"] = misfit
    return entry


def main():
    if sys.argv[1] == "--merge":
        return merge(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
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
        entry = probe_shape(M, N, K)
        res["shapes"].append(entry)
        el = time.time() - t0
        print(f"[{si + 1}/{len(shapes)}] {M}x{N}x{K}: model {entry['model']} "
              f"{entry.get('misfit', '')} zero sign {entry['zero_sign']} "
              f"col-dep {entry['column_dependent_rows']} row-dep {entry['row_dependent']} "
              f"{el:.0f}s, ETA {el / (si + 1) * (len(shapes) - si - 1):.0f}s", flush=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
