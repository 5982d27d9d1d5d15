#!/usr/bin/env python3
"""Golden cross-check data: fp32 -> every ml_dtypes 8/6/4-bit float type (round to nearest even).

Writes golden/ml_dtypes/input_f32.npy (a structured fp32 sample), one <type>.npy of uint8 codes
per ml_dtypes type, and VERSION (the ml_dtypes and numpy versions). tests/golden/test_mldtypes.cpp
compares exmy's native engine with these files; the differences SEMANTICS.md section 12 documents
(NaN into FP6/FP4) are a named exception list there.

The sample (deterministic, no randomness):
  * every bf16 bit pattern with a biased exponent in [90, 160] (|x| ~ 2^-37 .. 2^33), both signs:
    the ranges of all 8-bit types including their subnormals, and overflow;
  * for every pair of adjacent finite codes of every type: the midpoint (an exact fp32 for these
    formats) and its two fp32 neighbours, to pin the tie rule and the rounding boundaries;
  * specials: +-0, +-inf, +-NaN (quiet), +-fp32 max, +-fp32 min subnormal, e8m0 extremes.
Usage: python3 scripts/golden_mldtypes.py [OUTDIR]   (default golden/ml_dtypes)
"""
import os
import sys

import ml_dtypes
import numpy as np

TYPES = [
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e4m3b11fnuz",
    "float8_e4m3", "float8_e3m4", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
    "float4_e2m1fn",
]


def sample():
    bits = []
    for sign in (0, 1):
        for e in range(90, 161):
            for m in range(128):
                bits.append((sign << 31) | (e << 23) | (m << 16))
    vals = [np.array(bits, dtype=np.uint32).view(np.float32)]
    for name in TYPES:
        t = getattr(ml_dtypes, name)
        codes = np.arange(256 if np.dtype(t).itemsize == 1 else 0, dtype=np.uint8)
        nbits = {"float6": 6, "float4": 4}.get(name[:6], 8)
        codes = codes[: 1 << nbits]
        v = codes.view(t).astype(np.float64)
        v = np.unique(v[np.isfinite(v)])
        mids = ((v[:-1] + v[1:]) / 2).astype(np.float32)  # exact: narrow formats
        vals += [mids, np.nextafter(mids, np.float32(-np.inf)), np.nextafter(mids, np.float32(np.inf))]
    f32 = np.finfo(np.float32)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, f32.max, -f32.max,
                f32.smallest_subnormal, -f32.smallest_subnormal, 2.0**-127, 2.0**127, 2.0**-128]
    vals.append(np.array(specials, dtype=np.float32))
    x = np.concatenate(vals).astype(np.float32)
    # Deduplicate by bit pattern, keep a stable order (sorted by bits).
    u = np.unique(x.view(np.uint32))
    return u.view(np.float32)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "golden", "ml_dtypes")
    os.makedirs(out, exist_ok=True)
    x = sample()
    np.save(os.path.join(out, "input_f32.npy"), x)
    for name in TYPES:
        codes = x.astype(getattr(ml_dtypes, name)).view(np.uint8)
        np.save(os.path.join(out, name + ".npy"), codes)
    with open(os.path.join(out, "VERSION"), "w") as f:
        f.write(f"ml_dtypes {ml_dtypes.__version__}\nnumpy {np.__version__}\n")
        f.write(f"samples {x.size}\n")
    print(f"wrote {len(TYPES) + 1} arrays of {x.size} elements to {out}")


if __name__ == "__main__":
    main()
