#!/usr/bin/env python3
"""bitsandbytes 0.50.2 quantize_4bit / dequantize_4bit on CUDA against `exmy quantize/dequantize
--to/--from nf4|fp4 --compat bnb-cuda` (docs/SEMANTICS.md 7.14), bit for bit: the packed codes,
the absmax (plain fp32, or with compress_statistics the uint8 codes, the second-level fp32 absmax
and the offset) and the dequantized tensor in the input's dtype. exmy dequantizes both its own
arrays and bitsandbytes' (so a quantization difference does not hide a dequantization one).

Cases: nf4/fp4 x blocksize 32..4096 x compress_statistics False/True x bf16/fp16/fp32 inputs x
sizes (odd, below one block, several blocks), heavy-tailed values (Student t, df 2.5, scaled by
powers of two) with exact zeros; fp32 probes: every NF4/FP4 threshold +-3 ulps in blocks whose
absmax is 1 (so the normalized value is the element itself), and zero, subnormal, NaN, inf and
huge blocks; double quantization over absmax counts N from 1 to 4097 (the offset's mean takes
different reduction paths) and, in the full run, >= 131072 absmax values (the cross-CTA
reduction).

Speed: exmy's quantize under bnb-cuda spends ~0.1-0.2 s starting (it decodes the SFU model), so
the cases of one (type, block, dtype) group are laid side by side in one 1-d array, each starting
on a block boundary with the zero padding bitsandbytes' loads put there themselves (SEMANTICS
7.14.1-7.14.2: a partial block's absmax includes a padded 0, an odd n's last nibble codes it): one
quantize and one dequantize (of exmy's and bitsandbytes' arrays side by side) per group.
Double quantization's offset is the mean over the whole tensor, so a double-quantization group is
itself one case (its heavy cases side by side, quantized by bitsandbytes and exmy alike), and
the N sweep and the special blocks run one tensor each.

    python3 bench/peers/bnb4bit_vs_exmy.py --exmy build/cli/exmy --out OUT [--device cpu|cuda]
        [--threads N] [--quick] [--lib-device cuda|cpu] [--selftest] [--check-batching K]
        [--no-batch] [--only SUBSTR] [--plant-diff]

--lib-device cpu (--selftest = --lib-device cpu --quick on blocks 32, 64, 4096): bitsandbytes' 4-bit kernels are CUDA
code, so the library side is replaced by exmy itself run one process per case: that exercises
the layout, the splitting, every comparison and the summary off the GPU, and checks that the
batched bits equal the unbatched ones; it compares nothing with bitsandbytes (the summary says
so).

Writes OUT/summary.md and OUT/summary.json (atomically); exit 0 all equal, 1 a bit differs, 2 a
script error or a case the library could not run (the summary lists what ran and the error).
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_harness as H  # noqa: E402

DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
BLOCKS = (32, 64, 128, 256, 512, 1024, 2048, 4096)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="exmy's backend")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="OMP_NUM_THREADS for exmy (default: the cores)")
    ap.add_argument("--quick", action="store_true", help="fewer sizes (a smoke run)")
    ap.add_argument("--lib-device", default="cuda", choices=["cuda", "cpu"],
                    help="cpu: exmy one process per case stands in for bitsandbytes (plumbing)")
    ap.add_argument("--selftest", action="store_true",
                    help="= --lib-device cpu --quick, block sizes 32, 64 and 4096")
    H.add_batching_args(ap, "plain group")
    a = ap.parse_args(argv)
    if a.selftest:
        a.lib_device, a.quick = "cpu", True
    return a


# ---- arrays ---------------------------------------------------------------------------------------
def save_input(path, x):
    """W (CPU tensor) as exmy reads it: <f4, <f2, or bf16 bits as <u2 (with --in-format bf16)."""
    x = x.detach().contiguous().cpu()
    if x.dtype == torch.bfloat16:
        np.save(path, x.view(torch.int16).numpy().view(np.uint16))
        return ["--in-format", "bf16"]
    np.save(path, x.numpy())
    return []


def bits_of(t):
    """The raw bits of a tensor as an unsigned 1-d numpy array."""
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.float32:
        return t.view(torch.int32).numpy().view(np.uint32).reshape(-1)
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.view(torch.int16).numpy().view(np.uint16).reshape(-1)
    return t.numpy().reshape(-1)


def npy_bits(path):
    a = np.load(path)
    if a.dtype == np.float32:
        return a.view(np.uint32).reshape(-1)
    if a.dtype == np.float16:
        return a.view(np.uint16).reshape(-1)
    return a.reshape(-1)


def f32_from_bits(u):
    return np.array(u, dtype=np.uint32).view(np.float32)


# ---- inputs (CPU tensors) -------------------------------------------------------------------------
def heavy(n, dtype, gen):
    t = torch.distributions.StudentT(torch.tensor(2.5)).sample((n,))
    scale = torch.pow(2.0, torch.randint(-3, 4, (n,), generator=gen).float())
    x = t * scale
    x[torch.rand(n, generator=gen) < 0.08] = 0.0
    x[torch.rand(n, generator=gen) < 0.01] = -0.0
    return x.to(dtype)


def threshold_probe(qtype):
    """fp32 elements at every threshold +-3 ulps (and negated), in runs of 32 that start with 1.0:
    every block (B >= 32) has absmax 1, rcp.approx(1) = 1, so the normalized value is the
    element."""
    th = {
        "nf4": [-0.8480964004993439, -0.6106329262256622, -0.4599952697753906,
                -0.33967943489551544, -0.23460740596055984, -0.13791173323988914,
                -0.045525018125772476, 0.03979014977812767, 0.1202552504837513,
                0.2035212516784668, 0.2920137718319893, 0.3893125355243683,
                0.5016634166240692, 0.6427869200706482, 0.8614784181118011],
        "fp4": [0.00260417, 0.0859375, 0.20833333, 0.29166667, 0.4166667, 0.583333, 0.8333333],
    }[qtype]
    vals = []
    for t in th:
        # Both fp32 roundings of the decimal's double (direct decimal rounding may differ).
        for base in sorted({float(np.float32(t)), float(np.nextafter(np.float32(t), np.float32(2))),
                            float(np.nextafter(np.float32(t), np.float32(-2)))}):
            u = int(np.array(base, dtype=np.float32).view(np.uint32))
            for k in range(-3, 4):
                v = f32_from_bits(u + k)
                vals += [float(v), -float(v)]
    per = 31  # + the 1.0 that fixes the block's absmax
    out = []
    for i in range(0, len(vals), per):
        chunk = vals[i:i + per]
        chunk += [0.0] * (per - len(chunk))
        out += [1.0] + chunk
    return torch.tensor(np.array(out, dtype=np.float32))


def special_blocks():
    nan, inf = float("nan"), float("inf")
    sub = float(f32_from_bits(0x00000123))
    blocks = [[0.0] * 64, [sub, -sub] * 32, [nan] * 64, [1.0, inf] + [0.5] * 62,
              [-0.0] * 64, [3.0e38, -3.4e38] * 32, [1e-30, -2e-30] * 32]
    x = sum(blocks, []) + [nan] * 5  # a partial NaN block at the end
    return torch.tensor(x, dtype=torch.float32)


# ---- one tensor through exmy or bitsandbytes -> a dict of bit arrays ------------------------------
# keys: codes (u8), absmax (u32) | absmax_codes (u8) absmax2 (u32) offset (u32), y (u16/u32).
def exmy_quant_files(exmy, x, qtype, block, dq, tmp, tag):
    p = {k: os.path.join(tmp, f"{tag}-{k}.npy") for k in ("w", "q", "s", "s2", "o")}
    extra = save_input(p["w"], x)
    dqq = ["--double-quant", "--state2-out", p["s2"], "--offset-out", p["o"]] if dq else []
    exmy("quantize", "--scheme", f"block:{block}", "--compat", "bnb-cuda", "--to", qtype,
         "--in", p["w"], *extra, "--out", p["q"], "--state-out", p["s"], *dqq)
    r = {"codes": npy_bits(p["q"])}
    if dq:
        r.update(absmax_codes=npy_bits(p["s"]), absmax2=npy_bits(p["s2"]), offset=npy_bits(p["o"]))
    else:
        r["absmax"] = npy_bits(p["s"])
    return r


def exmy_dequant(exmy, arrays, qtype, block, n, dtn, tmp, tag):
    """exmy dequantize of the arrays (a dict as above) -> the output bits (n elements)."""
    p = {k: os.path.join(tmp, f"{tag}-{k}.npy") for k in ("q", "s", "s2", "o", "y")}
    np.save(p["q"], arrays["codes"].astype(np.uint8))
    if "absmax_codes" in arrays:
        np.save(p["s"], arrays["absmax_codes"].astype(np.uint8))
        np.save(p["s2"], arrays["absmax2"].astype(np.uint32).view(np.float32))
        np.save(p["o"], arrays["offset"].astype(np.uint32).view(np.float32))
        dqd = ["--double-quant", "--state2", p["s2"], "--offset", p["o"]]
    else:
        np.save(p["s"], arrays["absmax"].astype(np.uint32).view(np.float32))
        dqd = []
    exmy("dequantize", "--scheme", f"block:{block}", "--compat", "bnb-cuda", "--from", qtype,
         "--in", p["q"], "--state", p["s"], "--out", p["y"], "--shape", str(n), "--out-format",
         dtn, *dqd)
    return npy_bits(p["y"])


def dtn_of(x):
    return {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}[x.dtype]


class ExmyOneLib:
    """--lib-device cpu: exmy, one process per case, stands in for bitsandbytes."""
    name = "exmy one process per case (stand-in: bitsandbytes' kernels need CUDA)"

    def __init__(self, exmy, tmp):
        self.exmy, self.tmp = exmy, tmp

    def run(self, x, qtype, block, dq):
        r = exmy_quant_files(self.exmy, x, qtype, block, dq, self.tmp, "lib")
        r["y"] = exmy_dequant(self.exmy, r, qtype, block, x.numel(), dtn_of(x), self.tmp, "lib")
        return r


class BnbLib:
    def __init__(self):
        import bitsandbytes as bnb
        import bitsandbytes.functional as F
        self.F = F
        self.name = f"bitsandbytes {bnb.__version__} on {torch.cuda.get_device_name()}"

    def run(self, x, qtype, block, dq):
        F = self.F
        q, st = F.quantize_4bit(x.cuda(), blocksize=block, compress_statistics=dq,
                                quant_type=qtype)
        y = F.dequantize_4bit(q, st)
        torch.cuda.synchronize()
        r = {"codes": bits_of(q).astype(np.uint8), "y": bits_of(y)}
        if dq:
            r.update(absmax_codes=bits_of(st.absmax).astype(np.uint8),
                     absmax2=bits_of(st.state2.absmax.float()),
                     offset=bits_of(st.offset.float().reshape(1)))
        else:
            r["absmax"] = bits_of(st.absmax.float())
        return r


# ---- comparison -----------------------------------------------------------------------------------
ARRAYS = ("codes", "absmax", "absmax_codes", "absmax2", "offset", "dequantized",
          "dequantized_from_lib_arrays")


def ndiff(a, b):
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    return int((a != b).sum())


def compare(res, ex, lib, y_ex, y_lib):
    """ex: exmy's arrays; lib: the library's (with its y); y_ex / y_lib: exmy's dequantization of
    its own and of the library's arrays."""
    for k in ("codes", "absmax", "absmax_codes", "absmax2", "offset"):
        if k in lib:
            res[k] = ndiff(ex[k], lib[k])
    res["dequantized"] = ndiff(y_ex, lib["y"])
    res["dequantized_from_lib_arrays"] = ndiff(y_lib, lib["y"])
    res["ok"] = all(v == 0 for k, v in res.items() if k in ARRAYS)
    if not res["ok"]:
        for k in ARRAYS:
            a = {"dequantized": y_ex, "dequantized_from_lib_arrays": y_lib}.get(k, ex.get(k))
            b = lib["y"] if k.startswith("dequantized") else lib.get(k)
            if a is not None and b is not None and a.shape == b.shape and (a != b).any():
                i = int(np.argmax(a != b))
                res["first"] = f"{k}[{i}]: lib 0x{int(b[i]):x} exmy 0x{int(a[i]):x}"
                break
    return res


# ---- the run --------------------------------------------------------------------------------------
def main(state):
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    state["finish"] = lambda err: H.write_summary(
        args.out, f"# bitsandbytes 4-bit vs exmy\n\n- **script error before any case**: {err}\n",
        {"complete": False, "error": err, "cases": 0})
    exmy = H.Exmy(args.exmy, args.device, args.threads)
    tmpdir = tempfile.TemporaryDirectory()
    tmp = tmpdir.name
    if args.lib_device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("--lib-device cuda: torch sees no GPU (bitsandbytes' 4-bit kernels "
                               "are CUDA code); --selftest runs the plumbing on the CPU")
        lib = BnbLib()
    else:
        lib = ExmyOneLib(exmy, tmp)
    gen = torch.Generator().manual_seed(20261128)
    torch.manual_seed(20261128)
    sizes = [1, 2, 31, 63, 65, 1001, 4096 * 3 + 17] if args.quick else \
        [1, 2, 31, 63, 64, 65, 255, 1001, 4095, 65537, 4096 * 3 + 17, 1_000_003]
    n_sweep = [1, 3, 129, 131] if args.quick else \
        [1, 2, 3, 5, 127, 128, 129, 130, 131, 257, 1023, 4097]
    # Groups: (name, kind, qtype, block, dtype name, [(case name, tensor)]).
    plan = []
    # The stand-in library costs a process per case: the self-test runs three block sizes (the
    # warp kernel's two and the largest).
    blocks = (32, 64, 4096) if args.selftest else BLOCKS
    for qtype in ("nf4", "fp4"):
        for block in blocks:
            for dtn, dt in DT.items():
                cases = [(f"heavy n={n}", heavy(n, dt, gen)) for n in sizes]
                if dtn == "fp32":
                    cases.append(("thresholds", threshold_probe(qtype)))
                plan.append((f"{qtype} block {block} {dtn} plain", "plain", qtype, block, dtn,
                             cases + ([("specials", special_blocks())] if dtn == "fp32" else [])))
                # Double quantization: the heavy cases side by side form one tensor.
                offs, total = H.layout_1d([x.numel() for _, x in cases], block)
                cat = torch.zeros(total, dtype=dt)
                for o, (_, x) in zip(offs, cases):
                    cat[o:o + x.numel()] = x
                plan.append((f"{qtype} block {block} {dtn} double-quant", "dq", qtype, block, dtn,
                             [(f"side by side: {len(cases)} cases, n={total}", cat)]))
        sweep = []
        for N in n_sweep:
            n = max(1, N * 64 - 7)
            sweep.append((f"N={N} n={n}", heavy(n, torch.float32, gen)))
        plan.append((f"{qtype} block 64 fp32 double-quant N sweep", "dq", qtype, 64, "fp32", sweep))
        plan.append((f"{qtype} fp32 double-quant specials", "dq-specials", qtype, 0, "fp32",
                     [(f"specials block {b}", special_blocks()) for b in (32, 64, 128)]))
        if not args.quick:
            # The offset's cross-CTA reduction: >= 131072 absmax values.
            plan.append((f"{qtype} bf16 double-quant large", "dq", qtype, 32, "bf16",
                         [(f"large n={131072 * 32}", heavy(131072 * 32, torch.bfloat16, gen))]))
            plan.append((f"{qtype} bf16 double-quant large b64", "dq", qtype, 64, "bf16",
                         [(f"large n={262144 * 64 + 5}",
                           heavy(262144 * 64 + 5, torch.bfloat16, gen))]))
    plan = [g for g in plan if args.only in g[0]]
    if not plan:
        raise RuntimeError(f"--only {args.only!r} matches no group")
    # ETA weight: exmy's processes (quantize ~0.15 s each) plus the elements they read.
    weights = [(1 if g[1] == "plain" else len(g[5])) * 0.15 +
               sum(x.numel() for _, x in g[5]) / 2e7 for g in plan]
    prog = H.Progress("bnb4", weights)
    results, batch_checks = [], []
    meta = {"exmy": exmy.path, "exmy_device": args.device, "threads": args.threads,
            "library": lib.name, "torch": torch.__version__, "quick": args.quick,
            "batched": not args.no_batch,
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "none",
            "sms": (torch.cuda.get_device_properties(0).multi_processor_count
                    if torch.cuda.is_available() else None)}
    if args.lib_device == "cpu":
        meta["note"] = ("--lib-device cpu: bitsandbytes not run (its 4-bit kernels are CUDA "
                        "code); exmy one process per case stood in for it, so this checks the "
                        "script and the batching, not bitsandbytes")

    def finish(error=None):
        bad = [r for r in results if not r.get("ok")]
        bbad = [b for b in batch_checks if not b["equal"]]
        summary = dict(meta, cases=len(results), failing=len(bad),
                       batching_checks=len(batch_checks), batching_mismatches=len(bbad),
                       exmy_processes=exmy.calls, exmy_seconds=round(exmy.seconds, 1),
                       seconds=round(prog.elapsed(), 1), complete=error is None, error=error,
                       results=results, batching=batch_checks)
        lines = [f"# bitsandbytes 4-bit vs exmy ({meta['gpu']}, {meta['sms']} SMs)\n",
                 f"- library: {lib.name}; torch {torch.__version__}",
                 f"- exmy --device {args.device}: {exmy.calls} processes, {exmy.seconds:.0f} s; "
                 f"{'quick' if args.quick else 'full'} run, {prog.elapsed():.0f} s",
                 f"- {len(results)} cases, **{len(bad)} with differing bits**",
                 f"- batching check: {len(batch_checks)} cases rerun one process each, "
                 f"{len(bbad)} differing" if batch_checks else
                 "- batching check: " + ("every case (the stand-in library is exmy unbatched)"
                                         if args.lib_device == "cpu" else "not run (--check-batching K)")]
        if "note" in meta:
            lines.append(f"- **{meta['note']}**")
        if error:
            lines.append(f"- **INCOMPLETE: script error** {error}")
        lines += ["", "| case | type | block | dq | dtype | n | codes | absmax / codes | absmax2 | "
                  "offset | dequantized | deq. of lib arrays | first |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in (bad + [r for r in results if r.get("ok")])[:300]:
            if r.get("error"):
                lines.append(f"| {r['case']} | {r['type']} | {r['block']} | {r['double_quant']} | "
                             f"{r['dtype']} | {r.get('n', '')} | error {r['error']} |||||||")
                continue
            lines.append(f"| {r['case']} | {r['type']} | {r['block']} | {r['double_quant']} | "
                         f"{r['dtype']} | {r['n']} | {r['codes']} | "
                         f"{r.get('absmax', r.get('absmax_codes'))} | {r.get('absmax2', '-')} | "
                         f"{r.get('offset', '-')} | {r['dequantized']} | "
                         f"{r['dequantized_from_lib_arrays']} | {r.get('first', '')} |")
        for b in bbad:
            lines.append(f"\nbatching mismatch: {b}")
        H.write_summary(args.out, "\n".join(lines) + "\n", summary)
        if any(r.get("error") for r in results):
            return 2
        return 1 if (bad or bbad) else 0

    state["finish"] = finish
    prog.say(f"{len(plan)} groups; exmy {exmy.path} --device {args.device} "
             f"(OMP_NUM_THREADS={args.threads}); library: {lib.name}")
    planted = not args.plant_diff

    def lib_run(name, x, qtype, block, dq, dtn):
        nonlocal planted
        base = {"case": name, "type": qtype, "block": block, "double_quant": dq, "dtype": dtn,
                "n": x.numel()}
        try:
            r = lib.run(x, qtype, block, dq)
        except H.ExmyError:
            raise
        except Exception as e:  # noqa: BLE001 - the case reports it; exit status 2
            results.append(dict(base, error=f"library: {e!r}"[:300], ok=False))
            return base, None
        if not planted:
            r["codes"] = r["codes"].copy()
            r["codes"][0] ^= 1
            planted = True
        return base, r

    for gname, kind, qtype, block, dtn, cases in plan:
        nbad0 = sum(1 for r in results if not r.get("ok"))
        if kind == "plain" and not args.no_batch:
            offs, total = H.layout_1d([x.numel() for _, x in cases], block)
            cat = torch.zeros(total, dtype=DT[dtn])
            for o, (_, x) in zip(offs, cases):
                cat[o:o + x.numel()] = x
            ex = exmy_quant_files(exmy, cat, qtype, block, False, tmp, "batch")
            libs = [lib_run(name, x, qtype, block, False, dtn) for name, x in cases]
            # exmy dequantizes its arrays and the library's side by side (one process).
            lcodes = np.zeros(total // 2, np.uint8)
            labs = np.zeros(total // block, np.uint32)
            for o, (_, x), (_, lr) in zip(offs, cases, libs):
                if lr is not None:
                    lcodes[o // 2:o // 2 + lr["codes"].size] = lr["codes"][:total // 2 - o // 2]
                    labs[o // block:o // block + lr["absmax"].size] = lr["absmax"]
            both = {"codes": np.concatenate([ex["codes"], lcodes]),
                    "absmax": np.concatenate([ex["absmax"], labs])}
            y = exmy_dequant(exmy, both, qtype, block, 2 * total, dtn, tmp, "batch")
            for o, (name, x), (base, lr) in zip(offs, cases, libs):
                if lr is None:
                    continue
                n = x.numel()
                mine = {"codes": ex["codes"][o // 2:o // 2 + (n + 1) // 2],
                        "absmax": ex["absmax"][o // block:o // block + -(-n // block)]}
                results.append(compare(base, mine, lr, y[o:o + n], y[total + o:total + o + n]))
            for k in range(min(args.check_batching, len(cases))):
                j = [0, len(cases) - 1, len(cases) // 2][k % 3]
                name, x = cases[j]
                one = ExmyOneLib(exmy, tmp).run(x, qtype, block, False)
                o, n = offs[j], x.numel()
                eq = (np.array_equal(one["codes"], ex["codes"][o // 2:o // 2 + (n + 1) // 2]) and
                      np.array_equal(one["absmax"], ex["absmax"][o // block:o // block + -(-n // block)])
                      and np.array_equal(one["y"], y[o:o + n]))
                batch_checks.append({"case": f"{gname} {name}", "equal": bool(eq)})
        else:
            dq = kind != "plain"
            for name, x in cases:
                b = block or int(name.rsplit(" ", 1)[1])  # dq-specials: "specials block B"
                base, lr = lib_run(name, x, qtype, b, dq, dtn)
                if lr is None:
                    continue
                ex = exmy_quant_files(exmy, x, qtype, b, dq, tmp, "one")
                y_ex = exmy_dequant(exmy, ex, qtype, b, x.numel(), dtn, tmp, "one")
                y_lib = exmy_dequant(exmy, lr, qtype, b, x.numel(), dtn, tmp, "lib-arrays")
                results.append(compare(base, ex, lr, y_ex, y_lib))
        nbad = sum(1 for r in results if not r.get("ok")) - nbad0
        prog.step(gname, f"{len(cases)} cases, {nbad} failing")
    status = finish(None)
    tmpdir.cleanup()
    return status


if __name__ == "__main__":
    sys.exit(H.run_main("bnb4", main))
