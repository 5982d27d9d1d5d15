"""Fit and check exmy's accumulation models on a random-shape cuBLASLt capture
(gemm_kernel_select_capture.py; issue 30, docs/SEMANTICS.md 15.6). Off the GPU:

    python3 bench/peers/gemm_kernel_select_fit.py CAPTURE_DIR EXMY --types bf16,... \
        [--fit-outputs 64] [--check-products 2e7] [--jobs 2] [--out FIT.json]

Per shape: rebuilds the inputs (the capture's counter hash, checked against its checksums),
proposes models of exmy's family from the restart scan and the instruction of the kernel
(candidates below), runs each with `exmy gemm` (CPU) on the first rows of A (about
--fit-outputs outputs) and keeps the first that reproduces them bit for bit; the kept model is
then run on the whole shape (beyond --check-products products: its first rows) and every
output compared (for 16-bit inputs both outputs: the 16-bit
one and out_dtype=fp32). Writes per shape: kernels, restarts, model (or none), outputs,
mismatches. The kernels' names are evidence; the models are fitted to outputs, never copied.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_kernel_select_capture as cap  # noqa: E402


def bf16_rne(x):
    """float32 array -> bf16 codes, round to nearest even (torch's .to(torch.bfloat16) for
    finite values; the capture's inputs are all finite)."""
    u = x.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def inputs(t, seed, ti, i, M, N, K):
    try:
        import torch
    except ImportError:  # numpy alone: the same codes (checked against the capture's checksums)
        av = cap.gen_values(seed + i, 2 * ti, M, K, np)
        bv = cap.gen_values(seed + i, 2 * ti + 1, N, K, np)
        a = (av.astype(np.float64) * 2.0 ** -15).astype(np.float32)
        b = (bv.astype(np.float64) * 2.0 ** -15).astype(np.float32)
        if t == "bf16":
            return bf16_rne(a), bf16_rne(b)
        if t == "fp16":
            return a.astype(np.float16).view(np.uint16), b.astype(np.float16).view(np.uint16)
        if t == "e4m3fn":
            raise RuntimeError("e4m3fn inputs need torch")
        return a, b
    av = cap.gen_values(seed + i, 2 * ti, M, K, np)
    bv = cap.gen_values(seed + i, 2 * ti + 1, N, K, np)
    a = torch.from_numpy((av.astype(np.float64) * 2.0 ** -15).astype(np.float32))
    b = torch.from_numpy((bv.astype(np.float64) * 2.0 ** -15).astype(np.float32))
    if t in ("bf16", "fp16"):
        dt = torch.bfloat16 if t == "bf16" else torch.float16
        return (a.to(dt).view(torch.int16).numpy().view(np.uint16),
                b.to(dt).view(torch.int16).numpy().view(np.uint16))
    if t == "e4m3fn":
        return (a.to(torch.float8_e4m3fn).view(torch.uint8).numpy(),
                b.to(torch.float8_e4m3fn).view(torch.uint8).numpy())
    return a.numpy(), b.numpy()


def bases(t):
    if t == "tf32":
        return ["hw:k=8,frac=25,tf32=rne", "hw:k=4,frac=25,tf32=rne", "hw:k=8,frac=24,tf32=rne",
                "hw:k=4,frac=24,tf32=rne", "hw:k=8,frac=25,rne,tf32=rne",
                "hw:k=4,frac=25,rne,tf32=rne", "hw:k=16,frac=25,tf32=rne"]
    if t == "e4m3fn":
        return ["hw:k=32,frac=13,inter=13"]
    return ["hw:k=16,frac=25", "hw:k=8,frac=25", "hw:k=8,frac=24", "hw:k=16,frac=24",
            "hw:k=8,frac=25,rne", "hw:k=16,frac=25,rne", "hw:k=32,frac=25"]


def rp_kernel(kernels):
    """cuBLASLt's split-K reduction with 16-bit partials (its first template type)."""
    import re
    for k in kernels:
        m = re.search(r"splitKreduce_kernel<32, 16, int, ([^,]+),", k)
        if m and m.group(1) in ("__nv_bfloat16", "__half"):
            return True
    return False


def lane_candidates(kernels, K):
    """cuBLAS's CUDA-core kernels for vector-like and small-N shapes (SEMANTICS 15.2 `lanes`):
    gemvx<..., 7> one warp per output (32 lanes, one contiguous run each at small K, strided by
    one k at large K), gemvx<..., 6> two lanes of one run each, gemmSN_TN_kernel 16 lanes strided
    by one k added in lane order; with splitKreduce the parts of ceil(K/S) k added in order."""
    names = " ".join(kernels)
    if "gemvx" in names:
        base = ["fp32-seq:lanes=32,vec=auto", "fp32-seq:lanes=32", "fp32-seq:lanes=2,vec=auto"]
        if "splitKreduce" in names:
            return [b + ",split=%d" % S for S in range(2, 65) for b in base[:2] if S < K]
        return base
    if "gemmSN_TN_kernel" in names:
        return ["fp32-seq:lanes=16,lanesum=seq"]
    return []


def sgemm_split_chunks(K):
    """SIMT SGEMM + splitKreduce: S parts of ceil(ceil(K/S)/4)*4 k (measured: every part size
    found on the learning capture is a multiple of 4, or K itself); in order of S."""
    out = []
    for S in range(2, 257):
        P = -(-(-(-K // S)) // 4) * 4
        if P < K and P not in out:
            out.append(P)
    return ["fp32-seq:chunk=%d" % P for P in out]


def candidates(t, K, restarts, rp=False, kernels=()):
    lanes = lane_candidates(kernels, K) if t in ("fp32", "tf32", "bf16", "fp16") else []
    if lanes:
        return lanes
    if rp:
        plain = candidates(t, K, restarts)
        return [m + ",rp" for m in plain if "chunk=" in m] + plain
    if t == "fp32" and any("simt_sgemm" in k for k in kernels) and \
            any("splitKreduce" in k for k in kernels):
        return candidates(t, K, restarts) + sgemm_split_chunks(K)
    if t == "fp32":
        out = ["fp32-seq"]
        for C in (8, 16, 32, 64, 128, 256, 512):
            if C < K:
                out.append("fp32-seq:chunk=%d" % C)
        out.append("pairwise")
        return out
    if t == "e4m3fn":
        return ["hw:k=32,frac=13,inter=13,chunk=128"]
    if restarts is None:
        return bases(t)
    if not restarts:
        return bases(t)
    if restarts == list(range(1, K)):
        return ["fp32-seq", "pairwise"] + ["fp32-seq:chunk=%d" % C for C in (8, 16, 32, 64, 128)
                                           if C < K]
    P = restarts[0]
    out = []
    if restarts == list(range(P, K, P)):
        S = -(-K // P)
        for b in bases(t):
            out += [b + ",chunk=%d" % P, b + ",split=%d,tile=%d,tree" % (S, P)]
        for b in bases(t):
            if P <= 32:
                out.append(b)  # restarts every group: maybe an RNE normalisation
    return out


def run_exmy(exmy, tmp, t, a, b, model, out):
    pa, pb, pc = (os.path.join(tmp, n) for n in ("a.npy", "b.npy", "c.npy"))
    np.save(pa, a)
    np.save(pb, b)
    # The CUDA-core kernels (lanes models) of a TF32 request read the fp32 values unrounded.
    fmt = "fp32" if t == "tf32" and model.startswith("fp32-seq") else t
    r = subprocess.run([exmy, "gemm", "--a", pa, "--b", pb, "--out", pc, "--a-format", fmt,
                        "--b-format", fmt, "--out-format", out, "--accum", model],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    c = np.load(pc)
    return c.view(np.uint32).ravel() if c.dtype == np.float32 else c.astype(np.uint32).ravel()


def fit_shape(args, t, ti, seed, e, want):
    M, N, K = e["M"], e["N"], e["K"]
    a, b = inputs(t, seed, ti, e["i"], M, N, K)
    res = {k: e.get(k) for k in ("i", "M", "N", "K", "kernels", "restarts")}
    codes = a.view(np.uint32) if a.dtype == np.float32 else a
    if int(codes.astype(np.int64).sum()) != e["sum_a"]:
        res["error"] = "input checksum differs"
        return res
    rows = max(1, min(M, args.fit_outputs // max(1, N)))
    out0 = "fp32"
    w0 = want[out0].reshape(M, N)[:rows].ravel()
    tried = []
    with tempfile.TemporaryDirectory() as tmp:
        rp = t in ("bf16", "fp16") and rp_kernel(e["kernels"][t])
        res["rp"] = rp
        ks = [k for o in e["kernels"] for k in e["kernels"][o]] if isinstance(
            e.get("kernels"), dict) else []
        for m in candidates(t, K, e.get("restarts"), rp, ks):
            got = run_exmy(args.exmy, tmp, t, a[:rows], b, m, out0)
            bad = int((got != w0).sum())
            tried.append([m, bad])
            if bad == 0:
                res["model"] = m
                break
        res["tried"] = tried
        if "model" in res and not args.fit_only:
            # Every output, or (beyond --check-products products) the first rows of A.
            crow = max(1, min(M, int(args.check_products // max(1, N * K))))
            res["check"] = {}
            for o, w in want.items():
                got = run_exmy(args.exmy, tmp, t, a[:crow], b, res["model"], o)
                w = w.reshape(M, N)[:crow].ravel()
                res["check"][o] = {"outputs": int(w.size), "mismatches": int((got != w).sum())}
    return res



def capture_entries(capture, t):
    """The capture of type t: its meta and, per entry in order, (entry, {output name: the
    entry's M*N output codes as uint32}) sliced from the concatenated output arrays."""
    d = np.load(os.path.join(capture, t + ".npz"))
    meta = json.loads(str(d["meta"]))
    offs = {o: 0 for o in meta["outs"]}
    entries = []
    for e in meta["entries"]:
        want = {}
        for o in meta["outs"]:
            n = e.get("rows", e["M"]) * e["N"]  # gemm_tc_capture.py: the first rows only
            want[o] = d["out_" + o][offs[o]:offs[o] + n].astype(np.uint32)
            offs[o] += n
        entries.append((e, want))
    return meta, entries

def main():
    p = argparse.ArgumentParser()
    p.add_argument("capture")
    p.add_argument("exmy")
    p.add_argument("--types", default="bf16,fp16,tf32,fp32,e4m3fn")
    p.add_argument("--fit-outputs", type=int, default=64)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--fit-only", action="store_true")
    p.add_argument("--only-rp", action="store_true")  # refit the shapes with 16-bit partials
    # refit only the shapes of --out without a clean model (new candidates), keep the others
    p.add_argument("--only-unverified", action="store_true")
    p.add_argument("--check-products", type=float, default=2e7)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    all_types = ["bf16", "fp16", "tf32", "fp32", "e4m3fn"]  # the capture's order (seeds)
    result = {}
    if os.path.exists(args.out):
        result = json.load(open(args.out))
    for t in args.types.split(","):
        meta, entries = capture_entries(args.capture, t)
        ti = all_types.index(t)
        seed = meta["info"]["seed"]
        jobs = list(entries)
        if args.limit:
            jobs = jobs[:args.limit]
        old = {}
        if args.only_rp and t in result:
            old = {r["i"]: r for r in result[t]["shapes"]}
            jobs = [j for j in jobs if rp_kernel(j[0]["kernels"][t])]
        if args.only_unverified and t in result:
            old = {r["i"]: r for r in result[t]["shapes"]}

            def clean(r):
                return "model" in r and all(c["mismatches"] == 0
                                            for c in r.get("check", {}).values())
            jobs = [j for j in jobs if not clean(old.get(j[0]["i"], {}))]
        with ThreadPoolExecutor(args.jobs) as ex:
            rs = list(ex.map(lambda j: fit_shape(args, t, ti, seed, j[0], j[1]), jobs))
        if old:
            for r in rs:
                old[r["i"]] = r
            rs = [old[i] for i in sorted(old, key=lambda i: [x["i"] for x in result[t]["shapes"]].index(i))]
        result[t] = {"info": meta["info"], "outs": meta["outs"], "shapes": rs}
        n_fit = sum(1 for r in rs if "model" in r)
        print(t, "fitted %d / %d shapes" % (n_fit, len(rs)), flush=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(result, f)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
