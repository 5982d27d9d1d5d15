#!/usr/bin/env python3
"""Compares `exmy step --compat PROFILE` with the peers' results captured by
bnb_optim_capture.py (bitsandbytes) and torch_optim_capture.py (torch.optim on CUDA), element by
element, and writes a divergence table (the profile is each case's, or --profile).

    bench/peers/optim_peer_diff.py EXMY CASES_DIR OUT.md [--profile NAME] [--device cpu|cuda]

For each case folder: runs exmy on params0.npy / grads.npy with the case's hyperparameters and
compares params (bit patterns; NaNs as a class), state codes, absmax (or the fp32 states of the
32-bit fallback). Exit status 1 when anything differs.
"""
import json, os, subprocess, sys, tempfile
import numpy as np

from npy_compare import differ

exmy, cases, out_md = sys.argv[1], sys.argv[2], sys.argv[3]
# The profile: --profile NAME, else each case's "profile" (bnb-cuda when absent).
forced = sys.argv[sys.argv.index("--profile") + 1] if "--profile" in sys.argv else None
device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"


rows, bad = [], 0
for name in sorted(os.listdir(cases)):
    d = os.path.join(cases, name)
    if not os.path.isfile(os.path.join(d, "case.json")):
        continue
    c = json.load(open(os.path.join(d, "case.json")))
    h = c["hyper"]
    profile = forced or c.get("profile", "bnb-cuda")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [exmy, "step", "--optimizer", c["optimizer"], "--compat", profile,
               "--params", os.path.join(d, "params0.npy"), "--grads", os.path.join(d, "grads.npy"),
               "--steps", str(c["steps"]), "--out", tmp, "--lr", repr(h["lr"]), "--wd", repr(h["wd"]),
               "--param-dtype", c["dtype"], "--device", device]
        if c["optimizer"] in ("momentum8bit", "sgd"):
            cmd += ["--momentum", repr(h["momentum"])]
            if h.get("nesterov"):
                cmd += ["--nesterov"]
            if h.get("dampening"):
                cmd += ["--dampening", repr(h["dampening"])]
        else:
            cmd += ["--beta1", repr(h["beta1"]), "--beta2", repr(h["beta2"]), "--eps", repr(h["eps"])]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            rows.append((name, "exmy failed: " + r.stderr.strip().splitlines()[-1], "", ""))
            bad += 1
            continue
        parts = []
        for f in ("params", "state1", "state2", "absmax1", "absmax2"):
            pf = os.path.join(d, f + ".npy")
            if not os.path.exists(pf):
                continue
            ref = np.load(pf)
            mine = np.load(os.path.join(tmp, f + ".npy")).reshape(ref.shape).astype(ref.dtype)
            n, mu = differ(ref, mine)
            bad += n > 0
            parts.append(f"{f} {n}/{ref.size}" + (f" (max {mu})" if n else ""))
        rows.append((name + f" ({profile})", c["dtype"], str(c["n"]), "; ".join(parts)))
with open(out_md, "w") as f:
    f.write(f"| case | dtype | n | elements differing (exmy --compat PROFILE --device {device} vs the peer) |\n|---|---|---|---|\n")
    for r in rows:
        f.write("| " + " | ".join(r) + " |\n")
print(open(out_md).read())
sys.exit(1 if bad else 0)
