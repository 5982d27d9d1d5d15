#!/usr/bin/env python3
"""torch.optim.Adafactor (torch 2.11) on CUDA, for exmy's model of it (issue 33 item 4;
docs/SEMANTICS.md 9.2.8): the cases bench/peers/torch_optim2_capture.py did not reach (larger and
degenerate shapes, whole zero rows and columns, an all-zero gradient step, Cauchy and tiny
gradients, eps1 = None per dtype, 10 steps) in both of torch's forms (foreach=False, foreach=True),
plus probes of the operations whose CUDA order a model has to fix: linalg.vector_norm over the
last dim, the next-to-last dim and all dims, mean over dim -2 of a (..., R, 1) tensor, the K = 1
matmul row_var @ col_var, rsqrt, and one traced step per form (the intermediates of torch's own
code re-run op by op and checked against the optimizer's result).

    torch_adafactor_capture.py --out DIR [--quick] [--device cpu]

Writes DIR/step_<case>.npz (p and each state tensor as the dtype's bit patterns: uint32 for fp32,
uint16 for bf16/fp16), DIR/probe_<kind>_<dtype>_<shape>.npz (the outputs' bit patterns, and the
input's where it is not regenerated), DIR/trace_<case>.npz and DIR/capture.json (torch, CUDA,
device, seed, every case with the sha256 of its inputs). Inputs are generated with numpy from the
recorded seed (inputs() and probe_input() below, regenerated offline and checked against the
sha256). DIR stays under 6 MiB (printed at the end). One progress line per case.
"""
import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch

DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
FORMS = ("single", "foreach")

# Gradient kinds: t2 (Student t, 2 degrees of freedom, x 1e-2, 10% exact zeros: the optim2
# capture's), zrc (t2 with whole rows and columns zero and step 2's gradient all zero), cauchy (t
# with 1 degree of freedom x 1: squares overflow fp16, norms overflow bf16/fp16 now and then), tiny
# (t2 x 1e-5: fp16 squares underflow).
KINDS = ("t2", "zrc", "cauchy", "tiny")

SHAPES = [(2, 4096), (4096, 2), (1, 777), (777, 1), (5, 1, 9), (2, 3, 5, 7), (33, 131), (7,),
          (1,)]
# config, torch kwargs, exmy options, steps, kinds, shapes (None: SHAPES)
CASES = [
    ("defaults", dict(), "", 4, ("t2", "zrc", "cauchy", "tiny"), None),
    ("lr0.1-10steps", dict(lr=0.1), "--lr 0.1", 10, ("t2",), [(33, 515), (5, 1, 9), (7,)]),
    ("wd-d-decay-eps1", dict(lr=5e-3, beta2_decay=-0.5, d=2.0, weight_decay=0.1,
                             eps=(1e-30, 1e-3)),
     "--lr 5e-3 --beta2-decay -0.5 --d 2 --wd 0.1 --eps1 1e-30 --eps2 1e-3", 4, ("zrc", "t2"),
     [(2, 4096), (33, 131), (777, 1), (7,)]),
    ("maximize-eps2-big", dict(lr=2e-2, eps=(None, 0.5), d=1.5, weight_decay=0.5,
                               maximize=True),
     "--lr 2e-2 --eps2 0.5 --d 1.5 --wd 0.5 --maximize", 3, ("t2",), [(33, 515), (4096, 2), (7,)]),
    ("eps1-1e-3-lr0", dict(lr=0.0, eps=(1e-3, 1e-3)), "--lr 0 --eps1 1e-3", 2, ("t2",),
     [(33, 515), (7,)]),
]


def rng_for(seed, *key):
    return np.random.default_rng([seed, *key])


def cast_to(a, dname):
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(DT[dname]).float() \
        .numpy().copy()


def inputs(seed, shape, steps, dname, kind):
    """p0 and the gradients, values of dtype dname held as fp32."""
    n = int(np.prod(shape))
    rng = rng_for(seed, n, list(DT).index(dname), KINDS.index(kind), len(shape))
    p = (rng.standard_normal(n) * 0.5).astype(np.float32)
    gs = []
    for s in range(steps):
        if kind == "cauchy":
            g = rng.standard_t(1, n).astype(np.float32)
        else:
            g = (rng.standard_t(2, n) * (1e-5 if kind == "tiny" else 1e-2)).astype(np.float32)
        g[rng.random(n) < 0.1] = 0.0
        if kind == "zrc":
            g2 = g.reshape(shape if len(shape) > 1 else (1, n))
            g2[..., ::3, :] = 0.0      # every third row
            g2[..., ::5] = 0.0         # every fifth column
            if s == 1:
                g[:] = 0.0
        gs.append(g)
    return cast_to(p, dname).reshape(shape), np.stack([cast_to(g, dname).reshape(shape)
                                                      for g in gs])


def codes(t):
    """The tensor's bit patterns: uint32 (fp32), uint16 (bf16/fp16)."""
    t = t.detach().cpu()
    if t.dtype == torch.float32:
        return t.numpy().view(np.uint32)
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.double().numpy()


def sha(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=np.float32).tobytes())
    return h.hexdigest()


def run_step_case(kw, p0, grads, dname, form, dev):
    p = torch.nn.Parameter(torch.tensor(p0, dtype=torch.float32).to(device=dev, dtype=DT[dname]))
    opt = torch.optim.Adafactor([p], **kw, foreach=form == "foreach")
    for g in grads:
        p.grad = torch.tensor(g, dtype=torch.float32).to(device=dev, dtype=DT[dname])
        opt.step()
    if dev == "cuda":
        torch.cuda.synchronize()
    out = {"p": codes(p)}
    for k, v in opt.state[p].items():
        if torch.is_tensor(v):
            out["state_" + k] = codes(v)
    return out


# --- probes: the reductions and operations of one step, on their own -------------------------
NORM_LAST = [(1, 1), (1, 2), (3, 3), (2, 4), (5, 5), (4, 31), (4, 32), (4, 33), (3, 127), (3, 128),
             (3, 129), (2, 255), (2, 256), (2, 511), (2, 512), (2, 513), (64, 127), (129, 77),
             (2, 1000), (2, 2047), (2, 4096), (2, 4099), (2, 16385), (1, 65537), (1, 262147),
             (300, 20), (1000, 3), (4096, 2), (33, 515), (160, 1000), (40, 4096), (3, 2, 777)]
NORM_PREV = [(1, 1), (2, 1), (3, 3), (4, 2), (5, 5), (31, 4), (32, 4), (33, 4), (127, 3),
             (128, 3), (129, 3), (255, 2), (256, 2), (513, 2), (64, 127), (129, 77), (1000, 2),
             (4099, 2), (16385, 1), (65537, 1), (20, 300), (3, 1000), (2, 4096), (33, 515),
             (160, 1000), (4096, 40), (5, 1, 9), (3, 16, 33), (2, 3, 5, 7), (4, 700, 3)]
NORM_ALL = [1, 2, 3, 4, 5, 7, 31, 32, 33, 127, 128, 129, 511, 512, 513, 1000, 2047, 2048, 4099,
            16385, 65536, 131071, 131072, 131073, 160000, 262147, 1000003, 2097152, 4325376,
            4325377, 4500001]
MEAN_PREV = [(1, 1), (2, 1), (3, 1), (31, 1), (128, 1), (129, 1), (777, 1), (1000, 1), (4099, 1),
             (65537, 1), (3, 16, 1), (5, 1, 1), (2, 3, 5, 1), (40, 513, 1)]
MATMUL = [((64, 1), (1, 127)), ((129, 1), (1, 77)), ((3, 16, 1), (3, 1, 33)),
          ((2, 3, 5, 1), (2, 3, 1, 7)), ((33, 1), (1, 515))]
PROBE_DT = ("fp32", "bf16", "fp16")


def probe_input(seed, shape, dname, tag):
    """Heavy-tailed values of dtype dname (fp32-held): Student t (2) x 1e-2, 10% zeros."""
    n = int(np.prod(shape))
    rng = rng_for(seed, 7, n, list(DT).index(dname), tag, len(shape))
    x = (rng.standard_t(2, n) * 1e-2).astype(np.float32)
    x[rng.random(n) < 0.1] = 0.0
    return cast_to(x, dname).reshape(shape)


def shp(s):
    return "x".join(map(str, s))


def probes(seed, dev, quick, out, meta, t0):
    tags = {"norm_last": 1, "norm_prev": 2, "norm_all": 3, "mean_prev": 4, "mm_a": 5, "mm_b": 6,
            "rsqrt": 8}
    jobs = []
    for d in PROBE_DT:
        for s in NORM_LAST[: 4 if quick else None]:
            jobs.append(("norm_last", d, s))
        for s in NORM_PREV[: 4 if quick else None]:
            jobs.append(("norm_prev", d, s))
        for n in NORM_ALL[: 4 if quick else None]:
            jobs.append(("norm_all", d, (n,)))
        for s in MEAN_PREV[: 4 if quick else None]:
            jobs.append(("mean_prev", d, s))
        for a, b in MATMUL[: 2 if quick else None]:
            jobs.append(("matmul", d, (a, b)))
    for kind, d, s in jobs:
        name = f"probe_{kind}_{d}_{shp(s) if kind != 'matmul' else shp(s[0]) + '@' + shp(s[1])}"
        row = {"name": name, "kind": kind, "dtype": d}
        res = {}
        if kind == "matmul":
            a = probe_input(seed, s[0], d, tags["mm_a"]) * 1e2
            b = probe_input(seed, s[1], d, tags["mm_b"]) * 1e2
            a = np.abs(cast_to(a, d)).reshape(s[0])
            b = np.abs(cast_to(b, d)).reshape(s[1])
            row.update(shape_a=list(s[0]), shape_b=list(s[1]), inputs_sha256=sha(a, b),
                       inputs="abs(probe_input(seed, shape, dtype, tag) * 1e2) in dtype, tags 5, 6")
            ta = torch.tensor(a).to(device=dev, dtype=DT[d])
            tb = torch.tensor(b).to(device=dev, dtype=DT[d])
            res["y"] = codes(ta @ tb)
        else:
            x = probe_input(seed, s, d, tags[kind])
            if kind == "mean_prev":  # row_var-like: nonnegative
                x = np.abs(x)
            row.update(shape=list(s), inputs_sha256=sha(x))
            tx = torch.tensor(x).to(device=dev, dtype=DT[d])
            if kind == "norm_last":
                y = torch.linalg.vector_norm(tx, 2, dim=-1, keepdim=True)
            elif kind == "norm_prev":
                y = torch.linalg.vector_norm(tx, 2, dim=-2, keepdim=True)
            elif kind == "norm_all":
                y = tx.norm(2)
            else:
                y = tx.mean(dim=-2, keepdim=True)
            res["y"] = codes(y)
        if dev == "cuda":
            torch.cuda.synchronize()
        np.savez_compressed(os.path.join(out, name + ".npz"), **res)
        meta["probes"].append(row)
    print(f"probes: {len(jobs)} ({time.time() - t0:.1f}s)", flush=True)
    # rsqrt over fp32 inputs: random magnitudes 2^-140 .. 2^120 plus denormals, zero, inf
    rng = rng_for(seed, tags["rsqrt"])
    x = np.exp2(rng.uniform(-140, 120, 1 << 14)).astype(np.float32)
    x[:64] = np.array([0.0, np.inf, 1.0, 4.0, 2.0 ** -149, 2.0 ** -126, 2.0 ** -127, 1e-38] * 8,
                      dtype=np.float32)
    res = {"x": x.view(np.uint32)}
    for d in PROBE_DT:
        tx = torch.tensor(x).to(device=dev, dtype=DT[d])
        res[d] = codes(tx.rsqrt())
    np.savez_compressed(os.path.join(out, "probe_rsqrt.npz"), **res)
    meta["probes"].append({"name": "probe_rsqrt", "kind": "rsqrt", "note": "x stored (fp32 bits); "
                           "each dtype's output of x.to(dtype).rsqrt()"})
    print(f"probe_rsqrt ok ({time.time() - t0:.1f}s)", flush=True)


# --- traces: torch's step re-run op by op (torch/optim/_adafactor.py, torch 2.11) ---------------
def trace_single(p, grads, kw):
    """_single_tensor_adafactor for one parameter, keeping the intermediates of every step."""
    lr = kw.get("lr", 1e-2)
    beta2_decay = kw.get("beta2_decay", -0.8)
    eps1, eps2 = kw.get("eps", (None, 1e-3))
    d = kw.get("d", 1.0)
    wd = kw.get("weight_decay", 0.0)
    if eps1 is None:
        eps1 = torch.finfo(p.dtype).eps
    rv = cv = var = None
    if p.dim() > 1:
        rs = list(p.shape); rs[-1] = 1
        cs = list(p.shape); cs[-2] = 1
        rv, cv = p.new_zeros(rs), p.new_zeros(cs)
    else:
        var = torch.zeros_like(p)
    rec = {}
    for t, grad in enumerate(grads, 1):
        if kw.get("maximize", False):
            grad = -grad
        one_minus_beta2_t = float(t) ** beta2_decay
        rho_t = min(lr, 1 / (float(t) ** 0.5))
        pn = p.norm(2).item()
        alpha = max(eps2, pn / (p.numel() ** 0.5)) * rho_t
        if wd != 0:
            p.mul_(1 - lr * wd)
        if grad.dim() > 1:
            row_norm = torch.norm(grad, dim=-1, keepdim=True)
            row_mean = row_norm.clone().square_().div_(grad.size(-1))
            rv.lerp_(row_mean, one_minus_beta2_t)
            col_norm = torch.norm(grad, dim=-2, keepdim=True)
            col_mean = col_norm.clone().square_().div_(grad.size(-2))
            cv.lerp_(col_mean, one_minus_beta2_t)
            ve = rv @ cv
            rvm = rv.mean(dim=-2, keepdim=True)
            ve.div_(rvm.clamp_(min=eps1))
            for k, v in (("row_norm", row_norm), ("row_mean", row_mean), ("row_var", rv),
                         ("col_norm", col_norm), ("col_mean", col_mean), ("col_var", cv),
                         ("rv_mean", rvm)):
                rec[f"{k}_{t}"] = codes(v)
        else:
            var.lerp_(grad * grad, one_minus_beta2_t)
            ve = var.clone()
            rec[f"variance_{t}"] = codes(var)
        rec[f"var_estimate_{t}"] = codes(ve)
        update = ve.clamp_(min=eps1 * eps1).rsqrt_()
        rec[f"rsqrt_{t}"] = codes(update)
        update.mul_(grad)
        un = update.norm(2).item()
        denom = max(1.0, un / ((update.numel() ** 0.5) * d))
        rec[f"update_{t}"] = codes(update)
        rec[f"scalars_{t}"] = np.array([pn, alpha, un, denom, -alpha / denom], dtype=np.float64)
        p.add_(update, alpha=-alpha / denom)
        rec[f"p_{t}"] = codes(p)
    return rec


def trace_foreach(p, grads, kw):
    """_multi_tensor_adafactor for one parameter (a one-tensor list), keeping the intermediates."""
    lr = kw.get("lr", 1e-2)
    beta2_decay = kw.get("beta2_decay", -0.8)
    eps1, eps2 = kw.get("eps", (None, 1e-3))
    d = kw.get("d", 1.0)
    wd = kw.get("weight_decay", 0.0)
    if eps1 is None:
        eps1 = torch.finfo(p.dtype).eps
    if p.dim() > 1:
        rs = list(p.shape); rs[-1] = 1
        cs = list(p.shape); cs[-2] = 1
        rv, cv = [p.new_zeros(rs)], [p.new_zeros(cs)]
    else:
        var = [torch.zeros_like(p)]
    ps = [p]
    rec = {}
    for t, grad in enumerate(grads, 1):
        gs = [grad]
        if kw.get("maximize", False):
            gs = torch._foreach_neg(gs)
        omb = [float(t) ** beta2_decay]
        rho = [min(lr, 1 / (float(t) ** 0.5))]
        pn = ps[0].norm(2).item()
        alphas = [max(eps2, pn / (p.numel() ** 0.5)) * rho[0]]
        if wd != 0:
            torch._foreach_mul_(ps, 1 - lr * wd)
        if p.dim() > 1:
            rm = [torch.norm(g, dim=-1, keepdim=True) for g in gs]
            rec[f"row_norm_{t}"] = codes(rm[0])
            torch._foreach_mul_(rm, rm)
            torch._foreach_div_(rm, [g.size(-1) for g in gs])
            rec[f"row_mean_{t}"] = codes(rm[0])
            torch._foreach_lerp_(rv, rm, omb)
            cm = [torch.norm(g, dim=-2, keepdim=True) for g in gs]
            rec[f"col_norm_{t}"] = codes(cm[0])
            torch._foreach_mul_(cm, cm)
            torch._foreach_div_(cm, [g.size(-2) for g in gs])
            rec[f"col_mean_{t}"] = codes(cm[0])
            torch._foreach_lerp_(cv, cm, omb)
            ve = [a @ b for a, b in zip(rv, cv)]
            rvm = [a.mean(dim=-2, keepdim=True) for a in rv]
            torch._foreach_clamp_min_(rvm, eps1)
            torch._foreach_div_(ve, rvm)
            rec[f"row_var_{t}"] = codes(rv[0])
            rec[f"col_var_{t}"] = codes(cv[0])
            rec[f"rv_mean_{t}"] = codes(rvm[0])
        else:
            sq = torch._foreach_mul(gs, gs)
            torch._foreach_lerp_(var, sq, omb)
            ve = [v.clone() for v in var]
            rec[f"variance_{t}"] = codes(var[0])
        rec[f"var_estimate_{t}"] = codes(ve[0])
        torch._foreach_clamp_min_(ve, eps1 * eps1)
        torch._foreach_rsqrt_(ve)
        rec[f"rsqrt_{t}"] = codes(ve[0])
        torch._foreach_mul_(ve, gs)
        un = ve[0].norm(2).item()
        a = [-alphas[0] / (max(1.0, un / ((ve[0].numel() ** 0.5) * d)))]
        rec[f"update_{t}"] = codes(ve[0])
        rec[f"scalars_{t}"] = np.array([pn, alphas[0], un, a[0]], dtype=np.float64)
        torch._foreach_mul_(ve, a)
        torch._foreach_add_(ps, ve)
        rec[f"p_{t}"] = codes(ps[0])
    return rec


TRACES = [("defaults", dict(), (17, 129), "t2", 3), ("defaults", dict(), (3, 16, 33), "zrc", 3),
          ("wd-d-decay-eps1", CASES[2][1], (31, 77), "t2", 3), ("defaults", dict(), (1000,), "t2", 3)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--quick", action="store_true", help="a few shapes of each list")
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of the script")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch_adafactor_capture: no CUDA device", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    meta = {"torch": torch.__version__, "git": torch.version.git_version,
            "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
            "sms": (torch.cuda.get_device_properties(0).multi_processor_count
                    if args.device == "cuda" else 0),
            "numpy": np.__version__, "seed": args.seed, "cases": [], "probes": [], "traces": []}
    for cfg, kw, opts, steps, kinds, shapes in CASES:
        shapes = shapes or SHAPES
        for shape in shapes[:2] if args.quick else shapes:
            for kind in kinds:
                if kind == "zrc" and len(shape) < 2:
                    continue
                for dname in DT:
                    p0, grads = inputs(args.seed, shape, steps, dname, kind)
                    inp = sha(p0, grads)
                    for form in FORMS:
                        name = f"step_{cfg}_{kind}_{dname}_{shp(shape)}_{form}"
                        row = {"name": name, "config": cfg, "kind": kind, "dtype": dname,
                               "shape": list(shape), "steps": steps, "form": form,
                               "inputs_sha256": inp, "torch_kwargs": repr(kw),
                               "exmy_optimizer": "adafactor", "exmy_options": opts,
                               "profile": {"single": "torch-cuda",
                                           "foreach": "torch-cuda-foreach"}[form]}
                        try:
                            out = run_step_case(kw, p0, grads, dname, form, args.device)
                        except Exception as ex:
                            row["torch_error"] = f"{type(ex).__name__}: {ex}"[:300]
                            meta["cases"].append(row)
                            print(name, "torch refused:", row["torch_error"][:120], flush=True)
                            continue
                        np.savez_compressed(os.path.join(args.out, name + ".npz"), **out)
                        row["arrays"] = sorted(out)
                        meta["cases"].append(row)
                        print(name, "ok", f"{time.time() - t0:.1f}s", flush=True)
    probes(args.seed, args.device, args.quick, args.out, meta, t0)
    for cfg, kw, shape, kind, steps in TRACES:
        for dname in DT:
            p0, grads = inputs(args.seed, shape, steps, dname, kind)
            for form in FORMS:
                name = f"trace_{cfg}_{kind}_{dname}_{shp(shape)}_{form}"
                dev = args.device
                p = torch.tensor(p0).to(device=dev, dtype=DT[dname])
                gl = [torch.tensor(g).to(device=dev, dtype=DT[dname]) for g in grads]
                rec = (trace_single if form == "single" else trace_foreach)(p, gl, kw)
                ref = run_step_case(kw, p0, grads, dname, form, dev)
                same = bool(np.array_equal(ref["p"], rec[f"p_{steps}"]))
                np.savez_compressed(os.path.join(args.out, name + ".npz"), **rec)
                meta["traces"].append({"name": name, "config": cfg, "kind": kind, "dtype": dname,
                                       "shape": list(shape), "steps": steps, "form": form,
                                       "torch_kwargs": repr(kw), "inputs_sha256": sha(p0, grads),
                                       "trace_equals_optimizer": same})
                print(name, "ok" if same else "TRACE DIFFERS FROM THE OPTIMIZER",
                      f"{time.time() - t0:.1f}s", flush=True)
    meta["seconds"] = time.time() - t0
    with open(os.path.join(args.out, "capture.json"), "w") as f:
        json.dump(meta, f, indent=1)
    size = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"{len(meta['cases'])} step cases, {len(meta['probes'])} probes, {len(meta['traces'])} "
          f"traces in {meta['seconds']:.1f}s; {args.out}: {size / 2**20:.2f} MiB stored")
    return 0


if __name__ == "__main__":
    sys.exit(main())
