#!/usr/bin/env python3
"""One optimizer step of torch.optim.Adam/AdamW/SGD on CUDA, for reading the machine code of the
kernels it launches (run under ncu: bench/peers/torch_cuda_sass.sh). Which instructions the
kernels execute (FFMA where the source writes a multiply and an add, MUFU, the division
sequence) is what exmy's torch-cuda profiles model (docs/SEMANTICS.md 9.2).

usage: torch_cuda_optim_kernels.py MODE DTYPE OPT   MODE: single|foreach|fused  DTYPE: fp32|bf16|fp16
"""
import sys

import torch

mode, dtype, opt = sys.argv[1], sys.argv[2], sys.argv[3]
dt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
p = torch.nn.Parameter(torch.randn(4096, device="cuda").to(dt))
kw = {"foreach": mode == "foreach"} if mode != "fused" else {"fused": True}
if opt == "sgd":
    o = torch.optim.SGD([p], lr=1e-2, momentum=0.9, weight_decay=1e-2, **kw)
else:
    cls = torch.optim.AdamW if opt == "adamw" else torch.optim.Adam
    o = cls([p], lr=1e-3, weight_decay=1e-2, **kw)
for _ in range(2):  # SGD's momentum buffer is created on the first step, updated on the second
    p.grad = torch.randn_like(p) * 1e-2
    o.step()
torch.cuda.synchronize()
