"""Compare torch.mm on this GPU with `exmy gemm` under a profile (docs/tutorials/probe-a-gpu.md).

    python3 compare_mm.py --exmy exmy --m 64 --n 96 --k 8192 --type bf16 [--seed 0]

Makes A (M x K) and B (N x K) standard normal from numpy's seed, rounded to the type, computes
torch.mm(A, B.T) on CUDA with the type's own output, runs `exmy gemm --accum cublas-sm90` on the
same operands ($EXMY_GEMM_PROFILE, if set, passes your probed profile through to exmy), and prints
how many outputs differ. Exit 0 when every output bit matches, 1 otherwise.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--exmy", default="exmy")
    p.add_argument("--m", type=int, default=64)
    p.add_argument("--n", type=int, default=96)
    p.add_argument("--k", type=int, default=8192)
    p.add_argument("--type", default="bf16", choices=["bf16", "fp16"])
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[a.type]
    rng = np.random.default_rng(a.seed)
    A = torch.from_numpy(rng.standard_normal((a.m, a.k), dtype=np.float32)).to(dt)
    B = torch.from_numpy(rng.standard_normal((a.n, a.k), dtype=np.float32)).to(dt)
    C = torch.mm(A.cuda(), B.cuda().T).cpu()
    with tempfile.TemporaryDirectory() as d:
        # exmy reads 16-bit operands as their bit patterns (<u2).
        np.save(os.path.join(d, "a.npy"), A.view(torch.int16).numpy().view(np.uint16))
        np.save(os.path.join(d, "b.npy"), B.view(torch.int16).numpy().view(np.uint16))
        cmd = [a.exmy, "gemm", "--a", os.path.join(d, "a.npy"), "--b", os.path.join(d, "b.npy"),
               "--a-format", a.type, "--b-format", a.type, "--out-format", a.type,
               "--accum", "cublas-sm90", "--out", os.path.join(d, "c.npy")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        sys.stderr.write(r.stderr)
        if r.returncode != 0:
            return r.returncode
        got = np.load(os.path.join(d, "c.npy"))
    want = C.view(torch.int16).numpy().view(np.uint16)
    diff = int((got != want).sum())
    print(f"{a.type} {a.m}x{a.n}x{a.k}: {diff} of {want.size} outputs differ from torch.mm "
          f"({torch.cuda.get_device_name()}, torch {torch.__version__})")
    return 0 if diff == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
