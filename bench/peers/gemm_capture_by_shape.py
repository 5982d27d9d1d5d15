"""Small cuBLASLt captures (through torch) at shapes where cublas-sm90's promotion chunk matters
(16-bit and TF32 chunks depend on the shape, golden/profiles/sm90/), for the CI golden test
(golden/gemm/cublas-sm90-h100, tests/gemm/test_gemm_golden.cpp). Run on the GPU machine:

    python3 bench/peers/gemm_capture_by_shape.py OUTDIR

Writes NAME_a.npy, NAME_b.npy, NAME_c.npy per case and cases_by_shape.json (the case records to
append to the golden cases.json), inputs N(0, 1) rounded to the type, seed 20261126.
"""
import json
import os
import sys

import numpy as np
import torch


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(20261126)
    cases = []
    # (type, M, N, K, output): 16-bit chunk 1408 at K = 4096 and 8192; TF32 chunk 128 at K = 4096.
    for t, M, N, K, o in (("bf16", 32, 32, 4096, "fp32"), ("fp16", 32, 32, 8192, "fp16"),
                          ("tf32", 32, 32, 4096, "fp32")):
        dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}[t]
        a = torch.randn(M, K, device="cuda").to(dt)
        b = torch.randn(N, K, device="cuda").to(dt)
        torch.backends.cuda.matmul.allow_tf32 = t == "tf32"
        if o == "fp32" and t != "tf32":
            c = torch.mm(a, b.t(), out_dtype=torch.float32)
            call = "torch.mm(a, b.t(), out_dtype=torch.float32)"
        else:
            c = torch.mm(a, b.t())
            call = "torch.mm(a, b.t())" + (", allow_tf32=True" if t == "tf32" else "")
        torch.backends.cuda.matmul.allow_tf32 = False
        name = "%s_%s_%dx%dx%d" % (t, o, M, N, K)

        def enc(x):
            if x.dtype == torch.float32:
                return x.cpu().numpy()
            return x.view(torch.int16).cpu().numpy().view(np.uint16)

        np.save(os.path.join(out, name + "_a.npy"), enc(a))
        np.save(os.path.join(out, name + "_b.npy"), enc(b))
        np.save(os.path.join(out, name + "_c.npy"), enc(c))
        cases.append({"name": name, "inputs": name, "M": M, "N": N, "K": K, "a_format": t,
                      "b_format": t, "out_format": o, "call": call, "model": "cublas-sm90"})
    with open(os.path.join(out, "cases_by_shape.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "cases": cases}, f, indent=1)
    print(json.dumps(cases))


if __name__ == "__main__":
    main(sys.argv[1])
