#!/usr/bin/env python3
"""2-D block scaling (docs/SEMANTICS.md 7.15) against the libraries' own code, bit for bit:
`exmy quantize --scheme block:RxC --to e4m3fn --variant deepgemm|te|torchao` versus

  - DeepGEMM's per_token_cast_to_fp8 (1x128) and per_block_cast_to_fp8 (128x128), with and without
    use_ue8m0, run with torch (the functions are copied below from DeepGEMM's
    deep_gemm/utils/math.py at 54e2261, MIT licence, Copyright (c) 2025 DeepSeek);
  - TransformerEngine's pure-python reference quantizer (TransformerEngine/tests/pytorch/references/
    blockwise_quantizer_reference.py + quantize_scale_calc.py): not part of the TE wheel, so the
    script imports it from --te-ref DIR (a directory holding `references/` from TE's
    TransformerEngine/tests/pytorch); without it the TE groups are skipped and the summary says so;
  - torchao 0.18's Triton kernels (torchao.prototype.blockwise_fp8_training.kernels:
    triton_fp8_blockwise_act_quant_lhs 1x128, triton_fp8_blockwise_act_quant_rhs 128x1,
    triton_fp8_blockwise_weight_quant_rhs 128x128; CUDA only).

Inputs: bf16, fp16 and fp32; shapes with whole tiles and (DeepGEMM, TE) partial edge tiles;
Student-t (df 2.5) values times powers of two, with special tiles (all zero, subnormal, NaN, +-inf,
amax just around DeepGEMM's 1e-4 clamp). Compared: every fp8 code, every scale (bits; NaN equal to
NaN), and exmy dequantize against RN32(code value * scale) computed with numpy.

Speed: one case group = (library rule, tile, scale format, dtype); its cases (shapes x specials)
are laid side by side in one matrix on the tile grid (peer_harness.layout_2d), so exmy runs twice
per group (quantize, dequantize), on the CPU by default (the GPU tests prove its CUDA kernels
byte-identical). 33 groups; one progress line each.

    python3 bench/peers/blockwise_cast_vs_torch.py --exmy build/cli/exmy --out OUT \
        [--device cpu|cuda] [--threads N] [--te-ref DIR] [--quick] [--lib-device cuda|cpu]
        [--selftest] [--check-batching K] [--no-batch] [--only SUBSTR]

--lib-device cpu runs the libraries' side on CPU torch where it can (DeepGEMM's functions and TE's
reference are plain torch; torchao's Triton kernels are skipped). CPU torch divides where CUDA
multiplies by a reciprocal (SEMANTICS 7.15: DeepGEMM's `x_amax / 448.0`), so DeepGEMM's fp32 scales
may differ by an ulp there: on the CPU those differences are reported as expected, not failures.
--selftest = --lib-device cpu --quick --check-batching 2 (the plumbing, off the GPU).

Writes OUT/summary.md and OUT/summary.json (atomically); exit 0 all equal, 1 a bit differs, 2 a
script error or a case the library could not run (the summary then lists what ran and the error).
"""
import argparse
import os
import sys
import tempfile
from typing import Tuple

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_harness as H  # noqa: E402


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


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="exmy's backend")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="OMP_NUM_THREADS for exmy (default: the cores)")
    ap.add_argument("--lib-device", default="cuda", choices=["cuda", "cpu"],
                    help="where the libraries' torch code runs (cpu: a smoke run, torchao skipped)")
    ap.add_argument("--te-ref", default="",
                    help="directory holding TE's TransformerEngine/tests/pytorch/references")
    ap.add_argument("--quick", action="store_true", help="smaller shapes (a smoke run)")
    ap.add_argument("--selftest", action="store_true",
                    help="= --lib-device cpu --quick --check-batching 2")
    H.add_batching_args(ap, "group")
    a = ap.parse_args(argv)
    if a.selftest:
        a.lib_device, a.quick, a.check_batching = "cpu", True, max(a.check_batching, 2)
    return a


# ---- inputs ---------------------------------------------------------------------------------------
def make_input(rows, cols, dtype, seed, specials):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
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


def save_input(x, path):
    """x (CPU tensor) as exmy reads it: <f4, <f2, or bf16 bits as <u2 with --in-format bf16."""
    if x.dtype == torch.bfloat16:
        np.save(path, x.contiguous().view(torch.int16).numpy().view(np.uint16))
        return ["--in-format", "bf16"]
    np.save(path, x.contiguous().numpy())
    return []


def f32_bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


E4M3_VALUES = None


def e4m3_values(codes):
    global E4M3_VALUES
    if E4M3_VALUES is None:
        E4M3_VALUES = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(
            torch.float8_e4m3fn).float().numpy()
    return E4M3_VALUES[codes]


# ---- the library side -----------------------------------------------------------------------------
class Libraries:
    def __init__(self, args):
        self.dev = args.lib_device
        self.notes = {}
        self.te = None
        if args.te_ref:
            sys.path.insert(0, os.path.abspath(args.te_ref))
            try:
                from references.blockwise_quantizer_reference import BlockwiseQuantizerReference
                self.te = BlockwiseQuantizerReference()
                self.notes["te"] = f"TE reference imported from {args.te_ref} (on {self.dev})"
            except Exception as e:  # noqa: BLE001 - reported, not fatal
                self.notes["te"] = f"TE reference not importable from {args.te_ref}: {e!r}"
        else:
            self.notes["te"] = "TE reference not given (--te-ref): TE groups skipped"
        self.tao = None
        if self.dev != "cuda":
            self.notes["torchao"] = ("torchao's Triton kernels run on CUDA only: torchao groups "
                                     "skipped with --lib-device cpu")
        else:
            try:
                import torchao
                from torchao.prototype.blockwise_fp8_training import kernels as tao
                self.tao = tao
                self.notes["torchao"] = "torchao " + torchao.__version__
            except Exception as e:  # noqa: BLE001
                self.notes["torchao"] = f"torchao blockwise kernels not importable: {e!r}"
        self.notes["deepgemm"] = (f"DeepGEMM 54e2261 casts with torch {torch.__version__} on "
                                  f"{self.dev}")
        if self.dev == "cpu":
            self.notes["deepgemm"] += (" (CPU torch divides by 448.0 where CUDA multiplies by "
                                       "RN32(1/448), and x86 makes negative NaNs: such "
                                       "differences are reported as expected on the CPU)")

    def groups(self):
        """[(name, variant, (R, C), fmt, fn(x) -> (codes, scales), whole_only)]."""
        g = []
        for ue in (False, True):
            fmt = "ue8m0" if ue else "fp32"
            g.append((f"deepgemm 1x128 {fmt}", "deepgemm", (1, 128), fmt,
                      lambda x, ue=ue: per_token_cast_to_fp8(x, use_ue8m0=ue), False))
            g.append((f"deepgemm 128x128 {fmt}", "deepgemm", (128, 128), fmt,
                      lambda x, ue=ue: per_block_cast_to_fp8(x, use_ue8m0=ue), False))
        if self.te is not None:
            for pow2 in (False, True):
                fmt = "pow2" if pow2 else "fp32"
                for tile in ((1, 128), (128, 128)):
                    def te_fn(x, pow2=pow2, tile=tile):
                        r = self.te.quantize(x, torch.float8_e4m3fn, return_transpose=False,
                                             eps=0.0, pow_2_scales=pow2, quant_tile_shape=tile,
                                             munge_scale_shapes=False)
                        return r.data, r.scale
                    g.append((f"te {tile[0]}x{tile[1]} {fmt}", "te", tile, fmt, te_fn, False))
        if self.tao is not None:
            tao = self.tao
            g.append(("torchao 1x128", "torchao", (1, 128), "fp32",
                      lambda x: tao.triton_fp8_blockwise_act_quant_lhs(x.contiguous(), 128), True))
            g.append(("torchao 128x128", "torchao", (128, 128), "fp32",
                      lambda x: tao.triton_fp8_blockwise_weight_quant_rhs(x.contiguous(), 128),
                      True))
            g.append(("torchao 128x1", "torchao", (128, 1), "fp32",
                      lambda x: tao.triton_fp8_blockwise_act_quant_rhs(x.contiguous(), 128), True))
        return g


# ---- exmy side ------------------------------------------------------------------------------------
def exmy_quantize(exmy, x, variant, tile, fmt, tmp, tag):
    """exmy quantize + dequantize of one matrix x (CPU tensor) -> (codes u8, S f32, D f32)."""
    xin, q, s, d = (os.path.join(tmp, f"{tag}-{n}.npy") for n in "xqsd")
    extra = save_input(x, xin)
    sch = f"block:{tile[0]}x{tile[1]}"
    exmy("quantize", "--scheme", sch, "--to", "e4m3fn", "--variant", variant, "--scale-format",
         fmt, "--in", xin, "--out", q, "--state-out", s, *extra)
    exmy("dequantize", "--scheme", sch, "--from", "e4m3fn", "--variant", variant,
         "--scale-format", fmt, "--in", q, "--state-in", s, "--out", d)
    out = np.load(q).view(np.uint8), np.load(s), np.load(d)
    for p in (xin, q, s, d):
        os.unlink(p)
    return out


def exmy_batched(exmy, xs, variant, tile, fmt, tmp):
    """The cases xs laid out on the tile grid in one matrix: one quantize, one dequantize; returns
    each case's (codes, S, D) cut back out."""
    R, C = tile
    pos, (rows, cols) = H.layout_2d([tuple(x.shape) for x in xs], R, C)
    big = torch.zeros((rows, cols), dtype=xs[0].dtype)
    for (r0, c0), x in zip(pos, xs):
        big[r0:r0 + x.shape[0], c0:c0 + x.shape[1]] = x
    q, s, d = exmy_quantize(exmy, big, variant, tile, fmt, tmp, "batch")
    out = []
    for (r0, c0), x in zip(pos, xs):
        r, c = x.shape
        out.append((q[r0:r0 + r, c0:c0 + c], s[r0 // R:r0 // R + -(-r // R), c0 // C:c0 // C + -(-c // C)],
                    d[r0:r0 + r, c0:c0 + c]))
    return out


def compare(name, lib_q, lib_s, ex_q, ex_s, ex_d, R, C, variant, fmt, cpu_lib):
    lib_q = lib_q.contiguous().view(torch.uint8).cpu().numpy()
    lib_s = lib_s.float().contiguous().cpu().numpy()
    res = {"case": name, "codes": int(lib_q.size), "scales": int(lib_s.size)}
    if lib_q.shape != ex_q.shape or lib_s.size != ex_s.size:
        res.update(error=f"shapes: library codes {lib_q.shape} scales {lib_s.shape}, exmy "
                         f"{ex_q.shape} {ex_s.shape}")
        return res
    if lib_s.ndim == 2 and lib_s.shape != ex_s.shape and lib_s.shape == ex_s.shape[::-1]:
        lib_s = lib_s.T  # a library that keeps a column-tile scale transposed
        res["scale_layout"] = "transposed"
    lib_s = lib_s.reshape(ex_s.shape)
    code_ne = lib_q != ex_q
    lb, eb = f32_bits(lib_s), f32_bits(ex_s)
    both_nan = np.isnan(lib_s) & np.isnan(ex_s)
    scale_ne = (lb != eb) & ~both_nan
    # exmy's dequantization, RN32(value * S), recomputed from exmy's own arrays (numpy fp32).
    vals = e4m3_values(ex_q)
    S = np.repeat(np.repeat(ex_s, R, 0)[:vals.shape[0]], C, 1)[:, :vals.shape[1]]
    with np.errstate(invalid="ignore", over="ignore"):
        want = (vals * S).astype(np.float32)
    dd = (f32_bits(want) != f32_bits(ex_d)) & ~(np.isnan(want) & np.isnan(ex_d))
    res.update(code_diff=int(code_ne.sum()), scale_diff=int(scale_ne.sum()),
               dequant_diff=int(dd.sum()), first="")
    if cpu_lib and (res["code_diff"] or res["scale_diff"]):
        # Differences the CPU run of the libraries explains (not failures there; on CUDA they are):
        # x86's default NaN is negative (0xFFC00000) where a GPU's is positive, so a NaN made by
        # an invalid operation codes 0xFF instead of 0x7F; and DeepGEMM's sf = amax / 448
        # divides on the CPU against exmy's CUDA rule amax * RN32(1/448) (one ulp at most).
        # A code in a tile whose sf is that ulp off follows from it.
        nan_sign = code_ne & ((lib_q ^ ex_q) == 0x80) & ((ex_q & 0x7F) == 0x7F)
        ulp = np.abs(lb.astype(np.int64) - eb.astype(np.int64))
        ulp_tiles = scale_ne & (ulp <= 1) if (variant == "deepgemm" and fmt == "fp32") else \
            np.zeros_like(scale_ne)
        in_ulp_tile = np.repeat(np.repeat(ulp_tiles, R, 0)[:lib_q.shape[0]], C, 1)[:, :lib_q.shape[1]]
        nan_sign |= code_ne & in_ulp_tile
        scale_ok = not (scale_ne & ~ulp_tiles).any()
        if scale_ok and not (code_ne & ~nan_sign).any():
            res["expected_on_cpu"] = (f"{int(nan_sign.sum())} codes: x86 NaN sign or in a tile "
                                      f"of an sf one ulp off (CPU division)")
        elif (code_ne & ~nan_sign).any():
            code_ne = code_ne & ~nan_sign  # report the first difference that is not a NaN sign
    if code_ne.any():
        i = tuple(int(v) for v in np.argwhere(code_ne)[0])
        res["first"] = f"code at {i}: lib 0x{lib_q[i]:02x} exmy 0x{ex_q[i]:02x}"
    elif res["scale_diff"]:
        i = tuple(int(v) for v in np.argwhere(scale_ne)[0])
        res["first"] = f"scale at {i}: lib 0x{lb[i]:08x} exmy 0x{eb[i]:08x}"
    return res


def failing(r):
    if r.get("error"):
        return True
    if r.get("expected_on_cpu"):
        return False
    return bool(r["code_diff"] or r["scale_diff"] or r["dequant_diff"])


# ---- the run --------------------------------------------------------------------------------------
def main(state):
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    state["finish"] = lambda err: H.write_summary(
        args.out, f"# 2-D block casts vs the libraries\n\n- **script error before any case**: "
                  f"{err}\n", {"complete": False, "error": err, "cases": 0})
    if args.lib_device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--lib-device cuda: torch sees no GPU (the libraries' arithmetic is the "
                           "CUDA one); --lib-device cpu or --selftest runs the plumbing on the CPU")
    exmy = H.Exmy(args.exmy, args.device, args.threads)
    libs = Libraries(args)
    shapes_whole = [(128, 128), (256, 512), (512, 1024), (1, 128),
                    (384, 256 if args.quick else 7168)]
    shapes_partial = [(130, 200), (1, 1), (37, 300), (257, 129)]
    if args.quick:
        shapes_whole = [(128, 128), (256, 512), (1, 128), (384, 256)]
    dtypes = [torch.bfloat16, torch.float16, torch.float32]
    # Inputs once per dtype (CPU tensors), shared by every group.
    inputs, seed = {}, 0
    for dtype in dtypes:
        cases = []
        for (rows, cols) in shapes_whole + shapes_partial:
            for specials in (False, True):
                seed += 1
                tag = f"{str(dtype)[6:]} {rows}x{cols}{' specials' if specials else ''}"
                whole = rows % 128 == 0 and cols % 128 == 0
                cases.append((tag, make_input(rows, cols, dtype, seed, specials), whole))
        inputs[dtype] = cases
    plan = [(g, dtype) for g in libs.groups() for dtype in dtypes
            if args.only in f"{g[0]} {str(dtype)[6:]}"]
    weights = [sum(x.numel() for _, x, w in inputs[d] if w or not g[5]) + 50000 for g, d in plan]
    prog = H.Progress("blockwise", weights)
    results, batch_checks = [], []
    meta = {"exmy": exmy.path, "exmy_device": args.device, "threads": args.threads,
            "lib_device": args.lib_device, "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "none",
            "quick": args.quick, "batched": not args.no_batch, **libs.notes}
    if not plan:
        raise RuntimeError(f"--only {args.only!r} matches no group")

    def finish(error=None):
        bad = [r for r in results if failing(r)]
        bbad = [b for b in batch_checks if not b["equal"]]
        summary = dict(meta, cases=len(results), failing=len(bad),
                       expected_cpu_differences=sum(1 for r in results
                                                    if r.get("expected_on_cpu")),
                       batching_checks=len(batch_checks), batching_mismatches=len(bbad),
                       codes_compared=sum(r.get("codes", 0) for r in results),
                       exmy_processes=exmy.calls, exmy_seconds=round(exmy.seconds, 1),
                       seconds=round(prog.elapsed(), 1), complete=error is None, error=error,
                       results=results, batching=batch_checks)
        lines = [f"# 2-D block casts vs the libraries ({meta['gpu']}, torch {torch.__version__})\n",
                 f"- exmy --device {args.device} ({exmy.calls} processes, {exmy.seconds:.0f} s), "
                 f"libraries on {args.lib_device}; {'quick' if args.quick else 'full'} run, "
                 f"{prog.elapsed():.0f} s",
                 *[f"- {k}: {v}" for k, v in libs.notes.items()],
                 f"- {len(results)} cases, {summary['codes_compared']} codes, **{len(bad)} "
                 f"failing**" + (f", {summary['expected_cpu_differences']} differing only as CPU "
                                 f"torch is expected to (x86 NaN sign, sf division)"
                                 if summary["expected_cpu_differences"] else ""),
                 f"- batching check: {len(batch_checks)} cases rerun one process each, "
                 f"{len(bbad)} differing from the batched run" if batch_checks else
                 "- batching check: not run (--check-batching K)"]
        if error:
            lines.append(f"- **INCOMPLETE: script error** {error}")
        lines += ["", "| case | codes | code diff | scales | scale diff | dequant diff | first |",
                  "|---|---|---|---|---|---|---|"]
        for r in (bad + [r for r in results if not failing(r)])[:400]:
            if r.get("error"):
                lines.append(f"| {r['case']} | | | | | | error {r['error']} |")
            else:
                note = f" (expected on CPU: {r['expected_on_cpu']})" if r.get("expected_on_cpu") \
                    else ""
                lines.append(f"| {r['case']} | {r['codes']} | {r['code_diff']} | {r['scales']} | "
                             f"{r['scale_diff']}{note} | {r['dequant_diff']} | {r['first']} |")
        for b in bbad:
            lines.append(f"\nbatching mismatch: {b}")
        H.write_summary(args.out, "\n".join(lines) + "\n", summary)
        if any(r.get("error") for r in results):
            return 2  # a case could not run: the comparison is incomplete
        return 1 if (bad or bbad) else 0

    state["finish"] = finish
    prog.say(f"{len(plan)} groups, exmy {exmy.path} --device {args.device} "
             f"(OMP_NUM_THREADS={args.threads}); libraries on {args.lib_device}; "
             + "; ".join(libs.notes.values()))
    planted = not args.plant_diff
    with tempfile.TemporaryDirectory() as tmp:
        for (gname, variant, tile, fmt, fn, whole_only), dtype in plan:
            label = f"{gname} {str(dtype)[6:]}"
            cases = [(t, x) for t, x, w in inputs[dtype] if w or not whole_only]
            if args.no_batch:
                ex = [exmy_quantize(exmy, x, variant, tile, fmt, tmp, "one") for _, x in cases]
            else:
                ex = exmy_batched(exmy, [x for _, x in cases], variant, tile, fmt, tmp)
            nbad = 0
            for (tag, x), (eq, es, ed) in zip(cases, ex):
                try:
                    lq, ls = fn(x.to(args.lib_device))
                except Exception as e:  # noqa: BLE001 - the case reports it; exit status 2
                    results.append({"case": f"{gname} {tag}", "error": f"library: {e!r}"[:300]})
                    nbad += 1
                    continue
                if not planted:
                    lq = lq.clone()
                    lq.view(torch.uint8).view(-1)[0] ^= 1
                    planted = True
                r = compare(f"{gname} {tag}", lq, ls, eq, es, ed, *tile, variant, fmt,
                            cpu_lib=args.lib_device == "cpu")
                nbad += failing(r)
                results.append(r)
            for k in range(min(args.check_batching, len(cases)) if not args.no_batch else 0):
                # Spread the rerun cases over the group (first, last, ...).
                j = [0, len(cases) - 1, len(cases) // 2][k % 3]
                one = exmy_quantize(exmy, cases[j][1], variant, tile, fmt, tmp, "one")
                eq = all(np.array_equal(f32_bits(a) if a.dtype == np.float32 else a,
                                        f32_bits(b) if b.dtype == np.float32 else b)
                         for a, b in zip(one, ex[j]))
                batch_checks.append({"case": f"{gname} {cases[j][0]}", "equal": bool(eq)})
            prog.step(label, f"{len(cases)} cases, {nbad} failing")
    return finish(None)


if __name__ == "__main__":
    sys.exit(H.run_main("blockwise", main))
