#!/usr/bin/env python3
"""bitsandbytes 0.50.2 `bnb.matmul_4bit` (QLoRA's 4-bit matmul) on CUDA, saved for
`exmy gemm --b-format nf4|fp4 --compat bnb-cuda` (issue 33 item 2; the verifier is
bench/peers/qlora_matmul_vs_exmy.py).

bitsandbytes 0.50's matmul_4bit no longer splits into "gemv for batch 1, dequantize + torch for
batch > 1": every call goes to the op bitsandbytes::gemm_4bit, whose CUDA registration
(bitsandbytes/backends/cuda/ops.py) picks per (arch, dtype, M, N, K) either its fused kernel
(csrc/gemm_4bit.cu: SIMT `gemm_4bit_simt` or MMA `gemm_4bit_sm80_m16n8k16`) or the fallback
dequantize_4bit + torch.nn.functional.linear (cuBLAS). This script records, per case, the CUDA
kernels the call launched (torch.profiler), so the verifier knows which path each output took.
It also saves F.gemv_4bit (the older kgemm_4bit_inference_naive kernel, still public) for
batch 1, and the fallback's pieces (dequantize_4bit's bytes as a sha256, F.linear on them).

    python3 bench/peers/qlora_matmul_capture.py --out DIR [--seed S] [--quick] [--cpu-dry-run]

Size (the device call returns little): inputs are NOT stored. W, X and bias are regenerated from
--seed by gen_weight / gen_case (numpy, then torch's CPU cast), and the manifest holds their
sha256, and the sha256 of bitsandbytes' packed codes, absmax, state2 and offset (the verifier
re-quantizes W with exmy and checks those). DIR/weights/<w>.npz (compressed): shape, blocksize,
quant_type, state2_absmax and offset (nested), absmax when <= 4096 blocks. DIR/cases/<case>.npz
(compressed): Y (bf16 as uint16 bits) whole up to 16384 elements, else its first 256 columns,
and likewise Y_gemv (F.gemv_4bit, M = 1) and Y_linear (F.linear on dequantize_4bit, M in 1, 8,
64); the manifest has every output's sha256, the kernels each call launched, the path, and the
sha256 of dequantize_4bit's output in each activation dtype. Stored outputs stop at --max-mib
(then sha256 only). --cpu-dry-run builds every array on the CPU with a stand-in for the
bitsandbytes calls (a plain torch dequantization of the same layout and X @ W.T) so the plumbing
and the size run without a GPU; its manifest says so and nothing in it is bitsandbytes output.
"""
import argparse
import hashlib
import json
import os
import platform
import sys
import time
import warnings

import numpy as np
import torch

DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--quick", action="store_true", help="a few cases (smoke run)")
    ap.add_argument("--cpu-dry-run", action="store_true",
                    help="no GPU: stand-ins for bitsandbytes (plumbing only)")
    ap.add_argument("--budget-s", type=float, default=105.0,
                    help="stop starting cases after this many seconds (the manifest says so)")
    ap.add_argument("--max-mib", type=float, default=6.5,
                    help="stored outputs beyond this many MiB keep only their sha256")
    ap.add_argument("--no-profile", action="store_true", help="skip torch.profiler kernel names")
    return ap.parse_args()


# ---- weights --------------------------------------------------------------------------------------
# (name, N, K, quant_type, blocksize, compress_statistics, weight dtype quantized from)
WEIGHTS = [  # the QLoRA default first, then the small and odd ones, then the large ones
    ("nf4_b64_dq_4096x4096", 4096, 4096, "nf4", 64, True, "bf16"),  # QLoRA's default
    ("nf4_b128_dq_2048x1024", 2048, 1024, "nf4", 128, True, "fp32"),  # small weight (< 4M)
    ("nf4_b32_768x2048", 768, 2048, "nf4", 32, False, "bf16"),
    ("fp4_b32_dq_1000x1536", 1000, 1536, "fp4", 32, True, "bf16"),  # N not a multiple of 64
    ("nf4_b256_1536x4096", 1536, 4096, "nf4", 256, False, "bf16"),
    ("nf4_b512_dq_512x2048", 512, 2048, "nf4", 512, True, "bf16"),
    ("fp4_b1024_640x3072", 640, 3072, "fp4", 1024, False, "fp16"),
    ("nf4_b2048_dq_256x4096", 256, 4096, "nf4", 2048, True, "bf16"),
    ("nf4_b4096_384x8192", 384, 8192, "nf4", 4096, False, "fp32"),
    ("nf4_b32_dq_300x96", 300, 96, "nf4", 32, True, "bf16"),  # K % 64 != 0: SIMT forced
    ("nf4_b128_704x576", 704, 576, "nf4", 128, False, "bf16"),  # K % block != 0: fallback
    ("fp4_b64_999x333", 999, 333, "fp4", 64, False, "fp32"),  # odd N*K: fallback
    ("nf4_b64_dq_17x4160", 17, 4160, "nf4", 64, True, "fp16"),  # tiny N, nested
    ("nf4_b64_dq_11008x4096", 11008, 4096, "nf4", 64, True, "bf16"),  # LLaMA MLP up
    ("nf4_b64_4096x11008", 4096, 11008, "nf4", 64, False, "bf16"),  # LLaMA MLP down
    ("fp4_b64_dq_4096x4096", 4096, 4096, "fp4", 64, True, "fp16"),
    ("fp4_b128_4096x4096", 4096, 4096, "fp4", 128, False, "fp32"),
]
QUICK_WEIGHTS = {"nf4_b64_dq_4096x4096", "fp4_b128_4096x4096", "nf4_b32_dq_300x96",
                 "fp4_b64_999x333", "nf4_b128_dq_2048x1024"}

M_ALL = [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 33, 48, 64]
M_SOME = [1, 2, 4, 6, 8, 16, 32, 64]
M_FEW = [1, 3, 8, 64]


def cases_for(wname):
    """(act dtype, [M...], bias?) lists per weight: bf16 everywhere, fp16/fp32 on a subset."""
    big = wname.startswith(("nf4_b64_dq_4096", "nf4_b64_dq_11008"))
    out = [("bf16", M_ALL if big else M_SOME, False)]
    out.append(("bf16", M_FEW, True))
    out.append(("fp16", M_SOME if big else M_FEW, False))
    out.append(("fp16", [1, 16], True))
    out.append(("fp32", [m for m in (M_SOME if big else M_FEW) if m < 48], False))
    out.append(("fp32", [1, 8], True))
    return out


def heavy(rng, shape, scale=1.0, zeros=0.02):
    """Student t (df 2.5) times powers of two, with exact zeros: heavy tails inside every block."""
    x = rng.standard_t(2.5, size=shape) * np.exp2(rng.integers(-3, 2, size=shape)) * scale
    x[rng.random(shape) < zeros] = 0.0
    return x.astype(np.float32)


def np_bits(t):
    """A CPU tensor as numpy: bf16 as its uint16 bits."""
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def sha(t):
    return hashlib.sha256(np_bits(t).tobytes()).hexdigest()


# ---- CPU stand-ins (dry run only) -----------------------------------------------------------------
NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
       -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
       0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
       0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]


class StandInState:
    pass


def standin_quantize(w, blocksize, compress, qt):
    flat = w.float().reshape(-1)
    n = flat.numel()
    nb = (n + blocksize - 1) // blocksize
    pad = torch.zeros(nb * blocksize)
    pad[:n] = flat
    absmax = pad.view(nb, blocksize).abs().amax(1)
    code = torch.tensor(NF4)
    norm = pad.view(nb, blocksize) / absmax.clamp_min(1e-30)[:, None]
    idx = (norm.reshape(-1, 1) - code[None]).abs().argmin(1).to(torch.uint8)[:n]
    if n % 2:
        idx = torch.cat([idx, torch.zeros(1, dtype=torch.uint8)])
    packed = (idx[0::2] << 4) | idx[1::2]
    st = StandInState()
    st.shape, st.blocksize, st.quant_type, st.code = w.shape, blocksize, qt, code
    st.nested = compress
    st.absmax, st.offset, st.state2 = absmax, None, None
    if compress:
        off = absmax.mean()
        s2 = StandInState()
        s2.blocksize, s2.code = 256, torch.linspace(-1, 1, 256)
        a = absmax - off
        nb2 = (a.numel() + 255) // 256
        p = torch.zeros(nb2 * 256)
        p[: a.numel()] = a
        s2.absmax = p.view(nb2, 256).abs().amax(1)
        st.absmax = ((p.view(nb2, 256) / s2.absmax[:, None] + 1) * 127.5).round().clamp(0, 255)
        st.absmax = st.absmax.reshape(-1)[: a.numel()].to(torch.uint8)
        st.offset, st.state2 = off, s2
    return packed.view(-1, 1), st


def standin_absmax(st):
    if not st.nested:
        return st.absmax
    nb2 = st.state2.absmax.numel()
    a = st.state2.code[st.absmax.long()]
    a = torch.cat([a, torch.zeros(nb2 * 256 - a.numel())]).view(nb2, 256) * st.state2.absmax[:, None]
    return a.reshape(-1)[: st.absmax.numel()] + st.offset


def standin_dequant(packed, st, dtype):
    p = packed.reshape(-1)
    idx = torch.stack([p >> 4, p & 15], 1).reshape(-1).long()
    n = st.shape[0] * st.shape[1]
    v = st.code[idx[:n]]
    am = standin_absmax(st).repeat_interleave(st.blocksize)[:n]
    return (v * am).to(dtype).view(st.shape)


# ---- the capture ----------------------------------------------------------------------------------
def kernels_of(fn, use_prof):
    """Run fn once under torch.profiler; return (result, [CUDA kernel names in launch order])."""
    if not use_prof:
        return fn(), []
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        r = fn()
        torch.cuda.synchronize()
    names = []
    for e in prof.events():
        if getattr(e, "device_type", None) is not None and str(e.device_type).endswith("CUDA"):
            names.append(e.name)
    return r, names


def path_of(kernels):
    k = " ".join(kernels)
    if "gemm_4bit_simt" in k:
        return "simt"
    if "gemm_4bit_sm80" in k:
        return "mma_sm80"
    if "gemm_4bit_sm75" in k:
        return "mma_sm75"
    if "kgemm_4bit_inference" in k:
        return "gemv_naive"
    if "Dequantize" in k or "dequantize" in k:
        return "dequant+linear"
    return "unknown" if kernels else "not-profiled"


def main():
    a = parse_args()
    t0 = time.time()
    dry = a.cpu_dry_run
    if not dry and not torch.cuda.is_available():
        print("qlora_matmul_capture: no CUDA device (use --cpu-dry-run for the plumbing)", file=sys.stderr)
        return 2
    dev = "cpu" if dry else "cuda"
    use_prof = not dry and not a.no_profile
    if not dry:
        import bitsandbytes as bnb
    os.makedirs(os.path.join(a.out, "weights"), exist_ok=True)
    os.makedirs(os.path.join(a.out, "cases"), exist_ok=True)
    man = {"script": "bench/peers/qlora_matmul_capture.py", "seed": a.seed, "dry_run": dry,
           "torch": torch.__version__, "numpy": np.__version__, "python": platform.python_version(),
           "weights": {}, "cases": []}
    if not dry:
        p = torch.cuda.get_device_properties(0)
        man.update(bitsandbytes=bnb.__version__, bitsandbytes_file=bnb.__file__,
                   cuda=torch.version.cuda, device=torch.cuda.get_device_name(0),
                   sm=f"{p.major}{p.minor}", num_sms=p.multi_processor_count,
                   cublas=getattr(torch._C, "_cuda_getCublasVersion", lambda: None)(),
                   allow_tf32=torch.backends.cuda.matmul.allow_tf32,
                   allow_bf16_reduced=torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
                   allow_fp16_reduced=torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)
        # bitsandbytes' Python dispatch decides the path: the installed files' checksums
        src = os.path.dirname(bnb.__file__)
        man["bnb_sources"] = {}
        for rel in ("backends/cuda/ops.py", "autograd/_functions.py", "functional.py", "_ops.py"):
            f = os.path.join(src, rel)
            if os.path.exists(f):
                man["bnb_sources"][rel] = hashlib.sha256(open(f, "rb").read()).hexdigest()
        man["bnb_libs"] = sorted(x for x in os.listdir(src) if x.startswith("libbitsandbytes"))
    ncase = 0
    man["errors"] = []
    budget = {"used": 0, "max": int(a.max_mib * 2**20)}
    for wi, (wname, N, K, qt, bs, comp, wdt) in enumerate(WEIGHTS):
        if a.quick and wname not in QUICK_WEIGHTS:
            continue
        if time.time() - t0 > a.budget_s:
            man["truncated_at_s"] = a.budget_s
            break
        try:
            ncase += capture_weight(a, man, wi, dev, dry, use_prof, t0, wname, N, K, qt, bs, comp, wdt,
                                    budget)
        except Exception as e:  # one weight's failure must not lose the others
            man["errors"].append(f"{wname}: {type(e).__name__}: {e}")
            print(f"{wname}: ERROR {type(e).__name__}: {e}", flush=True)
    man["elapsed_s"] = round(time.time() - t0, 2)
    finish(a, man, ncase)
    return 0


# ---- inputs: regenerated offline from the seeds (the capture stores checksums, not inputs) -------
def gen_weight(seed, wi, N, K, wdt):
    """W (CPU tensor of dtype wdt): heavy-tailed fp32 from numpy, then torch's CPU cast (RNE)."""
    return torch.from_numpy(heavy(np.random.default_rng([seed, wi]), (N, K), 0.02)).to(DT[wdt])


def gen_case(seed, wi, ci, shape, N, adt, use_bias):
    """X (and bias) as CPU tensors of dtype adt."""
    rng = np.random.default_rng([seed, wi, 1000 + ci])
    x = torch.from_numpy(heavy(rng, shape, 1.0, 0.05)).to(DT[adt])
    b = torch.from_numpy(heavy(rng, (N,), 0.5)).to(DT[adt]) if use_bias else None
    return x, b


def case_shape(M, K, use_bias):
    return (2, 3, K) if M == 6 and not use_bias else (M, K)  # M = 6 also as a 3-d input


def case_list(wname):
    """(case index, case name, dtype, M, bias) of one weight, in capture order."""
    out, ci = [], 0
    for adt, Ms, use_bias in cases_for(wname):
        for M in Ms:
            out.append((ci, f"{wname}__{adt}_M{M}{'_bias' if use_bias else ''}", adt, M, use_bias))
            ci += 1
    return out


FULL_MAX = 16384  # outputs up to this many elements are stored whole; larger ones as Y[:, :256]
HEAD = 256


def store_out(cd, rec, key, y, budget):
    """y's sha256 into rec; y (or its first HEAD columns) into cd unless the size budget is spent."""
    b = np_bits(y)
    rec[key + "_sha256"] = hashlib.sha256(b.tobytes()).hexdigest()
    b2 = b.reshape(-1, b.shape[-1])
    if b.size <= FULL_MAX:
        part, how = b2, "full"
    else:
        part, how = b2[:, :HEAD], f"head{HEAD}"
    if budget["used"] + part.nbytes > budget["max"]:
        rec[key + "_stored"] = "sha256 only"
        return
    cd[key] = part
    budget["used"] += part.nbytes
    rec[key + "_stored"] = how


def capture_weight(a, man, wi, dev, dry, use_prof, t0, wname, N, K, qt, bs, comp, wdt, budget):
    if not dry:
        import bitsandbytes as bnb
        import bitsandbytes.functional as F
    ncase = 0
    w_cpu = gen_weight(a.seed, wi, N, K, wdt)
    w = w_cpu.to(dev)
    if dry:
        packed, st = standin_quantize(w, bs, comp, qt)
    else:
        packed, st = F.quantize_4bit(w, blocksize=bs, compress_statistics=comp, quant_type=qt)
    wrec = {"index": wi, "N": N, "K": K, "quant_type": qt, "blocksize": bs,
            "compress_statistics": comp, "quantized_from": wdt, "w_sha256": sha(w_cpu),
            "packed_shape": list(packed.shape), "packed_dtype": str(packed.dtype),
            "packed_sha256": sha(packed), "absmax_sha256": sha(st.absmax),
            "absmax_dtype": str(st.absmax.dtype)}
    wd = {"shape": np.array([N, K], np.int64), "blocksize": np.array(bs, np.int64),
          "quant_type": np.array(qt)}
    if st.absmax.numel() <= 4096:
        wd["absmax"] = np_bits(st.absmax)
    if comp:
        wd.update(state2_absmax=np_bits(st.state2.absmax), offset=np_bits(st.offset.reshape(1)))
        wrec.update(state2_absmax_sha256=sha(st.state2.absmax), state2_code_sha256=sha(st.state2.code),
                    offset_sha256=sha(st.offset.reshape(1)), state2_blocksize=st.state2.blocksize)
    np.savez_compressed(os.path.join(a.out, "weights", wname + ".npz"), **wd)
    man["weights"][wname] = wrec
    deq_sha = {}
    for ci, cname, adt, M, use_bias in case_list(wname):
        if time.time() - t0 > a.budget_s:
            man["truncated_at_s"] = a.budget_s
            break
        dt = DT[adt]
        if adt not in deq_sha:
            wdq = standin_dequant(packed, st, dt) if dry else F.dequantize_4bit(packed, st).to(dt)
            deq_sha[adt] = sha(wdq)
        shape = case_shape(M, K, use_bias)
        x_cpu, b_cpu = gen_case(a.seed, wi, ci, shape, N, adt, use_bias)
        x = x_cpu.to(dev)
        bias = b_cpu.to(dev) if use_bias else None
        if dry:
            y = torch.nn.functional.linear(x, wdq, bias)
            y2, kern = y, []
        else:
            with torch.inference_mode(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                y, kern = kernels_of(lambda: bnb.matmul_4bit(x, packed.t(), st, bias=bias), use_prof)
                y2 = bnb.matmul_4bit(x, packed.t(), st, bias=bias)
            torch.cuda.synchronize()
        cd = {}
        rec = {"case": cname, "index": ci, "weight": wname, "dtype": adt, "M": M, "x_shape": list(shape),
               "bias": use_bias, "x_sha256": sha(x_cpu), "kernels": kern,
               "path": path_of(kern) if not dry else "dry-run",
               "repeat_equal": bool(torch.equal(y, y2)), "deq_sha256": deq_sha[adt]}
        if use_bias:
            rec["bias_sha256"] = sha(b_cpu)
        store_out(cd, rec, "Y", y, budget)
        if M == 1 and not dry:
            try:
                with torch.inference_mode():
                    yg, kg = kernels_of(lambda: F.gemv_4bit(x, packed.t(), state=st), use_prof)
                store_out(cd, rec, "Y_gemv", yg, budget)
                rec["gemv_kernels"], rec["gemv_path"] = kg, path_of(kg)
            except Exception as e:
                rec["gemv_error"] = f"{type(e).__name__}: {e}"
        if M in (1, 8, 64) and not use_bias and not dry and adt != "fp32":
            # the fallback's cuBLAS half on bitsandbytes' own dequantized weight
            wdq = F.dequantize_4bit(packed, st).to(dt)
            with torch.inference_mode():
                yl, kl = kernels_of(lambda: torch.nn.functional.linear(x, wdq), use_prof)
            store_out(cd, rec, "Y_linear", yl, budget)
            rec["linear_kernels"] = kl
        if not dry and M == 2 and adt == "bf16" and not use_bias:
            # the autograd path (requires_grad): MatMul4Bit.apply, same op
            xg = x.clone().requires_grad_(True)
            yg2 = bnb.matmul_4bit(xg, packed.t(), st)
            rec["autograd_equal"] = bool(torch.equal(yg2.detach(), y))
        np.savez_compressed(os.path.join(a.out, "cases", cname + ".npz"), **cd)
        man["cases"].append(rec)
        ncase += 1
        print(f"[{time.time() - t0:6.1f}s] {cname}: path {rec['path']}"
              f"{' gemv ' + rec.get('gemv_path', '') if M == 1 else ''}", flush=True)
    return ncase


def finish(a, man, ncase):
    man["stored_bytes"] = sum(os.path.getsize(os.path.join(r, f))
                              for r, _, fs in os.walk(a.out) for f in fs)
    tmp = os.path.join(a.out, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(man, f, indent=1)
    os.replace(tmp, os.path.join(a.out, "manifest.json"))
    paths = {}
    for c in man["cases"]:
        paths[(c["dtype"], c["path"])] = paths.get((c["dtype"], c["path"]), 0) + 1
    print(f"qlora_matmul_capture: {ncase} cases in {man['elapsed_s']} s; paths "
          + ", ".join(f"{d}/{p}: {n}" for (d, p), n in sorted(paths.items()))
          + (f"; {len(man['errors'])} errors" if man["errors"] else "")
          + f"; stored {man['stored_bytes'] / 2**20:.2f} MiB in {a.out}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
