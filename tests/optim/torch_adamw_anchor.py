#!/usr/bin/env python3
"""Times the benchmark anchor alone: torch.optim.AdamW(fused=True) on 64M fp32 parameters (the
same setup as the anchor in torch_crosscheck.py), for runs that need only the ratio denominator."""
import torch

n = 1 << 26
p = torch.nn.Parameter(torch.rand(n, device="cuda") + 0.5)
p.grad = torch.randn(n, device="cuda") * 1e-3
opt = torch.optim.AdamW([p], lr=1e-3, weight_decay=0.01, fused=True)
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
ms = a.elapsed_time(b) / iters
print(f"ANCHOR torch AdamW fused n={n}: {ms * 1e3:.1f} us/step, "
      f"{28 * n / (ms * 1e-3) / 1e12:.3f} TB/s at 28 B/param")
