"""exmy gemm against cuBLASLt's split-K launches of blockwise-scaled FP8 GEMMs (the capture of
bench/peers/blockfp8_splitk_capture.py; docs/SEMANTICS.md 15.7). Offline:

    python3 bench/peers/blockfp8_splitk_vs_exmy.py --exmy build/cli/exmy --caps DIR
        [--accum cublas-sm90] [--explicit] [--also "MODEL;..."] [--json F] [--fprev]

For every captured case (shape, block pair, output) the inputs are rebuilt from the capture's
counter hash (checksums must match) and exmy gemm runs under --accum (cublas-sm90: the model
exmy picks from its launch records) and, with --explicit, under the model the launch record
gives by the rule of SEMANTICS 15.7 written out (split=S,tile=T,fill with S = CTAs / tiles), so
that a fit does not depend on the compiled-in records. Outputs are compared bit for bit; stderr
lines of exmy (announcements) are counted. --fprev checks the capture's FPRev counts against the
rule's parts (contiguous parts of P k-blocks, part chains added in part order).
Exit 1 on any mismatch of the --accum model.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blockfp8_gemm_capture as cap  # noqa: E402


def gemm_kernels(kernels):
    """The launch's GEMM kernel and reduction (the trace's other kernels are torch's own)."""
    return [k for k in kernels or [] if k[0].startswith("nvjet") or "cublasLt::" in k[0]]


def nvjet_tiles(name, M, N):
    """sim/gemm/launch_rules.cpp's nvjet_tiles: _<a>x<b>_<k>x<s>_<cx>x<cy>_, a along N."""
    m = re.match(r"nvjet_sm90_\w+?_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_", name)
    a, b, _, _, cx, cy = map(int, m.groups())
    def pad(v, c):
        return c * -(-v // c)
    return pad(-(-N // a), cx) * pad(-(-M // b), cy)


def rule(kernels, M, N, K, pair):
    """(S, T, promote) of the launch by SEMANTICS 15.7's rule; S = 1 without split-K."""
    ks = gemm_kernels(kernels)
    name, grid = ks[0][0], ks[0][1]
    # the promotion equation of the kernel's scaling (a 128x128-block operand: product)
    prom = "product" if "blk128" in name else "cublas"
    if "splitK" not in name:
        return 1, 0, prom
    S = grid[0] * grid[1] * grid[2] // nvjet_tiles(name, M, N)
    T = 512 if "blk128" in name else 128
    return S, T, prom


def pick(n_rows, tile, budget_rows):
    """Rows of whole tiles, evenly spread (blockfp8_gemm_vs_exmy.py's)."""
    tiles = -(-n_rows // tile)
    want = max(1, min(tiles, -(-budget_rows // tile)))
    ti = np.unique(np.linspace(0, tiles - 1, want).round().astype(np.int64))
    rows = np.concatenate([np.arange(t * tile, min(n_rows, (t + 1) * tile)) for t in ti])
    return rows, ti


def explicit_model(S, T, promote):
    m = "hw:k=32,frac=13,inter=13,chunk=128,promote=%s" % (promote or "cublas")
    if S > 1:
        m += ",split=%d,tile=%d,fill" % (S, T)
    return m


def run_exmy(exmy, d, model, pair, out, env=None):
    ta, tb = pair.split(".")
    cmd = [exmy, "gemm", "--a", d + "/A.npy", "--b", d + "/B.npy", "--a-format", "e4m3fn",
           "--b-format", "e4m3fn", "--block-scale-a", d + "/SA.npy", "--block-scale-b",
           d + "/SB.npy", "--block-scale-format", "fp32", "--block-a", ta, "--block-b", tb,
           "--out-format", out, "--accum", model, "--out", d + "/C.npy"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None, r.stderr.strip()
    c = np.load(d + "/C.npy")
    return (c.view(np.uint32) if out == "fp32" else c.view(np.uint16)), r.stderr.strip()


def check_fprev(meta, z):
    """The FPRev counts against the rule's parts: output / 128 = k-blocks outside the smallest
    sub-sum holding i and j (a part's chain from its start, then the parts in order)."""
    cases = {e["case"]: e for e in meta["cases"] if "case" in e}
    bad = total = 0
    for pr in meta["probes"]:
        if "case" not in pr or "fprev/" + pr["case"] not in z.files:
            continue
        e = cases[pr["case"] + "_fp32"]
        M, N, K = e["shape"]
        S, T, _ = rule(e["kernels"], M, N, K, e["pair"])
        nb = pr["nb"]
        P = (T // 128) * -(-(-(-K // T)) // S) if S > 1 else nb
        part = lambda k: k // P
        n = 0
        for (i, j), c in zip(z["fprev_ij/" + pr["case"]], z["fprev/" + pr["case"]]):
            i, j = int(i), int(j)
            pi, pj = part(i), part(j)
            leaves = max(i, j) - pi * P + 1 if pi == pj else min(nb, (max(pi, pj) + 1) * P)
            n += int(c != nb - leaves)
        print("fprev %s S %d P %d: %d of %d counts differ from the rule" % (
            pr["case"], S, P, n, len(z["fprev/" + pr["case"]])))
        bad += n
        total += len(z["fprev/" + pr["case"]])
    return bad, total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--exmy", required=True)
    p.add_argument("--caps", required=True)
    p.add_argument("--accum", default="cublas-sm90")
    p.add_argument("--explicit", action="store_true")
    p.add_argument("--also", default="")
    p.add_argument("--json", default="")
    p.add_argument("--fprev", action="store_true")
    p.add_argument("--cases", default="")
    p.add_argument("--max-macs", type=float, default=0,
                   help="explicit models only: whole tiles of rows of A and of B, evenly "
                        "spread, until M' N' K fits (an output depends on its row and column "
                        "alone; the launch record is the whole shape's)")
    args = p.parse_args()
    meta = json.load(open(os.path.join(args.caps, "splitk.json")))
    z = np.load(os.path.join(args.caps, "splitk.npz"))
    summary, notes = {}, []
    if args.fprev:
        b, t = check_fprev(meta, z)
        summary["fprev"] = {"counts": t, "differ": b}
    main_bad = 0
    with tempfile.TemporaryDirectory() as d:
        for e in meta["cases"]:
            if "case" not in e or "c/" + e["case"] not in z.files:
                continue
            if args.cases and not re.search(args.cases, e["case"]):
                continue
            M, N, K = e["shape"]
            pair, out = e["pair"], e["out"]
            A, B, SA, SB = cap.case_inputs(meta["seed"], e["si"], M, N, K, e["mix"], pair, np)
            sums = {"A": cap.checksums(A, np), "B": cap.checksums(B, np),
                    "SA": cap.checksums(SA, np), "SB": cap.checksums(SB, np)}
            if sums != e["sums"]:
                print("%s: input checksums differ from the capture's" % e["case"])
                main_bad += 1
                continue
            ra, rb = cap.pair_tiles(pair)
            rows_a, ta = np.arange(M), np.arange(SA.shape[0])
            rows_b, tb = np.arange(N), np.arange(SB.shape[0])
            S, T, prom = rule(e["kernels"], M, N, K, pair)
            models = [args.accum] + ([explicit_model(S, T, prom)] if args.explicit else []) + \
                [m for m in args.also.split(";") if m]
            if args.accum == "rule":
                models[0] = explicit_model(S, T, prom)
            if args.max_macs and M * N * K > args.max_macs and args.accum == "rule":
                side = int((args.max_macs / K) ** 0.5) + 1
                rows_a, ta = pick(M, ra, side)
                rows_b, tb = pick(N, rb, max(int(args.max_macs // (K * len(rows_a))), 1))
            np.save(d + "/A.npy", A[rows_a].astype(np.uint8))
            np.save(d + "/B.npy", B[rows_b].astype(np.uint8))
            np.save(d + "/SA.npy", SA[ta].astype(np.int32).view(np.float32))
            np.save(d + "/SB.npy", SB[tb].astype(np.int32).view(np.float32))
            ref = z["c/" + e["case"]].reshape(M, N)[np.ix_(rows_a, rows_b)]
            m_, n_ = len(rows_a), len(rows_b)
            line = []
            for mi, model in enumerate(models):
                c, err = run_exmy(args.exmy, d, model, pair, out)
                tag = "%s %s | %s" % (pair, out, "explicit rule" if args.explicit and mi == 1
                                      else model)
                tag += " [split-K]" if S > 1 else " [no split]"
                s = summary.setdefault(tag, {"outputs": 0, "mismatches": 0, "cases": 0,
                                             "announced": 0, "errors": 0})
                if c is None:
                    s["errors"] += 1
                    notes.append("%s %s: %s" % (e["case"], model, err))
                    line.append("error")
                    continue
                mm = int((c.reshape(m_, n_) != ref).sum())
                s["outputs"] += m_ * n_
                s["mismatches"] += mm
                s["cases"] += 1
                s["announced"] += int(bool(err))
                if mi == 0:
                    main_bad += mm
                    if err:
                        notes.append("%s: %s" % (e["case"], err.splitlines()[0][:300]))
                line.append("%d%s" % (mm, "*" if err else ""))
            print("%s %dx%dx%d S %d T %d (%d outputs): mismatches %s" % (
                e["case"], M, N, K, S, T, m_ * n_, " / ".join(line)), flush=True)
    for k, v in sorted(summary.items()):
        print("%-70s %s" % (k, v))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"caps": args.caps, "accum": args.accum, "summary": summary,
                       "notes": notes}, f, indent=1)
    sys.exit(1 if main_bad else 0)


if __name__ == "__main__":
    main()
