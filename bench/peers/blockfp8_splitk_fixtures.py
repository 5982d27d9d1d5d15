"""The regression fixtures of tests/gemm/test_gemm_blockfp8_splitk.cpp from a capture of
bench/peers/blockfp8_splitk_capture.py (docs/SEMANTICS.md 15.7):

    python3 bench/peers/blockfp8_splitk_fixtures.py --caps DIR

Writes golden/gemm/cublas-h200-blockfp8-splitk/cases.json (provenance; per case the shape, pair,
output, mix, seed index, the inputs' checksums and the model exmy's launch rule gives) and
<case>_c.npy (torch's output codes). The inputs are not stored: the test rebuilds them from the
capture's counter hash (blockfp8_gemm_capture.py's gen_codes / gen_scales) and checks the
checksums. The cases are the captured GEMMs small enough for a CPU test (split-K launches of
every pair and output, a K with a partial k-block, M = 1 on the 128x128-block kernel, a plain
launch).
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import blockfp8_splitk_vs_exmy as vs  # noqa: E402

CASES = ["s03_%s_%s" % (p, o) for p in ("1x128.128x128", "1x128.1x128", "128x128.1x128")
         for o in ("bf16", "fp32")]
CASES += ["s07_%s_%s" % (p, o) for p in ("1x128.128x128", "1x128.1x128", "128x128.1x128")
          for o in ("bf16", "fp32")]
CASES += ["s12_1x128.128x128_fp32", "s12_1x128.1x128_fp32", "s12_128x128.1x128_bf16",
          "s16_1x128.1x128_fp32", "s16_128x128.1x128_bf16", "s02_1x128.1x128_fp32",
          "s06_1x128.1x128_fp32"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--caps", required=True)
    p.add_argument("--out", default=os.path.join(HERE, "..", "..", "golden", "gemm",
                                                 "cublas-h200-blockfp8-splitk"))
    args = p.parse_args()
    meta = json.load(open(os.path.join(args.caps, "splitk.json")))
    z = np.load(os.path.join(args.caps, "splitk.npz"))
    by = {e["case"]: e for e in meta["cases"] if "case" in e}
    os.makedirs(args.out, exist_ok=True)
    cases = []
    for name in CASES:
        e = by[name]
        M, N, K = e["shape"]
        S, T, prom = vs.rule(e["kernels"], M, N, K, e["pair"])
        c = z["c/" + name].reshape(M, N)
        np.save(os.path.join(args.out, name + "_c.npy"),
                c.view(np.float32) if e["out"] == "fp32" else c.view(np.uint16))
        cases.append({"name": name, "M": M, "N": N, "K": K, "pair": e["pair"], "out": e["out"],
                      "mix": e["mix"], "si": e["si"], "sums": e["sums"],
                      "kernel": vs.gemm_kernels(e["kernels"])[0][0],
                      "model": vs.explicit_model(S, T, prom)})
    doc = {"source": "bench/peers/blockfp8_splitk_capture.py on an H200 (%s, driver %s, torch %s, "
                     "CUDA %s, cuBLAS %s), 2026-12-02; bench/results/"
                     "2026-12-02-h200-blockfp8-splitk.md" % (
                         meta["device"], meta["driver"], meta["torch"], meta["cuda"],
                         meta["cublas"]),
           "seed": meta["seed"], "cases": cases}
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print("%d cases written to %s" % (len(cases), args.out))


if __name__ == "__main__":
    main()
