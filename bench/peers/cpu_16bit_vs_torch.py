"""Single-thread CPU throughput of exmy's 16-bit casts against torch, in one process.

exmy.cast (the Python package: fast::cast_to_codes, as `exmy cast --in`) and torch's
`.to(torch.bfloat16 / torch.float16 / torch.float8_e4m3fn)` on the same 2^26 fp32 values with
torch.set_num_threads(1); a numpy copy of the same bytes as the memory baseline. Median of 7 runs
after a warm-up. Also checks that the bits agree (exmy's codes against torch's outputs).
Usage: python3 bench/peers/cpu_16bit_vs_torch.py [--n LOG2]
"""
import argparse
import json
import platform
import statistics
import time

import numpy as np
import torch

import exmy


def median_time(fn, reps=7):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=26)
    a = ap.parse_args()
    torch.set_num_threads(1)
    n = 1 << a.n
    g = torch.Generator().manual_seed(1)
    xt = torch.randn(n, generator=g) * 100
    xn = xt.numpy()
    rows = []
    copy_s = median_time(lambda: xn.copy())
    for fmt, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16),
                    ("e4m3fn", torch.float8_e4m3fn)):
        src = xt.clamp(-448, 448) if fmt == "e4m3fn" else xt
        srcn = src.numpy()
        t_torch = median_time(lambda: src.to(dt))
        t_exmy = median_time(lambda: exmy.cast(srcn, fmt))
        ours = exmy.cast(srcn, fmt)
        theirs = src.to(dt).view(torch.uint8 if fmt == "e4m3fn" else torch.int16).numpy()
        same = bool(np.array_equal(ours.view(theirs.dtype), theirs))
        rows.append({"format": fmt, "torch_Mps": n / t_torch / 1e6, "exmy_Mps": n / t_exmy / 1e6,
                     "exmy_over_torch": t_torch / t_exmy, "bits_equal": same})
    out = {"n": n, "threads": 1, "torch": torch.__version__, "exmy": exmy.__version__,
           "cpu": platform.processor() or platform.machine(),
           "copy_GBps": 4 * n / copy_s / 1e9, "rows": rows}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
