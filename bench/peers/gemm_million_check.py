"""exmy gemm --accum cublas-sm90 (CPU model run by the GPU emulation kernel) against cuBLASLt
through torch on >= 10^6 random outputs per input type, and cuBLAS's own time on the shapes of
bench_gemm_emulation (same device call). Run on the GPU machine:

    python3 bench/peers/gemm_million_check.py EXMY_BINARY OUT.json [--types WORD[,WORD]]

Inputs: N(0, 1) rounded to the input type (FP8 by torch's RNE cast), a new seed per matrix.
Shapes span the issue's range (64x32x32 .. 256x128x8192) including tall-skinny ones. Every
output is compared as bits (fp32: NaN as a class). Prints progress; writes OUT.json atomically.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

SHAPES = [(256, 128, 32), (256, 128, 256), (256, 128, 1024), (256, 128, 4096), (256, 128, 8192),
          (64, 32, 32), (64, 32, 8192), (32, 64, 8192), (128, 64, 2048), (64, 128, 512)]


def codes(t):
    if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return t.view(torch.uint8).cpu().numpy()
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.view(torch.int16).cpu().numpy().view(np.uint16)
    return t.float().cpu().numpy()


def torch_out(c):
    if c.dtype == torch.float32:
        return c.cpu().numpy().view(np.uint32)
    return c.view(torch.int16).cpu().numpy().view(np.uint16).astype(np.uint32)


def run_case(exmy, tmp, a, b, c, a_fmt, b_fmt, out_fmt, model):
    pa, pb, pc = (os.path.join(tmp, n) for n in ("a.npy", "b.npy", "c.npy"))
    np.save(pa, codes(a))
    np.save(pb, codes(b))
    if os.path.exists(pc):
        os.remove(pc)
    r = subprocess.run([exmy, "gemm", "--a", pa, "--b", pb, "--out", pc, "--a-format", a_fmt,
                        "--b-format", b_fmt, "--out-format", out_fmt, "--accum", model,
                        "--device", "cuda"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    got = np.load(pc)
    got = got.view(np.uint32) if got.dtype == np.float32 else got.astype(np.uint32)
    want = torch_out(c)
    if out_fmt == "fp32":
        nan_g = (got & 0x7FFFFFFF) > 0x7F800000
        nan_w = (want & 0x7FFFFFFF) > 0x7F800000
        bad = ((got != want) & ~(nan_g & nan_w)).sum()
    else:
        bad = (got != want).sum()
    return int(got.size), int(bad)


def main(exmy, out, only=None, timing_on=True):
    dev = "cuda"
    one = torch.tensor(1.0, device=dev)
    f8 = {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    types = []
    for fa in ("e4m3fn", "e5m2"):
        for od, on in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
            types.append(("fp8 %s x e4m3fn -> %s" % (fa, on), fa, "e4m3fn", on,
                          lambda a, b, od=od: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                                                out_dtype=od),
                          f8[fa], torch.float8_e4m3fn))
    for tn, tt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        types.append(("%s x %s -> %s" % (tn, tn, tn), tn, tn, tn,
                      lambda a, b: torch.mm(a, b.t()), tt, tt))
        types.append(("%s x %s -> fp32" % (tn, tn), tn, tn, "fp32",
                      lambda a, b: torch.mm(a, b.t(), out_dtype=torch.float32), tt, tt))
    types.append(("tf32 -> fp32", "tf32", "tf32", "fp32", "tf32", torch.float32, torch.float32))
    # SGEMM (CUDA cores, TF32 off): cublas-sm90 with fp32 operands is the probed chunked FMA
    # chain (tools/probe_sgemm_order.py, SEMANTICS 15.4).
    types.append(("fp32 SGEMM -> fp32", "fp32", "fp32", "fp32", "sgemm",
                  torch.float32, torch.float32))
    if only:  # --types a,b: names containing one of these words
        types = [t for t in types if any(w in t[0] for w in only)]
    results = []
    reps = 6  # 6 x the 10 shapes: 6 x 186,368 = 1,118,208 outputs per type
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for ti, (name, a_fmt, b_fmt, out_fmt, fn, ta, tb) in enumerate(types):
            row = {"type": name, "outputs": 0, "mismatches": 0, "per_shape": {}}
            try:
                for r in range(reps):
                    for si, (M, N, K) in enumerate(SHAPES):
                        torch.manual_seed(1000 * ti + 100 * r + si)
                        a = torch.randn(M, K, device=dev).to(ta)
                        b = torch.randn(N, K, device=dev).to(tb)
                        if fn == "tf32" or fn == "sgemm":
                            torch.backends.cuda.matmul.allow_tf32 = fn == "tf32"
                            c = torch.mm(a, b.t())
                            torch.backends.cuda.matmul.allow_tf32 = False
                        else:
                            c = fn(a, b)
                        model = "cublas-sm90"
                        n, bad = run_case(exmy, tmp, a, b, c, a_fmt, b_fmt, out_fmt, model)
                        row["outputs"] += n
                        row["mismatches"] += bad
                        key = "%dx%dx%d" % (M, N, K)
                        s = row["per_shape"].setdefault(key, [0, 0])
                        s[0] += n
                        s[1] += bad
            except Exception as e:  # recorded: e.g. an out_dtype this torch lacks
                row["error"] = str(e)[:300]
            results.append(row)
            el = time.time() - t0
            eta = el / (ti + 1) * (len(types) - ti - 1)
            print("[%d/%d] %s: %d outputs, %d mismatches (%.0f s, ETA %.0f s)" %
                  (ti + 1, len(types), name, row["outputs"], row["mismatches"], el, eta),
                  flush=True)
    # cuBLAS's own time on bench_gemm_emulation's shapes (median of 20 after warm-up).
    timing = []
    for fmt, M, N, K in [] if not timing_on else (("e4m3fn", 256, 128, 8192), ("bf16", 256, 128, 8192),
                         ("tf32", 256, 128, 1024), ("e4m3fn", 4096, 4096, 4096),
                         ("bf16", 4096, 4096, 4096), ("e4m3fn", 128, 64, 65536)):
        if fmt == "e4m3fn":
            a = torch.randn(M, K, device=dev).to(torch.float8_e4m3fn)
            b = torch.randn(N, K, device=dev).to(torch.float8_e4m3fn)
            f = lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                         out_dtype=torch.float32)
        else:
            dt = torch.bfloat16 if fmt == "bf16" else torch.float32
            a = torch.randn(M, K, device=dev, dtype=dt)
            b = torch.randn(N, K, device=dev, dtype=dt)
            f = lambda: torch.mm(a, b.t())
        torch.backends.cuda.matmul.allow_tf32 = fmt == "tf32"
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        ts = []
        for _ in range(20):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            f()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1))
        torch.backends.cuda.matmul.allow_tf32 = False
        ms = sorted(ts)[len(ts) // 2]
        timing.append({"format": fmt, "M": M, "N": N, "K": K, "cublas_ms": ms,
                       "cublas_tflops": 2.0 * M * N * K / (ms * 1e-3) / 1e12})
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "driver": subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                      "--format=csv,noheader"], capture_output=True,
                                     text=True).stdout.strip(),
            "shapes": SHAPES, "reps": reps, "results": results, "cublas_timing": timing}
    tmpf = out + ".tmp"
    with open(tmpf, "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(tmpf, out)


if __name__ == "__main__":
    # --types w1,w2: only the types whose names contain one of the words (e.g. --types SGEMM);
    # the cuBLAS timing then is skipped.
    only = sys.argv[sys.argv.index("--types") + 1].split(",") if "--types" in sys.argv else None
    main(sys.argv[1], sys.argv[2], only, timing_on=only is None)
