#!/usr/bin/env python3
"""TransformerEngine's per-tensor current-scaling cast (Float8CurrentScaling) against exmy, on the
CPU: TE's own Python reference (TransformerEngine/tests/pytorch/references/ref_per_tensor_cs.py,
quantize_scale_calc.py, as shipped in TE's repository; TE's CUDA wheel is not available here) run
with CPU torch, against `exmy quantize --scheme tensor --variant te-current` and the casts
`exmy layer --recipe te-current` makes. The two names the reference imports from TE itself
(transformer_engine.pytorch.DType and constants.TE_DType_To_Torch) are stubbed with their two
FP8 entries.

    bench/peers/te_reference_vs_exmy.py --exmy PATH --teref DIR [--seed S] [--json OUT]

DIR holds TE's `references/` package (e.g. /work/main/.teref). Cases: bf16 tensors (normal with
row/column magnitudes, zeros, a tiny tensor, one with a huge element), E4M3 and E5M2, power-of-two
scales on and off, amax_epsilon 0 and 1e-3; codes, scale_inv and the transpose compared bit for
bit. Prints one line per case; exit 0 when nothing differs.
"""
import argparse
import enum
import json
import os
import subprocess
import sys
import tempfile
import types

import numpy as np
import torch


def stub_te():
    class DType(enum.Enum):
        kFloat8E4M3 = 7
        kFloat8E5M2 = 8

    te = types.ModuleType("transformer_engine")
    pt = types.ModuleType("transformer_engine.pytorch")
    const = types.ModuleType("transformer_engine.pytorch.constants")
    pt.DType = DType
    const.TE_DType_To_Torch = {DType.kFloat8E4M3: torch.float8_e4m3fn,
                               DType.kFloat8E5M2: torch.float8_e5m2}
    te.pytorch = pt
    pt.constants = const
    sys.modules.update({"transformer_engine": te, "transformer_engine.pytorch": pt,
                        "transformer_engine.pytorch.constants": const})
    return DType


def bf16_rne(v):
    b = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def tensors(rng):
    out = []
    for (r, c) in ((64, 96), (33, 70), (128, 256)):
        a = rng.normal(size=(r, c)) * np.exp2(rng.uniform(-6, 6, (r, 1))) * np.exp2(
            rng.uniform(-3, 3, (1, c)))
        out.append(("normal", a.astype(np.float32)))
    out.append(("zeros", np.zeros((16, 32), np.float32)))
    out.append(("tiny", (rng.normal(size=(16, 48)) * 2.0 ** -120).astype(np.float32)))
    big = rng.normal(size=(32, 32)).astype(np.float32)
    big[3, 5] = 3.0e38
    out.append(("huge", big))
    return [(n, bf16_rne(a)) for n, a in out]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--teref", required=True)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--json")
    a = ap.parse_args()
    DType = stub_te()
    sys.path.insert(0, a.teref)
    from references.ref_per_tensor_cs import ref_per_tensor_cs_cast

    rng = np.random.default_rng(a.seed)
    print(f"seed {a.seed}, torch {torch.__version__}, reference {a.teref}")
    rows, bad = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, bits in tensors(rng):
            xt = torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16)
            for fmt, dt in (("e4m3fn", DType.kFloat8E4M3), ("e5m2", DType.kFloat8E5M2)):
                for pow2 in (False, True):
                    for eps in (0.0, 1e-3):
                        qx, sx, qxt, _ = ref_per_tensor_cs_cast(
                            xt, dt, return_transpose=True, force_pow_2_scales=pow2,
                            amax_epsilon=eps)
                        inp, q, s = (os.path.join(tmp, f) for f in ("x.npy", "q.npy", "s.npy"))
                        for f in (q, s):
                            if os.path.exists(f):
                                os.remove(f)
                        np.save(inp, bits)
                        cmd = [a.exmy, "quantize", "--scheme", "tensor", "--to", fmt, "--variant",
                               "te-current", "--in", inp, "--in-format", "bf16", "--out", q,
                               "--state-out", s, "--amax-epsilon", repr(eps)]
                        if pow2:
                            cmd.append("--pow2-scale")
                        subprocess.run(cmd, check=True, capture_output=True)
                        codes = np.load(q)
                        scale = np.load(s).astype(np.float32)
                        # exmy's state is the scale; TE's reference returns scale_inv = 1/scale.
                        inv = (np.float32(1.0) / scale).astype(np.float32)
                        ref_codes = qx.view(torch.uint8).numpy()
                        d_codes = int((codes.view(np.uint8) != ref_codes).sum())
                        d_t = int((codes.view(np.uint8).T != qxt.view(torch.uint8).numpy()).sum())
                        d_s = int((inv.view(np.uint32).ravel() !=
                                   sx.numpy().astype(np.float32).view(np.uint32).ravel()).sum())
                        row = {"tensor": name, "shape": list(bits.shape), "format": fmt,
                               "pow2": pow2, "eps": eps, "codes_differ": d_codes,
                               "transpose_differ": d_t, "scale_inv_differ": d_s,
                               "of": int(bits.size)}
                        rows.append(row)
                        bad += int(d_codes + d_t + d_s > 0)
                        print(json.dumps(row), flush=True)
    print(f"summary: {len(rows)} cases, {bad} with differences; "
          f"{sum(r['of'] for r in rows)} codes compared")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"seed": a.seed, "torch": torch.__version__, "rows": rows}, f, indent=1)
    sys.exit(0 if bad == 0 else 1)


if __name__ == "__main__":
    main()
