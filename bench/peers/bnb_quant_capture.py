#!/usr/bin/env python3
"""bitsandbytes' quantize_blockwise / dequantize_blockwise on the GPU, saved as .npy cases for
`exmy quantize|dequantize --scheme block:B --to dynamic --compat bnb-cuda` (optim_peer_diff.py's
sibling: bnb_quant_diff.py). Inputs are designed to separate rcp.approx from a correctly rounded
reciprocal: elements placed exactly on the dynamic map's decision midpoints times the block's
absmax, random normals, subnormals, zeros, an all-zero and an all-NaN block, NaN and ±inf elements.

    bench/peers/bnb_quant_capture.py OUTDIR [--size golden|full]

Each case: x.npy (<f4 values; bf16/fp16 cases hold the 16-bit values), codes.npy (uint8),
absmax.npy (<f4), deq.npy (dequantize_blockwise's output as <f4 values), case.json.
"""
import json, os, sys
import numpy as np
import torch
import bitsandbytes as bnb
import bitsandbytes.functional as F

out = sys.argv[1]
size = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--size" else "full"
BLOCKS = 64 if size == "full" else 8
DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def inputs(rng, B):
    code = F.create_dynamic_map(signed=True).numpy().astype(np.float32)
    mids = ((code[1:].astype(np.float64) + code[:-1]) / 2).astype(np.float32)
    x = rng.normal(0.0, 1.0, size=(BLOCKS, B)).astype(np.float32)
    for b in range(BLOCKS):
        a = np.float32(abs(x[b]).max())
        kind = b % 8
        if kind in (1, 2, 3):  # elements on the midpoints times absmax (x·(1/a) vs x·rcp(a))
            k = rng.integers(0, mids.size, size=B // 2)
            x[b, : B // 2] = (mids[k].astype(np.float64) * a).astype(np.float32)
            x[b, 0] = a
        elif kind == 4:
            x[b, ::7] = np.float32(1e-39) * rng.choice([-1, 1], size=x[b, ::7].size)  # subnormal
            x[b, 1::5] = 0.0
        elif kind == 5:
            x[b] *= 1e-20
        elif kind == 6 and b % 16 == 6:
            x[b] = 0.0
        elif kind == 6:
            x[b, 3] = np.nan
            x[b, 9] = np.inf if b % 3 else -np.inf
        elif kind == 7 and b % 16 == 7:
            x[b] = np.nan
    return x.reshape(-1)


def run(name, dtype, B, seed):
    rng = np.random.default_rng(seed)
    x = inputs(rng, B)
    xt = torch.from_numpy(x).to(DT[dtype]).cuda()
    q, st = F.quantize_blockwise(xt, blocksize=B)
    deq = F.dequantize_blockwise(q, st)
    torch.cuda.synchronize()
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "x.npy"), xt.float().cpu().numpy())
    np.save(os.path.join(d, "codes.npy"), q.cpu().numpy())
    np.save(os.path.join(d, "absmax.npy"), st.absmax.float().cpu().numpy())
    np.save(os.path.join(d, "deq.npy"), deq.float().cpu().numpy())
    json.dump({"dtype": dtype, "block": B, "n": int(x.size), "seed": seed, "map": "dynamic",
               "profile": "bnb-cuda", "bitsandbytes": bnb.__version__, "torch": torch.__version__,
               "device": torch.cuda.get_device_name(),
               "command": "bench/peers/bnb_quant_capture.py OUT --size " + size},
              open(os.path.join(d, "case.json"), "w"), indent=1)
    print(name, "ok", flush=True)


seed = 0
for dt in ("fp32", "bf16", "fp16"):
    for B in (256, 2048):
        seed += 1
        run(f"quant-{dt}-b{B}", dt, B, seed)
