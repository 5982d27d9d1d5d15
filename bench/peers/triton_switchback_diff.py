#!/usr/bin/env python3
"""exmy quantize --scheme rowwise --to int8 [--compat triton] against the Triton capture.

    bench/peers/triton_switchback_diff.py EXMY CASE_DIR [--device cpu|cuda]
"""
import os, subprocess, sys, tempfile
import numpy as np

exmy, d = sys.argv[1], sys.argv[2]
device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
ref_q = np.load(os.path.join(d, "codes.npy")).view(np.uint8).reshape(-1)
ref_m = np.load(os.path.join(d, "maxs.npy")).reshape(-1)
bad = 0
for compat in (["--compat", "triton"], []):
    with tempfile.TemporaryDirectory() as t:
        q, s = os.path.join(t, "q.npy"), os.path.join(t, "s.npy")
        r = subprocess.run([exmy, "quantize", "--scheme", "rowwise", "--to", "int8", "--in",
                            os.path.join(d, "x.npy"), "--out", q, "--state-out", s, "--device",
                            device, *compat], capture_output=True, text=True)
        if r.returncode:
            print(" ".join(compat) or "default", "exmy failed:", r.stderr.strip())
            bad += 1
            continue
        nq = int((np.load(q).view(np.uint8).reshape(-1) != ref_q).sum())
        nm = int((np.load(s).reshape(-1).view(np.uint32) != ref_m.view(np.uint32)).sum())
        if compat:
            bad += nq + nm > 0
        print(f"| {' '.join(compat) or 'default (div-mul, IEEE)'} | {device} | codes {nq}/{ref_q.size} | maxs {nm}/{ref_m.size} |")
sys.exit(1 if bad else 0)
