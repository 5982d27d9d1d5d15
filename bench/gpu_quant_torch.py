"""Torch baselines for bench_gpu_quant, measured in the same device session: a device copy, the
eager tensor-wise amax + scale + fp8 cast path and the eager row-wise int8 quantization of fp16
(SwitchBack's reference formulation). Prints JSON to stdout. Times are CUDA-event medians over
repeated runs after warm-up, on the same sizes and the same kind of random data as the C++ bench.
"""
import json
import sys

import torch

N = 1 << 28
COLS = 4096
REPS = 10


def median_ms(fn):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(N, device=dev, generator=g, dtype=torch.float32) * 8
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "elements": N}

    y = torch.empty_like(x)
    ms = median_ms(lambda: y.copy_(x))
    out["copy_fp32"] = {"ms": ms, "bytes_per_elem": 8, "tbps": 8 * N / ms / 1e9}

    # torch's own element-wise cast (one kernel): the anchor for exmy's fp32 -> e4m3fn cast.
    ms = median_ms(lambda: x.to(torch.float8_e4m3fn))
    out["cast_fp32_e4m3fn"] = {"ms": ms, "bytes_per_elem": 5, "tbps": 5 * N / ms / 1e9}

    fmax = torch.finfo(torch.float8_e4m3fn).max

    def tensorwise():
        amax = x.abs().amax()
        scale = fmax / amax
        return (x * scale).clamp(-fmax, fmax).to(torch.float8_e4m3fn)

    ms = median_ms(tensorwise)
    out["tensorwise_fp8"] = {"ms": ms, "bytes_per_elem": 5, "tbps": 5 * N / ms / 1e9}

    xh = x.to(torch.float16).view(N // COLS, COLS)

    def rowwise():
        absmax = xh.abs().amax(dim=1, keepdim=True)
        return torch.round(xh * (127.0 / absmax)).to(torch.int8)

    ms = median_ms(rowwise)
    out["rowwise_int8_fp16"] = {"ms": ms, "bytes_per_elem": 3, "tbps": 3 * N / ms / 1e9}

    # torchao 0.18 (carried as a wheel), eager: MX to_mx and NVFP4 nvfp4_quantize on the same
    # fp32 data viewed as rows of 4096; the anchors of exmy's mx / nvfp4 schemes.
    try:
        import torchao
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.mx_tensor import to_mx
        from torchao.prototype.mx_formats.nvfp4_tensor import (nvfp4_quantize,
                                                               per_tensor_amax_to_scale)
        out["torchao"] = torchao.__version__
        xm = x.view(N // COLS, COLS)
        for mode in ("FLOOR", "RCEIL"):
            m = getattr(ScaleCalculationMode, mode)
            ms = median_ms(lambda: to_mx(xm, torch.float8_e4m3fn, 32, m))
            out[f"torchao_mx_e4m3fn_{mode.lower()}"] = {"ms": ms, "bytes_per_elem": 5 + 1 / 32,
                                                        "tbps": (5 + 1 / 32) * N / ms / 1e9}
        ms = median_ms(lambda: nvfp4_quantize(xm, 16, None))
        out["torchao_nvfp4"] = {"ms": ms, "bytes_per_elem": 4.5625, "tbps": 4.5625 * N / ms / 1e9}
        ms = median_ms(lambda: nvfp4_quantize(xm, 16, per_tensor_amax_to_scale(xm.abs().max())))
        out["torchao_nvfp4_2level"] = {"ms": ms, "bytes_per_elem": 4.5625,
                                       "tbps": 4.5625 * N / ms / 1e9}
    except Exception as e:  # torchao not carried: the other anchors stand
        out["torchao_error"] = repr(e)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
