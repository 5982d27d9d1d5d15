"""Capture of TransformerEngine's NVFP4 random Hadamard transform as its Python reference runs it
on CUDA (issue 32 item 4; docs/SEMANTICS.md 7.18): `x.view(-1, 16) @ (H * 0.25)` in bf16, i.e. one
cuBLASLt bf16 GEMM with K = 16 and a bf16 output (TransformerEngine
transformer_engine/pytorch/custom_recipes/reference_nvfp4.py, NVFP4QuantizerRef._apply_rht,
commit d0067d0d). TE's own tests
(TransformerEngine/tests/pytorch/nvfp4/test_nvfp4_rht_quantize_exact.py) hold its RHT kernels
equal to this reference bit for bit on randn inputs. No TE is needed: the 16x16
matrix is built here from TE's sign vector (get_wgrad_sign_vector) and Sylvester's construction.

    python3 bench/peers/nvfp4_rht_capture.py --out DIR [--seed S] [--device cuda|cpu]

Cases (inputs from numpy's default_rng(seed + case index), rebuilt by the verifier; only their
sha256 digests are stored):
- randn:   M x 16 bf16 rows of standard normals (what TE's tests use), M = 32768;
- wide:    M x 16 rows with exponents spread over 2^-40 .. 2^0 and random signs, M = 32768;
- ties:    M x 16 rows whose first output lies at a bf16 tie plus or minus a few fp32 ulps or
           far below (an element 4 s0, one of 4 s1 2^-8, the rest small: SEMANTICS 7.18's
           example), which separates the accumulation models, M = 32768 and 1000.
Outputs: C = x @ R in bf16 (uint16 codes), with and without the sign vector, in
DIR/nvfp4_rht.npz (compressed) and DIR/nvfp4_rht.json (versions, device, seeds, digests, the
kernels torch.profiler saw). --device cpu is a smoke test of this script (CPU torch's bf16 GEMM).
"""
import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np

SIGNS = [1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1]  # TE get_wgrad_sign_vector


def rht_matrix(with_signs):
    h = np.array([[(-1.0) ** bin(i & j).count("1") for j in range(16)] for i in range(16)])
    s = np.array(SIGNS if with_signs else [1] * 16, dtype=np.float64)
    return (s[:, None] * h) * 0.25  # sign_mat @ H, times 1/sqrt(16): every entry +-0.25


def bf16_codes(v):
    b = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def case_inputs(name, m, seed):
    rng = np.random.default_rng(seed)
    if name == "randn":
        x = rng.standard_normal((m, 16))
    elif name == "wide":
        e = rng.integers(-40, 1, (m, 16))
        x = rng.choice([-1.0, 1.0], (m, 16)) * (1 + rng.integers(0, 128, (m, 16)) / 128) * 2.0**e
    else:  # ties: output 0 = sum of v_i with v_0 = b 2^k, v_1 = half its bf16 ulp, the rest
        # small terms 2^-9 .. 2^-29 below v_0 (x_i = 4 s_i v_i, R[i][0] = s_i / 4)
        s = np.array(SIGNS, dtype=np.float64)
        k = rng.integers(-4, 5, m).astype(np.float64)
        v = np.zeros((m, 16))
        v[:, 0] = (1 + rng.integers(0, 128, m) / 128.0) * 2.0**k
        v[:, 1] = 2.0 ** (k - 8)
        for j in range(2, 16):
            v[:, j] = (rng.choice([-1.0, 1.0], m) * (1 + rng.integers(0, 128, m) / 128) *
                       2.0 ** (k - rng.integers(9, 30, m)))
            v[rng.random(m) < 0.5, j] = 0.0
        x = 4 * s[None, :] * v
    return bf16_codes(x).reshape(m, 16)


CASES = [("randn", 32768), ("wide", 32768), ("ties", 32768), ("ties", 1000)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    import torch
    dev = a.device
    if dev == "cuda" and not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    meta = {"torch": torch.__version__, "numpy": np.__version__, "device": dev, "seed": a.seed,
            "cases": []}
    if dev == "cuda":
        meta["gpu"] = torch.cuda.get_device_name(0)
        meta["cuda"] = torch.version.cuda
        meta["cublas"] = getattr(torch.backends.cuda, "preferred_blas_library", lambda: "?")().name \
            if hasattr(torch.backends.cuda, "preferred_blas_library") else "?"
    arrays = {}
    t0 = time.time()
    for idx, (name, m) in enumerate(CASES):
        xc = case_inputs(name, m, a.seed + idx)
        x = torch.from_numpy(xc.view(np.int16)).view(torch.bfloat16).to(dev)
        for signs in (True, False):
            r = torch.from_numpy(bf16_codes(rht_matrix(signs)).view(np.int16)).view(
                torch.bfloat16).to(dev)
            kernels = []
            with torch.profiler.profile() as prof:
                c = x @ r
                if dev == "cuda":
                    torch.cuda.synchronize()
            for ev in prof.key_averages():
                if ev.device_type.name == "CUDA" or "gemm" in ev.key.lower():
                    kernels.append(ev.key)
            again = x @ r
            codes = c.view(torch.int16).cpu().numpy().view(np.uint16)
            same = bool(np.array_equal(codes, again.view(torch.int16).cpu().numpy().view(np.uint16)))
            key = f"{name}_{m}_{'signs' if signs else 'nosigns'}"
            arrays[key] = codes
            meta["cases"].append({"key": key, "case": name, "M": m, "seed": a.seed + idx,
                                  "signs": signs, "input_sha256": hashlib.sha256(xc.tobytes()).hexdigest(),
                                  "output_sha256": hashlib.sha256(codes.tobytes()).hexdigest(),
                                  "repeat_equal": same, "kernels": kernels})
            print(f"{key}: {m}x16 outputs, repeat equal {same}, kernels {kernels[:3]}", flush=True)
    np.savez_compressed(os.path.join(a.out, "nvfp4_rht.npz"), **arrays)
    meta["seconds"] = round(time.time() - t0, 2)
    with open(os.path.join(a.out, "nvfp4_rht.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"wrote {a.out} in {meta['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
