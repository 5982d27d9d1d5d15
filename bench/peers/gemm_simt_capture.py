"""FPRev summation trees and launch records of cuBLAS's CUDA-core fp32 GEMM kernels on the GPU
(issue 30, the SIMT families of bench/results/2026-12-01-h200-gemm-simt.md): the held-out
campaign's fp32 (and TF32-request) shapes whose kernels are gemvx, gemmSN, dot_kernel +
reduce_1Block or the sm80 xmma FFMA kernels, plus four shapes of the 8,020-shape plan whose xmma
FFMA launch splits K inside the kernel with a gridDim.z (16, 24, 30, 36) that no FPRev tree has
yet. Self-contained (torch, numpy; no exmy binary):

    python3 bench/peers/gemm_simt_capture.py --out DIR [--budget-s 110] [--max-calls 400]

Writes DIR/launch.json (per shape: the kernels of one torch.mm, [name, grid, block] each, as
bench/peers/gemm_launch_probe.py's part 1 records them), DIR/fprev_<type>.npz (per shape the
anchors, sweep indices and counts K - |leaves(lca(i, j))|, gemm_launch_probe.py's part 2: the
product at k = i is +2^40, at k = j -2^40, 1 elsewhere; "meta" holds the shape list) and
DIR/info.json (device, driver, torch, CUDA, cuBLAS, seeds: none, the inputs are designed). One
progress line per shape. Off the GPU: bench/peers/gemm_simt_trees.py compares the trees with
exmy's models.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from profiler_groups import kernel_groups  # noqa: E402

BIG = 2.0 ** 40
ANCHORS_MAX = 16

# (M, N, K) per request type: the held-out capture's (seed 20261201) fp32 shapes of gemvx, gemmSN,
# dot_kernel + reduce_1Block and xmma FFMA (bench/results/2026-12-01-h200-gemm-campaign/
# campaign.json.xz), its TF32-request shapes of gemvx and dot_kernel, and 4 xmma FFMA shapes of
# the 8,020-shape plan with in-kernel split gridDim.z = 16, 24, 30, 36; and shapes that may
# launch gemvx at K in (504, 849) or gemmSN at K > 93 (no tree or output there yet).
SHAPES = {
    "fp32": [
        (163, 159, 66), (1, 85, 4371), (2, 27, 5), (1, 6, 575), (11, 51, 5), (2, 12, 74),
        (1, 287, 1294), (42, 346, 8), (44, 487, 99), (66, 1, 4970), (48, 404, 3), (10, 186, 86),
        (404, 1, 992), (8, 65, 2), (15, 1, 3860), (2, 80, 3), (7, 459, 43), (3, 68, 35),
        (247, 180, 3772), (28, 422, 336), (1, 5, 2), (8, 335, 33), (368, 142, 34), (1, 40, 445),
        (6, 26, 4), (310, 223, 390), (15, 100, 2), (2, 3, 7), (2, 63, 44), (2, 5, 62),
        (93, 477, 4848), (13, 340, 11), (1, 26, 12), (33, 1, 1022), (9, 56, 36), (14, 185, 272),
        (7, 1, 4), (16, 425, 9), (14, 206, 64), (2, 3, 2), (499, 83, 692), (14, 33, 4),
        (7, 493, 3391), (2, 1, 11912), (27, 165, 81), (72, 410, 3), (374, 501, 252), (3, 1, 160),
        (2, 31, 11), (453, 14, 3805), (135, 1, 849), (7, 13, 3), (2, 9, 4), (5, 8, 8), (42, 179, 328),
        (1, 30, 474), (1, 20, 10), (478, 1, 5), (2, 3, 4), (64, 254, 161), (5, 69, 4), (3, 282, 40),
        (365, 65, 141), (8, 469, 655), (1, 83, 594), (6, 421, 6), (12, 150, 747), (8, 1, 7980),
        (1, 27, 71), (19, 332, 5), (9, 1, 60), (8, 7, 51), (2, 54, 27), (3, 26, 27), (15, 23, 4),
        (2, 8, 9), (390, 93, 32), (4, 256, 2), (12, 11, 17), (11, 12, 30), (461, 62, 6), (7, 3, 32),
        (443, 169, 11), (1, 160, 389), (13, 117, 43), (244, 488, 21), (5, 415, 4623), (58, 411, 19),
        (3, 271, 3), (42, 493, 1942), (3, 372, 21), (503, 197, 6445), (1, 19, 854), (154, 422, 1218),
        (5, 4, 57), (5, 4, 2), (37, 434, 9), (179, 245, 3), (3, 136, 16), (12, 2, 4), (5, 1, 35),
        (18, 425, 18), (2, 427, 29), (16, 23, 75), (255, 3, 15818), (24, 224, 18), (2, 1, 16),
        (241, 146, 95), (104, 1, 121), (8, 100, 6), (55, 210, 3), (37, 219, 73), (50, 313, 9),
        (2, 26, 77), (19, 349, 1803), (44, 382, 250), (3, 2, 2), (1, 3, 883), (15, 1, 909),
        (82, 335, 4123), (81, 160, 84), (3, 57, 10), (4, 292, 4947), (9, 4, 41), (12, 11, 84),
        (502, 54, 12), (36, 388, 86), (89, 256, 149), (499, 77, 36), (318, 2, 12966), (2, 28, 35),
        (88, 480, 5458), (7, 14, 6), (36, 1, 23), (18, 1, 8), (24, 362, 9255), (497, 3, 3302),
        (386, 13, 4530), (323, 3, 14779),
        # gemvx<..., 7>: K between 504 (vec=auto seen) and 849 (vec=1 seen); gemmSN at larger K.
        (1, 40, 505), (1, 40, 512), (1, 40, 513), (1, 40, 520), (1, 40, 576), (1, 40, 640),
        (1, 40, 768), (1, 40, 800), (1, 40, 848), (100, 1, 505), (100, 1, 512), (100, 1, 513),
        (100, 1, 600), (100, 1, 700), (100, 1, 848), (8, 469, 94), (8, 469, 128), (8, 469, 200),
        (8, 469, 300), (8, 469, 400), (8, 469, 500), (8, 469, 655), (8, 469, 1000), (8, 100, 128),
        (8, 100, 300), (8, 100, 655), (2, 200, 100), (2, 200, 300), (2, 200, 655), (3, 200, 100),
        (3, 200, 300), (3, 200, 655), (5, 200, 100), (5, 200, 300), (5, 200, 655), (10, 200, 100),
        (10, 200, 300), (10, 200, 655), (13, 200, 100), (13, 200, 300), (13, 200, 655),
    ],
    "tf32": [
        (1, 85, 4371), (1, 69, 41), (1, 2, 167), (1, 72, 8), (12, 1, 4725), (1, 1, 5607), (51, 1, 2),
        (1, 63, 348), (1, 264, 38), (29, 1, 2), (175, 1, 2174), (6, 1, 51), (9, 1, 37), (3, 1, 2275),
        (454, 1, 41), (4, 1, 2134), (1, 22, 454), (1, 131, 40), (1, 1, 2232), (38, 1, 3),
        (1, 7, 1771), (1, 9, 460), (1, 195, 216), (1, 101, 2), (6, 1, 8), (22, 1, 5), (1, 22, 125),
        (10, 1, 261), (1, 452, 23), (1, 3, 262), (1, 4, 422), (1, 40, 2), (1, 1, 925), (1, 1, 8),
        (2, 1, 3),
    ],
}

def mm(t, a, b):
    """torch.mm(a, b.t()) as the captures call it (TF32 allowed only for tf32)."""
    torch.backends.cuda.matmul.allow_tf32 = t == "tf32"
    try:
        return torch.mm(a, b.t())
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False


def cublas_version():
    try:
        import ctypes
        import glob
        libs = sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia",
                                             "cu*", "lib", "libcublas.so*")))
        libs += sorted(glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia",
                                              "cublas", "lib", "libcublas.so*")))
        for p in libs + ["libcublas.so"]:
            try:
                lib = ctypes.CDLL(p)
            except OSError:
                continue
            v = ctypes.c_int()
            if lib.cublasGetProperty(0, ctypes.byref(v)) == 0:
                maj = v.value
                lib.cublasGetProperty(1, ctypes.byref(v))
                mi = v.value
                lib.cublasGetProperty(2, ctypes.byref(v))
                return maj * 10000 + mi * 100 + v.value
    except Exception:  # provenance only
        pass
    return None


def info_block():
    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "driver": subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                      "--format=csv,noheader"], capture_output=True,
                                     text=True).stdout.strip(),
            "cublas": cublas_version(), "seeds": None,
            "allow_bf16_reduced_precision_reduction":
                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
            "allow_fp16_reduced_precision_reduction":
                torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction}


def launch_all(t, shapes):
    """Per shape, the kernels one torch.mm launches ([name, grid, block] each), in one profiler
    session: each torch.mm sits between two torch.cuda._sleep markers (the zeros' fill kernels
    fall before a shape's first marker)."""
    from torch.profiler import profile, ProfilerActivity
    with tempfile.TemporaryDirectory() as td:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for M, N, K in shapes:
                a = torch.zeros(M, K, device="cuda")
                b = torch.zeros(N, K, device="cuda")
                torch.cuda._sleep(10)
                mm(t, a, b)
                torch.cuda._sleep(10)
            torch.cuda.synchronize()
        path = os.path.join(td, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            ev = json.load(f)["traceEvents"]
    groups = kernel_groups(ev)
    # groups: [mm of shape 0, fills before shape 1, mm of shape 1, ...]
    return [groups[2 * i] if 2 * i < len(groups) else None for i in range(len(shapes))]


def fprev_shape(t, M, N, K, max_calls):
    """Counts K - |leaves(lca(anchor, j))| for the anchors and every swept j (or a sample)."""
    sweep_rows = M > N
    S, A = (M, N) if sweep_rows else (N, M)
    na = min(A, ANCHORS_MAX)
    cand = [0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, K // 2, K - 1]
    anchors = []
    for x in cand:
        if 0 <= x < K and x not in anchors:
            anchors.append(x)
    anchors = anchors[:na]
    if K < len(anchors) + 1 or not anchors:
        return None
    aset = set(anchors)
    sweep = [k for k in range(K) if k not in aset]
    calls = -(-len(sweep) // S)
    if calls > max_calls:
        idx = np.unique(np.linspace(0, len(sweep) - 1, max_calls * S).round().astype(int))
        sweep = [sweep[i] for i in idx]
    anc_slot = torch.tensor([anchors[s % len(anchors)] for s in range(A)], device="cuda")
    counts = np.full((len(anchors), len(sweep)), -1, dtype=np.int16)
    for c0 in range(0, len(sweep), S):
        js = sweep[c0:c0 + S]
        sw = torch.tensor(js + [-1] * (S - len(js)), device="cuda")
        big_side = torch.ones((A, K), device="cuda")
        big_side[torch.arange(A, device="cuda"), anc_slot] = BIG
        neg_side = torch.ones((S, K), device="cuda")
        ok = sw >= 0
        neg_side[torch.arange(S, device="cuda")[ok], sw[ok]] = -BIG
        a, b = (neg_side, big_side) if sweep_rows else (big_side, neg_side)
        o = mm(t, a, b).double().cpu().numpy()
        blk = o[:len(js), :len(anchors)].T if sweep_rows else o[:len(anchors), :len(js)]
        counts[:, c0:c0 + len(js)] = np.rint(blk).astype(np.int16)
        if not np.all(np.abs(blk - np.rint(blk)) == 0):
            counts[:, c0:c0 + len(js)][np.abs(blk - np.rint(blk)) > 0] = -2
    return {"anchors": np.array(anchors, np.int32), "sweep": np.array(sweep, np.int32),
            "counts": counts, "sweep_rows": sweep_rows}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--budget-s", type=float, default=110)
    p.add_argument("--max-calls", type=int, default=400)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    info = info_block()
    print(json.dumps(info), flush=True)
    with open(os.path.join(args.out, "info.json"), "w") as f:
        json.dump(info, f)
    launch = {"info": info, "types": {}}
    n = sum(len(v) for v in SHAPES.values())
    done = 0
    for t, shapes in SHAPES.items():
        arrays, meta = {}, []
        kern = launch_all(t, shapes)
        rows = [{"M": M, "N": N, "K": K, "kernels": {"fp32": k}}
                for (M, N, K), k in zip(shapes, kern)]
        print("launch %s %d shapes %.1f s" % (t, len(shapes), time.time() - t0), flush=True)
        for i, (M, N, K) in enumerate(shapes):
            done += 1
            if time.time() - t0 > args.budget_s:
                print("budget reached: %s %dx%dx%d and later skipped" % (t, M, N, K), flush=True)
                break
            ts = time.time()
            r = fprev_shape(t, M, N, K, args.max_calls)
            key = "s%d" % i
            if r is not None:
                arrays[key + "_anchors"] = r["anchors"]
                arrays[key + "_sweep"] = r["sweep"]
                arrays[key + "_counts"] = r["counts"]
                meta.append({"key": key, "M": M, "N": N, "K": K, "sweep_rows": r["sweep_rows"],
                             "bad": int((r["counts"] < 0).sum()),
                             "s": round(time.time() - ts, 2)})
            print("%d/%d %s %dx%dx%d %s %.2f s" % (done, n, t, M, N, K,
                                                  kern[i][0][0][:60] if kern[i] else "-",
                                                  time.time() - ts), flush=True)
        launch["types"][t] = rows
        arrays["meta"] = np.array(json.dumps({"info": info, "type": t, "shapes": meta}))
        tmp = os.path.join(args.out, "fprev_%s.tmp.npz" % t)
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, os.path.join(args.out, "fprev_%s.npz" % t))
    tmp = os.path.join(args.out, "launch.json.tmp")
    with open(tmp, "w") as f:
        json.dump(launch, f)
    os.replace(tmp, os.path.join(args.out, "launch.json"))
    print("done %.0f s" % (time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
