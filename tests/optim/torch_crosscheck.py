#!/usr/bin/env python3
"""Cross-check `exmy step` against PyTorch on the device machine, and time the torch anchor.

usage: torch_crosscheck.py EXMY_TEST_OPTIM OUT_DIR
EXMY_TEST_OPTIM is the exmy_test_optim binary; its hidden "[.torch-crosscheck]" case runs the
reference steps (the same calls as `exmy step`) on the files this script writes.
Prints, per case, how many elements of the parameter and of each state differ in any bit from
torch (NaN-free data), the largest difference in ulps, and torch.optim.AdamW(fused=True)'s step
time on 64M fp32 parameters (the benchmark anchor, 28 bytes moved per parameter).
"""
import os
import subprocess
import sys

import numpy as np
import torch
from torch_adamw_anchor import anchor_line

EXMY, OUT = sys.argv[1], sys.argv[2]
WORK = os.path.join(OUT, "crosscheck")
os.makedirs(WORK, exist_ok=True)
rng = np.random.default_rng(20261121)
N, K = 10007, 5


def rounded_values(a, dtype):
    return torch.tensor(a, dtype=torch.float32).to(dtype).float().numpy()


def ulps(a, b):
    ia = a.astype(np.float32).view(np.int32).astype(np.int64)
    ib = b.astype(np.float32).view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def compare(name, ours, theirs):
    d = ulps(ours, theirs)
    bad = np.nonzero(d)[0]
    # ATen's vectorised loops leave the last n mod (2 * vector width) elements to a scalar loop
    # (at most 64 here): differences only there point at the scalar loop's arithmetic.
    body = int((bad < d.size - 64).sum())
    first = int(bad[0]) if bad.size else -1
    print(f"{name:42s} differ={bad.size:6d}/{d.size}  max_ulp={int(d.max())}  "
          f"outside_last64={body} first={first}")


def torch_run(make_opt, device, dtype, p0, grads):
    p = torch.nn.Parameter(torch.tensor(p0, dtype=torch.float32, device=device).to(dtype))
    opt = make_opt([p])
    for g in grads:
        p.grad = torch.tensor(g, dtype=torch.float32, device=device).to(dtype)
        opt.step()
    st = opt.state[p]
    return p.detach().float().cpu().numpy(), {k: v.float().cpu().numpy() for k, v in st.items()
                                               if torch.is_tensor(v) and v.numel() > 1}


def exmy_run(tag, p0, grads):
    d = os.path.join(WORK, tag)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "p.npy"), p0.astype(np.float32))
    np.save(os.path.join(d, "g.npy"), np.stack(grads).astype(np.float32))
    env = dict(os.environ, EXMY_XCHECK_DIR=d, EXMY_XCHECK_CASE=tag)
    subprocess.run([EXMY, "[.torch-crosscheck]"], check=True, capture_output=True, env=env)
    load = lambda f: np.load(os.path.join(d, f))
    return load("params.npy"), load("state1.npy"), load("state2.npy")


def main():
    print("torch", torch.__version__, "cuda", torch.version.cuda,
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")
    p0 = rng.standard_normal(N).astype(np.float32)
    grads = [(rng.standard_normal(N) * 1e-2).astype(np.float32) for _ in range(K)]
    # (name, driver case, torch device, torch optimizer, dtype). The driver
    # (test_torch_crosscheck_driver.cpp) runs the reference with the same hyperparameters, keyed by
    # the case name.
    cases = [
        ("AdamW cpu (single-tensor) vs default", "adamw", "cpu",
         lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, foreach=False),
         torch.float32),
        ("Adam L2 cpu (single-tensor) vs default", "adam", "cpu",
         lambda ps: torch.optim.Adam(ps, lr=1e-3, weight_decay=0.01, foreach=False),
         torch.float32),
        ("SGD momentum cpu vs default", "sgd", "cpu",
         lambda ps: torch.optim.SGD(ps, lr=1e-2, momentum=0.9, weight_decay=1e-4, foreach=False),
         torch.float32),
        ("AdamW bf16 cpu vs --param-dtype bf16", "adamw_bf16", "cpu",
         lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, foreach=False),
         torch.bfloat16),
        ("AdamW fp16 cpu vs --param-dtype fp16", "adamw_f16", "cpu",
         lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, foreach=False),
         torch.float16),
        ("Adam L2 bf16 cpu vs --param-dtype bf16", "adam_bf16", "cpu",
         lambda ps: torch.optim.Adam(ps, lr=1e-3, weight_decay=0.01, foreach=False),
         torch.bfloat16),
        ("SGD momentum bf16 cpu vs --param-dtype bf16", "sgd_bf16", "cpu",
         lambda ps: torch.optim.SGD(ps, lr=1e-2, momentum=0.9, weight_decay=1e-4, foreach=False),
         torch.bfloat16),
        ("SGD momentum fp16 cpu vs --param-dtype fp16", "sgd_f16", "cpu",
         lambda ps: torch.optim.SGD(ps, lr=1e-2, momentum=0.9, weight_decay=1e-4, foreach=False),
         torch.float16),
    ]
    if torch.cuda.is_available():
        cases += [
            ("AdamW cuda fused vs --variant torch-fused", "adamw_fused", "cuda",
             lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, fused=True),
             torch.float32),
            ("AdamW cuda foreach vs default (info)", "adamw_foreach", "cuda",
             lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, foreach=True),
             torch.float32),
        ]
    # Tiny gradients: sqrt(v)/c is then comparable to eps, so the dtype of `add_(eps)` shows.
    tiny = [(g * 1e-6).astype(np.float32) for g in grads]
    for name, tag, dtype in (("AdamW bf16 tiny grads", "adamw_bf16_tiny", torch.bfloat16),
                             ("AdamW fp16 tiny grads", "adamw_f16_tiny", torch.float16)):
        pp, gg = rounded_values(p0, dtype), [rounded_values(g, dtype) for g in tiny]
        try:
            tp, tst = torch_run(
                lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, foreach=False),
                "cpu", dtype, pp, gg)
        except RuntimeError as e:
            print(f"{name:42s} torch failed: {str(e).splitlines()[0]}")
            continue
        ep, e1, e2 = exmy_run(tag, pp, gg)
        compare(name + " params", ep, tp)
        compare(name + " exp_avg", e1, tst["exp_avg"])
        compare(name + " exp_avg_sq", e2, tst["exp_avg_sq"])

    for name, tag, dev, make, dtype in cases:
        pp = rounded_values(p0, dtype) if dtype != torch.float32 else p0
        gg = [rounded_values(g, dtype) for g in grads] if dtype != torch.float32 else grads
        try:
            tp, tst = torch_run(make, dev, dtype, pp, gg)
        except RuntimeError as e:  # e.g. a dtype this torch build has no CPU kernel for
            print(f"{name:42s} torch failed: {str(e).splitlines()[0]}")
            continue
        ep, e1, e2 = exmy_run(tag, pp, gg)
        compare(name + " params", ep, tp)
        if "exp_avg" in tst:
            compare(name + " exp_avg", e1, tst["exp_avg"])
            compare(name + " exp_avg_sq", e2, tst["exp_avg_sq"])
        if "momentum_buffer" in tst:
            compare(name + " momentum_buffer", e1, tst["momentum_buffer"])

    if torch.cuda.is_available():
        n = 1 << 26
        for label, kw in (("fused", dict(fused=True)), ("foreach", dict(foreach=True))):
            print(anchor_line(label, n, **kw))


main()
