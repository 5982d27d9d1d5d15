#!/usr/bin/env python3
"""bitsandbytes' int8_vectorwise_quant (kInt8VectorQuant: LLM.int8()'s row-wise int8, fp16
inputs, threshold 0) against `exmy quantize --compat bnb-cuda --scheme rowwise --to int8` and the
IEEE `--order mul-recip` it was modelled with before, on the GPU machine:

    bench/peers/bnb_int8_quant_check.py EXMY OUT.md [--device cpu|cuda]

Inputs: N(0, 1) fp16 rows with a random absmax per row, and rows with elements placed on the
exact midpoints a (k + 1/2) / 127 between codes (where the scale's rounding decides the code).
Writes a Markdown table (codes and row absmax differing); exit 1 if the profile differs.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import bitsandbytes as bnb

exmy, out_md = sys.argv[1], sys.argv[2]
device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
rng = np.random.default_rng(20261126)
cases = []
# 1. random rows, absmax over 12 binades
x = rng.normal(0, 1, (512, 1024)) * np.exp2(rng.integers(-6, 6, (512, 1)))
cases.append(("random N(0,1) x 2^[-6,6) per row", x.astype(np.float16)))
# 2. midpoints: row absmax a (an fp16 value), elements a (k + 1/2) / 127 rounded to fp16
a = np.exp2(rng.uniform(-8, 8, (512, 1))).astype(np.float16).astype(np.float64)
k = rng.integers(0, 127, (512, 1023))
mid = np.concatenate([a, a * (k + 0.5) / 127 * rng.choice([-1, 1], (512, 1023))], axis=1)
cases.append(("midpoints a (k + 1/2) / 127", mid.astype(np.float16)))
rows, bad = [], 0
with tempfile.TemporaryDirectory() as tmp:
    for name, h in cases:
        cb, scb, _ = bnb.functional.int8_vectorwise_quant(torch.from_numpy(h).cuda())
        want_q = cb.cpu().numpy().view(np.uint8)
        want_s = scb.float().cpu().numpy()
        np.save(os.path.join(tmp, "x.npy"), h.astype(np.float32))
        res = []
        for label, extra in (("--compat bnb-cuda", ["--compat", "bnb-cuda"]),
                             ("--order mul-recip (IEEE)", ["--order", "mul-recip"])):
            q, s = os.path.join(tmp, "q.npy"), os.path.join(tmp, "s.npy")
            for f in (q, s):
                if os.path.exists(f):
                    os.remove(f)
            subprocess.run([exmy, "quantize", "--scheme", "rowwise", "--to", "int8", "--in",
                            os.path.join(tmp, "x.npy"), "--out", q, "--state-out", s,
                            "--device", device] + extra, check=True)
            got_q = np.load(q).view(np.uint8).reshape(want_q.shape)
            got_s = np.load(s).reshape(-1)
            nq = int((got_q != want_q).sum())
            ns = int((got_s.view(np.uint32) != want_s.reshape(-1).view(np.uint32)).sum())
            res.append(f"{label}: codes {nq}/{want_q.size}, absmax {ns}/{want_s.size}")
            if "compat" in label:
                bad += nq + ns
        rows.append((name, "; ".join(res)))
with open(out_md, "w") as f:
    f.write(f"bitsandbytes {bnb.__version__}, torch {torch.__version__}, "
            f"{torch.cuda.get_device_name()}, exmy --device {device}\n\n")
    f.write("| inputs (fp16, 512 x 1024) | elements differing from int8_vectorwise_quant |\n|---|---|\n")
    for r in rows:
        f.write(f"| {r[0]} | {r[1]} |\n")
print(open(out_md).read())
sys.exit(1 if bad else 0)
