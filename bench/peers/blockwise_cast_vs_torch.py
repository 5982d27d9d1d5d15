#!/usr/bin/env python3
"""2-D block scaling (docs/SEMANTICS.md 7.15) against the libraries' own code on CUDA, bit for bit:
`exmy quantize --scheme block:RxC --to e4m3fn --variant deepgemm|te|torchao` versus

  - DeepGEMM's per_token_cast_to_fp8 (1x128) and per_block_cast_to_fp8 (128x128), with and without
    use_ue8m0, run with torch on CUDA (the functions are copied below from DeepGEMM's
    deep_gemm/utils/math.py at 54e2261, MIT licence, Copyright (c) 2025 DeepSeek);
  - TransformerEngine's pure-python reference quantizer (TransformerEngine/tests/pytorch/references/
    blockwise_quantizer_reference.py + quantize_scale_calc.py): not part of the TE wheel, so the
    script imports it from --te-ref DIR (a directory holding `references/` from TE's
    TransformerEngine/tests/pytorch); without it the TE cases are skipped and the summary says so;
  - torchao 0.18's Triton kernels (torchao.prototype.blockwise_fp8_training.kernels:
    triton_fp8_blockwise_act_quant_lhs 1x128, triton_fp8_blockwise_act_quant_rhs 128x1,
    triton_fp8_blockwise_weight_quant_rhs 128x128).

Inputs: bf16, fp16 and fp32; shapes with whole tiles and (DeepGEMM, TE) partial edge tiles;
Student-t (df 2.5) values times powers of two, with special tiles (all zero, subnormal, NaN, +-inf,
amax just around DeepGEMM's 1e-4 clamp). Compared: every fp8 code, every scale (bits; NaN equal to
NaN), and exmy dequantize against RN32(code value * scale) computed with torch.

    python3 bench/peers/blockwise_cast_vs_torch.py --exmy build-cuda/cli/exmy --out OUT \
        [--device cpu|cuda] [--te-ref DIR] [--quick]

Writes OUT/summary.md and OUT/summary.json; exit 1 when any bit differs.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Tuple

import numpy as np
import torch

ap = argparse.ArgumentParser()
ap.add_argument("--exmy", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="exmy's backend")
ap.add_argument("--te-ref", default="", help="directory holding TE's TransformerEngine/tests/pytorch/references")
ap.add_argument("--quick", action="store_true")
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
exmy = os.path.abspath(args.exmy)
dev = "cuda"
assert torch.cuda.is_available(), "the libraries' arithmetic is the CUDA one: run on a GPU"


# ---- DeepGEMM deep_gemm/utils/math.py (54e2261), copied verbatim ----------------------------------
# MIT License, Copyright (c) 2025 DeepSeek. Permission is hereby granted, free of charge, to any
# person obtaining a copy of this software ... (full text: DeepGEMM's LICENSE).
def ceil_div(x: int, y: int) -> int:
    return (x + y - 1) // y


def align(x: int, y: int) -> int:
    return ceil_div(x, y) * y


def ceil_to_ue8m0(x: torch.Tensor):
    bits = x.abs().float().view(torch.int)
    exp = ((bits >> 23) & 0xFF) + (bits & 0x7FFFFF).bool().int()
    return (exp.clamp(1, 254) << 23).view(torch.float)


def pack_ue8m0_to_int(x: torch.Tensor):
    assert x.dtype == torch.float and x.size(-1) % 4 == 0
    x_int = x.view(torch.int)
    assert (x_int >= 0).all() and (x_int & 0x7fffff == 0).all()
    return (x_int >> 23).to(torch.uint8).view(torch.int)


def per_token_cast_to_fp8(x: torch.Tensor, use_ue8m0: bool, gran_k: int = 128,
                          use_packed_ue8m0: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    assert x.dim() == 2
    m, n = x.shape
    padded_n = align(n, gran_k)
    x_padded = torch.empty((m, padded_n), dtype=x.dtype, device=x.device).fill_(0)
    x_padded[:, :n] = x
    x_view = x_padded.view(m, padded_n // gran_k, gran_k)
    x_amax = x_view.abs().float().amax(dim=2).view(m, padded_n // gran_k).clamp(1e-4)
    sf = x_amax / 448.0
    sf = ceil_to_ue8m0(sf) if use_ue8m0 else sf
    x_fp8 = (x_view * (1.0 / sf.unsqueeze(2))).to(torch.float8_e4m3fn).view(m, padded_n)[:, :n].contiguous()
    return x_fp8, pack_ue8m0_to_int(sf) if use_packed_ue8m0 else sf


def per_block_cast_to_fp8(x: torch.Tensor, use_ue8m0: bool, gran_k: int = 128) -> Tuple[torch.Tensor, torch.Tensor]:
    assert x.dim() == 2
    m, n = x.shape
    x_padded = torch.zeros((align(m, gran_k), align(n, gran_k)), dtype=x.dtype, device=x.device)
    x_padded[:m, :n] = x
    x_view = x_padded.view(-1, gran_k, x_padded.size(1) // gran_k, gran_k)
    x_amax = x_view.abs().float().amax(dim=(1, 3), keepdim=True).clamp(1e-4)
    sf = x_amax / 448.0
    sf = ceil_to_ue8m0(sf) if use_ue8m0 else sf
    x_scaled = (x_view * (1.0 / sf)).to(torch.float8_e4m3fn)
    return x_scaled.view_as(x_padded)[:m, :n].contiguous(), sf.view(x_view.size(0), x_view.size(2))
# ---- end of the DeepGEMM copy ---------------------------------------------------------------------


te_ref = None
te_note = "TE reference not given (--te-ref): TE cases skipped"
if args.te_ref:
    sys.path.insert(0, os.path.abspath(args.te_ref))
    try:
        from references.blockwise_quantizer_reference import BlockwiseQuantizerReference
        te_ref = BlockwiseQuantizerReference()
        te_note = "TE reference imported from " + args.te_ref
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        te_note = f"TE reference not importable from {args.te_ref}: {e!r}"

tao = None
try:
    import torchao
    from torchao.prototype.blockwise_fp8_training import kernels as tao
    tao_note = "torchao " + torchao.__version__
except Exception as e:  # noqa: BLE001
    tao_note = f"torchao blockwise kernels not importable: {e!r}"


# ---- inputs ---------------------------------------------------------------------------------------
def make_input(rows, cols, dtype, seed, specials):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    t = torch.distributions.StudentT(torch.tensor(2.5)).sample((rows, cols))
    scale = 2.0 ** torch.randint(-12, 8, (rows, 1), generator=g).float()
    x = (t * scale).float()
    if specials and rows >= 2 and cols >= 128:
        x[0, 0:128] = 0.0                                # all-zero tile
        x[0, 0] = -0.0
        x[1, 0:64] = 1e-40                               # subnormal amax (fp32 / bf16)
        x[1, 64:128] = 0.0
        if cols >= 256:
            x[0, 128:256] = 0.5
            x[0, 130] = float("nan")                     # a NaN in a tile
            x[1, 128:256] = -1.0
            x[1, 131] = float("inf")                     # an inf
        if cols >= 384:
            x[0, 256:384] = 1e-4 * 0.99                  # amax under DeepGEMM's clamp
            x[1, 256:384] = np.float32(1e-4).item()      # on it
    return x.to(dtype)


def to_npy(x, path):
    if x.dtype == torch.bfloat16:
        np.save(path, x.view(torch.int16).cpu().numpy().view(np.uint16))
        return ["--in-format", "bf16"]
    np.save(path, x.cpu().numpy())
    return []


def run_exmy(x, scheme, variant, fmt, tmp):
    xin, q, s, d = (os.path.join(tmp, n) for n in ("x.npy", "q.npy", "s.npy", "d.npy"))
    extra = to_npy(x, xin)
    cmd = [exmy, "quantize", "--scheme", scheme, "--to", "e4m3fn", "--variant", variant,
           "--scale-format", fmt, "--in", xin, "--out", q, "--state-out", s,
           "--device", args.device] + extra
    subprocess.run(cmd, check=True, capture_output=True)
    subprocess.run([exmy, "dequantize", "--scheme", scheme, "--from", "e4m3fn", "--variant",
                    variant, "--scale-format", fmt, "--in", q, "--state-in", s, "--out", d,
                    "--device", args.device], check=True, capture_output=True)
    return np.load(q), np.load(s), np.load(d)


def f32_bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def compare(name, lib_q, lib_s, ex_q, ex_s, ex_d, R, C):
    lib_q = lib_q.contiguous().view(torch.uint8).cpu().numpy()
    lib_s = lib_s.float().contiguous().cpu().numpy().reshape(ex_s.shape)
    code_diff = int((lib_q != ex_q).sum())
    lb, eb = f32_bits(lib_s), f32_bits(ex_s)
    both_nan = np.isnan(lib_s) & np.isnan(ex_s)
    scale_diff = int(((lb != eb) & ~both_nan).sum())
    # exmy's dequantization, RN32(value * S), recomputed with torch from exmy's own arrays.
    vals = torch.from_numpy(ex_q).view(torch.float8_e4m3fn).float()
    S = torch.from_numpy(ex_s).repeat_interleave(R, 0)[: vals.shape[0]]
    S = S.repeat_interleave(C, 1)[:, : vals.shape[1]]
    want = (vals * S).numpy()
    dd = (f32_bits(want) != f32_bits(ex_d)) & ~(np.isnan(want) & np.isnan(ex_d))
    first = ""
    if code_diff:
        i = np.argwhere(lib_q != ex_q)[0]
        first = f"code at {tuple(i)}: lib 0x{lib_q[tuple(i)]:02x} exmy 0x{ex_q[tuple(i)]:02x}"
    elif scale_diff:
        i = np.argwhere((lb != eb) & ~both_nan)[0]
        first = f"scale at {tuple(i)}: lib 0x{lb[tuple(i)]:08x} exmy 0x{eb[tuple(i)]:08x}"
    return {"case": name, "codes": int(lib_q.size), "code_diff": code_diff,
            "scales": int(lib_s.size), "scale_diff": scale_diff, "dequant_diff": int(dd.sum()),
            "first": first}


shapes_whole = [(128, 128), (256, 512), (512, 1024), (1, 128), (384, 7168 if not args.quick else 256)]
shapes_partial = [(130, 200), (1, 1), (37, 300), (257, 129)]
dtypes = [torch.bfloat16, torch.float16, torch.float32]
results = []
t0 = time.time()
with tempfile.TemporaryDirectory() as tmp:
    seed = 0
    for dtype in dtypes:
        for (rows, cols) in shapes_whole + shapes_partial:
            whole = rows % 128 == 0 and cols % 128 == 0
            for specials in (False, True):
                seed += 1
                x = make_input(rows, cols, dtype, seed, specials).to(dev)
                tag = f"{str(dtype)[6:]} {rows}x{cols}{' specials' if specials else ''}"
                for ue in (False, True):
                    fmt = "ue8m0" if ue else "fp32"
                    q, s = per_token_cast_to_fp8(x, use_ue8m0=ue)
                    results.append(compare(f"deepgemm 1x128 {fmt} {tag}", q, s,
                                           *run_exmy(x, "block:1x128", "deepgemm", fmt, tmp), 1, 128))
                    q, s = per_block_cast_to_fp8(x, use_ue8m0=ue)
                    results.append(compare(f"deepgemm 128x128 {fmt} {tag}", q, s,
                                           *run_exmy(x, "block:128x128", "deepgemm", fmt, tmp), 128, 128))
                if te_ref is not None:
                    for pow2 in (False, True):
                        fmt = "pow2" if pow2 else "fp32"
                        for tile in ((1, 128), (128, 128)):
                            r = te_ref.quantize(x, torch.float8_e4m3fn, return_transpose=False,
                                                eps=0.0, pow_2_scales=pow2, quant_tile_shape=tile,
                                                munge_scale_shapes=False)
                            sch = f"block:{tile[0]}x{tile[1]}"
                            results.append(compare(f"te {sch} {fmt} {tag}", r.data, r.scale,
                                                   *run_exmy(x, sch, "te", fmt, tmp), *tile))
                if tao is not None and whole:
                    y, s = tao.triton_fp8_blockwise_act_quant_lhs(x.contiguous(), 128)
                    results.append(compare(f"torchao 1x128 {tag}", y, s,
                                           *run_exmy(x, "block:1x128", "torchao", "fp32", tmp), 1, 128))
                    y, s = tao.triton_fp8_blockwise_weight_quant_rhs(x.contiguous(), 128)
                    results.append(compare(f"torchao 128x128 {tag}", y, s,
                                           *run_exmy(x, "block:128x128", "torchao", "fp32", tmp), 128, 128))
                    try:
                        y, s = tao.triton_fp8_blockwise_act_quant_rhs(x.contiguous(), 128)
                        results.append(compare(f"torchao 128x1 {tag}", y, s,
                                               *run_exmy(x, "block:128x1", "torchao", "fp32", tmp), 128, 1))
                    except Exception as e:  # noqa: BLE001
                        results.append({"case": f"torchao 128x1 {tag}", "error": repr(e)})

bad = [r for r in results if r.get("error") or r["code_diff"] or r["scale_diff"] or r["dequant_diff"]]
summary = {"exmy": exmy, "device": args.device, "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name(), "te": te_note, "torchao": tao_note,
           "cases": len(results), "failing": len(bad),
           "codes_compared": sum(r.get("codes", 0) for r in results),
           "seconds": round(time.time() - t0, 1), "results": results}
with open(os.path.join(args.out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=1)
with open(os.path.join(args.out, "summary.md"), "w") as f:
    f.write(f"# 2-D block casts vs the libraries on {summary['gpu']} (torch {torch.__version__})\n\n")
    f.write(f"- exmy {args.device}; {te_note}; {tao_note}\n")
    f.write(f"- {len(results)} cases, {summary['codes_compared']} codes, {len(bad)} failing\n\n")
    f.write("| case | codes | code diff | scales | scale diff | dequant diff | first |\n|---|---|---|---|---|---|---|\n")
    for r in results:
        if "error" in r:
            f.write(f"| {r['case']} | | | | | | error {r['error']} |\n")
        else:
            f.write(f"| {r['case']} | {r['codes']} | {r['code_diff']} | {r['scales']} | "
                    f"{r['scale_diff']} | {r['dequant_diff']} | {r['first']} |\n")
print(f"{len(results)} cases, {len(bad)} failing; {te_note}; {tao_note}")
sys.exit(1 if bad else 0)
