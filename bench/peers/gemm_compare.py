"""Compare captured cuBLASLt outputs (gemm_cublas_capture.py) with exmy gemm's models.

python3 bench/peers/gemm_compare.py CAPTURE_DIR EXMY [MODEL ...]
For every case and model: bit-equal outputs / total, and the largest difference in units of the
output's last place where they differ. Prints a Markdown table; writes compare.json beside the
capture. Default models: exact fp32-seq pairwise sm90.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def ulps(a, b, out_format):
    """|a - b| in ulps of b's format, per element (a, b: arrays of the output's codes)."""
    if out_format == "fp32":
        ia = a.view(np.int32).astype(np.int64)
        ib = b.view(np.int32).astype(np.int64)
    else:
        ia = a.astype(np.int64)
        ib = b.astype(np.int64)
        sign = 0x8000
        ia = np.where(ia & sign, -(ia & 0x7FFF), ia)
        ib = np.where(ib & sign, -(ib & 0x7FFF), ib)
        return np.abs(ia - ib)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def main(cap, exmy, models):
    meta = json.load(open(os.path.join(cap, "cases.json")))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in meta["cases"]:
            want = np.load(os.path.join(cap, case["name"] + "_c.npy"))
            if case["out_format"] == "fp32":
                want = want.astype(np.float32).view(np.uint32)
            for model in models:
                out = os.path.join(tmp, "c.npy")
                cmd = [exmy, "gemm", "--a", os.path.join(cap, case["inputs"] + "_a.npy"),
                       "--b", os.path.join(cap, case["inputs"] + "_b.npy"),
                       "--a-format", case["a_format"], "--b-format", case["b_format"],
                       "--out-format", case["out_format"], "--accum", model, "--out", out]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    rows.append((case, model, None, None, r.stderr.strip()))
                    continue
                got = np.load(out)
                got = got.view(np.uint32) if case["out_format"] == "fp32" else got
                eq = int(np.sum(got == want))
                d = ulps(got, want, case["out_format"])
                rows.append((case, model, eq, int(d.max()) if d.size else 0, ""))
    print("| case | M x N x K | model | bit-equal | max ulps |")
    print("|---|---|---|---|---|")
    res = []
    for case, model, eq, mx, err in rows:
        n = case["M"] * case["N"]
        shape = "%dx%dx%d" % (case["M"], case["N"], case["K"])
        if eq is None:
            print("| %s | %s | %s | error: %s | |" % (case["name"], shape, model, err))
        else:
            print("| %s | %s | %s | %d / %d | %d |" % (case["name"], shape, model, eq, n, mx))
        res.append({"case": case["name"], "model": model, "equal": eq, "total": n,
                    "max_ulps": mx, "error": err})
    json.dump({"meta": {k: v for k, v in meta.items() if k != "cases"}, "results": res},
              open(os.path.join(cap, "compare.json"), "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:] or ["exact", "fp32-seq", "pairwise", "sm90"])
