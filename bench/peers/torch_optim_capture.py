#!/usr/bin/env python3
"""torch.optim.Adam/AdamW/SGD on the GPU — fused=True, foreach=True and foreach=False — inputs
and results as .npy cases (the layout of bnb_optim_capture.py: params0, grads [steps, n], params,
state1 = exp_avg / momentum_buffer, state2 = exp_avg_sq, case.json naming the exmy profile that
models the kernels), and the fp32 powf(beta, t) the fused kernel's bias corrections use, for a
grid of betas and steps (powf.npy: [betas, steps] <f4, betas.npy, steps t = 1..T).

    bench/peers/torch_optim_capture.py OUTDIR [--size golden|full]
"""
import json, os, sys
import numpy as np
import torch

out = sys.argv[1]
size = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--size" else "full"
N = 20001 if size == "full" else 4501
STEPS = 5 if size == "full" else 3
DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


PROFILE = {"fused": "torch-cuda-fused", "foreach": "torch-cuda-foreach", "single": "torch-cuda"}


def run(name, opt, dtype, hyper, specials, seed, n=None, mode="fused"):
    N = n or globals()["N"]
    rng = np.random.default_rng(seed)
    p0 = rng.normal(0.0, 1.0, size=N).astype(np.float32)
    g = rng.normal(0.0, 1e-2, size=(STEPS, N)).astype(np.float32)
    for t in range(STEPS):
        idx = rng.choice(N, size=48, replace=False)
        g[t, idx[:16]] *= 1e5
        g[t, idx[16:32]] *= 1e-28
        g[t, idx[32:48]] = 0.0
    if specials:
        idx = rng.choice(N, size=12, replace=False)
        g[2, idx[:4]] = np.inf
        g[2, idx[4:8]] = -np.inf
        g[2, idx[8:]] = np.nan
    dt = DT[dtype]
    p0 = torch.from_numpy(p0).to(dt).float().numpy()
    g = torch.from_numpy(g).to(dt).float().numpy()
    p = torch.nn.Parameter(torch.from_numpy(p0).to(dt).cuda())
    kw = {"fused": True} if mode == "fused" else {"foreach": mode == "foreach"}
    if opt == "sgd":
        o = torch.optim.SGD([p], lr=hyper["lr"], momentum=hyper["momentum"],
                            weight_decay=hyper["wd"], nesterov=hyper.get("nesterov", False),
                            dampening=hyper.get("dampening", 0.0), **kw)
    else:
        cls = torch.optim.AdamW if opt == "adamw" else torch.optim.Adam
        o = cls([p], lr=hyper["lr"], betas=(hyper["beta1"], hyper["beta2"]), eps=hyper["eps"],
                weight_decay=hyper["wd"], **kw)
    try:
        for t in range(STEPS):
            p.grad = torch.from_numpy(g[t]).to(dt).cuda()
            o.step()
        torch.cuda.synchronize()
    except (RuntimeError, ValueError) as e:  # a combination torch does not implement
        print(name, "skipped:", e, flush=True)
        return
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    st = o.state[p]
    np.save(os.path.join(d, "params0.npy"), p0)
    np.save(os.path.join(d, "grads.npy"), g)
    np.save(os.path.join(d, "params.npy"), p.detach().float().cpu().numpy())
    if opt == "sgd":
        if st.get("momentum_buffer") is not None:  # momentum 0 keeps no buffer
            np.save(os.path.join(d, "state1.npy"), st["momentum_buffer"].float().cpu().numpy())
    else:
        np.save(os.path.join(d, "state1.npy"), st["exp_avg"].float().cpu().numpy())
        np.save(os.path.join(d, "state2.npy"), st["exp_avg_sq"].float().cpu().numpy())
    json.dump({"optimizer": opt, "dtype": dtype, "n": N, "steps": STEPS, "hyper": hyper,
               "specials": specials, "seed": seed, "mode": mode,
               "profile": PROFILE[mode],
               "torch": torch.__version__,
               "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(),
               "command": "bench/peers/torch_optim_capture.py OUT --size " + size},
              open(os.path.join(d, "case.json"), "w"), indent=1)
    print(name, "ok", flush=True)


H1 = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "wd": 1e-2}
H2 = {"lr": 3e-4, "beta1": 0.4, "beta2": 0.95, "eps": 1e-6, "wd": 0.1}
SGD = {"lr": 1e-2, "momentum": 0.9, "wd": 1e-2}
seed = 0
for dt in ("fp32", "bf16", "fp16"):
    for opt in ("adamw", "adam"):
        for hn, h in (("h1", H1), ("h2", H2)):
            seed += 1
            run(f"{opt}-fused-{dt}-{hn}", opt, dt, h, False, seed)
    seed += 1
    run(f"adamw-fused-{dt}-specials", "adamw", dt, H1, True, seed)
    # The vectorised path (n % 4 == 0) and several 65536-element chunks.
    for opt in ("adam", "adamw"):
        for n in ((20000, 150000, 150001) if size == "full" else (4500,)):
            seed += 1
            run(f"{opt}-fused-{dt}-n{n}", opt, dt, H1, False, seed, n)
    # SGD(fused=True)
    for hn, h in (("m", SGD), ("nomom", dict(SGD, momentum=0.0)), ("nowd", dict(SGD, wd=0.0)),
                  ("nesterov", dict(SGD, nesterov=True)), ("damp", dict(SGD, dampening=0.3)),
                  ("big", dict(SGD, lr=0.7, momentum=0.99, wd=0.3))):
        seed += 1
        run(f"sgd-fused-{dt}-{hn}", "sgd", dt, h, False, seed)
    seed += 1
    run(f"sgd-fused-{dt}-n{N - 1}", "sgd", dt, SGD, True, seed, N - 1)
    # The foreach=True (CUDA default) and foreach=False kernels.
    for mode in ("foreach", "single"):
        for opt in ("adamw", "adam"):
            seed += 1
            run(f"{opt}-{mode}-{dt}", opt, dt, H1, False, seed, mode=mode)
        seed += 1
        run(f"adamw-{mode}-{dt}-specials", "adamw", dt, H1, True, seed, mode=mode)
        seed += 1
        run(f"sgd-{mode}-{dt}", "sgd", dt, SGD, False, seed, mode=mode)
        for hn, h in (("nesterov", dict(SGD, nesterov=True)), ("damp", dict(SGD, dampening=0.3))):
            seed += 1
            run(f"sgd-{mode}-{dt}-{hn}", "sgd", dt, h, True, seed, mode=mode)
# powf(beta, t) in fp32 on the GPU (the fused kernel's pow_ on floats is CUDA's powf).
betas = np.array([0.4, 0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9995, 0.9999],
                 dtype=np.float32)
T = 100000 if size == "full" else 1000
steps = torch.arange(1, T + 1, device="cuda", dtype=torch.float32)
pw = torch.pow(torch.from_numpy(betas).cuda()[:, None], steps[None, :]).cpu().numpy()
np.save(os.path.join(out, "powf.npy"), pw)
np.save(os.path.join(out, "betas.npy"), betas)
print("powf grid", pw.shape, flush=True)
