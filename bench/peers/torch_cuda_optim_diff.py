#!/usr/bin/env python3
"""Differential harness: torch.optim Adam/AdamW/SGD on CUDA (foreach=False and foreach=True) and
on the CPU against `exmy step --compat torch-cuda|torch-cuda-foreach|torch-cpu`, on the same
inputs, for fp32/bf16/fp16 parameters; exmy on its CPU engine and on its GPU kernels.

usage: torch_cuda_optim_diff.py EXMY OUTDIR
Writes OUTDIR/torch_cuda_optim_diff.csv and .md: per (optimizer, hyperparameters, dtype, torch
kernels, exmy profile, exmy engine) the elements of the parameters and of each state that differ
from torch in any bit (NaNs compared as a class), the largest difference in ulps, and the first
differing element with its operands in hex. 5 steps of 50,003 elements (odd: the vectorised
kernels' tails), gradients N(0, 1e-2) with huge, tiny, zero and (in the `specials` rows) inf/NaN
entries.
"""
import csv
import os
import subprocess
import sys

import numpy as np
import torch

EXMY, OUT = sys.argv[1], sys.argv[2]
WORK = os.path.join(OUT, "work")
os.makedirs(WORK, exist_ok=True)
N, K = 50003, 5
DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}

HYPER = {
    # name: (optimizer, torch kwargs, exmy args)
    "adamw": ("adamw", dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2),
              "--lr 1e-3 --beta1 0.9 --beta2 0.999 --eps 1e-8 --wd 1e-2"),
    "adamw-b0.4": ("adamw", dict(lr=3e-4, betas=(0.4, 0.95), eps=1e-6, weight_decay=0.1),
                   "--lr 3e-4 --beta1 0.4 --beta2 0.95 --eps 1e-6 --wd 0.1"),
    "adam-l2": ("adam", dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2),
                "--lr 1e-3 --beta1 0.9 --beta2 0.999 --eps 1e-8 --wd 1e-2"),
    "sgd": ("sgd", dict(lr=1e-2, momentum=0.9, weight_decay=1e-2),
            "--lr 1e-2 --momentum 0.9 --wd 1e-2"),
    "sgd-nesterov": ("sgd", dict(lr=1e-2, momentum=0.9, nesterov=True),
                     "--lr 1e-2 --momentum 0.9 --nesterov"),
    "sgd-damp": ("sgd", dict(lr=3e-2, momentum=0.8, dampening=0.1, weight_decay=1e-3),
                 "--lr 3e-2 --momentum 0.8 --dampening 0.1 --wd 1e-3"),
}


def inputs(specials):
    rng = np.random.default_rng(20261124)
    p = rng.standard_normal(N).astype(np.float32)
    g = (rng.standard_normal((K, N)) * 1e-2).astype(np.float32)
    g[:, :16] *= 1e5          # huge
    g[:, 16:32] *= 1e-28      # tiny (fp32 subnormal squares)
    g[:, 32:48] = 0.0
    if specials:
        g[2, 100:104] = [np.inf, -np.inf, np.nan, np.inf]
    return p, g


def rounded(a, dt):
    return torch.tensor(a).to(DT[dt]).float().numpy()


def torch_run(opt, kw, dt, device, foreach, p0, g):
    p = torch.nn.Parameter(torch.tensor(p0, device=device).to(DT[dt]))
    cls = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam, "sgd": torch.optim.SGD}[opt]
    o = cls([p], foreach=foreach, **kw)
    for k in range(K):
        p.grad = torch.tensor(g[k], device=device).to(DT[dt])
        o.step()
    st = o.state[p]
    names = ["exp_avg", "exp_avg_sq"] if opt != "sgd" else ["momentum_buffer"]
    return [p.detach().float().cpu().numpy()] + [st[n].float().cpu().numpy() for n in names]


def exmy_run(tag, opt, args, dt, profile, device, p0, g):
    d = os.path.join(WORK, tag)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "p.npy"), rounded(p0, dt))
    np.save(os.path.join(d, "g.npy"), g)
    cmd = [EXMY, "step", "--optimizer", opt, "--params", os.path.join(d, "p.npy"), "--grads",
           os.path.join(d, "g.npy"), "--steps", str(K), "--out", os.path.join(d, "out"),
           "--param-dtype", dt, "--device", device] + args.split()
    if profile:
        cmd += ["--compat", profile]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    files = ["params.npy", "state1.npy", "state2.npy"] if opt != "sgd" else ["params.npy", "state1.npy"]
    return [np.load(os.path.join(d, "out", f)).astype(np.float32) for f in files]


def ulps(a, b):
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def diff(ours, theirs):
    both_nan = np.isnan(ours) & np.isnan(theirs)
    d = np.where(both_nan, 0, ulps(ours, theirs))
    bad = np.nonzero(d)[0]
    first = ""
    if bad.size:
        i = int(bad[0])
        first = f"i={i} exmy=0x{ours.view(np.uint32)[i]:08x} torch=0x{theirs.view(np.uint32)[i]:08x}"
    return int(bad.size), int(d.max()) if d.size else 0, first


def main():
    print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
    rows = []
    for specials in (False, True):
        p0, g = inputs(specials)
        for hname, (opt, kw, args) in HYPER.items():
            for dt in ("fp32", "bf16", "fp16"):
                runs = [("cuda", False, "torch-cuda"), ("cuda", True, "torch-cuda-foreach"),
                        ("cpu", False, "torch-cpu")]
                for tdev, foreach, profile in runs:
                    theirs = torch_run(opt, kw, dt, tdev, foreach, p0, g)
                    tkern = f"{tdev}{'-foreach' if foreach else ''}"
                    for prof in ([profile, None] if profile != "torch-cpu" else [profile]):
                        for engine in ("cpu", "cuda"):
                            tag = f"{hname}-{dt}-{tkern}-{prof}-{engine}-{int(specials)}"
                            ours = exmy_run(tag, opt, args, dt, prof, engine, p0, g)
                            cells = [diff(o, t) for o, t in zip(ours, theirs)]
                            row = dict(inputs="specials" if specials else "finite",
                                       hyper=hname, dtype=dt, torch=tkern,
                                       exmy_profile=prof or "default", exmy_engine=engine)
                            for name, (n, mu, first) in zip(["params", "state1", "state2"], cells):
                                row[f"{name}_differ"] = n
                                row[f"{name}_max_ulp"] = mu
                                row[f"{name}_first"] = first
                            rows.append(row)
                            print(", ".join(f"{k}={v}" for k, v in row.items() if not k.endswith("first")))
    keys = sorted({k for r in rows for k in r}, key=lambda k: list(rows[0]).index(k) if k in rows[0] else 99)
    with open(os.path.join(OUT, "torch_cuda_optim_diff.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(OUT, "torch_cuda_optim_diff.md"), "w") as f:
        f.write(f"torch {torch.__version__} (CUDA {torch.version.cuda}), {torch.cuda.get_device_name(0)}; "
                f"{N} elements, {K} steps\n\n")
        f.write("| inputs | hyper | dtype | torch | exmy profile | engine | params | state1 | state2 |\n")
        f.write("|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            cell = lambda n: (f"{r[n + '_differ']} (≤{r[n + '_max_ulp']} ulp)" if r.get(n + "_differ") else
                              ("0" if n + "_differ" in r else "–"))
            f.write(f"| {r['inputs']} | {r['hyper']} | {r['dtype']} | {r['torch']} | {r['exmy_profile']} | "
                    f"{r['exmy_engine']} | {cell('params')} | {cell('state1')} | {cell('state2')} |\n")


main()
