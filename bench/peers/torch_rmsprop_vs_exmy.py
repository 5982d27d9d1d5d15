#!/usr/bin/env python3
"""torch.optim.RMSprop against `exmy step --optimizer rmsprop` (docs/SEMANTICS.md 9.2.1), bit for
bit, on the same inputs: torch on the CPU (foreach=False) and on CUDA (foreach=False and
foreach=True) against exmy's --compat torch-cpu / torch-cuda / torch-cuda-foreach, exmy on its
CPU engine and (with --exmy-device cuda) its GPU kernels; fp32/bf16/fp16 parameters; the defaults,
centered, momentum with weight decay, and centered with momentum and alpha 0.3; 3 steps with one
heavy-tailed gradient per step (Student t, 2 degrees of freedom, 10% exact zeros); sizes 1,000 and
50,003 (odd: vectorised kernels' tails). Also reports whether torch's foreach=True and
foreach=False agree on CUDA (the section says they do).

usage: torch_rmsprop_vs_exmy.py --exmy build/cli/exmy --out DIR [--exmy-device cpu|cuda]
       [--seed S] [--quick]
Writes DIR/summary.json and DIR/summary.md (one row per case: elements differing in p and in each
state, NaNs compared as a class, and the first differing element with its operands); exit 0 when
no bit differs, 1 when any does, 2 on a harness error. Needs torch 2.11 (CUDA build for the CUDA
rows; without a GPU only the CPU rows run, said in the summary) and numpy.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
CONFIGS = {
    # name: (torch kwargs, exmy args)
    "defaults": (dict(lr=1e-2, alpha=0.99, eps=1e-8), "--lr 1e-2 --alpha 0.99 --eps 1e-8"),
    "centered": (dict(lr=1e-2, alpha=0.99, eps=1e-8, centered=True),
                 "--lr 1e-2 --alpha 0.99 --eps 1e-8 --centered"),
    "mom-wd": (dict(lr=0.05, alpha=0.9, eps=1e-6, weight_decay=0.01, momentum=0.9),
               "--lr 0.05 --alpha 0.9 --eps 1e-6 --wd 0.01 --momentum 0.9"),
    "centered-mom-a0.3": (dict(lr=0.1, alpha=0.3, eps=1e-8, momentum=0.5, centered=True),
                          "--lr 0.1 --alpha 0.3 --eps 1e-8 --momentum 0.5 --centered"),
}
STATES = ["square_avg", "momentum_buffer", "grad_avg"]


def bits(t):
    a = t.detach().float().cpu().numpy().astype(np.float32)
    return a.view(np.uint32)


def differ(a, b):
    """Indices where fp32 bit patterns differ (any two NaNs agree)."""
    na = (a & 0x7FFFFFFF) > 0x7F800000
    nb = (b & 0x7FFFFFFF) > 0x7F800000
    return np.nonzero((a != b) & ~(na & nb))[0]


def torch_run(p0, grads, dtype, device, foreach, kw):
    # a copy: torch.from_numpy(p0).to(cpu, float32) would be p0's own memory, and the CPU step
    # would change the array exmy reads next (the H200 run of 2026-12-01, fp32 CPU rows)
    p = torch.nn.Parameter(torch.tensor(p0, dtype=torch.float32).to(device=device, dtype=dtype))
    opt = torch.optim.RMSprop([p], foreach=foreach, **kw)
    for g in grads:
        p.grad = torch.from_numpy(g).to(device=device, dtype=dtype)
        opt.step()
    st = opt.state[p]
    return {"p": bits(p), **{k: bits(st[k]) for k in STATES if k in st}}


def exmy_run(args, work, p0, grads, dname, profile, cfg):
    np.save(os.path.join(work, "p.npy"), p0)
    np.save(os.path.join(work, "g.npy"), np.stack(grads))
    out = os.path.join(work, "s")
    cmd = (f"{args.exmy} step --optimizer rmsprop --params {work}/p.npy --grads {work}/g.npy "
           f"--steps {len(grads)} --param-dtype {dname} --compat {profile} {cfg} "
           f"--device {args.exmy_device} --quiet --out {out}")
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{cmd}: exit {r.returncode}: {r.stderr.strip()}")
    res = {"p": np.load(os.path.join(out, "params.npy")).astype(np.float32).view(np.uint32)}
    for k in STATES:
        f = os.path.join(out, k + ".npy")
        if os.path.exists(f):
            res[k] = np.load(f).astype(np.float32).view(np.uint32)
    return res, cmd


def inputs(rng, n, steps, dtype):
    p = (rng.standard_normal(n) * 0.5).astype(np.float32)
    gs = []
    for _ in range(steps):
        g = (rng.standard_t(2, n) * 1e-2).astype(np.float32)
        g[rng.random(n) < 0.1] = 0.0
        gs.append(g)
    # values of the dtype, as the CLI requires and torch holds them
    cast = lambda a: torch.from_numpy(a).to(dtype).float().numpy()
    return cast(p), [cast(g) for g in gs]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--exmy-device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--quick", action="store_true", help="size 1,000 only")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cuda = torch.cuda.is_available()
    rng = np.random.default_rng(args.seed)
    rows, failures = [], 0
    # (torch device, foreach, exmy profile)
    kernels = [("cpu", False, "torch-cpu")]
    if cuda:
        kernels += [("cuda", False, "torch-cuda"), ("cuda", True, "torch-cuda-foreach")]
    with tempfile.TemporaryDirectory() as work:
        for n in ([1000] if args.quick else [1000, 50003]):
            for dname, dtype in DT.items():
                p0, grads = inputs(rng, n, 3, dtype)
                for cname, (kw, cfg) in CONFIGS.items():
                    torch_by_foreach = {}
                    for device, foreach, profile in kernels:
                        t = torch_run(p0, grads, dtype, device, foreach, kw)
                        if device == "cuda":
                            torch_by_foreach[foreach] = t
                        e, cmd = exmy_run(args, work, p0, grads, dname, profile, cfg)
                        row = {"n": n, "dtype": dname, "config": cname, "torch": device,
                               "foreach": foreach, "profile": profile,
                               "exmy_device": args.exmy_device, "differing": {}}
                        for k, tb in t.items():
                            if k not in e:
                                row["differing"][k] = "missing in exmy"
                                failures += 1
                                continue
                            d = differ(tb, e[k])
                            row["differing"][k] = int(d.size)
                            if d.size:
                                failures += 1
                                i = int(d[0])
                                row.setdefault("first", {})[k] = {
                                    "index": i, "torch": f"0x{tb[i]:08x}", "exmy": f"0x{e[k][i]:08x}",
                                    "p0": f"0x{p0.view(np.uint32)[i]:08x}",
                                    "g": [f"0x{g.view(np.uint32)[i]:08x}" for g in grads]}
                        row["command"] = cmd
                        rows.append(row)
                    if len(torch_by_foreach) == 2:
                        same = all(differ(torch_by_foreach[False][k], torch_by_foreach[True][k]).size == 0
                                   for k in torch_by_foreach[False])
                        rows.append({"n": n, "dtype": dname, "config": cname,
                                     "torch_foreach_equals_single_tensor": same})
    summary = {"torch": torch.__version__, "cuda": cuda, "seed": args.seed,
               "cases": len(rows), "differing_cases": failures, "rows": rows}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(f"# torch.optim.RMSprop vs exmy (torch {torch.__version__}, CUDA {cuda}, "
                f"seed {args.seed})\n\n| n | dtype | config | torch | foreach | profile | differing |\n"
                "|---|---|---|---|---|---|---|\n")
        for r in rows:
            if "differing" in r:
                f.write(f"| {r['n']} | {r['dtype']} | {r['config']} | {r['torch']} | {r['foreach']} "
                        f"| {r['profile']} | {r['differing']} |\n")
            else:
                f.write(f"| {r['n']} | {r['dtype']} | {r['config']} | cuda | both | "
                        f"foreach == single-tensor: {r['torch_foreach_equals_single_tensor']} | |\n")
        if not cuda:
            f.write("\nNo GPU: the torch-cuda and torch-cuda-foreach rows did not run.\n")
    print(f"{len(rows)} rows, {failures} differing arrays; {args.out}/summary.md")
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as ex:  # a harness error is not a result
        print(f"torch_rmsprop_vs_exmy: {ex}", file=sys.stderr)
        sys.exit(2)
