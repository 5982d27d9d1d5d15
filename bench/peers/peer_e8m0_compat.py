#!/usr/bin/env python3
"""Exhaustive check of `exmy cast e8m0fnu --compat torch|ml_dtypes` against the libraries.

Every fp32 bit pattern (2^32, in chunks of 2^28) is converted by torch (`.to(torch.float8_e8m0fnu)`
on CUDA and on the CPU), by ml_dtypes (`astype(ml_dtypes.float8_e8m0fnu)`, when importable) and by
exmy (`exmy cast e8m0fnu --compat NAME --in X.npy --out Y.npy`, the fast file path); the script
counts differing codes per peer and prints the first few with their inputs in hex.

  python3 bench/peers/peer_e8m0_compat.py --exmy build/cli/exmy [--chunks 16] [--out F.json]
"""
import argparse, json, os, subprocess, sys, tempfile, time

import numpy as np
import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--chunks", type=int, default=16, help="chunks of 2^28 patterns (16 = all 2^32)")
    ap.add_argument("--out")
    a = ap.parse_args()
    try:
        import ml_dtypes
    except ImportError:
        ml_dtypes = None
    tmp = tempfile.mkdtemp()
    xin, yt, ym = (os.path.join(tmp, f) for f in ("x.npy", "t.npy", "m.npy"))
    res = {"torch_cuda": [0, []], "torch_cpu": [0, []], "ml_dtypes": [0, []]}
    n_total = 0
    t0 = time.time()
    for c in range(a.chunks):
        bits = np.arange(c << 28, (c + 1) << 28, dtype=np.uint64).astype(np.uint32)
        x = bits.view(np.float32)
        np.save(xin, x)
        subprocess.run([a.exmy, "cast", "e8m0fnu", "--compat", "torch", "--in", xin, "--out", yt], check=True)
        ex_t = np.load(yt).view(np.uint8).ravel()
        peers = {
            "torch_cuda": torch.from_numpy(x).cuda().to(torch.float8_e8m0fnu).view(torch.uint8).cpu().numpy(),
            "torch_cpu": torch.from_numpy(x).to(torch.float8_e8m0fnu).view(torch.uint8).numpy(),
        }
        for k, v in peers.items():
            d = np.nonzero(v != ex_t)[0]
            res[k][0] += len(d)
            res[k][1] += [(hex(int(bits[i])), hex(int(v[i])), hex(int(ex_t[i]))) for i in d[:4]]
        if ml_dtypes is not None:
            subprocess.run([a.exmy, "cast", "e8m0fnu", "--compat", "ml_dtypes", "--in", xin, "--out", ym], check=True)
            ex_m = np.load(ym).view(np.uint8).ravel()
            v = x.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)
            d = np.nonzero(v != ex_m)[0]
            res["ml_dtypes"][0] += len(d)
            res["ml_dtypes"][1] += [(hex(int(bits[i])), hex(int(v[i])), hex(int(ex_m[i]))) for i in d[:4]]
        n_total += len(bits)
        el = time.time() - t0
        print(f"chunk {c + 1}/{a.chunks}: {n_total} inputs, {el:.0f} s, ETA {el / (c + 1) * (a.chunks - c - 1):.0f} s",
              file=sys.stderr, flush=True)
    out = {"inputs": n_total, "torch": torch.__version__,
           "ml_dtypes": getattr(ml_dtypes, "__version__", None) if ml_dtypes else None,
           "device": torch.cuda.get_device_name(0),
           "differ": {k: v[0] for k, v in res.items()},
           "first": {k: v[1][:8] for k, v in res.items()}}
    print(json.dumps(out, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
    return 1 if any(v[0] for k, v in res.items() if k != "ml_dtypes" or ml_dtypes) else 0


if __name__ == "__main__":
    sys.exit(main())
