"""Does cuBLAS add every product? A scan for GEMMs whose result leaves k out (issue 30;
bench/results/2026-12-02-h200-gemm-tc-heldout.md: at fp16 4x8x14792 on an H200 the nvjet split-K
kernel ran 11 parts of 1344 k and never added k >= 14784). Run on the GPU machine:

    python3 bench/peers/gemm_tail_capture.py --out DIR [--budget-s 75]

A and B all ones (the kernel choice does not depend on the values), so every fp32 output of
torch.mm(a, b.t(), out_dtype=torch.float32) must be exactly K (K <= 16384 < 2^24: the sum is exact
in any order); an output below K counts the products left out. Per input type (bf16, fp16) and
(M, N): every K in 1..--k-max (contiguous operands, as the captures'). For each GEMM short of
K (at most 200 per shape): its launch (tools/gemm_launch.py's launch_chunk: kernel names, grid,
block). Writes DIR/tail.json (device, versions, the shapes scanned, each short GEMM: M, N, K,
the smallest output, the fp32 output's kernels) and prints one line per (type, M, N). Needs
torch and tools/gemm_launch.py; no exmy binary. `--device cpu --k-max 64` is a smoke test.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))

# (M, N): 4x8 is the shape seen; the others small-M/N nvjet shapes of the captures (1x48, 8x32,
# 2x32, 11x8, 28x16, 24x8, 6x144) and two wider ones.
SHAPES = [(4, 8), (1, 8), (8, 8), (1, 48), (8, 32), (2, 32), (11, 8), (28, 16), (24, 8),
          (6, 144), (64, 48), (96, 80)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--k-max", type=int, default=16384)
    p.add_argument("--budget-s", type=float, default=75.0)
    p.add_argument("--types", default="fp16,bf16")
    p.add_argument("--device", default="cuda")
    args = p.parse_args()
    import torch
    import gemm_launch as gl
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    dev = args.device
    info = gl.info_block() if dev == "cuda" else {"device": "cpu (smoke test)"}
    print(json.dumps(info), flush=True)
    res = {"info": info, "k_max": args.k_max, "scanned": [], "short": []}
    dts = {"bf16": torch.bfloat16, "fp16": torch.float16}
    for t in args.types.split(","):
        for M, N in SHAPES:
            if time.time() - t0 > args.budget_s:
                print("budget reached: %s %dx%d not scanned" % (t, M, N), flush=True)
                continue
            lows = []
            # contiguous M x K and N x K views of flat buffers of ones (no allocation per K)
            fa = torch.ones(M * args.k_max, device=dev, dtype=dts[t])
            fb = torch.ones(N * args.k_max, device=dev, dtype=dts[t])
            for K in range(1, args.k_max + 1):
                a, b = fa[:M * K].view(M, K), fb[:N * K].view(N, K)
                if dev == "cuda":
                    c = torch.mm(a, b.t(), out_dtype=torch.float32)
                else:
                    c = torch.mm(a.float(), b.float().t())
                lows.append(c.min())
            lows = torch.stack(lows).cpu().tolist()
            short = [(K, v) for K, v in zip(range(1, args.k_max + 1), lows) if v != K]
            res["scanned"].append([t, M, N])
            if short:
                per = gl.launch_chunk(t, [(M, N, K) for K, _ in short[:200]]) \
                    if dev == "cuda" else []
                for (K, v), ks in zip(short, per + [None] * (len(short) - len(per))):
                    kern = ks[1] if ks else None  # the fp32 output's kernels
                    res["short"].append({"type": t, "M": M, "N": N, "K": K, "min_out": v,
                                         "kernels": kern})
            print("%s %dx%d: K 1..%d, %d short of K%s  %.0f s" % (
                t, M, N, args.k_max, len(short),
                (" (first: K %d -> %g)" % short[0]) if short else "", time.time() - t0),
                flush=True)
            with open(os.path.join(args.out, "tail.json.tmp"), "w") as f:
                json.dump(res, f)
            os.replace(os.path.join(args.out, "tail.json.tmp"),
                       os.path.join(args.out, "tail.json"))
    print("total %.1f s, %d short GEMMs" % (time.time() - t0, len(res["short"])), flush=True)


if __name__ == "__main__":
    main()
