"""Capture cuBLASLt GEMM outputs through torch for exmy's accumulation models (issue 12).

Run on the GPU machine: python3 bench/peers/gemm_cublas_capture.py OUTDIR
Writes, per case, A and B (codes as exmy gemm reads them: |u1 for FP8, <u2 for bf16/fp16 bit
patterns, <f4 for fp32) and C (torch's output: <f4, or <u2 bit patterns for bf16/fp16), plus
cases.json (shapes, formats, the torch call, torch/CUDA/cuBLAS/driver versions). Inputs are
N(0, 1) rounded to the input type (FP8 via torch's round-to-nearest cast), seed fixed. The
comparison with `exmy gemm --accum MODEL` runs off the GPU (bench/peers/gemm_compare.py).
"""
import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import torch


def cublas_version():
    try:
        import glob
        libs = glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cublas",
                                      "lib", "libcublas.so*"))
        lib = ctypes.CDLL(libs[0] if libs else "libcublas.so")
        v = ctypes.c_int()
        handle = ctypes.c_void_p()
        lib.cublasCreate_v2(ctypes.byref(handle))
        lib.cublasGetVersion_v2(handle, ctypes.byref(v))
        return v.value
    except Exception as e:  # recorded, not fatal
        return "unknown (%s)" % e


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(20261125)
    dev = "cuda"
    # The range (64x32x32 .. 256x128x8192), sized so that everything fits the device
    # tool's 64 MiB of returned files.
    shapes = [(64, 32, 32), (128, 64, 512), (256, 128, 1024), (64, 64, 4096), (128, 64, 8192),
              (32, 32, 16384)]
    cases = []
    one = torch.tensor(1.0, device=dev)

    def save(name, arr):
        np.save(os.path.join(out, name + ".npy"), arr)

    for (M, N, K) in shapes:
        tag = "%dx%dx%d" % (M, N, K)
        # FP8 e4m3fn x e4m3fn and e5m2 x e4m3fn -> fp32 and bf16, scales 1 (cuBLASLt via
        # torch._scaled_mm; B is passed column-major as b.t()).
        for fa, ta in (("e4m3fn", torch.float8_e4m3fn), ("e5m2", torch.float8_e5m2)):
            a = torch.randn(M, K, device=dev).to(ta)
            b = torch.randn(N, K, device=dev).to(torch.float8_e4m3fn)
            inputs = "fp8_%s_e4m3fn_%s" % (fa, tag)
            save(inputs + "_a", a.view(torch.uint8).cpu().numpy())
            save(inputs + "_b", b.view(torch.uint8).cpu().numpy())
            for od, tname in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
                c = torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=od)
                name = "fp8_%s_e4m3fn_%s_%s" % (fa, tname, tag)
                cc = c.float().cpu().numpy() if od == torch.float32 else \
                    c.view(torch.int16).cpu().numpy().view(np.uint16)
                save(name + "_c", cc)
                cases.append({"name": name, "inputs": inputs, "M": M, "N": N, "K": K,
                              "a_format": fa, "b_format": "e4m3fn", "out_format": tname,
                              "call": "torch._scaled_mm(a, b.t(), scale_a=1, scale_b=1, "
                                      "out_dtype=%s)" % od})
        # bf16 / fp16 -> same type (torch.mm, fp32 accumulate inside cuBLASLt).
        for tn, tt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
            a = torch.randn(M, K, device=dev).to(tt)
            b = torch.randn(N, K, device=dev).to(tt)
            c = torch.mm(a, b.t())
            name = "%s_%s" % (tn, tag)
            save(name + "_a", a.view(torch.int16).cpu().numpy().view(np.uint16))
            save(name + "_b", b.view(torch.int16).cpu().numpy().view(np.uint16))
            save(name + "_c", c.view(torch.int16).cpu().numpy().view(np.uint16))
            cases.append({"name": name, "inputs": name, "M": M, "N": N, "K": K, "a_format": tn, "b_format": tn,
                          "out_format": tn, "call": "torch.mm(a, b.t())"})
        # fp32 with TF32 tensor cores, and plain fp32 SGEMM.
        for allow, fname in ((True, "tf32"), (False, "fp32")):
            torch.backends.cuda.matmul.allow_tf32 = allow
            a = torch.randn(M, K, device=dev)
            b = torch.randn(N, K, device=dev)
            c = torch.mm(a, b.t())
            name = "%s_%s" % (fname, tag)
            save(name + "_a", a.cpu().numpy())
            save(name + "_b", b.cpu().numpy())
            save(name + "_c", c.cpu().numpy())
            cases.append({"name": name, "inputs": name, "M": M, "N": N, "K": K, "a_format": fname,
                          "b_format": fname, "out_format": "fp32",
                          "call": "torch.mm(a, b.t()), allow_tf32=%s" % allow})
        torch.backends.cuda.matmul.allow_tf32 = False
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True).stdout.strip()
    except Exception:
        driver = "unknown"
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "cublas": cublas_version(), "driver": driver,
            "seed": 20261125, "cases": cases}
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(json.dumps({k: v for k, v in meta.items() if k != "cases"}), len(cases), "cases")


if __name__ == "__main__":
    main(sys.argv[1])
