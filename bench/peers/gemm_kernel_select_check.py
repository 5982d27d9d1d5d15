"""Check `exmy gemm --accum cublas-sm90` as a user runs it against a random-shape cuBLASLt capture
(gemm_kernel_select_capture.py; issue 30, docs/SEMANTICS.md 15.6). Off the GPU:

    python3 bench/peers/gemm_kernel_select_check.py CAPTURE_DIR EXMY --out CHECK.json \
        [--types ...] [--check-products 2e7] [--jobs 2] [--skip-shapes MxNxK,...]

Per shape: rebuilds the inputs and runs the model `--accum cublas-sm90` applies at that shape:
the profile's verified model at a verified shape, else the rule (gemm_kernel_select_merge.py's
replica of accum_model.cpp: the nearest modelled shape of the same type and alignment class),
given to exmy explicitly so that the first rows of A alone can be run (beyond --check-products
products); compares every output run with the capture. Shapes whose whole product fits the cap
also run `--accum cublas-sm90` itself: its outputs must equal the explicit model's (the replica
checked) and it must print one line on stderr exactly when the shape is not verified. Prints per type: shapes and outputs split into
verified / announced, with their mismatches.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_kernel_select_fit as fit  # noqa: E402
import gemm_kernel_select_merge as merge  # noqa: E402


def rule(entries, t, M, N, K):
    """The model cublas-sm90 applies (accum_model.cpp model_for_shape) and whether verified."""
    if t == "e4m3fn":
        ok = any(e["type"] == t and (e["M"], e["N"], e["K"]) == (M, N, K) and
                 isinstance(e.get("model"), str) for e in entries)
        return "hw:k=32,frac=13,inter=13,chunk=128", ok
    b = merge.nearest(entries, t, M, N, K, True, None)
    if b is None:
        b = merge.nearest(entries, t, M, N, K, False, None)
    return b["model"], (b["M"], b["N"], b["K"]) == (M, N, K)


def check_shape(args, t, ti, seed, e, want):
    M, N, K = e["M"], e["N"], e["K"]
    a, b = fit.inputs(t, seed, ti, e["i"], M, N, K)
    codes = a.view(np.uint32) if a.dtype == np.float32 else a
    res = {"i": e["i"], "M": M, "N": N, "K": K}
    if int(codes.astype(np.int64).sum()) != e["sum_a"]:
        res["error"] = "input checksum differs"
        return res
    crow = max(1, min(M, int(args.check_products // max(1, N * K))))
    model, verified = rule(args.entries, t, M, N, K)
    res.update({"model": model, "verified": verified, "outs": {}})
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb, pc = (os.path.join(tmp, n) for n in ("a.npy", "b.npy", "c.npy"))
        np.save(pa, a[:crow])
        np.save(pb, b)

        def run(accum, o):
            # A TF32 request that cuBLAS runs on a CUDA-core kernel (a fp32-seq model) reads the
            # fp32 values unrounded, as the preset does there; `--a-format tf32` would round.
            fmt = "fp32" if t == "tf32" and accum.startswith("fp32-seq") else t
            r = subprocess.run([args.exmy, "gemm", "--a", pa, "--b", pb, "--out", pc,
                                "--a-format", fmt, "--b-format", fmt, "--out-format", o, "--accum",
                                accum], capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(r.stderr.strip())
            c = np.load(pc)
            got = (c.view(np.uint32).ravel() if c.dtype == np.float32 else
                   c.astype(np.uint32).ravel())
            return got, [x for x in r.stderr.splitlines() if x.strip()]

        try:
            for o, w in want.items():
                got, _ = run(model, o)
                w = w.reshape(M, N)[:crow].ravel()
                res["outs"][o] = {"outputs": int(w.size), "mismatches": int((got != w).sum())}
                if crow == M:  # the preset itself at the very shape
                    got2, lines = run("cublas-sm90", o)
                    res["preset_equal"] = bool((got2 == got).all())
                    res["announced"] = len(lines) == 1
                    res["lines"] = len(lines)
        except RuntimeError as ex:
            res["error"] = str(ex)
    return res


def main():
    p = argparse.ArgumentParser()
    p.add_argument("capture")
    p.add_argument("exmy")
    p.add_argument("--types", default="bf16,fp16,tf32,fp32,e4m3fn")
    p.add_argument("--check-products", type=float, default=2e7)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--skip-shapes", default="")
    p.add_argument("--out", required=True)
    p.add_argument("--profile", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "..", "..", "golden", "profiles", "sm90",
                                                     "cublaslt-h100-gemm.json"))
    args = p.parse_args()
    skip = {tuple(int(x) for x in s.split("x")) for s in args.skip_shapes.split(",") if s}
    args.entries = json.load(open(args.profile))["entries"]
    all_types = ["bf16", "fp16", "tf32", "fp32", "e4m3fn"]
    result = {}
    for t in args.types.split(","):
        meta, entries = fit.capture_entries(args.capture, t)
        ti = all_types.index(t)
        seed = meta["info"]["seed"]
        jobs = [(e, want) for e, want in entries if (e["M"], e["N"], e["K"]) not in skip]
        with ThreadPoolExecutor(args.jobs) as ex:
            rs = list(ex.map(lambda j: check_shape(args, t, ti, seed, j[0], j[1]), jobs))
        summ = {}
        for kind in ("verified", "announced"):
            sel = [r for r in rs if "outs" in r and r["verified"] == (kind == "verified")]
            summ[kind] = {"shapes": len(sel),
                          "shapes_clean": sum(all(v["mismatches"] == 0 for v in r["outs"].values())
                                              for r in sel)}
            for o in meta["outs"]:
                summ[kind][o] = {"outputs": sum(r["outs"][o]["outputs"] for r in sel),
                                 "mismatches": sum(r["outs"][o]["mismatches"] for r in sel)}
        ran = [r for r in rs if "announced" in r]
        summ["preset_runs"] = len(ran)
        summ["preset_equal"] = sum(r["preset_equal"] for r in ran)
        summ["announced_iff_unverified"] = sum(r["announced"] != r["verified"] for r in ran)
        summ["errors"] = sum(1 for r in rs if "error" in r)
        result[t] = {"info": meta["info"], "summary": summ, "shapes": rs}
        print(t, json.dumps(summ), flush=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(result, f)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
