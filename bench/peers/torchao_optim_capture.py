#!/usr/bin/env python3
"""torchao 0.18's low-bit optimizers on CUDA (issue 33 item 5; docs/SEMANTICS.md 9.2.7):
torchao.optim.AdamW8bit (block 256), AdamW4bit (block 128) and AdamWFp8 (block 256), with and
without bf16_stochastic_round, on fp32/bf16/fp16 parameters, over several steps, through the
torch.compile'd single_param_adam torchao runs (Inductor's Triton code on CUDA). Also a few eager
runs (torch._dynamo disabled) and the generated code of every compiled graph, so exmy's model of
each rounding can be read off the code that ran. No exmy binary here.

    torchao_optim_capture.py --out DIR [--device cpu] [--budget 80]

Writes DIR/<case>.npz (np.savez_compressed): after each saved step s (1, 2 and the last),
  p_s                      the parameter's bit patterns (uint32 fp32, uint16 bf16/fp16)
  exp_avg_codes_s, exp_avg_scale_s, exp_avg_sq_codes_s, exp_avg_sq_scale_s
                           a quantized state (OptimState8bit/4bit/Fp8): codes as uint8 (4-bit:
                           packed, first element in the high nibble; fp8: e4m3fn bit patterns),
                           scale as fp32 bits
  exp_avg_s, exp_avg_sq_s  a plain state (numel < 4096 or not a multiple of the block): p's dtype
  max_exp_avg_sq_*_s       the same for amsgrad=True
  sr_seed_s                bf16_stochastic_round: the int64 seed Inductor's seeds buffer drew for
                           step s, replayed from the generator state before the step
DIR/qmaps.npz (each optimizer's signed/unsigned qmap, fp32 bits), DIR/code.tar.gz (code/<m>.py:
the wrapper modules Inductor wrote, the Triton and C++ kernels inline; triton/<hash>/<kernel>.ptx,
.cubin, .ttgir: what Triton compiled them to; .cubin.sass: cuobjdump -sass of each, where the
device has cuobjdump) and
DIR/capture.json (versions, device, seed, the cases with the sha256 of their inputs, the
generator-replay check of each SR seed, which code files each case compiled). Inputs are not
stored: inputs() regenerates them from the recorded seed with numpy. One progress line per case;
cases past --budget seconds are listed as skipped (they are ordered AdamW8bit first).
"""
import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

# A fresh Inductor cache: every graph is compiled here (no stale cache hit), and the wrapper
# modules it writes are the code that ran.
_CACHE = tempfile.mkdtemp(prefix="tao_inductor_")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = _CACHE
_TRITON = os.path.join(_CACHE, "triton_cache")
os.environ["TRITON_CACHE_DIR"] = _TRITON  # the PTX and cubin of each Triton kernel

import numpy as np  # noqa: E402
import torch  # noqa: E402

DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
OPTS = {"adamw8bit": ("AdamW8bit", 256), "adamw4bit": ("AdamW4bit", 128),
        "adamwfp8": ("AdamWFp8", 256)}
# shapes: 4096, the smallest quantized (every block size); below 4096 (plain state); 33*128
# (4-bit quantized, 8-bit/fp8 plain: not a multiple of 256); 17 blocks of 256
SHAPES = [(32, 128), (1000,), (4224,), (17, 256)]
CONFIGS = {
    "defaults": dict(lr=1e-3),
    "b0.8-0.99-wd0.1-eps1e-6-lr1e-2": dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1,
                                            eps=1e-6),
    "amsgrad": dict(lr=1e-3, amsgrad=True),
}
STEPS = 4
SAVE = (1, 2, 4)


def inputs(seed, shape, dname, steps=STEPS):
    """p0 and the gradients, as fp32 values exactly representable in dtype: p ~ N(0, 0.5) with
    exact zeros (every 97th element) and one all-zero block of 128 (elements 256..383);
    gradients Student t (2 dof) x 1e-2, 10% exact zeros, elements 512..767 zero in every step (an
    all-zero exp_avg block: the 1e-12 scale clip), and every 1009th element x 1e3 (heavy tail)."""
    n = int(np.prod(shape))
    rng = np.random.default_rng([seed, n, list(DT).index(dname)])
    p = (rng.standard_normal(n) * 0.5).astype(np.float32)
    p[::97] = 0.0
    p[256:384] = 0.0
    gs = []
    for _ in range(steps):
        g = (rng.standard_t(2, n) * 1e-2).astype(np.float32)
        g[rng.random(n) < 0.1] = 0.0
        g[512:768] = 0.0
        g[::1009] *= 1e3
        gs.append(g)
    cast = lambda a: torch.from_numpy(a.copy()).to(DT[dname]).float().numpy().copy()
    return cast(p).reshape(shape), np.stack([cast(g).reshape(shape) for g in gs])


def bits(t):
    t = t.detach().cpu()
    if t.dtype == torch.float32:
        return t.numpy().view(np.uint32).copy()
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.view(torch.int16).numpy().view(np.uint16).copy()
    if t.dtype == torch.float8_e4m3fn:
        return t.view(torch.uint8).numpy().copy()
    return t.numpy().copy()


def state_arrays(st, s):
    out = {}
    for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        if k not in st:
            continue
        v = st[k]
        if hasattr(v, "codes"):
            out[f"{k}_codes_{s}"] = bits(v.codes)
            out[f"{k}_scale_{s}"] = bits(v.scale)
        else:
            out[f"{k}_{s}"] = bits(v)
    return out


def rng_state(dev):
    return torch.cuda.get_rng_state() if dev == "cuda" else torch.get_rng_state()


def set_rng_state(dev, s):
    if dev == "cuda":
        torch.cuda.set_rng_state(s)
    else:
        torch.set_rng_state(s)


def replay_seed(dev, before, after):
    """The seed Inductor's inductor_seeds(1) lowering draws (aten.randint.low_out(-2**63,
    2**63-1, [1])), replayed from the state before the step; ok when the replay leaves the
    generator where the step left it."""
    set_rng_state(dev, before)
    seed = torch.randint(-(2**63), 2**63 - 1, (1,), device=dev)
    ok = bool(torch.equal(rng_state(dev), after))
    set_rng_state(dev, after)
    return seed.cpu().numpy().astype(np.int64), ok


def code_files():
    out = set()
    for root, _, files in os.walk(_CACHE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                try:
                    with open(path, errors="replace") as fh:
                        txt = fh.read()
                except OSError:
                    continue
                if "async_compile" in txt or "def call(" in txt:
                    out.add(path)
    return out


def run_case(opt_key, cfg, p0, grads, dname, sr, dev, eager, row):
    import torchao.optim as tao

    cls = getattr(tao, OPTS[opt_key][0])
    p = torch.nn.Parameter(torch.tensor(p0).to(device=dev, dtype=DT[dname]))
    opt = cls([p], **CONFIGS[cfg], bf16_stochastic_round=sr)
    out = {}
    row["sr_replay_ok"] = []
    for s, g in enumerate(grads, 1):
        p.grad = torch.tensor(g).to(device=dev, dtype=DT[dname])
        before = rng_state(dev)
        opt.step()
        if dev == "cuda":
            torch.cuda.synchronize()
        after = rng_state(dev)
        if sr and dname == "bf16":
            seed, ok = replay_seed(dev, before, after)
            out[f"sr_seed_{s}"] = seed
            row["sr_replay_ok"].append(ok)
        if s in SAVE and (s == len(grads) or p.numel() <= 16384):  # a large case: the last
            out[f"p_{s}"] = bits(p)
            out.update(state_arrays(opt.state[p], s))
    st = opt.state[p]
    row["state_kinds"] = {k: type(v).__name__ for k, v in st.items()}
    row["step_tensor"] = float(st["step"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--device", default="cuda", help="cpu: a dry run (Inductor's C++ code)")
    ap.add_argument("--budget", type=float, default=80.0, help="seconds; later cases skipped")
    ap.add_argument("--only", default="", help="comma-separated substrings of case names")
    ap.add_argument("--no-sass", action="store_true", help="skip cuobjdump (about 1 s a cubin)")
    ap.add_argument("--shapes", default="", help="replace SHAPES: e.g. '4096;64x256' (x-separated)")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torchao_optim_capture: no CUDA device", file=sys.stderr)
        return 2
    import torchao
    import torchao.optim.subclass_4bit as s4
    import torchao.optim.subclass_8bit as s8

    os.makedirs(args.out, exist_ok=True)
    global SHAPES
    if args.shapes:
        SHAPES = [tuple(int(v) for v in t.split("x")) for t in args.shapes.split(";")]
    code = {}
    t0 = time.time()
    meta = {"torch": torch.__version__, "git": torch.version.git_version,
            "cuda": torch.version.cuda, "torchao": torchao.__version__,
            "triton": getattr(__import__("importlib").import_module("triton"), "__version__", None)
            if args.device == "cuda" else None,
            "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
            "numpy": np.__version__, "seed": args.seed, "steps": STEPS, "saved_steps": SAVE,
            "inductor_cache": _CACHE, "cases": []}
    q = lambda t: np.asarray(t, dtype=np.float32).view(np.uint32)
    np.savez_compressed(os.path.join(args.out, "qmaps.npz"),
                        q8_signed=q(s8.get_qmap_signed()), q8_unsigned=q(s8.get_qmap_unsigned()),
                        q4_signed=q(s4.get_qmap_signed()), q4_unsigned=q(s4.get_qmap_unsigned()))
    # (optimizer, config, dtype, shape, sr, eager), most needed first
    jobs = []
    for opt_key in OPTS:
        for dname in DT:
            for shape in SHAPES:
                jobs.append((opt_key, "defaults", dname, shape, False, False))
        jobs.append((opt_key, "defaults", "bf16", (32, 128), True, False))
        jobs.append((opt_key, "defaults", "bf16", (1000,), True, False))
        for dname in ("fp32", "bf16"):
            jobs.append((opt_key, "b0.8-0.99-wd0.1-eps1e-6-lr1e-2", dname, (32, 128), False,
                         False))
        jobs.append((opt_key, "defaults", "fp32", (32, 128), False, True))
        jobs.append((opt_key, "defaults", "bf16", (32, 128), False, True))
        if opt_key == "adamw8bit":
            # 256 blocks: more than one Triton program per kernel
            jobs.append((opt_key, "defaults", "fp32", (256, 256), False, False))
            jobs.append((opt_key, "defaults", "bf16", (256, 256), False, False))
            jobs.append((opt_key, "amsgrad", "fp32", (32, 128), False, False))
            jobs.append((opt_key, "amsgrad", "bf16", (4224,), False, False))
    # the core cases of every optimizer first, then the rest (a tight --budget keeps them all)
    core = {("defaults", "fp32", (32, 128), False, False), ("defaults", "bf16", (32, 128), False,
            False), ("defaults", "bf16", (1000,), False, False), ("defaults", "fp32", (4224,),
            False, False), ("defaults", "fp16", (32, 128), False, False),
            ("defaults", "bf16", (32, 128), True, False),
            ("b0.8-0.99-wd0.1-eps1e-6-lr1e-2", "fp32", (32, 128), False, False)}
    jobs.sort(key=lambda j: 0 if j[1:] in core else 1)
    seen = code_files()
    for opt_key, cfg, dname, shape, sr, eager in jobs:
        name = (f"{opt_key}_{cfg}_{dname}_{'x'.join(map(str, shape))}"
                f"{'_sr' if sr else ''}{'_eager' if eager else ''}")
        if args.only and not any(k in name for k in args.only.split(",")):
            continue
        p0, grads = inputs(args.seed, shape, dname)
        h = hashlib.sha256(p0.tobytes() + grads.tobytes()).hexdigest()
        row = {"name": name, "optimizer": opt_key, "torchao_class": OPTS[opt_key][0],
               "block": OPTS[opt_key][1], "config": cfg, "kwargs": repr(CONFIGS[cfg]),
               "dtype": dname, "shape": list(shape), "bf16_stochastic_round": sr,
               "mode": "eager" if eager else "compiled", "inputs_sha256": h}
        if time.time() - t0 > args.budget:
            row["skipped"] = "budget"
            meta["cases"].append(row)
            print(name, "skipped (budget)", flush=True)
            continue
        # eager: torchao's step calls torch.compile(single_param_adam, ...) on every step; the
        # identity in its place runs single_param_adam op by op
        real_compile = torch.compile
        if eager:
            torch.compile = lambda fn, **kw: fn
        frames0 = dict(torch._dynamo.utils.counters["stats"])
        torch.manual_seed(args.seed)
        if args.device == "cuda":
            torch.cuda.manual_seed(args.seed)
        try:
            out = run_case(opt_key, cfg, p0, grads, dname, sr, args.device, eager, row)
        except Exception as ex:
            row["error"] = f"{type(ex).__name__}: {ex}"[:400]
            meta["cases"].append(row)
            print(name, "error:", row["error"][:160], flush=True)
            continue
        finally:
            torch.compile = real_compile
        row["dynamo_stats"] = {k: v - frames0.get(k, 0)
                                for k, v in torch._dynamo.utils.counters["stats"].items()}
        now = code_files()
        row["code"] = sorted(os.path.basename(f) for f in now - seen)
        for f in now - seen:
            with open(f, errors="replace") as fh:
                code[os.path.basename(f)] = fh.read()
        seen = now
        np.savez_compressed(os.path.join(args.out, name + ".npz"), **out)
        row["arrays"] = sorted(out)
        meta["cases"].append(row)
        print(name, "ok", f"{time.time() - t0:.1f}s", f"{len(row['code'])} new graph(s)",
              flush=True)
    meta["seconds"] = time.time() - t0
    with open(os.path.join(args.out, "capture.json"), "w") as f:
        json.dump(meta, f, indent=1)
    # the generated code as one archive: code/<module>.py, named in each case's "code"
    with tarfile.open(os.path.join(args.out, "code.tar.gz"), "w:gz") as tf:
        for k, txt in sorted(code.items()):
            data = txt.encode()
            ti = tarfile.TarInfo("code/" + k)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
        cuobjdump = None if args.no_sass else shutil.which("cuobjdump") or (
            "/usr/local/cuda/bin/cuobjdump" if os.path.exists("/usr/local/cuda/bin/cuobjdump")
            else None)
        for root, _, files in os.walk(_TRITON):
            for f in sorted(files):
                if f.endswith((".ptx", ".cubin", ".ttgir", ".json")):
                    full = os.path.join(root, f)
                    tf.add(full, arcname="triton/" + os.path.relpath(full, _TRITON))
                if f.endswith(".cubin") and cuobjdump:
                    # the SASS ptxas made of it (what contracts, what divides)
                    try:
                        r = subprocess.run([cuobjdump, "-sass", os.path.join(root, f)],
                                           capture_output=True, text=True, timeout=20)
                        data = (r.stdout or r.stderr).encode()
                    except (OSError, subprocess.SubprocessError) as ex:
                        data = f"cuobjdump failed: {ex}".encode()
                    ti = tarfile.TarInfo("triton/" + os.path.relpath(os.path.join(root, f),
                                                                      _TRITON) + ".sass")
                    ti.size = len(data)
                    tf.addfile(ti, io.BytesIO(data))
    size = 0
    for root, _, files in os.walk(args.out):
        size += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    ok = sum(1 for c in meta["cases"] if "arrays" in c)
    print(f"{ok}/{len(meta['cases'])} cases in {meta['seconds']:.1f}s; {args.out}: "
          f"{size / 2**20:.2f} MiB stored")
    return 0


if __name__ == "__main__":
    sys.exit(main())
