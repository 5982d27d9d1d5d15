"""bitsandbytes' quantize_4bit throughput on the GPU beside a device-to-device copy in the same
process (issue 33's NF4/FP4 speed target: exmy >= 3x bitsandbytes and >= 0.85 of copy-equivalent
bandwidth; exmy's side is bench_gpu_quant's quant/bnb4/* in the same device call).

    python3 bench/peers/bnb4_speed.py --out bnb4_speed.json [--log2n 28] [--reps 20]

Per case (nf4/fp4 x fp32/bf16/fp16 x blocksize 64/4096, compress_statistics=False as exmy's
benchmark): the median of --reps CUDA-event times of one quantize_4bit call, after 3 warm-up
calls; bytes counted as exmy counts them (input + n/2 packed codes + 4 n/block absmax); the copy is
out.copy_(x) of the fp32 tensor (read + write). The inputs are the same kind of values as exmy's
benchmark (random sign, exponents 2^-20..2^12, random mantissa), generated on the GPU.
"""
import argparse
import json
import statistics

import torch


def timed(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(ts)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--log2n", type=int, default=28)
    p.add_argument("--reps", type=int, default=20)
    a = p.parse_args()
    import bitsandbytes as bnb
    import bitsandbytes.functional as F
    n = 1 << a.log2n
    g = torch.Generator(device="cuda").manual_seed(12345)
    bits = torch.randint(0, 2**31 - 1, (n,), device="cuda", generator=g, dtype=torch.int64)
    sign = (bits & 1) << 31
    e = 107 + ((bits >> 1) & 31)
    m = (bits >> 6) & 0x7FFFFF
    x32 = ((sign | (e << 23) | m) & 0xFFFFFFFF).to(torch.int64)
    x32 = torch.where(x32 >= 2**31, x32 - 2**32, x32).to(torch.int32).view(torch.float32)
    del bits, sign, e, m
    out = torch.empty_like(x32)
    t_copy = timed(lambda: out.copy_(x32), a.reps)
    copy_bw = 8.0 * n / t_copy
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "bitsandbytes": bnb.__version__, "cuda": torch.version.cuda, "n": n,
           "copy": {"seconds": t_copy, "bytes_per_second": copy_bw}, "cases": []}
    print(f"copy/fp32: {t_copy * 1e6:.1f} us, {copy_bw / 1e9:.1f} GB/s", flush=True)
    del out
    for dt_name, dt, size in (("fp32", torch.float32, 4), ("bf16", torch.bfloat16, 2),
                              ("fp16", torch.float16, 2)):
        x = x32 if dt == torch.float32 else x32.to(dt)
        for qt in ("nf4", "fp4"):
            for block in (64, 4096):
                t = timed(lambda: F.quantize_4bit(x, blocksize=block, quant_type=qt,
                                                  compress_statistics=False), a.reps)
                bw = n * (size + 0.5 + 4.0 / block) / t
                res["cases"].append({"name": f"quant/bnb4/{dt_name}/{qt}/b{block}", "seconds": t,
                                     "bytes_per_second": bw, "vs_copy": bw / copy_bw})
                print(f"quant/bnb4/{dt_name}/{qt}/b{block}: {t * 1e6:.1f} us, "
                      f"{bw / 1e9:.1f} GB/s, {bw / copy_bw:.3f} of copy", flush=True)
        del x
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
