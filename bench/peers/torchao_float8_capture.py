#!/usr/bin/env python3
"""One training step of torchao 0.18's Float8Linear (convert_to_float8_training with the recipes
"tensorwise", "rowwise", "rowwise_with_gw_hp"), bf16 model, saved for `exmy layer --recipe
torchao-NAME` (bench/peers/torchao_float8_vs_exmy.py compares).

    bench/peers/torchao_float8_capture.py --out DIR [--device cuda] [--budget 100]
        [--no-compile] [--quick] [--seed S]

Inputs are regenerated from seeds (numpy PCG64, bf16 by round to nearest even in numpy:
make_inputs; case.json holds the seed and the sha256 of x M×K, w N×K, g M×N as bf16 bits), not
stored. Per recipe and shape DIR/<recipe>_<i>.npz (savez_compressed) holds y (M×N), x_grad (M×K),
w_grad (N×K) as bf16 bits (<u2) and, from hooks on torchao's own functions (eager only):
cast<j>_data (uint8 codes of the Float8TrainingTensor's _data, logical layout), cast<j>_scale
(<f4, its _scale, torchao's multiplicative scale: codes ≈ x·scale), in call order (a cast whose
codes and scale equal an earlier one's is stored as "same_as" that index); mm<j>_out (the raw
torch._scaled_mm result, before torchao's post-scaling), mm<j>_sa, mm<j>_sb (the scale_a /
scale_b passed); hp<j>_out for a torch.mm of bf16 tensors (rowwise_with_gw_hp's W_grad). Every
array is hashed (case.json "arrays": sha256 of its C-order bytes); shape 0 keeps every array
whole, the others keep the scales whole and the first HEAD rows of the rest (key + "_head"), so
that DIR stays under 8 MiB (the device call's limit).
DIR/case.json: versions, device, seeds, shapes, per case the events (cast: role, dtype,
granularity, axiswise_dim, pow2; scaled_mm: operand sources, out_dtype, use_fast_accum, shapes),
the CUDA kernels torch.profiler saw in an unhooked repeat of the step (and whether its bits equal
the hooked step's), and the torch.compile runs: a fresh compiled module per recipe on the shapes
the time budget allows, the number of its outputs that differ from eager and their sha256.
Inputs: N(0, 1) with per-row and per-column magnitudes 2^U(-4, 4) (rowwise scales differ), a zero row of X and of G (amax 0: torchao's EPS clamp), a row of tiny
values; seeds are printed and recorded. One progress line per case. Needs torch, numpy, torchao.
"""
import argparse
import ctypes
import hashlib
import dataclasses
import json
import os
import sys
import time

import numpy as np
import torch

import torchao
import torchao.float8.float8_linear as f8lin
from torchao.float8 import Float8LinearConfig, convert_to_float8_training

RECIPES = ("tensorwise", "rowwise", "rowwise_with_gw_hp")
SHAPES = ((128, 256, 192), (272, 1040, 784), (512, 4096, 128), (1024, 1024, 768),
          (4096, 256, 256))
QUICK_SHAPES = ((32, 64, 48), (48, 80, 32))
FULL = (0,)  # shapes whose arrays are kept whole (the others: sha256 + the first HEAD rows)
T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


def bf16_bits(t):
    return t.detach().contiguous().view(torch.int16).cpu().numpy().view(np.uint16)


def u8(t):
    return t.detach().contiguous().view(torch.uint8).cpu().numpy()


def bf16_rne(v):
    """fp32 -> bf16 bit patterns, round to nearest even (finite inputs), in numpy: the inputs can
    be regenerated bit for bit without torch (bench/peers/torchao_float8_vs_exmy.py has the same
    function; case.json holds their sha256)."""
    b = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def make_inputs(M, K, N, seed):
    """X (M×K), W (N×K), G (M×N) as bf16 bit patterns (uint16), from numpy's PCG64 with `seed`."""
    rng = np.random.default_rng(seed)

    def mat(r, c, base):
        a = rng.normal(0.0, 1.0, size=(r, c))
        a *= np.exp2(rng.uniform(-4, 4, size=(r, 1))) * np.exp2(rng.uniform(-4, 4, size=(1, c)))
        return (a * base).astype(np.float32)

    x = mat(M, K, 1.0)
    w = mat(N, K, 2.0 ** -5)
    g = mat(M, N, 2.0 ** -12)
    x[M // 3] = 0.0
    g[M // 5] = 0.0
    x[M // 7] *= np.float32(2.0 ** -100)
    return [bf16_rne(v) for v in (x, w, g)]


def to_torch_bf16(bits):
    return torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16)


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


HEAD = 8  # rows kept of each array of a hashed-only case (for diagnosis)


class Store:
    """Arrays of one case: every array hashed (sha256 of its C-order bytes), kept whole in a
    `full` case, else its first HEAD rows (key + "_head")."""

    def __init__(self, full):
        self.full, self.arrays, self.meta = full, {}, {}

    def put(self, key, a, always=False):
        a = np.ascontiguousarray(a)
        self.meta[key] = {"sha256": sha(a), "shape": list(a.shape), "dtype": str(a.dtype)}
        if self.full or always or a.ndim == 0:
            self.arrays[key] = a
        else:
            self.arrays[key + "_head"] = a[:HEAD]


class Hooks:
    """Records torchao's casts and GEMM calls of one step (eager mode)."""

    def __init__(self, store):
        self.events, self.store = [], store
        self.casts = []  # (index, data tensor)
        self.scales = {}
        self.orig_cast = f8lin.hp_tensor_to_float8_dynamic
        self.orig_smm = torch._scaled_mm
        self.orig_mm = torch.mm

    def source(self, t):
        for j, d in self.casts:
            if d.shape == t.shape and torch.equal(d.view(torch.uint8), t.view(torch.uint8)):
                return f"cast{j}"
            if d.t().shape == t.shape and torch.equal(d.t().view(torch.uint8),
                                                      t.view(torch.uint8)):
                return f"cast{j}.T"
        return None

    def cast(self, hp, dtype, mm_cfg, *args, **kw):
        r = self.orig_cast(hp, dtype, mm_cfg, *args, **kw)
        j = len(self.casts)
        same = None  # the same codes and scale as an earlier cast (tensorwise recasts): a reference
        for k, d in self.casts:
            if (d.shape == r._data.shape and torch.equal(d.view(torch.uint8),
                                                         r._data.view(torch.uint8))
                    and torch.equal(self.scales[k], r._scale)):
                same = k
                break
        self.casts.append((j, r._data))
        self.scales[j] = r._scale
        if same is None:
            self.store.put(f"cast{j}_data", u8(r._data))
            self.store.put(f"cast{j}_scale", r._scale.detach().float().cpu().numpy(), always=True)
        gran = kw.get("scaling_granularity")
        self.events.append({"same_as": same,
            "op": "cast", "index": j, "role": str(kw.get("gemm_input_role")),
            "hp_shape": list(hp.shape), "hp_stride": list(hp.stride()),
            "dtype": str(dtype), "granularity": str(gran), "axiswise_dim": kw.get("axiswise_dim"),
            "pow2": bool(kw.get("round_scales_to_power_of_2", False)),
            "data_shape": list(r._data.shape), "data_stride": list(r._data.stride()),
            "scale_shape": list(r._scale.shape)})
        return r

    def scaled_mm(self, a, b, *args, **kw):
        out = self.orig_smm(a, b, *args, **kw)
        j = sum(1 for e in self.events if e["op"] == "scaled_mm")
        ev = {"op": "scaled_mm", "index": j, "a_shape": list(a.shape),
              "a_stride": list(a.stride()), "b_shape": list(b.shape),
              "b_stride": list(b.stride()), "out_dtype": str(out.dtype),
              "use_fast_accum": bool(kw.get("use_fast_accum", False)),
              "bias": kw.get("bias") is not None, "scale_result": kw.get("scale_result") is not None}
        ev["a_src"] = self.source(a)
        ev["b_src"] = self.source(b)
        if ev["a_src"] is None:
            self.store.put(f"mm{j}_a", u8(a))
        if ev["b_src"] is None:
            self.store.put(f"mm{j}_b", u8(b.t()))
        self.store.put(f"mm{j}_sa", kw["scale_a"].detach().float().cpu().numpy(), always=True)
        self.store.put(f"mm{j}_sb", kw["scale_b"].detach().float().cpu().numpy(), always=True)
        self.store.put(f"mm{j}_out", bf16_bits(out) if out.dtype == torch.bfloat16 else
                       out.detach().float().cpu().numpy())
        self.events.append(ev)
        return out

    def mm(self, a, b, *args, **kw):
        out = self.orig_mm(a, b, *args, **kw)
        if type(a) is torch.Tensor and type(b) is torch.Tensor and a.dtype == torch.bfloat16:
            j = sum(1 for e in self.events if e["op"] == "hp_mm")
            self.store.put(f"hp{j}_out", bf16_bits(out))
            self.events.append({"op": "hp_mm", "index": j, "a_shape": list(a.shape),
                                "a_stride": list(a.stride()), "b_shape": list(b.shape),
                                "b_stride": list(b.stride()), "out_dtype": str(out.dtype)})
        return out

    def __enter__(self):
        f8lin.hp_tensor_to_float8_dynamic = self.cast
        torch._scaled_mm = self.scaled_mm
        torch.mm = self.mm
        return self

    def __exit__(self, *exc):
        f8lin.hp_tensor_to_float8_dynamic = self.orig_cast
        torch._scaled_mm = self.orig_smm
        torch.mm = self.orig_mm
        return False


def build(recipe, w, dev, emulate=False):
    N, K = w.shape
    lin = torch.nn.Linear(K, N, bias=False, device=dev, dtype=torch.bfloat16)
    with torch.no_grad():
        lin.weight.copy_(w.to(dev))
    m = torch.nn.Sequential(lin)
    cfg = Float8LinearConfig.from_recipe_name(recipe)
    if emulate:  # CPU dry runs only: torchao's fp32 emulation in place of torch._scaled_mm
        cfg = dataclasses.replace(cfg, emulate=True)
    convert_to_float8_training(m, config=cfg)
    return m


def step(m, x, g, weight):
    xx = x.clone().requires_grad_(True)
    y = m(xx)
    y.backward(g)
    if weight.grad is None:
        raise RuntimeError("no weight gradient")
    return y, xx.grad, weight.grad


def kernels(fn, dev):
    if dev != "cuda":
        return [], None
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        r = fn()
        torch.cuda.synchronize()
    names = []
    for e in prof.events():
        dt = getattr(e, "device_type", None)
        if dt is not None and "CUDA" in str(dt):
            names.append(e.name)
    if not names:
        names = [k.key for k in prof.key_averages()]
    return names, r


def versions(dev):
    v = {"torch": torch.__version__, "torchao": torchao.__version__, "numpy": np.__version__,
         "python": sys.version.split()[0], "cuda": torch.version.cuda}
    try:
        import triton
        v["triton"] = triton.__version__
    except Exception as e:  # CPU dry runs
        v["triton"] = f"not importable: {type(e).__name__}"
    if dev == "cuda":
        v["device"] = torch.cuda.get_device_name()
        v["capability"] = list(torch.cuda.get_device_capability())
        try:
            v["driver"] = torch.cuda.driver_version() if hasattr(torch.cuda, "driver_version") \
                else None
        except Exception:
            v["driver"] = None
        for lib in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
            try:
                v["cublasLt"] = int(ctypes.CDLL(lib).cublasLtGetVersion())
                break
            except OSError:
                continue
        v["allow_bf16_reduced_precision_reduction"] = \
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget", type=float, default=70.0,
                    help="seconds after which no new torch.compile run starts")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--quick", action="store_true", help="tiny shapes (CPU dry run)")
    ap.add_argument("--shapes", default="", help="MxKxN,... in place of the built-in shapes")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--recipes", default=",".join(RECIPES))
    ap.add_argument("--emulate", action="store_true",
                    help="torchao's emulate=True (CPU dry runs of the hooks; not a capture)")
    a = ap.parse_args()
    dev = a.device
    if dev == "cuda" and not torch.cuda.is_available():
        print("torchao_float8_capture: CUDA is not available (use --device cpu for a dry run)",
              file=sys.stderr)
        sys.exit(2)
    os.makedirs(a.out, exist_ok=True)
    shapes = QUICK_SHAPES if a.quick else SHAPES
    if a.shapes:
        shapes = [tuple(int(v) for v in t.split("x")) for t in a.shapes.split(",")]
    recipes = a.recipes.split(",")
    meta = {"script": "bench/peers/torchao_float8_capture.py", "argv": sys.argv[1:],
            "versions": versions(dev), "seed": a.seed, "model_dtype": "bfloat16",
            "layout": "y = x @ w.T; x M×K, w N×K, g M×N; bf16 <u2 bit patterns",
            "emulate": a.emulate, "cases": [], "compiled": []}
    log(f"torchao {torchao.__version__} torch {torch.__version__} on {dev}, seed {a.seed}")
    inputs, meta["inputs"] = {}, []
    for i, (M, K, N) in enumerate(shapes):
        bits = make_inputs(M, K, N, a.seed + i)
        inputs[i] = [to_torch_bf16(v) for v in bits]
        meta["inputs"].append({"index": i, "M": M, "K": K, "N": N, "seed": a.seed + i,
                               "sha256": {k: sha(v) for k, v in zip(("x", "w", "g"), bits)}})
    eager = {}
    for r in recipes:
        for i, (M, K, N) in enumerate(shapes):
            name = f"{r}_{i}"
            x, w, g = inputs[i]
            case = {"name": name, "recipe": r, "M": M, "K": K, "N": N, "seed": a.seed + i,
                    "inputs": i, "full": i in FULL}
            try:
                xd, gd = x.to(dev), g.to(dev)
                m = build(r, w, dev, a.emulate)
                st = Store(i in FULL)
                with Hooks(st) as h:
                    y, xg, wg = step(m, xd, gd, m[0].weight)
                if dev == "cuda":
                    torch.cuda.synchronize()
                for k, v in (("y", y), ("x_grad", xg), ("w_grad", wg)):
                    st.put(k, bf16_bits(v))
                arr = st.arrays
                case["arrays"] = st.meta
                case["events"] = h.events
                case["w_grad_stride"] = list(wg.stride())
                m2 = build(r, w, dev, a.emulate)
                ks, res = kernels(lambda: step(m2, xd, gd, m2[0].weight), dev)
                if res is None:
                    res = step(m2, xd, gd, m2[0].weight)
                case["kernels"] = ks
                case["unhooked_equal"] = all(
                    np.array_equal(bf16_bits(p), bf16_bits(q)) for p, q in zip(res, (y, xg, wg)))
                np.savez_compressed(os.path.join(a.out, name + ".npz"), **arr)
                eager[name] = (y, xg, wg)
                case["status"] = "ok"
                log(f"{name} M={M} K={K} N={N}: {len(h.events)} events, {len(ks)} kernels, "
                    f"unhooked repeat equal: {case['unhooked_equal']}")
            except Exception as e:
                case["status"] = f"error: {type(e).__name__}: {str(e)[:400]}"
                log(f"{name} M={M} K={K} N={N}: {case['status']}")
            meta["cases"].append(case)
    if not a.no_compile:
        order = [(r, i) for i in (1, 0, 3) if i < len(shapes) for r in recipes]
        for r, i in order:
            name = f"{r}_{i}"
            M, K, N = shapes[i]
            c = {"name": name, "recipe": r, "M": M, "K": K, "N": N}
            if time.time() - T0 > a.budget:
                c["status"] = f"skipped: time budget {a.budget} s"
                meta["compiled"].append(c)
                log(f"{name} compiled: {c['status']}")
                continue
            if name not in eager:
                continue
            try:
                x, w, g = inputs[i]
                xd, gd = x.to(dev), g.to(dev)
                t = time.time()
                mod = build(r, w, dev, a.emulate)
                m = torch.compile(mod, dynamic=False)
                y, xg, wg = step(m, xd, gd, mod[0].weight)  # compiles
                c["compile_s"] = round(time.time() - t, 1)
                mod[0].weight.grad = None
                ks, res = kernels(lambda: step(m, xd, gd, mod[0].weight), dev)
                c["kernels"] = ks
                c["repeat_equal"] = res is None or all(
                    np.array_equal(bf16_bits(p), bf16_bits(q)) for p, q in zip(res, (y, xg, wg)))
                ey = eager[name]
                c["diff_vs_eager"] = {
                    k: int((bf16_bits(p) != bf16_bits(q)).sum())
                    for k, p, q in zip(("y", "x_grad", "w_grad"), (y, xg, wg), ey)}
                c["arrays"] = {k: {"sha256": sha(bf16_bits(v))}
                               for k, v in (("y", y), ("x_grad", xg), ("w_grad", wg))}
                c["status"] = "ok"
                log(f"{name} compiled in {c['compile_s']} s: differing vs eager "
                    f"{c['diff_vs_eager']}")
            except Exception as e:
                c["status"] = f"error: {type(e).__name__}: {str(e)[:400]}"
                log(f"{name} compiled: {c['status']}")
            meta["compiled"].append(c)
    meta["elapsed_s"] = round(time.time() - T0, 1)
    with open(os.path.join(a.out, "case.json.tmp"), "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(os.path.join(a.out, "case.json.tmp"), os.path.join(a.out, "case.json"))
    size = sum(os.path.getsize(os.path.join(a.out, f)) for f in os.listdir(a.out))
    log(f"stored {size / 2**20:.2f} MiB in {a.out}")
    bad = [c["name"] for c in meta["cases"] if c["status"] != "ok"]
    log(f"done: {len(meta['cases']) - len(bad)} of {len(meta['cases'])} eager cases ok"
        + (f"; failed: {bad}" if bad else ""))


if __name__ == "__main__":
    main()
