"""Writes a directory of tensors in the layout `exmy analyze --tensors DIR` reads
(docs/tutorials/analyze-your-tensors.md): a matmul `mlp` as mlp.x.npy (activations, b x n),
mlp.w.npy (weights, m x n) and mlp.g.npy (the gradient of the output, b x m), plus a bf16
tensor on its own (embed.npy, <u2 bit patterns) and an fp16 one (logits.npy, <f2).

Stand-ins for captured tensors, from a fixed seed: activations with a few outlier feature
columns (LLM.int8()'s observation), weights N(0, 1/n), heavy-tailed gradients (Student t, 3
degrees of freedom) of magnitude 1e-5. Only numpy is needed.

    python3 make_tensors.py DIR [--b 256] [--n 512] [--m 1024]
"""
import argparse
import os

import numpy as np


def bf16_bits(x):
    """fp32 -> bf16 bit patterns by round to nearest even (what ml_dtypes' astype does)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--b", type=int, default=256)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--m", type=int, default=1024)
    ap.add_argument("--seed", type=int, default=20261202)
    a = ap.parse_args()
    r = np.random.default_rng(a.seed)
    os.makedirs(a.out, exist_ok=True)
    x = r.standard_normal((a.b, a.n)).astype(np.float32)
    x[:, r.choice(a.n, 4, replace=False)] *= 60.0  # outlier features
    w = (r.standard_normal((a.m, a.n)) / np.sqrt(a.n)).astype(np.float32)
    g = (1e-5 * r.standard_t(3, (a.b, a.m))).astype(np.float32)
    np.save(os.path.join(a.out, "mlp.x.npy"), x)
    np.save(os.path.join(a.out, "mlp.w.npy"), w)
    np.save(os.path.join(a.out, "mlp.g.npy"), g)
    np.save(os.path.join(a.out, "embed.npy"), bf16_bits(0.02 * r.standard_normal((1000, 64))))
    np.save(os.path.join(a.out, "logits.npy"), (8 * r.standard_normal((64, 1000))).astype(np.float16))
    print("make_tensors.py: wrote mlp.{x,w,g}.npy, embed.npy (bf16), logits.npy (fp16) to", a.out)


if __name__ == "__main__":
    main()
