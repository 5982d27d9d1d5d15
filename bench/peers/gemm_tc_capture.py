"""Held-out capture of cuBLAS's tensor-core GEMM families on the GPU, for checking the family
rules of `--accum cublas-sm90` on shapes they were not fitted on (issue 30; docs/SEMANTICS.md
15.6; bench/results/2026-12-01-h200-gemm-tc.md). Run on the GPU machine:

    python3 bench/peers/gemm_tc_capture.py --out DIR [--seed 20261202] [--budget-s 110]

Families: s16816gemm (cutlass_80_tensorop_*s16816gemm_*), nvjet_sm90_* (bf16, fp16, both
outputs), TF32 s1688gemm (cutlass_80_tensorop_s1688gemm_*) and the sm90 xmma TF32 kernel.

1. Shapes: (a) the plan's (PLAN_JSON below, "records": shapes of
   the H200's launch records of 2026-12-01 in these families, whose records exmy compiles in);
   (b) a fresh random pool (M, N log-uniform in 1..512, K in 1..16384; for tf32 also M, N in
   256..512 with K in 4096..16384, where the sm90 kernel ran once), of which only the shapes whose
   launch (zeros, torch.profiler) is in one of the families are kept.
2. Per kept shape: the kernels with grid and block (DIR/launch.json, gemm_launch_probe.py's
   format) and the outputs of torch.mm on counter-hash inputs (DIR/<type>.npz,
   gemm_kernel_select_capture.py's format and inputs: gen_values(seed + i, 2 ti, ...), ti the
   type's index in bf16, fp16, tf32, fp32, e4m3fn; checksums of the codes), of the first
   `rows` rows only (at least --row-outputs outputs; the entry's "rows"), so that DIR stays
   under 8 MiB (7 files).
3. FPRev trees (gemm_launch_probe.fprev_shape) of the plan's "fprev" shapes and of up to
   --fprev-per-type kept shapes per type with a split (splitKreduce after the kernel or an
   nvjet splitK kernel) or an sm90 xmma kernel: DIR/fprev_<type>.npz.

Needs torch and numpy, and tools/gemm_launch.py + bench/peers/gemm_launch_probe.py of this tree
(their launch capture and FPRev probe); no exmy binary. One progress line per stage and type.
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
M31 = (1 << 31) - 1
# The plan (also bench/results/2026-12-01-h200-gemm-tc/plan.json), inline so that this file
# runs alone: "records" from the H200 launch records of 2026-12-01 (every s16816gemm, nvjet and
# sm90 xmma TF32 shape, 200 TF32 s1688gemm shapes), "fprev" shapes for trees.
PLAN_JSON = (
    "{\"records\":{\"bf16\":[[96,80,3000],[64,48,5000],[128,256,12288],[64,32,4096],[7,64,544],[10,10,502"
    "],[140,2,5082],[2,108,2388],[124,8,360],[109,166,8052],[28,16,4398],[2,248,1488],[188,374,4724],"
    "[2,16,720],[384,30,13000],[11,198,936],[97,2,6740],[102,248,448],[3,472,8],[337,450,14468],[68,2"
    "44,13384],[24,6,7402],[389,164,3260],[18,2,7278],[220,240,2148],[10,54,564],[2,32,64],[23,48,8],"
    "[331,2,2956],[6,40,24],[314,88,2024],[136,344,1080],[10,64,48],[7,8,88],[23,170,12476],[349,492,"
    "1474],[159,290,3308],[3,146,3206],[362,8,9936],[7,16,848],[8,32,3632],[439,494,2436],[2,92,2836]"
    ",[97,2,2792],[5,38,9820],[244,48,8],[12,122,518],[24,10,3028],[18,12,2676],[31,32,848],[7,98,297"
    "8],[1,48,3536],[292,106,15434],[12,2,522],[4,8,256],[2,160,2034],[113,4,4536],[340,28,3286],[26,"
    "390,12812],[453,44,6714],[24,8,9748],[2,200,1376],[24,504,4680],[183,28,14068],[282,238,3536]],\""
    "fp16\":[[96,80,3000],[64,48,5000],[128,256,12288],[64,32,4096],[101,398,9810],[330,48,40],[8,152,"
    "544],[170,148,6630],[1,392,4240],[66,2,1204],[492,96,3234],[141,52,8118],[420,52,5712],[64,4,317"
    "0],[19,68,1248],[8,1,16],[30,4,3544],[8,1,32],[107,424,9526],[121,232,4282],[105,4,1418],[83,4,2"
    "090],[372,332,3114],[63,2,8312],[41,466,6428],[169,132,4978],[136,308,9186],[25,6,1430],[429,280"
    ",1524],[211,2,1370],[419,4,1018],[48,8,96],[389,164,3260],[220,240,2148],[2,32,64],[100,2,1898],"
    "[23,48,8],[331,2,2956],[6,40,24],[79,12,2066],[314,88,2024],[136,344,1080],[10,64,48],[186,8,820"
    "],[7,8,88],[349,492,1474],[159,290,3308],[362,8,9936],[7,16,848],[8,32,3632],[439,494,2436],[122"
    ",2,2208],[178,4,2186],[19,2,1942],[97,2,2792],[244,48,8],[24,10,3028],[41,4,986],[18,12,2676],[3"
    "1,32,848],[160,6,948],[60,26,924],[1,48,3536],[292,106,15434],[4,8,256],[47,2,2284],[21,4,1776],"
    "[29,2,9416],[5,8,24]],\"tf32\":[[338,344,12676],[7,8,88],[29,162,5683],[54,20,24],[5,9,1573],[2,27"
    "6,1709],[22,2,5020],[389,164,3260],[2,52,5741],[65,6,3522],[6,292,2991],[166,2,3793],[285,9,4748"
    "],[49,4,13069],[160,6,948],[5,24,14946],[84,397,943],[177,126,13919],[9,81,15800],[2,92,2836],[2"
    "8,4,24],[2,60,11632],[43,12,16],[408,3,861],[3,27,3752],[7,16,2395],[5,49,10329],[6,40,24],[212,"
    "4,9404],[3,10,3984],[362,8,9936],[155,55,1157],[79,72,13525],[219,241,5429],[2,5,5371],[7,53,101"
    "96],[2,4,5148],[289,103,1876],[159,290,3308],[26,3,1963],[27,105,5094],[43,2,12895],[75,18,2107]"
    ",[91,134,6878],[2,315,695],[6,4,1309],[30,57,6882],[323,3,14779],[3,47,7537],[185,2,821],[180,40"
    ",870],[21,234,2249],[36,115,2609],[97,217,1473],[6,356,2436],[6,47,4633],[15,19,1844],[5,21,1648"
    "],[20,130,4759],[5,84,817],[2,31,929],[109,330,3394],[11,208,4],[64,92,6137],[427,12,1520],[20,5"
    "1,2198],[7,14,6648],[290,197,9306],[64,22,2634],[45,3,1084],[56,3,3491],[47,2,2284],[35,414,6319"
    "],[340,28,3286],[15,4,3953],[2,167,995],[27,13,642],[30,207,1347],[3,9,1069],[29,4,836],[96,80,3"
    "000],[2,216,172],[17,31,4097],[3,2,2625],[51,16,6885],[6,11,9717],[6,404,14969],[301,6,6291],[78"
    ",7,2683],[2,7,3295],[6,117,9174],[419,33,4235],[121,283,802],[2,14,3793],[4,216,512],[458,41,295"
    "6],[71,32,6628],[132,353,3311],[119,34,10947],[6,9,613],[47,4,8026],[3,141,4562],[6,48,950],[4,2"
    "7,1116],[78,121,1000],[74,11,1260],[125,18,11990],[38,40,24],[469,208,932],[428,45,3969],[16,13,"
    "11729],[13,254,4639],[49,5,2476],[2,61,4285],[243,51,3035],[26,49,3458],[210,2,11657],[486,9,753"
    "3],[153,6,702],[19,3,1023],[4,3,1205],[49,228,4416],[266,53,13298],[218,24,1029],[15,68,5293],[5"
    "4,6,680],[79,323,4715],[38,194,429],[194,13,4528],[4,164,3904],[13,120,1021],[3,7,14885],[124,39"
    "2,10419],[2,207,6244],[2,241,2196],[453,4,2478],[41,452,4],[25,499,6248],[17,18,3731],[6,23,1046"
    "5],[4,4,1717],[33,355,402],[3,59,3283],[21,11,4898],[27,2,6671],[386,13,4530],[2,4,112],[2,17,31"
    "39],[15,4,16198],[6,211,7062],[52,310,402],[472,24,4],[2,377,1054],[6,4,16],[314,88,2024],[18,30"
    "0,5622],[90,104,4157],[359,22,3656],[253,280,1245],[12,429,3274],[76,5,4410],[111,24,14428],[397"
    ",4,768],[16,41,932],[508,42,1408],[218,47,2143],[63,111,955],[27,19,1094],[122,2,2208],[441,65,5"
    "045],[419,285,3029],[15,11,1959],[23,170,12476],[3,264,3732],[121,15,747],[4,455,9570],[14,4,32]"
    ",[135,4,8],[13,40,16295],[458,83,9941],[13,45,3257],[6,24,300],[105,6,1141],[48,167,546],[426,35"
    "5,2993],[113,53,1992],[49,373,4462],[499,49,6648],[22,458,3636],[31,32,848],[9,214,732],[67,21,5"
    "400],[6,372,148],[11,462,9366],[3,34,1081],[40,2,999],[349,492,1474],[407,36,2733],[5,2,7297],[2"
    "7,2,11021],[94,2,1873]]},\"fprev\":{\"tf32\":[[338,344,12676]]}}")


def hash31(x):
    for mul, add in ((1103515245, 12345), (69069, 1), (1664525, 1013904223)):
        x = (x * mul + add) & M31
        x = x ^ (x >> 13)
    return x


def gen_values(seed, which, rows, cols, torch, dev):
    """gemm_kernel_select_capture.gen_values (the same integers: exmy's checks rebuild them)."""
    idx = torch.arange(rows * cols, dtype=torch.int64, device=dev)
    base = (seed * 7919 + which * 104729) & M31
    h1 = hash31((idx * 2 + base) & M31)
    h2 = hash31((idx * 2 + 1 + base * 3) & M31)
    v = (h1 & 0xFFFF) + ((h1 >> 15) & 0xFFFF) + (h2 & 0xFFFF) + ((h2 >> 15) & 0xFFFF) - 131070
    return v.reshape(rows, cols)


def draw(rng, n, lo=1, hi=512, klo=1, khi=16384):
    out = []
    for _ in range(n):
        M, N = (int(round(math.exp(rng.uniform(math.log(lo), math.log(hi))))) for _ in "MN")
        K = int(round(math.exp(rng.uniform(math.log(klo), math.log(khi)))))
        out.append((max(1, M), max(1, N), max(1, K)))
    return out


def target(gl, t, per):
    """The family of a shape's launch if it is one this capture is for, else None."""
    for ks in per:
        if not ks:
            continue
        fam, key, red, S = gl.record_of(ks)
        if t in ("bf16", "fp16") and fam in ("s16816gemm", "nvjet"):
            return fam
        if t == "tf32" and fam == "s1688gemm_tf32":
            return fam
        if t == "tf32" and fam == "xmma_tf32" and key.startswith("sm90"):
            return "xmma_tf32_sm90"
    return None


def wants_tree(gl, per):
    ks = per[-1]  # the fp32 output's launch
    if not ks:
        return False
    fam, key, red, S = gl.record_of(ks)
    return bool(red) or "splitK" in key or key.startswith("sm90_xmma")


def smoke(gl, torch):
    """--device cpu: fake launches (every other shape an nvjet splitK / s16816gemm / TF32
    s1688gemm launch) and torch.mm on the CPU, to run this script's bookkeeping off the GPU."""
    def launch_chunk(t, shapes):
        names = {"bf16": "void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_64x64_64x4_"
                         "tn_align2>(x)",
                 "fp16": "nvjet_sm90_hss_64x8_64x16_1x1_h_bz_splitK_TNT",
                 "tf32": "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_"
                         "align4>(x)"}
        red = ["void cublasLt::splitKreduce_kernel<32, 16, int, float, float>(x)", [1, 1, 1],
               [32, 16, 1]]
        return [[[[names[t], [1, 1, 2], [128, 1, 1]], red] if (M + N) % 2 else
                 [["gemmSN_NN_kernel<x>(y)", [1, 1, 1], [128, 1, 1]]]
                 for _ in gl.outs_of(t)] for M, N, K in shapes]

    def mm(t, a, b, out):
        c = torch.mm(a.float(), b.float().t())
        return c if out == "fp32" else c.to(a.dtype)
    gl.launch_chunk = launch_chunk
    gl.mm = mm


def tree_rank(gl, s, per, src):
    """Which split launches get a tree first: nvjet (its split is in the grid's x y), then
    s16816gemm with 64 | K (where wmma's parts are 64-k units), then the pool's, then the rest."""
    fam, key, red, S = gl.record_of(per[-1])
    if fam == "nvjet":
        return 0 if src == "pool" else 1
    if fam == "xmma_tf32":
        return 0
    if fam == "s16816gemm" and s[2] % 64 == 0:
        return 2
    return 3 if src == "pool" else 4


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=20261202)
    p.add_argument("--plan", default="")  # a plan file instead of PLAN_JSON
    p.add_argument("--pool", type=int, default=2400)  # random shapes per 16-bit type
    p.add_argument("--pool-tf32", type=int, default=700)
    p.add_argument("--keep-tf32", type=int, default=150)  # kept s1688gemm_tf32 pool shapes
    # The device call returns at most 8 MiB per capture (PREAMBLE, 22:47): per shape only the
    # first rows of the outputs (at least --row-outputs outputs, whole rows), and per type at
    # most --max-mib of them before compression.
    p.add_argument("--row-outputs", type=int, default=1024)
    p.add_argument("--max-mib", type=float, default=1.9)
    p.add_argument("--fprev-per-type", type=int, default=24)
    p.add_argument("--budget-s", type=float, default=110)
    p.add_argument("--device", default="cuda")  # cpu: a smoke test of this script only
    args = p.parse_args()
    import torch
    import gemm_launch as gl
    if args.device == "cpu":
        smoke(gl, torch)
        args.pool, args.pool_tf32, args.fprev_per_type = 60, 30, 0
    else:
        import gemm_launch_probe as probe
    t0 = time.time()
    os.makedirs(args.out, exist_ok=True)
    info = gl.info_block() if args.device == "cuda" else {"device": "cpu (smoke test)"}
    info["seed"] = args.seed
    info["script"] = "bench/peers/gemm_tc_capture.py"
    print(json.dumps(info), flush=True)
    if args.plan:
        with open(args.plan) as f:
            plan = json.load(f)
    else:
        plan = json.loads(PLAN_JSON)
    dev = args.device
    dts = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}
    launch = {"info": info, "types": {}}
    summary = {}
    rng = np.random.default_rng(args.seed)
    for t in ("bf16", "fp16", "tf32"):
        ti = ALL_TYPES.index(t)
        outs = gl.outs_of(t)
        # 1. shapes: the plan's, then the pool's in the families.
        shapes = [tuple(s) for s in plan["records"].get(t, [])]
        src = {s: "plan" for s in shapes}
        pool = draw(rng, args.pool if t != "tf32" else args.pool_tf32)
        if t == "tf32":
            pool += draw(rng, 60, 256, 512, 4096, 16384)
        else:  # the plan's shapes with K a multiple of 64 and of 128 (no record has 64 | K)
            pool += [(M, N, 64 * -(-K // 64)) for M, N, K in shapes]
            pool += [(M, N, 128 * max(1, round(K / 128))) for M, N, K in shapes]
        pool = [s for s in dict.fromkeys(pool) if s not in src]
        per_pool = []
        for c0 in range(0, len(pool), 400):
            per_pool += gl.launch_chunk(t, pool[c0:c0 + 400])
        kept = {}
        first = []  # the sm90 xmma TF32 shapes go first (at most 4: up to 1 MiB each)
        for s, per in zip(pool, per_pool):
            fam = target(gl, t, per)
            if fam is None:
                continue
            limit = {"s1688gemm_tf32": args.keep_tf32, "xmma_tf32_sm90": 4}.get(fam, 10 ** 9)
            if kept.get(fam, 0) >= limit:
                continue
            kept[fam] = kept.get(fam, 0) + 1
            (first if fam == "xmma_tf32_sm90" else shapes).append(s)
            src[s] = "pool"
        shapes = first + shapes
        print("%s pool %d -> kept %d, plan %d  %.0f s" % (
            t, len(pool), sum(v == "pool" for v in src.values()),
            sum(v == "plan" for v in src.values()), time.time() - t0), flush=True)
        # size cap (outputs of every output type), in order: plan first
        bytes_per = sum(4 if o == "fp32" else 2 for o in outs)
        cap = args.max_mib * 2 ** 20

        def rows_of(s):
            return min(s[0], max(1, -(-args.row_outputs // s[1])))
        used, keep = 0, []
        for s in shapes:
            if used + rows_of(s) * s[1] * bytes_per > cap:
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
            a = (av.to(torch.float64) * 2.0 ** -15).to(torch.float32)
            b = (bv.to(torch.float64) * 2.0 ** -15).to(torch.float32)
            if t != "tf32":
                a, b = a.to(dts[t]), b.to(dts[t])

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
        summary[t] = {"shapes": len(meta), "dropped": len(shapes) - len(keep),
                      "plan": sum(e["src"] == "plan" for e in meta)}
        # 3. FPRev trees
        tree_shapes = [tuple(s) for s in plan.get("fprev", {}).get(t, [])] if dev == "cuda" else []
        cand = [(tree_rank(gl, s, per, src[s]), i) for i, (s, per) in enumerate(zip(keep, per_keep))
                if wants_tree(gl, per) and s not in tree_shapes]
        for _r, i in sorted(cand)[:max(0, args.fprev_per_type - len(tree_shapes))]:
            tree_shapes.append(keep[i])
        arrays, tmeta = {}, []
        for si, (M, N, K) in enumerate(tree_shapes):
            if time.time() - t0 > args.budget_s:
                print("budget reached at %s tree %d" % (t, si), flush=True)
                break
            ts = time.time()
            r = probe.fprev_shape(t, M, N, K, 200)
            if r is None:
                continue
            key = "s%d" % si
            for name in ("anchors", "sweep", "counts"):
                arrays[key + "_" + name] = r[name]
            tmeta.append({"key": key, "M": M, "N": N, "K": K, "sweep_rows": r["sweep_rows"],
                          "bad": int((r["counts"] == -2).sum()), "s": round(time.time() - ts, 2)})
            print("fprev %s %dx%dx%d %.1f s" % (t, M, N, K, time.time() - ts), flush=True)
        arrays["meta"] = np.array(json.dumps({"info": info, "type": t, "shapes": tmeta}))
        tmp = os.path.join(args.out, "fprev_%s.tmp.npz" % t)
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, os.path.join(args.out, "fprev_%s.npz" % t))
        summary[t]["trees"] = len(tmeta)
        print("%s trees: %d  %.0f s" % (t, len(tmeta), time.time() - t0), flush=True)
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
