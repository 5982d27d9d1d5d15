#!/usr/bin/env python3
"""Anchors for exmy's 8-bit AdamW kernel, timed in one process on the GPU: bitsandbytes'
AdamW8bit step (block-wise, B = 256, fp32 parameters) and torch.optim.AdamW(fused=True), 64M
(2^26) parameters (fp32, or bf16 with --bf16), mean of 50 steps after 5 warm-up steps by CUDA events. Prints one line each.
The Python call overhead of a bitsandbytes step is part of its time (~20 us against ~1 ms)."""
import os
import sys

import torch
import bitsandbytes as bnb

# The step timing of the torch anchor (tests/optim/torch_adamw_anchor.py), shared.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "optim"))
from torch_adamw_anchor import step_ms  # noqa: E402


n = 1 << 26
# --bf16: bf16 parameters and gradients (bitsandbytes' 8-bit kernels read them in that dtype).
dt = torch.bfloat16 if "--bf16" in sys.argv else torch.float32
for label, make in (("bitsandbytes AdamW8bit", lambda ps: bnb.optim.AdamW8bit(ps, lr=1e-3, weight_decay=0.01)),
                    ("torch AdamW fused", lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, fused=True))):
    p = torch.nn.Parameter((torch.rand(n, device="cuda") + 0.5).to(dt))
    p.grad = (torch.randn(n, device="cuda") * 1e-3).to(dt)
    ms = step_ms(make([p]))
    print(f"ANCHOR {label} {str(dt)[6:]} n={n}: {ms * 1e3:.1f} us/step", flush=True)
    del p
    torch.cuda.empty_cache()
print(f"versions: bitsandbytes {bnb.__version__}, torch {torch.__version__}, "
      f"{torch.cuda.get_device_name()}")
