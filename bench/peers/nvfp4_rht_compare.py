#!/usr/bin/env python3
"""exmy's NVFP4 RHT (docs/SEMANTICS.md 7.18: `x.view(-1, 16) @ R` as exmy's GEMM of a named
accumulation, bf16 out) against the outputs bench/peers/nvfp4_rht_capture.py recorded (cuBLAS on
a GPU, or CPU torch with --device cpu), and the models against each other.

    bench/peers/nvfp4_rht_compare.py --exmy PATH [--capture DIR] [--models sm100,cublas-sm90,...]
        [--generator CAPTURE_SCRIPT.py] [--json OUT]

The inputs are rebuilt from the capture's seeds (its case generator; the sha256 digests are
checked; --generator names the capture script's version that made them, e.g. an older commit's
`git show f32048f:bench/peers/nvfp4_rht_capture.py`). Without --capture the seed is the capture's default and only the models are compared.
Prints one line per case and model: outputs differing from the capture, and from `exact`.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nvfp4_rht_capture as cap  # noqa: E402


def exmy_gemm(exmy, d, x, signs, model):
    a, b, c = (os.path.join(d, f) for f in ("a.npy", "b.npy", "c.npy"))
    np.save(a, x)
    np.save(b, np.ascontiguousarray(cap.bf16_codes(cap.rht_matrix(signs)).T))  # B = R^T
    p = subprocess.run([exmy, "gemm", "--a", a, "--b", b, "--a-format", "bf16", "--b-format",
                        "bf16", "--out-format", "bf16", "--accum", model, "--out", c],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip())
    return np.load(c)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exmy", required=True)
    ap.add_argument("--capture")
    ap.add_argument("--models", default="sm100,cublas-sm90,fp32-seq,pairwise,exact")
    ap.add_argument("--json")
    ap.add_argument("--generator")
    a = ap.parse_args()
    global cap
    if a.generator:
        import importlib.util
        spec = importlib.util.spec_from_file_location("nvfp4_rht_capture_gen", a.generator)
        cap = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cap)
    meta, arrays = None, None
    if a.capture:
        meta = json.load(open(os.path.join(a.capture, "nvfp4_rht.json")))
        arrays = np.load(os.path.join(a.capture, "nvfp4_rht.npz"))
        cases = meta["cases"]
        print(f"capture {a.capture}: {meta.get('gpu', meta['device'])}, torch {meta['torch']}")
    else:
        seed = 20261202
        cases = [{"key": f"{n}_{m}_{'signs' if s else 'nosigns'}", "case": n, "M": m,
                  "seed": seed + i, "signs": s} for i, (n, m) in enumerate(cap.CASES)
                 for s in (True, False)]
    models = a.models.split(",")
    rows, bad = [], 0
    with tempfile.TemporaryDirectory() as d:
        for c in cases:
            x = cap.case_inputs(c["case"], c["M"], c["seed"])
            if meta and hashlib.sha256(x.tobytes()).hexdigest() != c["input_sha256"]:
                print(f"{c['key']}: input digest differs from the capture's")
                bad += 1
                continue
            outs = {m: exmy_gemm(a.exmy, d, x, c["signs"], m) for m in models}
            for m in models:
                r = {"key": c["key"], "model": m, "outputs": int(outs[m].size),
                     "vs_exact": int(np.count_nonzero(outs[m] != outs["exact"]))
                     if "exact" in outs else None}
                line = f"{c['key']} {m}: {r['vs_exact']} differ from exact"
                if arrays is not None:
                    got = arrays[c["key"]]
                    r["vs_capture"] = int(np.count_nonzero(outs[m] != got))
                    line += f", {r['vs_capture']} from the capture of {r['outputs']}"
                print(line, flush=True)
                rows.append(r)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"capture": a.capture, "rows": rows}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
