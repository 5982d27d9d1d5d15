"""Check accumulation models chosen from the launch geometry a GEMM really had (issue 30;
docs/SEMANTICS.md 15.6). Off the GPU:

    python3 bench/peers/gemm_launch_check.py TYPE FAMILY_REGEX [CHECK_PRODUCTS] \
        --launch LAUNCH.json --captures DIR1,DIR2 --exmy EXMY

LAUNCH.json comes from gemm_launch_probe.py (kernel names, grid and block per shape); the
captures from gemm_kernel_select_capture.py (outputs of the same shapes on the same GPU and
library). Per captured shape whose fp32-output kernels match FAMILY_REGEX, the model is derived
from the kernel family and the split-K count S = gridDim.z of the GEMM kernel:
- cuBLAS's SIMT SGEMM (cutlass_80_simt_sgemm_*, fp32 and TF32 requests; the CUDA cores read the
  fp32 values unrounded): fp32-seq, and with S > 1 parts of P = 4 ceil(ceil(K / S) / 4) k summed
  in order by splitKreduce: fp32-seq:chunk=P;
- the 16-bit tensor-core kernels cutlass_75_tensorop_s1688gemm_*: hw:k=8,frac=25 (MMA-Sim's
  Hopper parameters), with S > 1 parts of P = 8 ceil(ceil(K / S) / 8): chunk=P.
Every output of a shape is compared (beyond CHECK_PRODUCTS products, the first rows of A), for
every output type of the capture. Prints the shapes checked, the clean ones and each miss.
"""
import argparse
import json
import os
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_kernel_select_fit as fit  # noqa: E402

TYPE_INDEX = {"bf16": 0, "fp16": 1, "tf32": 2, "fp32": 3}


def ceil_div(a, b):
    return -(-a // b)


def model_for(t, K, kernels):
    """The model of the family, its split count read off the GEMM kernel's grid; None if the
    family has no launch rule yet."""
    names = " ".join(n for n, _g, _b in kernels)
    S = kernels[0][1][2]
    if t in ("fp32", "tf32") and "simt_sgemm" in names:
        return "fp32-seq" if S == 1 else "fp32-seq:chunk=%d" % (4 * ceil_div(ceil_div(K, S), 4))
    if t in ("bf16", "fp16") and "s1688gemm" in names:
        base = "hw:k=8,frac=25"
        return base if S == 1 else base + ",chunk=%d" % (8 * ceil_div(ceil_div(K, S), 8))
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("type")
    p.add_argument("family")
    p.add_argument("check_products", nargs="?", type=float, default=4e6)
    p.add_argument("--launch", required=True)
    p.add_argument("--captures", required=True)
    p.add_argument("--exmy", required=True)
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    t = args.type
    with open(args.launch) as f:
        launch = {(r["M"], r["N"], r["K"]): r["kernels"]
                  for r in json.load(f)["types"][t]}
    jobs = []
    for cap_dir in args.captures.split(","):
        meta, entries = fit.capture_entries(cap_dir, t)
        seed = meta["info"]["seed"]
        for e, want in entries:
            ks = launch.get((e["M"], e["N"], e["K"]), {}).get("fp32")
            if not ks or not re.search(args.family, " ".join(n for n, _g, _b in ks)):
                continue
            m = model_for(t, e["K"], ks)
            if m:
                jobs.append((seed, e, want, m))

    def run(job):
        seed, e, want, m = job
        M, N, K = e["M"], e["N"], e["K"]
        a, b = fit.inputs(t, seed, TYPE_INDEX[t], e["i"], M, N, K)
        rows = max(1, min(M, int(args.check_products // max(1, N * K))))
        res = {}
        with tempfile.TemporaryDirectory() as tmp:
            for o, w in want.items():
                got = fit.run_exmy(args.exmy, tmp, t, a[:rows], b, m, o)
                res[o] = int((got != w.reshape(M, N)[:rows].ravel()).sum())
        return seed, (M, N, K), m, res, rows * N

    with ThreadPoolExecutor(args.jobs) as ex:
        out = list(ex.map(run, jobs))
    clean = sum(1 for r in out if all(v == 0 for v in r[3].values()))
    outputs = sum(r[4] for r in out)
    print("%s %s: shapes %d, clean %d, outputs compared per output type %d"
          % (t, args.family, len(out), clean, outputs))
    for r in out:
        if not all(v == 0 for v in r[3].values()):
            print("  miss seed %s shape %s model %s mismatches %s of %d" % r)


if __name__ == "__main__":
    main()
