#!/usr/bin/env python3
"""The benchmark anchor: torch.optim.AdamW on n fp32 parameters (fused or foreach), step time
after 5 warm-up steps, mean of 50 steps by CUDA events. Run alone it times the fused anchor at
64M parameters (for device runs that need only the ratio denominator); torch_crosscheck.py
imports anchor_line for its own report."""
import torch


def step_ms(opt):
    """Mean time of opt.step() over 50 steps after 5 warm-up steps, by CUDA events."""
    for _ in range(5):
        opt.step()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    iters = 50
    a.record()
    for _ in range(iters):
        opt.step()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / iters


def adamw_step_ms(n, **kw):
    p = torch.nn.Parameter(torch.rand(n, device="cuda") + 0.5)
    p.grad = torch.randn(n, device="cuda") * 1e-3
    return step_ms(torch.optim.AdamW([p], lr=1e-3, weight_decay=0.01, **kw))


def anchor_line(label, n, **kw):
    ms = adamw_step_ms(n, **kw)
    return (f"ANCHOR torch AdamW {label} n={n}: {ms * 1e3:.1f} us/step, "
            f"{28 * n / (ms * 1e-3) / 1e12:.3f} TB/s at 28 B/param")


if __name__ == "__main__":
    print(anchor_line("fused", 1 << 26, fused=True))
