#!/usr/bin/env python3
"""Runs bitsandbytes' 8-bit optimizers on the GPU and saves inputs and results as .npy cases.

    bench/peers/bnb_optim_capture.py OUTDIR [--size golden|full]

Each case is a folder OUTDIR/<name>/ with params0.npy (<f4, the parameter values), grads.npy
([steps, n] <f4, the per-step gradients' values), case.json (optimizer, hyperparameters, dtype,
steps, versions, device) and what bitsandbytes left after the steps: params.npy (<f4 values),
state1.npy / state2.npy (uint8 codes, or <f4 for the 32-bit fallback below 4096 elements),
absmax1.npy / absmax2.npy. `exmy step ... --compat bnb-cuda` must write the same files
(bench/peers/optim_peer_diff.py compares them; golden/peers/bnb-cuda holds the golden-size cases
for CI). The gradients mix N(0, 1e-2) with huge (x1e5), tiny (x1e-28: flushed to zero by the
kernels' FTZ arithmetic) and zero entries; the `specials` cases add +inf, -inf and NaN gradients
at step 2. Element counts are odd, so the last 8-bit block is partial.
"""
import json, os, sys
import numpy as np
import torch
import bitsandbytes as bnb

out = sys.argv[1]
size = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--size" else "full"
N_BIG = 20001 if size == "full" else 4501
N_SMALL = 1001 if size == "full" else 301
STEPS = 5 if size == "full" else 3
DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def grads(rng, steps, n, specials):
    g = rng.normal(0.0, 1e-2, size=(steps, n)).astype(np.float32)
    for t in range(steps):
        idx = rng.choice(n, size=48, replace=False)
        g[t, idx[:16]] *= 1e5
        g[t, idx[16:32]] *= 1e-28
        g[t, idx[32:48]] = 0.0
    if specials and steps > 2:
        idx = rng.choice(n, size=12, replace=False)
        g[2, idx[:4]] = np.inf
        g[2, idx[4:8]] = -np.inf
        g[2, idx[8:]] = np.nan
    return g


def run(name, opt_name, dtype, n, hyper, specials=False, seed=0):
    rng = np.random.default_rng(seed)
    p0 = rng.normal(0.0, 1.0, size=n).astype(np.float32)
    g = grads(rng, STEPS, n, specials)
    dt = DT[dtype]
    # The values the 16-bit tensors hold, as fp32 (what exmy reads).
    p0 = torch.from_numpy(p0).to(dt).float().numpy()
    g = torch.from_numpy(g).to(dt).float().numpy()
    p = torch.nn.Parameter(torch.from_numpy(p0).to(dt).cuda())
    if opt_name in ("adamw8bit", "adam8bit"):
        cls = bnb.optim.AdamW8bit if opt_name == "adamw8bit" else bnb.optim.Adam8bit
        opt = cls([p], lr=hyper["lr"], betas=(hyper["beta1"], hyper["beta2"]), eps=hyper["eps"],
                  weight_decay=hyper["wd"])
    else:
        opt = bnb.optim.SGD8bit([p], lr=hyper["lr"], momentum=hyper["momentum"],
                                weight_decay=hyper["wd"])
    try:
        for t in range(STEPS):
            p.grad = torch.from_numpy(g[t]).to(dt).cuda()
            opt.step()
    except ValueError as e:  # a combination bitsandbytes does not implement
        print(name, "skipped:", e, flush=True)
        return
    torch.cuda.synchronize()
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "params0.npy"), p0)
    np.save(os.path.join(d, "grads.npy"), g)
    np.save(os.path.join(d, "params.npy"), p.detach().float().cpu().numpy())
    st = opt.state[p]
    for k in ("state1", "state2", "absmax1", "absmax2"):
        if k in st:
            np.save(os.path.join(d, k + ".npy"), st[k].cpu().numpy())
    meta = {"optimizer": opt_name, "dtype": dtype, "n": n, "steps": STEPS, "hyper": hyper,
            "specials": specials, "seed": seed, "bitsandbytes": bnb.__version__,
            "profile": "bnb-cuda", "torch": torch.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(), "state_keys": sorted(st.keys()),
            "command": "bench/peers/bnb_optim_capture.py OUT --size " + size}
    json.dump(meta, open(os.path.join(d, "case.json"), "w"), indent=1)
    print(name, "ok", flush=True)


adamw = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "wd": 1e-2}
adam = dict(adamw, wd=0.0)
adamw2 = {"lr": 3e-3, "beta1": 0.8, "beta2": 0.95, "eps": 1e-6, "wd": 0.1}
mom = {"lr": 1e-2, "momentum": 0.9, "wd": 0.0}
momwd = {"lr": 1e-2, "momentum": 0.9, "wd": 1e-2}
for dt in ("fp32", "bf16", "fp16"):
    run(f"adamw8bit-{dt}", "adamw8bit", dt, N_BIG, adamw, seed=1)
    run(f"adamw8bit-{dt}-specials", "adamw8bit", dt, N_BIG, adamw, specials=True, seed=2)
    run(f"adam8bit-{dt}", "adam8bit", dt, N_BIG, adam, seed=3)
    run(f"adamw8bit-{dt}-hyper2", "adamw8bit", dt, N_BIG, adamw2, seed=4)
    run(f"adamw8bit-{dt}-small", "adamw8bit", dt, N_SMALL, adamw, specials=True, seed=5)
    run(f"momentum8bit-{dt}", "momentum8bit", dt, N_BIG, mom, seed=6)
    run(f"momentum8bit-{dt}-wd", "momentum8bit", dt, N_BIG, momwd, seed=7)
    run(f"momentum8bit-{dt}-small", "momentum8bit", dt, N_SMALL, momwd, seed=8)
