#!/usr/bin/env python3
"""Runs `exmy step` on cpu and cuda for the cases that differed on the H100 and prints where."""
import glob, os, subprocess, sys
import numpy as np
E = sys.argv[1]
d = "/tmp/stepdiag"; os.makedirs(d, exist_ok=True)
def values(n, seed, scale, dt=None):
    x = (seed * 2654435761 + 12345) & 0xffffffff
    out = np.empty(n, np.float32)
    for i in range(n):
        x ^= (x << 13) & 0xffffffff; x ^= x >> 17; x ^= (x << 5) & 0xffffffff
        out[i] = (np.float32(x >> 8) / np.float32(16777216.0) - np.float32(0.5)) * np.float32(scale) * np.float32(4)
    return out.astype(dt).astype(np.float32) if dt else out
n = 5000
np.save(f"{d}/p.npy", values(n, 3, 1.0))
g = values(n * 4, 4, 1e-2); gf = g.copy(); g[n + 17] = np.inf
np.save(f"{d}/g.npy", g.reshape(4, n)); np.save(f"{d}/gf.npy", gf.reshape(4, n))
np.save(f"{d}/g1.npy", values(n, 5, 1e-2))
np.save(f"{d}/p16.npy", values(1000, 1001, 1.0, np.float16))
np.save(f"{d}/g16.npy", values(3000, 1002, 1e-2).reshape(3, 1000))
def run(args, out):
    r = subprocess.run(f"{E} step {args} --out {out}", shell=True, capture_output=True, text=True)
    if r.returncode: print("  rc", r.returncode, r.stderr.strip()[:200])
def diff(a, b, label):
    if not os.path.isdir(b): print(f"  {label}: no output on cuda"); return
    for f in sorted(glob.glob(a + "/*")):
        fb = b + "/" + os.path.basename(f)
        if open(f, "rb").read() == open(fb, "rb").read(): continue
        if f.endswith(".json"):
            print(f"  {label} {os.path.basename(f)} differs:\n    {open(f).read().strip()}\n    {open(fb).read().strip()}"); continue
        x, y = np.load(f), np.load(fb)
        xb = x.view(np.uint32 if x.itemsize == 4 else np.uint16 if x.itemsize == 2 else np.uint8).ravel()
        yb = y.view(xb.dtype).ravel()
        i = np.where(xb != yb)[0]
        nanc = np.isnan(x.ravel()[i]).sum() if x.dtype.kind == "f" else 0
        print(f"  {label} {os.path.basename(f)}: {len(i)} differ ({nanc} NaN on cpu); first:",
              [(int(k), hex(int(xb[k])), hex(int(yb[k]))) for k in i[:4]])
opts = ["adamw", "adam", "sgd", "adamw8bit", "adam8bit", "momentum8bit", "stableadamw", "adamw-bf16+8", "adam-fp16+5:sr", "sgd-fp16+13"]
for o in opts:
    for gname in ["g", "gf"]:
        base = f"--optimizer {o} --param-dtype fp32 --seed 9"
        run(f"{base} --params {d}/p.npy --grads {d}/{gname}.npy --steps 4", f"{d}/first_{o}_{gname}")
        for dev in ["cpu", "cuda"]:
            run(f"{base} --params {d}/first_{o}_{gname}/params.npy --state {d}/first_{o}_{gname} --grads {d}/g1.npy --steps 2 --device {dev}", f"{d}/cont_{o}_{gname}_{dev}")
        print(f"{o} resume ({gname}):"); diff(f"{d}/cont_{o}_{gname}_cpu", f"{d}/cont_{o}_{gname}_cuda", "resume")
for o in ["adamw", "adam"]:
    for dev in ["cpu", "cuda"]:
        run(f"--optimizer {o} --param-dtype fp16 --params {d}/p16.npy --grads {d}/g16.npy --steps 3 --lr 0.01 --seed 5 --device {dev}", f"{d}/f16_{o}_{dev}")
    print(f"{o} fp16:"); diff(f"{d}/f16_{o}_cpu", f"{d}/f16_{o}_cuda", "fp16")
