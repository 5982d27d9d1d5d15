#!/usr/bin/env python3
"""bitsandbytes 0.50.2 quantize_4bit / dequantize_4bit on CUDA against `exmy quantize/dequantize
--to/--from nf4|fp4 --compat bnb-cuda` (docs/SEMANTICS.md 7.14), bit for bit: the packed codes,
the absmax (plain fp32, or with compress_statistics the uint8 codes, the second-level fp32 absmax
and the offset) and the dequantized tensor in the input's dtype. exmy dequantizes both its own
arrays and bitsandbytes' (so a quantization difference does not hide a dequantization one).

Cases: nf4/fp4 x blocksize 32..4096 x compress_statistics False/True x bf16/fp16/fp32 inputs x
sizes (odd, below one block, several blocks, >= 131072 blocks' worth for the offset's
cross-CTA reduction), heavy-tailed values (Student t, df 2.5, scaled by powers of two) with exact
zeros; plus fp32 probes: every NF4/FP4 threshold +-3 ulps in blocks whose absmax is 1 (so the
normalized value is the element itself), zero, subnormal, NaN and inf blocks.

    python3 bench/peers/bnb4bit_vs_exmy.py --exmy build-cuda/cli/exmy --out OUT [--device cpu|cuda]
        [--quick]

Writes OUT/summary.md and OUT/summary.json; exit 1 when any bit differs.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import bitsandbytes as bnb
import bitsandbytes.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--exmy", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="exmy's backend")
ap.add_argument("--quick", action="store_true", help="fewer sizes (a smoke run)")
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)
exmy = os.path.abspath(args.exmy)

DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def save_input(path, x):
    """W as exmy reads it: <f4, <f2, or bf16 bits as <u2 (with --in-format bf16)."""
    if x.dtype == torch.bfloat16:
        np.save(path, x.contiguous().view(torch.int16).cpu().numpy().view(np.uint16))
        return ["--in-format", "bf16"]
    np.save(path, x.cpu().numpy())
    return []


def bits_of(t):
    """The raw bits of a CUDA tensor as an unsigned numpy array."""
    t = t.detach().contiguous().cpu()
    if t.dtype in (torch.float32,):
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


def ndiff(a, b):
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    return int((a != b).sum())


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(" ".join(cmd) + ": " + (r.stdout + r.stderr).strip()[:400])


def check(name, x, qtype, block, dq):
    """One case: bitsandbytes on x (a CUDA tensor) against exmy. Returns a result dict."""
    n = x.numel()
    q, st = F.quantize_4bit(x, blocksize=block, compress_statistics=dq, quant_type=qtype)
    y = F.dequantize_4bit(q, st)
    torch.cuda.synchronize()
    dt = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}[x.dtype]
    res = {"case": name, "type": qtype, "block": block, "double_quant": dq, "dtype": dt, "n": n}
    with tempfile.TemporaryDirectory() as t:
        p = {k: os.path.join(t, k + ".npy") for k in
             ("w", "q", "s", "s2", "o", "y", "y_bnb", "bq", "bs", "bs2", "bo")}
        extra_in = save_input(p["w"], x)
        common = ["--scheme", f"block:{block}", "--compat", "bnb-cuda", "--device", args.device]
        dqq = ["--double-quant", "--state2-out", p["s2"], "--offset-out", p["o"]] if dq else []
        run([exmy, "quantize", *common, "--to", qtype, "--in", p["w"], *extra_in, "--out", p["q"],
             "--state-out", p["s"], *dqq])
        dqd = ["--double-quant", "--state2", p["s2"], "--offset", p["o"]] if dq else []
        run([exmy, "dequantize", *common, "--from", qtype, "--in", p["q"], "--state", p["s"],
             "--out", p["y"], "--shape", str(n), "--out-format", dt, *dqd])
        # exmy's dequantization of bitsandbytes' own arrays.
        np.save(p["bq"], bits_of(q).astype(np.uint8))
        if dq:
            np.save(p["bs"], bits_of(st.absmax).astype(np.uint8))
            np.save(p["bs2"], bits_of(st.state2.absmax).view(np.float32))
            np.save(p["bo"], np.array([st.offset.item()], dtype=np.float32))
            dqb = ["--double-quant", "--state2", p["bs2"], "--offset", p["bo"]]
        else:
            np.save(p["bs"], bits_of(st.absmax).view(np.float32))
            dqb = []
        run([exmy, "dequantize", *common, "--from", qtype, "--in", p["bq"], "--state", p["bs"],
             "--out", p["y_bnb"], "--shape", str(n), "--out-format", dt, *dqb])
        res["codes"] = ndiff(npy_bits(p["q"]), bits_of(q).astype(np.uint8))
        if dq:
            res["absmax_codes"] = ndiff(npy_bits(p["s"]), bits_of(st.absmax).astype(np.uint8))
            res["absmax2"] = ndiff(npy_bits(p["s2"]), bits_of(st.state2.absmax))
            res["offset"] = ndiff(npy_bits(p["o"]), bits_of(st.offset.reshape(1)))
        else:
            res["absmax"] = ndiff(npy_bits(p["s"]), bits_of(st.absmax))
        res["dequantized"] = ndiff(npy_bits(p["y"]), bits_of(y))
        res["dequantized_from_bnb_arrays"] = ndiff(npy_bits(p["y_bnb"]), bits_of(y))
    res["ok"] = all(v == 0 for k, v in res.items()
                    if k in ("codes", "absmax", "absmax_codes", "absmax2", "offset", "dequantized",
                             "dequantized_from_bnb_arrays"))
    return res


def heavy(n, dtype, gen):
    t = torch.distributions.StudentT(torch.tensor(2.5)).sample((n,))
    scale = torch.pow(2.0, torch.randint(-3, 4, (n,), generator=gen).float())
    x = t * scale
    zero = torch.rand(n, generator=gen) < 0.08
    x[zero] = 0.0
    x[torch.rand(n, generator=gen) < 0.01] = -0.0
    return x.to(dtype).cuda()


def f32_from_bits(u):
    return np.array(u, dtype=np.uint32).view(np.float32)


def threshold_probe(qtype):
    """fp32 elements at every threshold +-3 ulps (and negated), in blocks of 32 whose absmax is 1:
    rcp.approx(1) = 1, so the normalized value is the element."""
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
        for base in {np.float32(t), np.nextafter(np.float32(t), np.float32(2)),
                     np.nextafter(np.float32(t), np.float32(-2))}:
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
    return torch.tensor(np.array(out, dtype=np.float32)).cuda()


def special_blocks():
    nan, inf = float("nan"), float("inf")
    sub = float(f32_from_bits(0x00000123))
    blocks = [[0.0] * 64, [sub, -sub] * 32, [nan] * 64, [1.0, inf] + [0.5] * 62,
              [-0.0] * 64, [3.0e38, -3.4e38] * 32, [1e-30, -2e-30] * 32]
    x = sum(blocks, []) + [nan] * 5  # a partial NaN block at the end
    return torch.tensor(x, dtype=torch.float32).cuda()


gen = torch.Generator().manual_seed(20261128)
torch.manual_seed(20261128)
results = []
t0 = time.time()
sizes = [1, 2, 31, 63, 65, 1001, 4096 * 3 + 17] if args.quick else \
    [1, 2, 31, 63, 64, 65, 255, 1001, 4095, 65537, 4096 * 3 + 17, 1_000_003]
for qtype in ("nf4", "fp4"):
    for block in (32, 64, 128, 256, 512, 1024, 2048, 4096):
        for dq in (False, True):
            for dtn, dt in DT.items():
                for n in sizes:
                    results.append(check(f"heavy n={n}", heavy(n, dt, gen), qtype, block, dq))
    # The offset's cross-CTA reduction: >= 131072 absmax values (block 32: 4.2M elements).
    for n in ([] if args.quick else [131072 * 32, 262144 * 64 + 5]):
        results.append(check(f"large n={n}", heavy(n, torch.bfloat16, gen), qtype,
                             32 if n == 131072 * 32 else 64, True))
    for block in (32, 64, 128):
        for dq in (False, True):
            results.append(check("thresholds", threshold_probe(qtype), qtype, block, dq))
            results.append(check("specials", special_blocks(), qtype, block, dq))
elapsed = time.time() - t0

bad = [r for r in results if not r["ok"]]
meta = {"bitsandbytes": bnb.__version__, "torch": torch.__version__,
        "device": torch.cuda.get_device_name(), "sms": torch.cuda.get_device_properties(0).multi_processor_count,
        "exmy_device": args.device, "cases": len(results), "failing": len(bad),
        "seconds": round(elapsed, 1)}
with open(os.path.join(args.out, "summary.json"), "w") as f:
    json.dump({"meta": meta, "results": results}, f, indent=1)
with open(os.path.join(args.out, "summary.md"), "w") as f:
    f.write(f"# bitsandbytes 4-bit vs exmy ({meta['device']}, {meta['sms']} SMs)\n\n")
    f.write(f"bitsandbytes {meta['bitsandbytes']}, torch {meta['torch']}, exmy --device "
            f"{args.device}: {len(results)} cases, {len(bad)} with differing bits "
            f"({elapsed:.0f} s).\n\n")
    f.write("| case | type | block | dq | dtype | n | codes | absmax / codes | absmax2 | offset "
            "| dequantized | deq. of bnb arrays |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    for r in (bad if bad else results[:40]):
        f.write(f"| {r['case']} | {r['type']} | {r['block']} | {r['double_quant']} | {r['dtype']} "
                f"| {r['n']} | {r['codes']} | {r.get('absmax', r.get('absmax_codes'))} "
                f"| {r.get('absmax2', '-')} | {r.get('offset', '-')} | {r['dequantized']} "
                f"| {r['dequantized_from_bnb_arrays']} |\n")
print(f"{len(results)} cases, {len(bad)} failing; {meta}")
sys.exit(1 if bad else 0)
