#!/usr/bin/env python3
"""Differential check of exmy's MX and NVFP4 quantizers against the peers that define them.

Runs on a GPU machine with torch; torchao 0.18 and TransformerEngine's pure-Python wheel travel as
wheels. For every case the peer quantizes a CUDA tensor, exmy quantizes the
same fp32 values (``exmy quantize`` on the CPU and with ``--device cuda``), and the script counts
the bytes that differ in the codes, the block scales and the tensor scale. It writes a divergence
table (Markdown + JSON) to OUT.

  python3 bench/peers/peer_mx_nvfp4.py --exmy build/cli/exmy --te-wheel W.whl --out DIR

Peers (the source each case names):
  torchao 0.18  prototype/mx_formats/mx_tensor.py to_mx (FLOOR, CEIL, EVEN, RCEIL) and
                nvfp4_tensor.py nvfp4_quantize (single level, two-level per_tensor_scale)
  TE 2.18       custom_recipes/quantization_ref_nvfp4.py NVFP4QuantizerRef._quantize_blockwise_reference
                (1x16 blocks, global amax), imported with stub modules for its C++ extension.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types
import zipfile

import numpy as np
import torch


def inputs(seed: int) -> dict:
    """Matrices whose blocks span 2^-30..2^30 scales, with all-zero blocks, power-of-two amax,
    subnormals, NaN and inf, plus a clean matrix (no specials) for the tensor-scale cases."""
    rng = np.random.default_rng(seed)
    rows, cols = 256, 512
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    # a per-16-element scale spanning 2^-30 .. 2^30
    scale = np.exp2(rng.integers(-30, 31, (rows, cols // 16))).astype(np.float32)
    x = x * np.repeat(scale, 16, axis=1)
    blocks = x.reshape(rows, cols // 32, 32)
    blocks[0::17, 1] = 0.0                                # all-zero MX blocks
    blocks[1::13, 2] = np.sign(blocks[1::13, 2]) * np.exp2(rng.integers(-20, 20, (1,)))  # flat
    p2 = blocks[2::11, 3]
    p2[:, 7] = np.float32(2.0 ** 5)                       # a power-of-two amax
    p2[:, :7] = np.clip(p2[:, :7], -31.0, 31.0)
    p2[:, 8:] = np.clip(p2[:, 8:], -31.0, 31.0)
    blocks[3::19, 4] *= np.float32(2.0 ** -120)           # subnormal-range blocks
    x = blocks.reshape(rows, cols)
    special = x.copy()
    special[5, 40] = np.nan
    special[9, 100] = np.inf
    special[9, 101] = -np.inf
    special[30, 300] = -0.0
    special[31, 0:32] = -0.0
    # blocks whose values tie e2m1 / e4m3 midpoints after scaling
    special[40, 0:16] = np.array([6, 5, 3.5, 2.5, 1.75, 1.25, 0.75, 0.25] * 2, np.float32) * 0.5
    return {"clean": x.astype(np.float32), "special": special.astype(np.float32)}


def load_te_reference(te_wheel: str):
    """NVFP4QuantizerRef from TE's pure-Python wheel, its C++-extension imports stubbed."""
    d = tempfile.mkdtemp()
    with zipfile.ZipFile(te_wheel) as z:
        names = [n for n in z.namelist() if "custom_recipes/" in n and n.endswith(".py")]
        z.extractall(d, names)
    base = os.path.join(d, "transformer_engine", "pytorch", "custom_recipes")
    for name in ["transformer_engine", "transformer_engine.pytorch"]:
        sys.modules[name] = types.ModuleType(name)
    cr = types.ModuleType("transformer_engine.pytorch.custom_recipes")
    cr.__path__ = [base]
    sys.modules["transformer_engine.pytorch.custom_recipes"] = cr
    qt = types.ModuleType("transformer_engine.pytorch.quantized_tensor")

    class _Stub:  # QuantizedTensorStorage / Quantizer bases
        def __init__(self, *a, **k):
            pass

    qt.QuantizedTensorStorage = _Stub
    qt.Quantizer = _Stub
    sys.modules["transformer_engine.pytorch.quantized_tensor"] = qt
    fname = "quantization_ref_nvfp4.py" if os.path.exists(
        os.path.join(base, "quantization_ref_nvfp4.py")) else "reference_nvfp4.py"
    for sub in ["quantization", "utils", "gemm", "reference_utils"]:
        p = os.path.join(base, sub + ".py")
        if os.path.exists(p):
            spec = importlib.util.spec_from_file_location(
                "transformer_engine.pytorch.custom_recipes." + sub, p)
            m = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = m
            try:
                spec.loader.exec_module(m)
            except Exception as e:  # optional helpers
                print(f"te: {sub}: {e}", file=sys.stderr)
    spec = importlib.util.spec_from_file_location("te_ref_nvfp4", os.path.join(base, fname))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def run_exmy(exmy, args, device):
    cmd = [exmy, "quantize"] + args + ["--device", device]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(" ".join(cmd) + ": " + r.stderr.strip())


def diff(a: np.ndarray, b: np.ndarray) -> int:
    a = np.ascontiguousarray(a).view(np.uint8).ravel()
    b = np.ascontiguousarray(b).view(np.uint8).ravel()
    if a.size != b.size:
        return -1
    return int(np.count_nonzero(a != b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--te-wheel", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--devices", default="cpu,cuda")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.mx_tensor import to_mx
    from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale
    from torchao.prototype.mx_formats.constants import DTYPE_FP6_E2M3, DTYPE_FP6_E3M2
    import torchao
    te = load_te_reference(args.te_wheel) if args.te_wheel else None

    elem = {"e4m3fn": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "e2m3fn": DTYPE_FP6_E2M3,
            "e3m2fn": DTYPE_FP6_E3M2, "e2m1fn": torch.float4_e2m1fn_x2}
    modes = {"floor": ScaleCalculationMode.FLOOR, "ceil": ScaleCalculationMode.CEIL,
             "even": ScaleCalculationMode.EVEN, "rceil": ScaleCalculationMode.RCEIL}
    tmp = tempfile.mkdtemp()
    rows = []
    devices = args.devices.split(",")
    for data_name, x in inputs(20261123).items():
        xp = os.path.join(tmp, data_name + ".npy")
        np.save(xp, x)
        xt = torch.from_numpy(x).cuda()
        cases = []
        for en, dt in elem.items():
            for mn, mode in modes.items():
                def peer(dt=dt, mode=mode):
                    s, d = to_mx(xt, dt, 32, mode)
                    return {"codes": d.view(torch.uint8).cpu().numpy(),
                            "scales": s.view(torch.uint8).cpu().numpy()}
                flags = ["--scheme", "mx", "--to", en, "--variant", "torchao", "--scale-mode", mn]
                if en == "e2m1fn":
                    flags.append("--pack")
                cases.append((f"mx {en} {mn}", "torchao 0.18 to_mx", peer, flags))
        def nv1():
            s, d = nvfp4_quantize(xt, 16, None)
            return {"codes": d.view(torch.uint8).cpu().numpy(),
                    "scales": s.view(torch.uint8).cpu().numpy()}
        cases.append(("nvfp4 torchao single", "torchao 0.18 nvfp4_quantize", nv1,
                      ["--scheme", "nvfp4", "--to", "e2m1fn", "--variant", "torchao"]))
        def nv2():
            pts = per_tensor_amax_to_scale(torch.max(torch.abs(xt)))
            s, d = nvfp4_quantize(xt, 16, pts)
            return {"codes": d.view(torch.uint8).cpu().numpy(),
                    "scales": s.view(torch.uint8).cpu().numpy(),
                    "tensor": pts.reshape(1).float().cpu().numpy()}
        cases.append(("nvfp4 torchao two-level", "torchao 0.18 nvfp4_quantize + per_tensor_amax_to_scale",
                      nv2, ["--scheme", "nvfp4", "--to", "e2m1fn", "--variant", "torchao", "--two-level"]))
        if te is not None:
            def te2():
                g = torch.max(torch.abs(xt)).to(torch.float32).view(1)
                ref = te.NVFP4QuantizerRef
                try:
                    q, s = ref._quantize_blockwise_reference(xt, g, 16, 1, pow_2_scales=False, eps=0.0)
                except TypeError:
                    q, s = ref._quantize_blockwise_reference(xt, g, 16, 1, pow_2_scales=False)
                gds = torch.div(1.0, torch.min(torch.div(torch.tensor(448.0 * 6, device=xt.device), g),
                                               torch.tensor(torch.finfo(torch.float32).max, device=xt.device)))
                return {"codes": q.view(torch.uint8).cpu().numpy(),
                        "scales": s.view(torch.uint8).cpu().numpy(),
                        "tensor": gds.reshape(1).float().cpu().numpy()}
            cases.append(("nvfp4 te two-level", "TE 2.18 quantization_ref_nvfp4 (1x16)", te2,
                          ["--scheme", "nvfp4", "--to", "e2m1fn", "--variant", "te", "--two-level"]))
        for name, peer_name, peer, flags in cases:
            try:
                want = peer()
            except Exception as e:
                rows.append({"case": name, "data": data_name, "peer": peer_name, "error": repr(e)})
                continue
            for dev in devices:
                q, s, t = (os.path.join(tmp, f) for f in ("q.npy", "s.npy", "t.npy"))
                f = flags + ["--in", xp, "--out", q, "--state-out", s]
                if "--two-level" in flags:
                    f += ["--tensor-scale-out", t]
                try:
                    run_exmy(args.exmy, f, dev)
                except Exception as e:
                    rows.append({"case": name, "data": data_name, "peer": peer_name, "device": dev,
                                 "error": str(e)})
                    continue
                row = {"case": name, "data": data_name, "peer": peer_name, "device": dev,
                       "codes": int(want["codes"].size), "scales": int(want["scales"].size),
                       "code_diff": diff(np.load(q), want["codes"]),
                       "scale_diff": diff(np.load(s), want["scales"])}
                if "tensor" in want:
                    row["tensor_diff"] = diff(np.load(t), want["tensor"])
                rows.append(row)
                print(json.dumps(row), flush=True)

    prov = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "torch": torch.__version__,
            "torchao": torchao.__version__, "cuda": torch.version.cuda,
            "device": torch.cuda.get_device_name(0), "te_wheel": os.path.basename(args.te_wheel)}
    with open(os.path.join(args.out, "peer_mx_nvfp4.json"), "w") as fh:
        json.dump({"provenance": prov, "rows": rows}, fh, indent=1)
    lines = ["# exmy vs torchao / TransformerEngine: MX and NVFP4 quantization", "",
             "Provenance: " + ", ".join(f"{k} {v}" for k, v in prov.items()), "",
             "| case | data | peer | exmy device | codes differing | block scales differing | tensor scale |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['data']} | {r['peer']} | {r.get('device', '')} | error: {r['error'][:120]} | | |")
        else:
            lines.append(f"| {r['case']} | {r['data']} | {r['peer']} | {r['device']} | {r['code_diff']} / {r['codes']} "
                         f"| {r['scale_diff']} / {r['scales']} | {r.get('tensor_diff', '')} |")
    with open(os.path.join(args.out, "peer_mx_nvfp4.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    bad = [r for r in rows if "error" in r or r["code_diff"] or r["scale_diff"] or r.get("tensor_diff")]
    print(f"{len(rows) - len(bad)} cases equal, {len(bad)} differ or failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
