"""exmy probe gemm: infer where cuBLASLt's kernels (called through torch) restart accumulation
along K, write the inferred accumulation models as a profile, and check each model against the
library on random inputs (issue 12; docs/SEMANTICS.md 15.4). Run on the GPU machine, usually
through `exmy probe gemm --device cuda --lib cublaslt --out PROFILE.json`:

    python3 tools/probe_gemm.py --out PROFILE.json [--exmy PATH] [--types bf16,fp16,tf32]
                                [--shapes MxNxK,...]
    python3 tools/probe_gemm.py --launch --out PROFILE.json [--types ...]
                                [--shapes MxNxK,... | --random N [--seed S]]

Probe, per (input type, shape): row r of A holds BIG = 1024 at k = i_r and DELTA = 3 * 2^-15
(0.75 of fp32's ulp at BIG; exact in bf16, fp16 and tf32) at k = i_r + 1, zeros elsewhere, B is
all ones, the output fp32. Inside one tensor-core accumulation chunk the fused sum BIG + DELTA
is normalised toward zero to BIG; if a promotion chunk or a split-K part ends between the two k,
DELTA's partial sum meets BIG in an fp32 addition (RNE) and gives BIG + ulp. One GEMM row per i
maps every restart along K, with the very kernel the library picks for that shape and dtypes.
FP8 (`--types e4m3fn,e5m2`: A of that type, B e4m3fn ones, torch._scaled_mm with unit scales)
uses BIG/DELTA = 448/2^-9 (e4m3fn) and 1/2^-16 (e5m2): DELTA is below 2^-13 of BIG, so the
e8m13 tensor-core sum truncates it, while an fp32 addition keeps it.
Restarts every P k give the model `hw:k=16,frac=25,chunk=P` (16-bit inputs; MMA-Sim's Hopper
instruction parameters), `hw:k=8,frac=25,tf32=rne,chunk=P` (fp32 inputs with TF32 allowed) or
`hw:k=32,frac=13,inter=13,chunk=P` (FP8);
no restart gives the model without chunk; anything else is reported as not modelled. With
--exmy, each model is then run by `exmy gemm --device cuda` on N(0, 1) inputs and compared bit
for bit with torch (fp32 output, and for 16-bit inputs the 16-bit output too).

--launch (exmy probe gemm --launch) records instead, per input type (bf16, fp16, tf32, fp32),
output type and shape (--shapes, or --random N [--seed S]), the kernel cuBLAS launches, its tile
and split count S = gridDim.z and the reduction that follows (tools/gemm_launch.py), and merges
them into the profile --out: `exmy gemm --accum cublas-sm90` with EXMY_GEMM_PROFILE=that file
turns each record of a verified kernel family into its model (docs/SEMANTICS.md 15.6).
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_sgemm_order as sgemm  # noqa: E402

BIG = 1024.0
DELTA = 3.0 * 2.0 ** -15
# FP8 (A of this type, B e4m3fn ones, torch._scaled_mm with unit scales, fp32 out): DELTA is
# exact in the type and below 2^-13 of BIG (truncated inside the e8m13 tensor-core sum) but kept
# by an fp32 addition: e4m3fn 448 and 2^-9 (its smallest subnormal), e5m2 1 and 2^-16.
FP8_PROBE = {"e4m3fn": (448.0, 2.0 ** -9), "e5m2": (1.0, 2.0 ** -16)}
DEFAULT_SHAPES = [(m, n, k) for (m, n) in ((32, 32), (64, 32), (32, 64), (64, 64), (128, 64),
                                           (64, 128), (128, 128), (256, 128))
                  for k in (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)]
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32,
          "e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "fp32": torch.float32}


def is_fp8(t):
    return t in FP8_PROBE


def mm(t, a, b, out):
    if is_fp8(t):
        one = torch.tensor(1.0, device=a.device)
        od = torch.float32 if out == "fp32" else torch.bfloat16
        return torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=od)
    torch.backends.cuda.matmul.allow_tf32 = t == "tf32"
    try:
        if out == "fp32" and t != "tf32":
            return torch.mm(a, b.t(), out_dtype=torch.float32)
        return torch.mm(a, b.t())
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False


def restarts(t, M, N, K):
    """The k at which accumulation restarts (a chunk or part begins), from the probe."""
    dev = "cuda"
    dt = DTYPES[t]
    big_v, delta_v = FP8_PROBE.get(t, (BIG, DELTA))
    big = np.float32(big_v).view(np.uint32)
    b = torch.ones(N, K, device=dev, dtype=torch.float8_e4m3fn if is_fp8(t) else dt)
    starts = []
    for i0 in range(0, K - 1, M):
        ii = torch.arange(i0, min(K - 1, i0 + M), device=dev)
        a32 = torch.zeros(M, K, device=dev)
        rows = torch.arange(len(ii), device=dev)
        a32[rows, ii] = big_v
        a32[rows, ii + 1] = delta_v
        a = a32.to(dt)
        c = mm(t, a, b, "fp32").float()[:len(ii), 0].cpu().numpy().view(np.uint32)
        starts += [int(i) + 1 for i, v in zip(ii.tolist(), c) if v != big]
    return starts


def model_for(t, starts, K):
    base = ("hw:k=8,frac=25,tf32=rne" if t == "tf32" else
            "hw:k=32,frac=13,inter=13" if is_fp8(t) else "hw:k=16,frac=25")
    if not starts:
        return base
    P = starts[0]
    if starts != list(range(P, K, P)):
        return None  # irregular restarts: not a model of this family
    return base + ",chunk=%d" % P


def codes(t, x):
    if t in ("tf32", "fp32"):
        return x.cpu().numpy()
    if is_fp8(t):
        return x.view(torch.uint8).cpu().numpy()
    return x.view(torch.int16).cpu().numpy().view(np.uint16)


def check(exmy, tmp, t, M, N, K, model, seed):
    """Mismatching outputs of exmy gemm --device cuda against torch, per output type."""
    torch.manual_seed(seed)
    dt = DTYPES[t]
    bt, bname = (torch.float8_e4m3fn, "e4m3fn") if is_fp8(t) else (dt, t)
    a = torch.randn(M, K, device="cuda").to(dt)
    b = torch.randn(N, K, device="cuda").to(bt)
    pa, pb, pc = (os.path.join(tmp, n) for n in ("a.npy", "b.npy", "c.npy"))
    np.save(pa, codes(t, a))
    np.save(pb, codes(bname, b))
    result = {}
    outs = ("fp32",) if t in ("tf32", "fp32") else ("fp32", "bf16") if is_fp8(t) else ("fp32", t)
    for out in outs:
        c = mm(t, a, b, out)
        want = (c.cpu().numpy().view(np.uint32) if c.dtype == torch.float32 else
                c.view(torch.int16).cpu().numpy().view(np.uint16).astype(np.uint32))
        if os.path.exists(pc):
            os.remove(pc)
        subprocess.run([exmy, "gemm", "--a", pa, "--b", pb, "--out", pc, "--a-format", t,
                        "--b-format", bname, "--out-format", out, "--accum", model, "--device",
                        "cuda"], check=True)
        got = np.load(pc)
        got = got.view(np.uint32) if got.dtype == np.float32 else got.astype(np.uint32)
        result[out] = {"outputs": int(got.size), "mismatches": int((got != want).sum())}
    return result


def cublas_version():
    try:
        import ctypes
        import glob
        libs = glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cublas",
                                      "lib", "libcublas.so*"))
        lib = ctypes.CDLL(libs[0] if libs else "libcublas.so")
        v, h = ctypes.c_int(), ctypes.c_void_p()
        lib.cublasCreate_v2(ctypes.byref(h))
        lib.cublasGetVersion_v2(h, ctypes.byref(v))
        return v.value
    except Exception as e:
        return "unknown (%s)" % e


def parse_shapes(text):
    try:
        shapes = [tuple(int(v) for v in s.split("x")) for s in text.split(",")]
        assert all(len(s) == 3 and min(s) > 0 for s in shapes)
    except Exception:
        sys.exit("--shapes '%s': expected MxNxK[,MxNxK...]" % text)
    return shapes


def launch_main(args):
    """exmy probe gemm --launch: the kernel, tile and split count cuBLAS launches for each input
    type, output type and shape (tools/gemm_launch.py), merged into the profile --out (written
    atomically; records of another device or library version are refused)."""
    import random
    import gemm_launch
    types = args.types.split(",")
    for t in types:
        if t not in gemm_launch.TYPES:
            sys.exit("--types: '%s' (with --launch: bf16, fp16, tf32, fp32)" % t)
    if args.random and args.shapes:
        sys.exit("--random and --shapes: choose one")
    if args.random:
        rng = random.Random(args.seed)
        shapes = [(max(1, round(math.exp(rng.uniform(0, math.log(512))))),
                   max(1, round(math.exp(rng.uniform(0, math.log(512))))),
                   max(1, round(math.exp(rng.uniform(0, math.log(16384))))))
                  for _ in range(args.random)]
    else:
        shapes = parse_shapes(args.shapes) if args.shapes else DEFAULT_SHAPES
    if not torch.cuda.is_available():
        sys.exit("exmy probe gemm: no CUDA device visible to torch")
    info = gemm_launch.info_block()
    info["date"] = datetime.date.today().isoformat()
    info["tool"] = "exmy probe gemm --launch (tools/probe_gemm.py)"
    t0 = time.time()
    rows = gemm_launch.capture({t: shapes for t in types},
                               lambda t, n, tot: print("launch %s %d/%d (%.0f s)" %
                                                       (t, n, tot, time.time() - t0), flush=True))
    try:
        sec = gemm_launch.write_profile(args.out, gemm_launch.compact(rows, info))
    except ValueError as e:
        sys.exit("%s: %s" % (args.out, e))
    print("%s: launch records %s" % (args.out, ", ".join(
        "%s %d" % (k, len(v) // 5) for k, v in sorted(sec["records"].items()))))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--exmy")
    p.add_argument("--types", default="bf16,fp16,tf32,e4m3fn,e5m2,fp32")
    p.add_argument("--shapes")
    p.add_argument("--launch", action="store_true",
                   help="record the launch (kernel, split count) of each GEMM instead of probing "
                        "its accumulation; merged into --out")
    p.add_argument("--random", type=int, default=0,
                   help="with --launch: N random shapes (M, N log-uniform in 1..512, K in "
                        "1..16384) instead of --shapes")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if args.launch:
        if args.types == p.get_default("types"):
            args.types = "bf16,fp16,tf32,fp32"
        return launch_main(args)
    if args.random:
        sys.exit("--random: only with --launch")
    types = args.types.split(",")
    for t in types:
        if t not in DTYPES:
            sys.exit("--types: '%s' (expected bf16, fp16, tf32, e4m3fn, e5m2, fp32)" % t)
    shapes = parse_shapes(args.shapes) if args.shapes else DEFAULT_SHAPES
    if not torch.cuda.is_available():
        sys.exit("exmy probe gemm: no CUDA device visible to torch")
    entries = []
    tmp = tempfile.mkdtemp()
    t0 = time.time()
    total = len(types) * len(shapes)
    for ti, t in enumerate(types):
        for si, (M, N, K) in enumerate(shapes):
            if t == "fp32":
                # SGEMM (CUDA cores): the summation tree by cancellation pairs (another probe).
                e = sgemm.probe_shape(M, N, K)
                model = e["model"]
                e = {"type": t, "M": M, "N": N, "K": K, "model": model,
                     "kernels": e["kernels"], "zero_sign": e["zero_sign"],
                     "evidence": "tools/probe_sgemm_order.py: L(i, j) of %d pairs" % (3 * (K - 1))}
            else:
                starts = restarts(t, M, N, K)
                model = model_for(t, starts, K)
                e = {"type": t, "M": M, "N": N, "K": K, "model": model,
                     "restarts": starts[:8] + (["..."] if len(starts) > 8 else [])}
            if args.exmy and model:
                e["check"] = check(args.exmy, tmp, t, M, N, K, model, 1000 * ti + si)
            entries.append(e)
            done = ti * len(shapes) + si + 1
            el = time.time() - t0
            print("[%d/%d] %s %dx%dx%d: %s %s (%.0f s, ETA %.0f s)" %
                  (done, total, t, M, N, K, model or "not modelled (irregular restarts)",
                   json.dumps(e.get("check", "")), el, el / done * (total - done)),
                  flush=True)
    prof = {
        "profile": "cublas-sm90",
        "what": "accumulation models of cuBLASLt GEMMs called through torch, by input type and "
                "shape, inferred by tools/probe_gemm.py (docs/SEMANTICS.md 15.4)",
        "device": torch.cuda.get_device_name(),
        "driver": subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                  "--format=csv,noheader"], capture_output=True,
                                 text=True).stdout.strip(),
        "torch": torch.__version__, "cuda": torch.version.cuda, "cublas": cublas_version(),
        "date": datetime.date.today().isoformat(),
        "probe": {"big": BIG, "delta": DELTA, "fp8": FP8_PROBE,
                  "fp8_b": "e4m3fn ones (A of the entry's type)"},
        "entries": entries,
    }
    tmpf = args.out + ".tmp"
    with open(tmpf, "w") as f:
        json.dump(prof, f, indent=1)
    os.replace(tmpf, args.out)


if __name__ == "__main__":
    main()
