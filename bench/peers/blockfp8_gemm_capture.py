"""Capture of cuBLASLt's blockwise-scaled FP8 GEMM (DeepSeek-style 1x128 / 128x128 fp32 scales)
as torch._scaled_mm runs it on sm_90 (issue 32 item 2; docs/SEMANTICS.md 15.7). Run on the GPU:

    python3 bench/peers/blockfp8_gemm_capture.py --out DIR [--seed S] [--budget-s 110]
        [--shapes MxNxK[:mix],...] [--device cpu]   (cpu: a smoke test of this script only)

For every shape and each block pair (A tile . B tile) 1x128.128x128, 1x128.1x128, 128x128.1x128
and each output type bf16, fp32:
- A (M x K) and B (N x K) e4m3fn codes and the fp32 scales SA (ceil(M/Ra) x ceil(K/128)), SB
  (ceil(N/Rb) x ceil(K/128)) come from a counter hash (gen_codes / gen_scales: integer arithmetic
  only, so that the verifier rebuilds them with numpy; two checksums of each are stored). Nothing
  of the inputs is stored but the checksums and sha256 digests.
- C = torch._scaled_mm(A, B.t(), scale_a, scale_b, out_dtype) with the scales in the layouts
  torch 2.11 checks (aten/src/ATen/native/cuda/ScaledBlas.cpp is_blockwise_1x128_scaling /
  is_blockwise_128x128_scaling, torch/_meta_registrations.py; several candidate layouts are
  tried and the one accepted is recorded) and use_fast_accum=False. Stored as codes.
- The same through torch.nn.functional.scaled_mm (the v2 API with explicit ScalingType), with
  use_fast_accum=True, and a second identical call: each compared with C bit for bit (counts of
  differing outputs; the outputs are stored only where they differ).
- A float64 reference (sum over k of a*sa*b*sb) and C's normwise relative error from it: a wrong
  scale layout shows as an O(1) error.
- The CUDA kernels torch.profiler sees for the call.
Errors (unsupported shapes or pairs) are recorded, never fatal. Writes DIR/blockfp8_gemm.npz
(compressed; per case `c/<case>` the output codes, uint16 for bf16, uint32 for fp32, while the
pair and output type hold fewer than --full-per-pair stored outputs; beyond that `h/<case>` one
64-bit BLAKE2b digest per output row (row_hashes) and `r0/<case>` its first row; the whole
directory stays under 16 MiB) and
DIR/blockfp8_gemm.json (versions, device, seeds, and per case shape, pair, out, layout, errors,
checksums, kernels, timings).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

M31 = (1 << 31) - 1
PAIRS = ("1x128.128x128", "1x128.1x128", "128x128.1x128")
OUTS = ("bf16", "fp32")

# (M, N, K, mix). mix: "full" = every finite e4m3fn code equally likely (2^-9 .. 448, zeros,
# subnormals, both signs), "narrow" = amax-scaled data (exponent field 8..15, 1/16 zeros), scales
# random fp32 significands; "pow2" = narrow codes with power-of-two scales.
# K/128 = 1000 and 1001, odd M, N not multiples of 128, K with L = K/128 not a multiple of 4
# (128x128 scales padded to L4), K not a multiple of 128 (recorded if unsupported), odd N.
SHAPES = [
    (64, 256, 128000, "narrow"),     # K/128 = 1000
    (33, 144, 128128, "narrow"),     # K/128 = 1001, odd M
    (1, 256, 128000, "full"),        # M = 1
    (129, 272, 4096, "full"),
    (3, 128, 384, "full"),
    (128, 128, 128, "narrow"),
    (31, 4096, 896, "full"),
    (16, 16, 25600, "full"),
    (200, 336, 16384, "narrow"),
    (77, 1024, 7168, "narrow"),      # DeepSeek-V3's hidden size as K
    (384, 128, 1280, "pow2"),        # torch's test shape
    (96, 256, 1040, "narrow"),       # K not a multiple of 128 (tail of 16)
    (97, 333, 512, "narrow"),        # odd N
    (130, 200, 1000, "full"),        # K not a multiple of 128, N not a multiple of 16
    (255, 1040, 640, "narrow"),
    (513, 528, 2176, "full"),        # L = 17 (L4 = 20)
    (1001, 512, 1280, "narrow"),     # L = 10 (L4 = 12)
    (4096, 64, 384, "narrow"),       # N < 128
    (256, 768, 512, "pow2"),
    (2048, 256, 256, "full"),
    (640, 1936, 128, "narrow"),
    (1000, 1000, 2560, "narrow"),
    (1024, 1024, 512, "narrow"),
    (768, 1280, 1024, "full"),
]


def hash31(x, xp):
    """A 31-bit mixing of non-negative int64 counters (no overflow: products < 2^62)."""
    for mul, add in ((1103515245, 12345), (69069, 1), (1664525, 1013904223)):
        x = (x * mul + add) & M31
        x = x ^ (x >> 13)
    return x


def _idx(n, xp, device):
    if xp.__name__ == "torch":
        return xp.arange(n, dtype=xp.int64, device=device)
    return xp.arange(n, dtype=xp.int64)


def gen_codes(seed, which, rows, cols, mix, xp, device=None):
    """rows x cols e4m3fn codes (int64 0..254, never 0x7F/0xFF) from a counter hash."""
    idx = _idx(rows * cols, xp, device)
    base = (seed * 7919 + which * 104729) & M31
    h = hash31((idx + base) & M31, xp)
    if mix == "full":
        c = h & 0xFF
        c = xp.where((c & 0x7F) == 0x7F, c ^ 1, c)
    else:
        sign = (h >> 3) & 1
        e = 8 + ((h >> 4) & 7)
        m = (h >> 7) & 7
        m = xp.where((e == 15) & (m == 7), m - 1, m)
        c = (sign << 7) | (e << 3) | m
        c = xp.where(((h >> 10) & 15) == 0, c * 0, c)
    return c.reshape(rows, cols)


def gen_scales(seed, which, rows, cols, mix, xp, device=None):
    """rows x cols positive fp32 scales as int64 bit patterns: 2^e (1 + f), e in -20..3, f a
    random 23-bit fraction (0 for mix pow2)."""
    idx = _idx(rows * cols, xp, device)
    base = (seed * 7919 + which * 104729 + 17) & M31
    h1 = hash31((idx * 2 + base) & M31, xp)
    h2 = hash31((idx * 2 + 1 + base) & M31, xp)
    e = (h1 % 24) - 20
    f = ((h1 >> 8) << 15 | (h2 & 0x7FFF)) & 0x7FFFFF
    if mix == "pow2":
        f = f * 0
    return (((e + 127) << 23) | f).reshape(rows, cols)


def checksums(c, xp):
    """Two integer checksums of an int64 array (sum, and sum of code x (index mod 65521))."""
    flat = c.reshape(-1)
    w = _idx(flat.shape[0], xp, getattr(flat, "device", None)) % 65521
    return [int(flat.sum()), int((flat * w).sum())]


def pair_tiles(pair):
    a, b = pair.split(".")
    return int(a.split("x")[0]), int(b.split("x")[0])


def case_inputs(seed, si, M, N, K, mix, pair, xp, device=None):
    """The case's codes and scales: A (M,K), B (N,K) int64 codes; SA, SB int64 fp32 bits."""
    ra, rb = pair_tiles(pair)
    L = -(-K // 128)
    A = gen_codes(seed + si, 0, M, K, mix, xp, device)
    B = gen_codes(seed + si, 1, N, K, mix, xp, device)
    pi = PAIRS.index(pair)
    SA = gen_scales(seed + si, 10 + pi, -(-M // ra), L, mix, xp, device)
    SB = gen_scales(seed + si, 20 + pi, -(-N // rb), L, mix, xp, device)
    return A, B, SA, SB


def row_hashes(codes):
    """One 64-bit BLAKE2b digest per row of a 2-d array of output codes (its little-endian
    bytes): how outputs beyond the full-storage budget are compared."""
    import hashlib
    c = np.ascontiguousarray(codes)
    return np.array([int.from_bytes(hashlib.blake2b(c[i].tobytes(), digest_size=8).digest(),
                                    "little") for i in range(c.shape[0])], dtype=np.uint64)


def sha256_of(arr):
    import hashlib
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def input_digests(A, B, SA, SB):
    """sha256 of the inputs as exmy reads them: A, B uint8 codes, SA, SB fp32 bytes."""
    return {"A": sha256_of(A.astype(np.uint8)), "B": sha256_of(B.astype(np.uint8)),
            "SA": sha256_of(SA.astype(np.int32).view(np.float32)),
            "SB": sha256_of(SB.astype(np.int32).view(np.float32))}


def cublas_version(torch):
    try:
        import ctypes
        import glob
        libs = glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cu*",
                                      "lib", "libcublas.so*"))
        lib = ctypes.CDLL(libs[0] if libs else "libcublas.so")
        v, h = ctypes.c_int(), ctypes.c_void_p()
        lib.cublasCreate_v2(ctypes.byref(h))
        lib.cublasGetVersion_v2(h, ctypes.byref(v))
        return v.value
    except Exception as e:  # evidence only
        return "unknown (%s)" % e


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=20261201)
    p.add_argument("--budget-s", type=float, default=110)
    p.add_argument("--shapes", default="")
    p.add_argument("--device", default="cuda")
    p.add_argument("--full-per-pair", type=int, default=450000,
                   help="outputs stored whole per pair and output type; beyond, per-row hashes")
    p.add_argument("--variant-bytes", type=int, default=1 << 20,
                   help="bytes of differing variant outputs (fast-accum, v2) stored whole")
    args = p.parse_args()
    import torch
    os.makedirs(args.out, exist_ok=True)
    dev = args.device
    cuda = dev == "cuda"
    t_start = time.time()
    shapes = SHAPES
    if args.shapes:
        shapes = []
        for s in args.shapes.split(","):
            dims, _, mix = s.partition(":")
            M, N, K = (int(v) for v in dims.split("x"))
            shapes.append((M, N, K, mix or "narrow"))
    info = {
        "script": "bench/peers/blockfp8_gemm_capture.py",
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "capability": list(torch.cuda.get_device_capability()) if cuda else [],
        "driver": subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                  "--format=csv,noheader"], capture_output=True,
                                 text=True).stdout.strip() if cuda else "",
        "torch": torch.__version__, "torch_git": getattr(torch.version, "git_version", ""),
        "cuda": torch.version.cuda, "cublas": cublas_version(torch) if cuda else "",
        "numpy": np.__version__, "seed": args.seed,
        "scaled_mm_v2": hasattr(torch.nn.functional, "scaled_mm"),
    }
    print(json.dumps(info), flush=True)
    F = torch.nn.functional
    ST = getattr(F, "ScalingType", None)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def to_scale(bits):
        return bits.to(torch.int32).view(torch.float32)

    def padded(s, L4):
        """rows x L4 contiguous (zeros past L), sliced back to rows x L: row stride L4."""
        r, L = s.shape
        z = torch.zeros(r, L4, dtype=torch.float32, device=dev)
        z[:, :L] = s
        return z

    def v1_layouts(side, tile, s, L):
        """Candidate scale tensors for torch._scaled_mm (v1). A: checked against A (M,K);
        B: scale_b.t() checked against b.t() = B (N,K)."""
        L4 = -(-L // 4) * 4
        if tile == 1:
            outer = s.t().contiguous().t()  # (rows, L), stride (1, rows)
            return [("outer-major", outer if side == "a" else outer.t())]
        pad = padded(s, L4)
        cands = [("k-major row stride L4", pad[:, :L]), ("k-major contiguous", s.contiguous())]
        return [(n, t if side == "a" else t.t()) for n, t in cands]

    def v2_layout(tile, s, L):
        L4 = -(-L // 4) * 4
        if tile == 1:
            return s.t().contiguous().t()
        return padded(s, L4).t()  # (L4, rows), stride (1, L4)

    def codes(c):
        if c.dtype == torch.float32:
            return c.contiguous().view(torch.int32).cpu().numpy().view(np.uint32)
        return c.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)

    from torch.profiler import profile, ProfilerActivity, record_function
    # One profiler session for the run; each call runs inside a record_function label with the
    # device idle before and synchronised inside, so that the kernels whose start lies in the
    # label's interval are that call's.
    prof = None
    try:
        prof = profile(activities=[ProfilerActivity.CPU] +
                       ([ProfilerActivity.CUDA] if cuda else []))
        prof.start()
    except Exception as ex:  # evidence only
        info["profiler"] = "failed to start: %s" % ex
        prof = None
    arrays, cases = {}, []
    stored_bytes = 0
    full, var_bytes = {}, 0
    totals = {}
    for si, (M, N, K, mix) in enumerate(shapes):
        if time.time() - t_start > args.budget_s:
            cases.append({"shape": [M, N, K], "mix": mix, "skipped": "budget"})
            print("shape %dx%dx%d skipped (budget)" % (M, N, K), flush=True)
            continue
        L = -(-K // 128)
        for pair in PAIRS:
            ra, rb = pair_tiles(pair)
            t0 = time.time()
            base = {"si": si, "shape": [M, N, K], "mix": mix, "pair": pair}
            try:
                A, B, SA, SB = case_inputs(args.seed, si, M, N, K, mix, pair, torch, dev)
                sums = {"A": checksums(A, torch), "B": checksums(B, torch),
                        "SA": checksums(SA, torch), "SB": checksums(SB, torch)}
                digests = input_digests(A.cpu().numpy(), B.cpu().numpy(), SA.cpu().numpy(),
                                        SB.cpu().numpy())
                a = A.to(torch.uint8).view(torch.float8_e4m3fn)
                b = B.to(torch.uint8).view(torch.float8_e4m3fn)
                sa, sb = to_scale(SA), to_scale(SB)
                # float64 reference: sum_k a sa b sb (scales broadcast over their tiles).
                ea = sa.double().repeat_interleave(ra, 0)[:M].repeat_interleave(128, 1)[:, :K]
                eb = sb.double().repeat_interleave(rb, 0)[:N].repeat_interleave(128, 1)[:, :K]
                ref = (a.double() * ea) @ (b.double() * eb).t()
                del ea, eb
            except Exception as ex:
                for o in OUTS:
                    cases.append(dict(base, out=o, error="inputs: %s" % str(ex)[:300]))
                print("%s %dx%dx%d inputs failed: %s" % (pair, M, N, K, str(ex)[:200]),
                      flush=True)
                continue
            for o in OUTS:
                od = torch.float32 if o == "fp32" else torch.bfloat16
                e = dict(base, out=o, sums=sums, sha256=digests)
                name = "s%02d_%s_%s" % (si, pair, o)
                e["case"] = name
                c = None
                errs = []
                tried = []
                for (na, xa) in v1_layouts("a", ra, sa, L):
                    for (nb, xb) in v1_layouts("b", rb, sb, L):
                        try:
                            sync()
                            with record_function("blockfp8/" + name):
                                if cuda:
                                    c = torch._scaled_mm(a, b.t(), scale_a=xa, scale_b=xb,
                                                         out_dtype=od, use_fast_accum=False)
                                else:  # smoke test of the script: fp64 stands in for cuBLAS
                                    c = ref.to(od)
                                sync()
                            lay = {"a": na, "b": nb,
                                   "a_stride": list(xa.stride()), "b_stride": list(xb.stride()),
                                   "a_shape": list(xa.shape), "b_shape": list(xb.shape)}
                            cf = c.double()
                            num = float(torch.linalg.vector_norm(cf - ref))
                            den = float(torch.linalg.vector_norm(ref))
                            lay["rel_err_vs_fp64"] = num / den if den > 0 else num
                            tried.append((lay, c, xa, xb))
                            # A layout cuBLAS reads differently from the one meant shows as an
                            # O(1) error: try the next candidate.
                            if lay["rel_err_vs_fp64"] > 0.05:
                                errs.append("%s/%s: accepted, rel err %.3g" % (
                                    na, nb, lay["rel_err_vs_fp64"]))
                                c = None
                                continue
                            break
                        except Exception as ex:
                            c = None
                            errs.append("%s/%s: %s" % (na, nb, str(ex).splitlines()[0][:300]))
                    if c is not None:
                        break
                if c is None and tried:  # every accepted layout looks wrong: keep the best
                    lay, c, xa, xb = min(tried, key=lambda t: t[0]["rel_err_vs_fp64"])
                    e["suspect_layout"] = True
                if c is not None:
                    lay, _, xa, xb = [t for t in tried if t[1] is c][0]
                    e["layout"] = lay
                    e["rel_err_vs_fp64"] = lay["rel_err_vs_fp64"]
                if c is None:
                    e["error"] = errs
                    cases.append(e)
                    print("%s %s %dx%dx%d error: %s" % (pair, o, M, N, K, errs[-1][:160]),
                          flush=True)
                    continue
                if errs:
                    e["layouts_refused"] = errs
                e["nonfinite"] = int((~torch.isfinite(c.float())).sum())
                cc = codes(c)
                key = (pair, o)
                if full.get(key, 0) + M * N <= args.full_per_pair:
                    arrays["c/" + name] = cc
                    stored_bytes += cc.nbytes
                    full[key] = full.get(key, 0) + M * N
                    e["stored"] = "full"
                else:  # per-row hashes, and the first row whole (for diagnosis)
                    cc2 = cc.reshape(M, N)
                    arrays["h/" + name] = row_hashes(cc2)
                    arrays["r0/" + name] = cc2[0].copy()
                    stored_bytes += 8 * M + cc2[0].nbytes
                    e["stored"] = "row-hashes"
                totals[key] = totals.get(key, 0) + M * N
                # Variants, compared bit for bit with c.
                var = {}
                try:
                    c2 = torch._scaled_mm(a, b.t(), scale_a=xa, scale_b=xb, out_dtype=od,
                                          use_fast_accum=False)
                    var["repeat"] = int((codes(c2) != cc).sum())
                except Exception as ex:
                    var["repeat"] = "error: %s" % str(ex)[:200]
                try:
                    sync()
                    with record_function("blockfp8/" + name + "/fast"):
                        cfa = torch._scaled_mm(a, b.t(), scale_a=xa, scale_b=xb, out_dtype=od,
                                               use_fast_accum=True)
                        sync()
                    d = codes(cfa)
                    var["fast_accum"] = int((d != cc).sum())
                    if var["fast_accum"]:
                        if var_bytes + d.nbytes <= args.variant_bytes:
                            arrays["fast/" + name] = d
                            var_bytes += d.nbytes
                            stored_bytes += d.nbytes
                except Exception as ex:
                    var["fast_accum"] = "error: %s" % str(ex)[:200]
                if ST is not None:
                    try:
                        rec = {1: ST.BlockWise1x128, 128: ST.BlockWise128x128}
                        c3 = F.scaled_mm(a, b.t(), v2_layout(ra, sa, L), rec[ra],
                                         v2_layout(rb, sb, L), rec[rb], output_dtype=od,
                                         use_fast_accum=False)
                        d = codes(c3)
                        var["v2"] = int((d != cc).sum())
                        if var["v2"]:
                            if var_bytes + d.nbytes <= args.variant_bytes:
                                arrays["v2/" + name] = d
                                var_bytes += d.nbytes
                                stored_bytes += d.nbytes
                    except Exception as ex:
                        var["v2"] = "error: %s" % str(ex).splitlines()[0][:300]
                e["variants"] = var
                e["seconds"] = round(time.time() - t0, 3)
                cases.append(e)
                print("%s %s %dx%dx%d %s: rel err %.2e, variants %s, %.2f s" % (
                    pair, o, M, N, K, mix, e["rel_err_vs_fp64"], var, e["seconds"]),
                    flush=True)
            del A, B, SA, SB, a, b, ref
            if cuda:
                torch.cuda.empty_cache()
    if prof is not None:
        try:
            prof.stop()
            evs = list(prof.events())
            kern = sorted(((ev.time_range.start, ev.name) for ev in evs
                           if ev.device_type == torch.autograd.DeviceType.CUDA
                           and not ev.name.startswith(("Memcpy", "Memset"))))
            labels = {}
            for ev in evs:
                if ev.name.startswith("blockfp8/") and ev.device_type != \
                        torch.autograd.DeviceType.CUDA:
                    k = ev.name[len("blockfp8/"):]
                    if k not in labels or labels[k][0] < ev.time_range.start:
                        labels[k] = (ev.time_range.start, ev.time_range.end)
            for e in cases:
                for suffix, field in (("", "kernels"), ("/fast", "kernels_fast")):
                    w = labels.get(e.get("case", "") + suffix)
                    if w:
                        e[field] = [n for t, n in kern if w[0] <= t <= w[1]]
        except Exception as ex:  # evidence only
            info["profiler"] = "failed: %s" % ex
    info["totals"] = {"%s %s" % k: v for k, v in sorted(totals.items())}
    info["stored_bytes"] = stored_bytes
    info["seconds"] = round(time.time() - t_start, 1)
    info["pairs"] = list(PAIRS)
    info["cases"] = cases
    info["full_per_pair"] = {"%s %s" % k: v for k, v in sorted(full.items())}
    npz = os.path.join(args.out, "blockfp8_gemm.npz")
    np.savez_compressed(npz, **arrays)
    with open(os.path.join(args.out, "blockfp8_gemm.json"), "w") as f:
        json.dump(info, f, indent=1)
    size = sum(os.path.getsize(os.path.join(args.out, n)) for n in os.listdir(args.out))
    print("outputs per pair and type: %s (whole: %s); %.1f MB raw, %.2f MiB on disk in %s; "
          "%.1f s" % (info["totals"], info["full_per_pair"], stored_bytes / 1e6, size / 2**20,
                      args.out, info["seconds"]), flush=True)


if __name__ == "__main__":
    main()
