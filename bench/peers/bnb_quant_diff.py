#!/usr/bin/env python3
"""Compares `exmy quantize/dequantize --compat bnb-cuda` (and, for contrast, exmy's default) with
the cases of bnb_quant_capture.py: codes, absmax, and the dequantized values rounded to the
input dtype (NaNs as a class).

    bench/peers/bnb_quant_diff.py EXMY CASES_DIR OUT.md [--device cpu|cuda]
"""
import json, os, subprocess, sys, tempfile
import numpy as np

from npy_compare import differ

exmy, cases, out_md = sys.argv[1], sys.argv[2], sys.argv[3]
device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"


def to_dtype(a, dt):
    if dt == "fp16":
        return a.astype(np.float16).astype(np.float32)
    if dt == "bf16":  # RN to bf16 via the bit pattern
        u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
        r = np.where(np.isnan(a), 0x7FC00000, r).astype(np.uint32)
        return r.view(np.float32)
    return a


def neq(a, b):
    return differ(a.astype(np.float32), b.astype(np.float32))[0]


rows, bad = [], 0
for name in sorted(os.listdir(cases)):
    d = os.path.join(cases, name)
    if not os.path.isfile(os.path.join(d, "case.json")):
        continue
    c = json.load(open(os.path.join(d, "case.json")))
    for compat in (["--compat", "bnb-cuda"], []):
        with tempfile.TemporaryDirectory() as t:
            q, s, y = (os.path.join(t, f) for f in ("q.npy", "s.npy", "y.npy"))
            base = ["--scheme", f"block:{c['block']}", "--device", device]
            r1 = subprocess.run([exmy, "quantize", *base, "--to", "dynamic", "--in",
                                 os.path.join(d, "x.npy"), "--out", q, "--state-out", s, *compat],
                                capture_output=True, text=True)
            r2 = subprocess.run([exmy, "dequantize", *base, "--from", "dynamic", "--in",
                                 os.path.join(d, "codes.npy"), "--state",
                                 os.path.join(d, "absmax.npy"), "--out", y, *compat],
                                capture_output=True, text=True)
            if r1.returncode or r2.returncode:
                rows.append((name, " ".join(compat) or "default", "exmy failed: " + (r1.stderr + r2.stderr).strip()[:200]))
                bad += 1
                continue
            nc = int((np.load(q).reshape(-1) != np.load(os.path.join(d, "codes.npy")).reshape(-1)).sum())
            na = neq(np.load(s).reshape(-1), np.load(os.path.join(d, "absmax.npy")).reshape(-1))
            nd = neq(to_dtype(np.load(y).reshape(-1), c["dtype"]), np.load(os.path.join(d, "deq.npy")).reshape(-1))
            if compat:
                bad += (nc + na + nd) > 0
            rows.append((name, " ".join(compat) or "default", f"codes {nc}/{c['n']}; absmax {na}; dequantized {nd}/{c['n']}"))
with open(out_md, "w") as f:
    f.write(f"| case | exmy | elements differing from bitsandbytes (--device {device}) |\n|---|---|---|\n")
    for r in rows:
        f.write("| " + " | ".join(r) + " |\n")
print(open(out_md).read())
sys.exit(1 if bad else 0)
