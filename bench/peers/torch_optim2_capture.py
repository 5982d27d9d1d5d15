#!/usr/bin/env python3
"""torch.optim's second batch on CUDA (issue 33 item 4; docs/SEMANTICS.md 9.2.3-9.2.6): Adagrad,
NAdam, RAdam, Adam/AdamW with amsgrad=True and maximize=True, and Adafactor, foreach=False,
foreach=True and fused=True where torch 2.11 has them, on fp32/bf16/fp16 parameters, heavy-tailed
gradients (Student t, 2 degrees of freedom, x 1e-2, 10% exact zeros) over several steps: the
inputs and every state tensor torch keeps, for exmy's CPU engine to be diffed against afterwards
(no exmy binary here).

    torch_optim2_capture.py --out DIR [--quick]

Writes DIR/<case>.npz (np.savez_compressed: p and each state tensor of torch's state dict as the
dtype's bit patterns, uint32 for fp32 and uint16 for bf16/fp16 tensors; 0-dim ones too) and
DIR/capture.json (torch, CUDA, device, seed, cases with the sha256 of their inputs, torch kwargs
and the exmy options that model them). The inputs are not stored: they are those of
bench/peers/torch_optim_vs_exmy.py (numpy's default_rng from the recorded seed, n and dtype),
regenerated offline by inputs() below and checked against the recorded sha256. The directory
stays under 8 MiB (the size is printed at the end). One progress line per case.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
ALL = ("single", "foreach", "fused")
NOFUSED = ("single", "foreach")

# family, config, torch class, kwargs, exmy optimizer, exmy options, forms, steps, shapes
SHAPES_1D = [(1000,), (4099,)]
CASES = [
    ("adagrad", "defaults", "Adagrad", dict(lr=1e-2), "adagrad", "--lr 1e-2", NOFUSED, 3),
    ("adagrad", "lrdecay-wd-init", "Adagrad",
     dict(lr=5e-2, lr_decay=0.1, weight_decay=0.01, initial_accumulator_value=0.1, eps=1e-6),
     "adagrad", "--lr 5e-2 --lr-decay 0.1 --wd 0.01 --initial-accumulator-value 0.1 --eps 1e-6",
     NOFUSED, 3),
    ("adagrad", "maximize-wd", "Adagrad", dict(lr=0.1, weight_decay=0.1, maximize=True),
     "adagrad", "--lr 0.1 --wd 0.1 --maximize", NOFUSED, 3),
    ("nadam", "defaults", "NAdam", dict(lr=2e-3), "nadam", "--lr 2e-3", NOFUSED, 3),
    ("nadam", "l2-wd", "NAdam", dict(lr=1e-2, weight_decay=0.01), "nadam", "--lr 1e-2 --wd 0.01",
     NOFUSED, 3),
    ("nadam", "decoupled-psi", "NAdam",
     dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=0.1,
          decoupled_weight_decay=True), "nadam",
     "--lr 1e-2 --beta1 0.8 --beta2 0.99 --wd 0.1 --momentum-decay 0.1 --decoupled-wd", NOFUSED, 3),
    ("nadam", "maximize", "NAdam", dict(lr=5e-2, betas=(0.3, 0.6), maximize=True), "nadam",
     "--lr 5e-2 --beta1 0.3 --beta2 0.6 --maximize", NOFUSED, 3),
    ("radam", "defaults-8steps", "RAdam", dict(lr=1e-3), "radam", "--lr 1e-3", NOFUSED, 8),
    ("radam", "l2-wd-b2=0.9", "RAdam", dict(lr=1e-2, betas=(0.9, 0.9), weight_decay=0.01),
     "radam", "--lr 1e-2 --beta2 0.9 --wd 0.01", NOFUSED, 8),
    ("radam", "decoupled-maximize", "RAdam",
     dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1, decoupled_weight_decay=True,
          maximize=True), "radam",
     "--lr 1e-2 --beta1 0.8 --beta2 0.99 --wd 0.1 --decoupled-wd --maximize", NOFUSED, 8),
    ("adam", "amsgrad-l2", "Adam", dict(lr=1e-2, weight_decay=0.01, amsgrad=True), "adam",
     "--lr 1e-2 --wd 0.01 --amsgrad", ALL, 4),
    ("adamw", "amsgrad", "AdamW", dict(lr=1e-3, weight_decay=0.01, amsgrad=True), "adamw",
     "--lr 1e-3 --wd 0.01 --amsgrad", ALL, 4),
    ("adamw", "maximize", "AdamW", dict(lr=1e-3, weight_decay=0.01, maximize=True), "adamw",
     "--lr 1e-3 --wd 0.01 --maximize", ALL, 3),
    ("adam", "amsgrad-maximize", "Adam", dict(lr=1e-2, amsgrad=True, maximize=True), "adam",
     "--lr 1e-2 --amsgrad --maximize", ALL, 4),
]
# Adafactor: a factored second moment for >= 2-D parameters (row_var, col_var), `variance` for
# 1-D; torch 2.11 has single-tensor and foreach forms.
AF_SHAPES = [(1000,), (4099,), (64, 127), (129, 77), (3, 16, 33)]
AF_CASES = [
    ("adafactor", "defaults", "Adafactor", dict(lr=1e-2), "adafactor", "--lr 1e-2", NOFUSED, 4),
    ("adafactor", "wd-d-decay", "Adafactor",
     dict(lr=5e-3, beta2_decay=-0.5, d=2.0, weight_decay=0.1, eps=(1e-30, 1e-3)), "adafactor",
     "--lr 5e-3 --beta2-decay -0.5 --d 2 --wd 0.1 --eps1 1e-30 --eps2 1e-3", NOFUSED, 4),
    ("adafactor", "maximize", "Adafactor", dict(lr=1e-2, maximize=True), "adafactor",
     "--lr 1e-2 --maximize", NOFUSED, 4),
]


def inputs(seed, shape, steps, dname):
    """torch_optim_vs_exmy.py's inputs (its rng key uses n), reshaped."""
    n = int(np.prod(shape))
    rng = np.random.default_rng([seed, n, list(DT).index(dname)])
    p = (rng.standard_normal(n) * 0.5).astype(np.float32)
    gs = []
    for _ in range(steps):
        g = (rng.standard_t(2, n) * 1e-2).astype(np.float32)
        g[rng.random(n) < 0.1] = 0.0
        gs.append(g)
    cast = lambda a: torch.from_numpy(a.copy()).to(DT[dname]).float().numpy().copy()
    return cast(p).reshape(shape), np.stack([cast(g).reshape(shape) for g in gs])


def run_case(case, p0, grads, dname, form, dev):
    cls, kw = case[2], case[3]
    p = torch.nn.Parameter(torch.tensor(p0, dtype=torch.float32).to(device=dev, dtype=DT[dname]))
    extra = {"fused": True} if form == "fused" else {"foreach": form == "foreach"}
    opt = getattr(torch.optim, cls)([p], **kw, **extra)
    for g in grads:
        p.grad = torch.tensor(g, dtype=torch.float32).to(device=dev, dtype=DT[dname])
        opt.step()
    if dev == "cuda":
        torch.cuda.synchronize()
    out = {"p": codes(p.detach())}
    for k, v in opt.state[p].items():
        if torch.is_tensor(v):
            out["state_" + k] = codes(v.detach())
    return out


def codes(t):
    """The tensor's bit patterns: uint32 (fp32), uint16 (bf16/fp16)."""
    t = t.cpu()
    if t.dtype == torch.float32:
        return t.numpy().view(np.uint32)
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.float().numpy().view(np.uint32)


def sha(p0, grads):
    import hashlib
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(p0, dtype=np.float32).tobytes())
    h.update(np.ascontiguousarray(grads, dtype=np.float32).tobytes())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--quick", action="store_true", help="the first shape of each list only")
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of the script")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch_optim2_capture: no CUDA device", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    meta = {"torch": torch.__version__, "git": torch.version.git_version,
            "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
            "numpy": np.__version__, "seed": args.seed, "cases": []}
    jobs = [(c, SHAPES_1D) for c in CASES] + [(c, AF_SHAPES) for c in AF_CASES]
    for case, shapes in jobs:
        for shape in shapes[:1] if args.quick else shapes:
            for dname in DT:
                steps = case[7]
                p0, grads = inputs(args.seed, shape, steps, dname)
                inp = sha(p0, grads)
                for form in case[6]:
                    name = f"{case[0]}_{case[1]}_{dname}_{'x'.join(map(str, shape))}_{form}"
                    row = {"name": name, "family": case[0], "config": case[1], "dtype": dname,
                           "shape": list(shape), "steps": steps, "form": form, "inputs_sha256": inp,
                           "torch_class": case[2], "torch_kwargs": repr(case[3]),
                           "exmy_optimizer": case[4], "exmy_options": case[5],
                           "profile": {"single": "torch-cuda", "foreach": "torch-cuda-foreach",
                                       "fused": "torch-cuda-fused"}[form]}
                    try:
                        out = run_case(case, p0, grads, dname, form, args.device)
                    except Exception as ex:  # a combination torch does not implement
                        row["torch_error"] = f"{type(ex).__name__}: {ex}"[:300]
                        meta["cases"].append(row)
                        print(name, "torch refused:", row["torch_error"][:120], flush=True)
                        continue
                    np.savez_compressed(os.path.join(args.out, name + ".npz"), **out)
                    row["arrays"] = sorted(out)
                    meta["cases"].append(row)
                    print(name, "ok", f"{time.time() - t0:.1f}s", flush=True)
    meta["seconds"] = time.time() - t0
    with open(os.path.join(args.out, "capture.json"), "w") as f:
        json.dump(meta, f, indent=1)
    size = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"{len(meta['cases'])} cases in {meta['seconds']:.1f}s; {args.out}: {size / 2**20:.2f} "
          f"MiB stored")
    return 0


if __name__ == "__main__":
    sys.exit(main())
