#!/usr/bin/env python3
"""Triton's libdevice.pow with a constant fp32 base, as Inductor emits it for torchao's bias
corrections (tl.full([1], beta, tl.float32) ** the fp32 step), over t = 1..N for a list of bases:
the reference for sim/native/libdevice_powf_triton.hpp (docs/SEMANTICS.md 9.2.7). Writes
OUT/triton_pow.npz: t (fp32 bits) and one uint32 array per base ("b<bits hex>").

    triton_pow_probe.py --out DIR [--n 20000]
"""
import argparse
import os

import numpy as np
import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice

BASES = [0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999, 1.5]


@triton.jit
def pow_kernel(t_ptr, out_ptr, n, BETA: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    t = tl.load(t_ptr + i, m, other=1.0)
    b = tl.full([BLOCK], BETA, tl.float32)
    tl.store(out_ptr + i, libdevice.pow(b, t), m)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=20000)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t = torch.arange(1, a.n + 1, dtype=torch.float32, device="cuda")
    res = {"t": t.cpu().numpy().view(np.uint32)}
    for beta in BASES:
        o = torch.empty_like(t)
        pow_kernel[(triton.cdiv(a.n, 256),)](t, o, a.n, BETA=beta, BLOCK=256)
        torch.cuda.synchronize()
        key = "b%08x" % np.float32(beta).view(np.uint32)
        res[key] = o.cpu().numpy().view(np.uint32)
    np.savez_compressed(os.path.join(a.out, "triton_pow.npz"), **res)
    print("triton_pow ok", len(BASES), "bases", a.n, "steps")


if __name__ == "__main__":
    main()
