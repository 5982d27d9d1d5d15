#!/usr/bin/env python3
"""The "kernel under test" step of examples/ci/golden-check.yml (docs/tutorials/golden-ci.md):
for every cast case of an exmy golden corpus whose format and rounding your kernel supports, read
the case's input x.npy and write results/<suite>/<case>/codes.npy. Here the kernel is ml_dtypes'
astype (round to nearest even, ml_dtypes' overflow rule); replace `my_cast` with yours.

    python3 write_results.py CORPUS RESULTS
"""
import json
import os
import sys

import numpy as np

try:
    import ml_dtypes
except ImportError:  # the example's kernel; yours may need nothing
    sys.exit("write_results.py: this example's kernel is ml_dtypes' astype: pip install ml_dtypes")

# exmy format name -> the ml_dtypes type this example's kernel casts to.
KERNEL_TYPES = {"e4m3fn": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


def my_cast(x, fmt):
    """Your kernel: float32 values in, codes out (one byte each for 8-bit formats)."""
    return x.astype(KERNEL_TYPES[fmt]).view(np.uint8)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    corpus, results = sys.argv[1], sys.argv[2]
    written = 0
    for root, _dirs, files in os.walk(os.path.join(corpus, "cast")):
        if "case.json" not in files:
            continue
        with open(os.path.join(root, "case.json")) as f:
            case = json.load(f)
        # ml_dtypes rounds to nearest even and turns overflow into inf (e5m2) or NaN (e4m3fn):
        # exmy's "rne" with overflow "none". Other cases are left without results.
        if case["format"] not in KERNEL_TYPES or case["round"] != "rne" or case["overflow"] != "none":
            continue
        x = np.load(os.path.join(root, "x.npy"))
        out = os.path.join(results, os.path.relpath(root, corpus))
        os.makedirs(out, exist_ok=True)
        np.save(os.path.join(out, "codes.npy"), my_cast(x, case["format"]))
        written += 1
    print(f"write_results.py: {written} cases written to {results}")


if __name__ == "__main__":
    main()
