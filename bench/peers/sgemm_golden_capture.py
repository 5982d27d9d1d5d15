#!/usr/bin/env python3
"""fp32 SGEMM golden GEMMs (torch.mm with TF32 off: cuBLAS's CUDA-core kernels) in the layout of
gemm_cublas_capture.py (NAME_a.npy, NAME_b.npy, NAME_c.npy as <f4, and cases.json), for
golden/gemm/: `exmy gemm --a-format fp32 --b-format fp32 --accum cublas-sm90` must reproduce C.

    python3 bench/peers/sgemm_golden_capture.py OUTDIR [M,N,K ...]
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

from gemm_cublas_capture import cublas_version


def main(out, shapes):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(20261126)
    torch.backends.cuda.matmul.allow_tf32 = False
    cases = []
    for (M, N, K) in shapes:
        a = torch.randn(M, K, device="cuda")
        b = torch.randn(N, K, device="cuda")
        c = torch.mm(a, b.t())
        name = "fp32_%dx%dx%d" % (M, N, K)
        for suffix, t in (("_a", a), ("_b", b), ("_c", c)):
            np.save(os.path.join(out, name + suffix + ".npy"), t.cpu().numpy())
        cases.append({"name": name, "inputs": name, "M": M, "N": N, "K": K, "a_format": "fp32",
                      "b_format": "fp32", "out_format": "fp32",
                      "call": "torch.mm(a, b.t()), allow_tf32=False", "model": "cublas-sm90"})
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "cublas": cublas_version(), "driver": driver,
            "seed": 20261126, "cases": cases}
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(len(cases), "cases", meta["device"])


if __name__ == "__main__":
    main(sys.argv[1], [tuple(int(x) for x in s.split(",")) for s in sys.argv[2:]]
         or [(256, 128, 256), (128, 64, 2048)])
