"""FPRev trees, outputs and launch records of cuBLAS's CUDA-core GEMM kernels with 16-bit inputs
(bf16, fp16; 16-bit and fp32 outputs) on the GPU: gemvx, gemmSN, dot_kernel + reduce_1Block and
gemv2T + splitKreduce (issue 30; docs/SEMANTICS.md 15.6;
bench/results/2026-12-02-h200-gemm-simt16.md). The structure of gemm_simt_capture.py (trees, launch records) and gemm_tc_capture.py
(a held-out random pool with outputs). Run on the GPU machine:

    python3 bench/peers/gemm_simt16_capture.py --out DIR [--seed 20261204] [--budget-s 80]

1. Shapes per type: (a) PLAN below: the held-out capture's (seed 20261201) bf16/fp16 shapes of
   these families, K sweeps of gemvx<..., 7> with 32x4 blocks (where one contiguous run per
   lane gives way to strided lanes), the gemvx<..., 6> (16x4) and <..., 8> (4x64) fp16 shapes of
   the 8,020-shape plan (no tree yet), gemv2T shapes with part lengths of every residue mod 16
   and dot_kernel shapes with 496 and 128 CTAs; (b) a fresh random pool (--seed; one of M, N
   log-uniform in 1..16 or exactly 1, the other in 1..512, K in 1..16384, and a sub-pool with
   M = 1 and K in 4096..16384 for gemv2T), of which only the shapes whose launch (zeros,
   torch.profiler) is in one of the four families are kept (at most --keep per family).
2. Per kept shape: the kernels with grid and block of both outputs (DIR/launch.json,
   gemm_launch_probe.py's format) and the outputs of torch.mm (16-bit and out_dtype=fp32) on
   counter-hash inputs (DIR/<type>.npz, gemm_kernel_select_capture.py's format and inputs:
   gen_values(seed + i, 2 ti, ...), ti the type's index in bf16, fp16, tf32, fp32, e4m3fn;
   checksums of the codes), the first `rows` rows only (the entry's "rows").
3. FPRev trees (Xie et al., "FPRev", USENIX ATC 2025; gemm_launch_probe.py's operands, fp32
   output) of the plan's shapes first, then of kept pool shapes of the families with the fewest
   trees, until --budget-s: DIR/fprev_<type>.npz. A shape whose smaller side holds fewer than
   8 anchors (M = 1 or N = 1) is probed in several passes of other anchors (k = 0, 1, 16, 31,
   K/3, K/2, 2K/3, K - 1 and, for gemv2T, the first k of its second and last split parts), each
   pass its own entry of the same shape (gemm_simt_trees.py compares every entry).

Needs torch and numpy, and tools/gemm_launch.py, bench/peers/gemm_launch_probe.py and
bench/peers/gemm_tc_capture.py of this tree; no exmy binary. One progress line per stage and
shape. --device cpu runs the bookkeeping off the GPU (fake launches, torch.mm on the CPU).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))

ALL_TYPES = ["bf16", "fp16", "tf32", "fp32", "e4m3fn"]  # the seeds' type index
FAMS = ("gemvx", "gemmSN", "dot", "gemv2")
ANCHORS_MAX = 16

# (M, N, K) per type. Held-out capture (seed 20261201) shapes of the families (bench/results/
# 2026-12-01-h200-gemm-simt/campaign.json.xz), then the questions the trees of the 8,020-shape
# plan left open.
_GEMVX32 = [64, 96, 128, 160, 192, 256, 320, 384, 448, 512, 513, 514, 576, 640, 644, 700, 758,
            768, 800, 900, 1024, 1025, 1100, 1280, 1288, 1300, 1536, 2048]
PLAN = {
    "bf16": [
        (2, 1, 1549), (1, 23, 11027), (1, 4, 4519), (1, 21, 885), (1, 1, 50), (1, 2, 15089),
        (24, 1, 1178), (1, 10, 1474), (9, 49, 4), (14, 9, 29), (2, 184, 249), (4, 399, 768),
        (12, 22, 11), (4, 135, 1676), (9, 11, 518), (11, 2, 21), (2, 105, 2667), (11, 15, 506),
        (11, 3, 1221), (10, 2, 695), (11, 27, 3937), (15, 10, 911), (11, 5, 469), (5, 217, 1755),
        (8, 6, 113), (14, 26, 311), (7, 3, 10), (8, 5, 42), (1, 201, 8111), (1, 232, 12789),
        (64, 1, 43), (330, 1, 88), (1, 93, 462), (1, 423, 20), (1, 296, 2431), (1, 116, 65),
        (1, 12, 438), (1, 70, 18), (1, 83, 4801), (14, 1, 21), (21, 1, 231), (19, 1, 174),
        (1, 291, 3002), (1, 77, 140), (1, 12, 257), (1, 92, 434), (60, 1, 58), (5, 1, 16),
        (3, 1, 123),
    ] + [(1, 40, k) for k in _GEMVX32] + [(100, 1, k) for k in _GEMVX32] + [
        (1, 508, 6696), (1, 205, 7453), (1, 147, 10118), (1, 300, 7001), (1, 300, 9999),
        (1, 150, 12345), (1, 400, 14001), (1, 1, 1000), (1, 1, 5000), (1, 1, 12000),
    ],
    "fp16": [
        (1, 7, 5727), (24, 1, 13716), (1, 18, 1340), (1, 1, 764), (1, 35, 5611), (2, 1, 3906),
        (10, 1, 2267), (1, 1, 237), (2, 2, 1285), (364, 1, 13521), (81, 1, 23), (1, 336, 2060),
        (1, 118, 1591), (488, 1, 81), (1, 89, 115), (1, 3, 61), (15, 1, 886), (1, 5, 76),
        (3, 1, 10), (1, 256, 255), (7, 1, 272), (3, 1, 857),
        # gemvx<..., 8> (4x64 blocks) and <..., 6> (16x4) of the 8,020-shape plan
        (1, 2, 77), (1, 2, 121), (1, 3, 65), (1, 3, 98), (111, 1, 63), (187, 1, 106),
        (1, 19, 60), (4, 1, 136), (1, 322, 302), (2, 1, 206), (1, 2, 314), (1, 4, 312),
        (1, 8, 586), (1, 4, 76),
    ] + [(1, 40, k) for k in _GEMVX32] + [(100, 1, k) for k in _GEMVX32] + [
        (1, 2, 16008), (380, 1, 16258), (1, 265, 12944), (1, 300, 7001), (1, 300, 9999),
        (1, 150, 12345), (1, 400, 14001), (1, 1, 1000), (1, 1, 5000), (1, 1, 12000),
    ],
}


def draw_pool(rng, n):
    """One side small (log-uniform 1..16, a quarter exactly 1), the other log-uniform 1..512,
    K log-uniform 1..16384; then n/6 shapes 1 x N x K with K in 4096..16384 (gemv2T)."""
    out = []
    for _ in range(n):
        small = 1 if rng.uniform() < 0.25 else int(round(math.exp(rng.uniform(0, math.log(16)))))
        big = int(round(math.exp(rng.uniform(0, math.log(512)))))
        K = max(1, int(round(math.exp(rng.uniform(0, math.log(16384))))))
        out.append((small, big, K) if rng.uniform() < 0.5 else (big, small, K))
    for _ in range(n // 6):
        N = int(round(math.exp(rng.uniform(math.log(2), math.log(512)))))
        K = int(round(math.exp(rng.uniform(math.log(4096), math.log(16384)))))
        out.append((1, N, K) if rng.uniform() < 0.7 else (N, 1, K))
    return out


def family(gl, per):
    """The family of the first output's launch that is one of FAMS, else None."""
    for ks in per:
        if ks:
            fam = gl.record_of(ks)[0]
            if fam in FAMS:
                return fam
    return None


def tree_anchors(gl, K, per):
    """The anchors of a thin shape's passes (module docstring, 3)."""
    cand = [0, 1, 16, 31, K // 3, K // 2, (2 * K) // 3, K - 1]
    ks = per[-1]
    if ks:
        fam, key, red, S = gl.record_of(ks)
        if fam == "gemv2" and S > 1:
            P = -(-K // S)
            cand += [P, P + 5, (S - 1) * P, (S - 1) * P + 3]
    out = []
    for x in cand:
        if 0 <= x < K and x not in out:
            out.append(x)
    return out


def fprev_pass(torch, probe, t, M, N, K, anchors, max_calls, dev):
    """Counts K - |leaves(lca(anchor, j))| (gemm_launch_probe.fprev_shape with given anchors)."""
    import gemm_launch as gl
    dt = probe.DT[t]
    sweep_rows = M > N
    S, A = (M, N) if sweep_rows else (N, M)
    anchors = anchors[:min(A, ANCHORS_MAX)]
    aset = set(anchors)
    sweep = [k for k in range(K) if k not in aset]
    if not sweep or not anchors:
        return None
    if -(-len(sweep) // S) > max_calls:  # sample evenly, keep both ends
        idx = np.unique(np.linspace(0, len(sweep) - 1, max_calls * S).round().astype(int))
        sweep = [sweep[i] for i in idx]
    big, small = probe.OPERANDS[t]
    anc_slot = torch.tensor([anchors[s % len(anchors)] for s in range(A)], device=dev)
    counts = np.full((len(anchors), len(sweep)), -1, dtype=np.int16)
    for c0 in range(0, len(sweep), S):
        js = sweep[c0:c0 + S]
        sw = torch.tensor(js + [-1] * (S - len(js)), device=dev)
        big_side = torch.full((A, K), small, device=dev)
        big_side[torch.arange(A, device=dev), anc_slot] = big
        neg_side = torch.full((S, K), small, device=dev)
        ok = sw >= 0
        neg_side[torch.arange(S, device=dev)[ok], sw[ok]] = -big
        a, b = (neg_side, big_side) if sweep_rows else (big_side, neg_side)
        o = gl.mm(t, a.to(dt), b.to(dt), "fp32").double().cpu().numpy() / (small * small)
        blk = o[:len(js), :len(anchors)].T if sweep_rows else o[:len(anchors), :len(js)]
        counts[:, c0:c0 + len(js)] = np.rint(blk).astype(np.int16)
        if not np.all(np.abs(blk - np.rint(blk)) == 0):
            counts[:, c0:c0 + len(js)][np.abs(blk - np.rint(blk)) > 0] = -2
    return {"anchors": np.array(anchors, np.int32), "sweep": np.array(sweep, np.int32),
            "counts": counts, "sweep_rows": sweep_rows}


def smoke(gl, torch):
    """--device cpu: fake launches (gemvx / gemmSN / dot / gemv2T by shape) and torch.mm on the
    CPU, to run this script's bookkeeping off the GPU."""
    def launch_chunk(t, shapes):
        ty = {"bf16": "__nv_bfloat16", "fp16": "__half"}[t]
        res = []
        for M, N, K in shapes:
            if min(M, N) == 1 and K > 4096:
                k = [["void gemv2T_kernel_val<int, int, %s, float, float, float, 128, 16, 4, 4, "
                      "false, false, x>(y)" % ty, [8, 1, 8], [128, 1, 1]],
                     ["void cublasLt::splitKreduce_kernel<32, 16, int, float, float>(x)",
                      [1, 1, 1], [32, 16, 1]]]
            elif min(M, N) == 1:
                k = [["void internal::gemvx::kernel<int, int, %s, float, float, float, false, "
                      "true, true, false, 7, false, x>(y)" % ty, [2, 1, 1], [32, 4, 1]]]
            elif min(M, N) <= 16:
                k = [["void gemmSN_TN_kernel<float, 128, 16, 2, 4, 6, 7, false, x>(y)",
                      [1, 1, 1], [128, 1, 1]]]
            else:
                k = [["nvjet_sm90_tst_64x8_64x16_1x1_h_bz_TNT", [1, 1, 1], [128, 1, 1]]]
            res.append([k for _ in gl.outs_of(t)])
        return res

    def mm(t, a, b, out):
        c = torch.mm(a.double(), b.double().t()).float()
        return c if out == "fp32" else c.to(a.dtype)
    gl.launch_chunk = launch_chunk
    gl.mm = mm


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=20261204)
    p.add_argument("--pool", type=int, default=2400)  # random shapes per type
    p.add_argument("--keep", type=int, default=60)  # kept pool shapes per family and type
    p.add_argument("--row-outputs", type=int, default=1024)
    p.add_argument("--max-mib", type=float, default=1.5)
    p.add_argument("--max-calls", type=int, default=160)  # GEMMs per tree pass
    p.add_argument("--budget-s", type=float, default=80)
    p.add_argument("--device", default="cuda")  # cpu: a smoke test of this script only
    args = p.parse_args()
    import torch
    import gemm_launch as gl
    import gemm_launch_probe as probe
    from gemm_tc_capture import gen_values
    dev = args.device
    if dev == "cpu":
        smoke(gl, torch)
        args.pool = 30
        for t in PLAN:  # a few small shapes of each kind
            PLAN[t] = [s for s in PLAN[t] if s[0] * s[1] * s[2] < 3000][:10] + [(1, 40, 700)]
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    info = gl.info_block() if dev == "cuda" else {"device": "cpu (smoke test)"}
    info["seed"] = args.seed
    info["script"] = "bench/peers/gemm_simt16_capture.py"
    print(json.dumps(info), flush=True)
    dts = {"bf16": torch.bfloat16, "fp16": torch.float16}
    launch = {"info": info, "types": {}}
    summary = {}
    rng = np.random.default_rng(args.seed)
    types = ("bf16", "fp16")
    for n_t, t in enumerate(types):
        ti = ALL_TYPES.index(t)
        outs = gl.outs_of(t)
        # 1. shapes: the plan's, then the pool's in the families
        shapes = list(dict.fromkeys(PLAN[t]))
        src = {s: "plan" for s in shapes}
        pool = [s for s in dict.fromkeys(draw_pool(rng, args.pool)) if s not in src]
        per_pool = []
        for c0 in range(0, len(pool), 400):
            per_pool += gl.launch_chunk(t, pool[c0:c0 + 400])
        kept = {}
        for s, per in zip(pool, per_pool):
            fam = family(gl, per)
            if fam is None or kept.get(fam, 0) >= args.keep:
                continue
            kept[fam] = kept.get(fam, 0) + 1
            shapes.append(s)
            src[s] = "pool"
        print("%s pool %d -> kept %s, plan %d  %.0f s" % (
            t, len(pool), json.dumps(kept), len(PLAN[t]), time.time() - t0), flush=True)
        bytes_per = sum(4 if o == "fp32" else 2 for o in outs)

        def rows_of(s):
            return min(s[0], max(1, -(-args.row_outputs // s[1])))
        used, keep = 0, []
        for s in shapes:
            if used + rows_of(s) * s[1] * bytes_per > args.max_mib * 2 ** 20:
                continue
            used += rows_of(s) * s[1] * bytes_per
            keep.append(s)
        per_keep = []
        for c0 in range(0, len(keep), 400):
            per_keep += gl.launch_chunk(t, keep[c0:c0 + 400])
        launch["types"][t] = [{"M": s[0], "N": s[1], "K": s[2], "src": src[s],
                               "kernels": dict(zip(outs, per))} for s, per in zip(keep, per_keep)]
        # 2. outputs
        data = {o: [] for o in outs}
        meta = []
        for i, (s, per) in enumerate(zip(keep, per_keep)):
            M, N, K = s
            av = gen_values(args.seed + i, 2 * ti, M, K, torch, dev)
            bv = gen_values(args.seed + i, 2 * ti + 1, N, K, torch, dev)
            a = (av.to(torch.float64) * 2.0 ** -15).to(torch.float32).to(dts[t])
            b = (bv.to(torch.float64) * 2.0 ** -15).to(torch.float32).to(dts[t])

            def codes(c):
                if c.dtype == torch.float32:
                    return c.contiguous().view(torch.int32).cpu().numpy().view(np.uint32)
                return c.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)
            ca, cb = codes(a), codes(b)
            R = rows_of(s)
            e = {"i": i, "M": M, "N": N, "K": K, "rows": R, "src": src[s],
                 "sum_a": int(ca.astype(np.int64).sum()), "sum_b": int(cb.astype(np.int64).sum()),
                 "kernels": {o: [k[0] for k in (ks or [])] for o, ks in zip(outs, per)}}
            for o in outs:
                data[o].append(codes(gl.mm(t, a, b, o)[:R]).ravel())
            meta.append(e)
        if dev == "cuda":
            torch.cuda.synchronize()
        arrays = {"shapes": np.array([[e["M"], e["N"], e["K"]] for e in meta], dtype=np.int64),
                  "index": np.array([e["i"] for e in meta], dtype=np.int64)}
        for o in outs:
            arrays["out_" + o] = np.concatenate(data[o]) if data[o] else np.zeros(0, np.uint32)
        arrays["meta"] = np.array(json.dumps({"info": info, "type": t, "outs": list(outs),
                                              "entries": meta}))
        tmp = os.path.join(args.out, t + ".tmp.npz")
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, os.path.join(args.out, t + ".npz"))
        print("%s outputs: %d shapes (%d dropped by size), %d outputs per type  %.0f s" % (
            t, len(meta), len(shapes) - len(keep), sum(e["rows"] * e["N"] for e in meta),
            time.time() - t0), flush=True)
        summary[t] = {"shapes": len(meta), "dropped": len(shapes) - len(keep), "kept": kept}
        # 3. FPRev trees: plan shapes of the families first, then pool shapes round-robin over
        # the families; each type gets its share of the time left.
        fam_of = {}
        for s, per in zip(keep, per_keep):
            f = family(gl, per)
            if f is not None:
                fam_of[s] = (f, per)
        order = [s for s in keep if src[s] == "plan" and s in fam_of]
        rest = {}
        for s in keep:
            if src[s] == "pool" and s in fam_of:
                rest.setdefault(fam_of[s][0], []).append(s)
        while any(rest.values()):
            for f in FAMS:
                if rest.get(f):
                    order.append(rest[f].pop(0))
        stop = t0 + (args.budget_s - (time.time() - t0)) / (len(types) - n_t) + (time.time() - t0)
        arrays, tmeta = {}, []
        for si, s in enumerate(order):
            if time.time() > stop:
                print("%s trees: time share reached after %d of %d shapes" % (t, si, len(order)),
                      flush=True)
                break
            M, N, K = s
            ts = time.time()
            per = fam_of[s][1]
            A = min(M, N)
            if A >= 8:
                passes = [None]
            else:
                anc = tree_anchors(gl, K, per)
                passes = [anc[i:i + A] for i in range(0, len(anc), A)]
            for pi, anchors in enumerate(passes):
                if anchors is None:
                    cand = [0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, K // 2, K - 1]
                    anchors = [x for x in dict.fromkeys(cand) if 0 <= x < K]
                r = fprev_pass(torch, probe, t, M, N, K, anchors, args.max_calls, dev)
                if r is None:
                    continue
                key = "s%d_%d" % (si, pi)
                for name in ("anchors", "sweep", "counts"):
                    arrays[key + "_" + name] = r[name]
                tmeta.append({"key": key, "M": M, "N": N, "K": K, "sweep_rows": r["sweep_rows"],
                              "pass": pi, "bad": int((r["counts"] == -2).sum()),
                              "family": fam_of[s][0]})
            print("fprev %s %dx%dx%d %s %d passes %.2f s" % (
                t, M, N, K, fam_of[s][0], len(passes), time.time() - ts), flush=True)
        arrays["meta"] = np.array(json.dumps({"info": info, "type": t, "shapes": tmeta}))
        tmp = os.path.join(args.out, "fprev_%s.tmp.npz" % t)
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, os.path.join(args.out, "fprev_%s.npz" % t))
        summary[t]["trees"] = len(set((e["M"], e["N"], e["K"]) for e in tmeta))
        summary[t]["tree_passes"] = len(tmeta)
        print("%s trees: %d shapes, %d passes  %.0f s" % (
            t, summary[t]["trees"], len(tmeta), time.time() - t0), flush=True)
        launch["summary"] = summary
        launch["s"] = round(time.time() - t0, 1)
        tmp = os.path.join(args.out, "launch.json.tmp")
        with open(tmp, "w") as f:
            json.dump(launch, f)
        os.replace(tmp, os.path.join(args.out, "launch.json"))
    size = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print("total %.1f s %s; stored %.2f MiB in %d files" % (
        time.time() - t0, json.dumps(summary), size / 2 ** 20, len(os.listdir(args.out))),
        flush=True)


if __name__ == "__main__":
    main()
