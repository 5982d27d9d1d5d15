"""cuBLASLt's split-K launches of blockwise-scaled FP8 GEMMs (torch._scaled_mm with 1x128 /
128x128 fp32 tile scales on sm_90; issue 32, docs/SEMANTICS.md 15.7). Run on the GPU:

    python3 bench/peers/blockfp8_splitk_capture.py --out DIR [--seed S] [--budget-s 200]
        [--device cpu]   (cpu: a smoke test of this script only; fp64 stands in for cuBLAS)

For every shape (small M N, large K: where cuBLASLt splits K), each block pair of
blockfp8_gemm_capture.py and each output (bf16, fp32):
1. Launch records: the CUDA kernels of one torch._scaled_mm, with their grid and block
   dimensions (torch.profiler's chrome trace; torch.cuda._sleep markers between calls), on
   zeros: the kernel choice does not depend on the values.
2. Random inputs from blockfp8_gemm_capture.py's counter hash (gen_codes / gen_scales, rebuilt
   with numpy offline; checksums stored) and the output codes, whole (M N is small here).
3. FPRev over k-blocks (Xie et al., USENIX ATC 2025), fp32 output: on the side with 1x128 scales,
   row r's codes are all 1.0 except -1.0 in k-block j_r, its scales 1 except BIG = 2^40 at
   k-blocks i_r and j_r; the other operand is 1.0 codes with unit scales. Every k-block's
   unscaled partial is then exactly +-128, its scaled contribution +-128 BIG at i_r / j_r and 128
   elsewhere (powers of two: every promotion equation is exact), so output / 128 is the number
   of k-blocks outside the smallest sub-sum holding i_r and j_r (2^47 absorbs any sum of fewer
   than 2^16 units of 128 in fp32). Pairs: anchors {0, 1, nb/2, nb-1} against every j and every
   adjacent (i, i+1): the parts and the order they are reduced in.
4. Promotion restarts inside k-blocks (15.4's BIG/DELTA probe; SEMANTICS 15.4): row r of the
   1x128 side holds 448 at k = i_r and 2^-9 at i_r + 1, zeros elsewhere, unit scales: the fp32
   output keeps 2^-9 only where an fp32 addition separates the two k.
Errors are recorded, never fatal. Writes DIR/splitk.json (versions, cases, launch records,
probe metadata) and DIR/splitk.npz (c/<case> output codes; fprev/<case> int64 counts with
fprev_ij/<case> the pairs; delta/<case> the restart probe's fp32 bits with delta_k/<case>).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blockfp8_gemm_capture as cap  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from profiler_groups import kernel_groups  # noqa: E402

# (M, N, K, mix): the six split-K shapes of the 2026-12-01 capture, then shapes chosen to vary
# the split count (K from 4096 to 262144 at small M N) and one K with a partial k-block.
SHAPES = [
    (64, 256, 128000, "narrow"),
    (33, 144, 128128, "narrow"),
    (1, 256, 128000, "full"),
    (16, 16, 25600, "full"),
    (200, 336, 16384, "narrow"),
    (77, 1024, 7168, "narrow"),
    (16, 16, 4096, "full"),
    (16, 16, 8192, "narrow"),
    (16, 16, 65536, "full"),
    (32, 64, 32768, "narrow"),
    (128, 128, 16384, "full"),
    (64, 128, 50048, "narrow"),
    (16, 48, 25616, "full"),
    (256, 256, 65536, "narrow"),
    (8, 16, 262144, "full"),
    (48, 96, 3072, "narrow"),
    (4, 32, 100096, "full"),
    (96, 160, 40960, "narrow"),
]
BIG = 2.0 ** 40
FPREV_MAX_CALLS = 600


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=20261203)
    p.add_argument("--budget-s", type=float, default=200)
    p.add_argument("--device", default="cuda")
    p.add_argument("--shapes", default="", help="MxNxK[:mix],... in place of SHAPES")
    p.add_argument("--no-fprev", action="store_true")
    args = p.parse_args()
    import torch
    os.makedirs(args.out, exist_ok=True)
    dev = args.device
    cuda = dev == "cuda"
    t0 = time.time()
    shapes = SHAPES
    if args.shapes:
        shapes = []
        for s in args.shapes.split(","):
            dims, _, mix = s.partition(":")
            M, N, K = (int(v) for v in dims.split("x"))
            shapes.append((M, N, K, mix or "narrow"))
    info = {
        "script": "bench/peers/blockfp8_splitk_capture.py",
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "capability": list(torch.cuda.get_device_capability()) if cuda else [],
        "driver": subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                  "--format=csv,noheader"], capture_output=True,
                                 text=True).stdout.strip() if cuda else "",
        "torch": torch.__version__, "torch_git": getattr(torch.version, "git_version", ""),
        "cuda": torch.version.cuda, "cublas": cap.cublas_version(torch) if cuda else "",
        "seed": args.seed, "big": BIG,
    }
    print(json.dumps(info), flush=True)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def layouts(side, tile, s, L):
        """Candidate v1 scale tensors (blockfp8_gemm_capture.py's): A's checked against A (M,K),
        B's as scale_b.t() against B (N,K)."""
        L4 = -(-L // 4) * 4
        if tile == 1:
            outer = s.t().contiguous().t()
            return [("outer-major", outer if side == "a" else outer.t())]
        r = s.shape[0]
        z = torch.zeros(r, L4, dtype=torch.float32, device=dev)
        z[:, :L] = s
        cands = [("k-major row stride L4", z[:, :L]), ("k-major contiguous", s.contiguous())]
        return [(n, t if side == "a" else t.t()) for n, t in cands]

    def smm(a8, b8, xa, xb, od, ra, rb):
        if cuda:
            return torch._scaled_mm(a8, b8.t(), scale_a=xa, scale_b=xb, out_dtype=od,
                                    use_fast_accum=False)
        # smoke test: fp64 of the scaled values (scales expanded over their tiles; A's scales
        # are (rows, L), B's (L, rows) in torch's v1 layouts)
        K = a8.shape[1]
        sa, sb = xa, xb.t()
        ea = sa.double().repeat_interleave(ra, 0)[:a8.shape[0]].repeat_interleave(128, 1)[:, :K]
        eb = sb.double().repeat_interleave(rb, 0)[:b8.shape[0]].repeat_interleave(128, 1)[:, :K]
        return ((a8.double() * ea) @ (b8.double() * eb).t()).to(od)

    def codes(c):
        if c.dtype == torch.float32:
            return c.contiguous().view(torch.int32).cpu().numpy().view(np.uint32)
        return c.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)

    def e4m3(codes_i64):
        return codes_i64.to(torch.uint8).view(torch.float8_e4m3fn)

    def f32(bits):
        return bits.to(torch.int32).view(torch.float32)

    arrays, cases = {}, []
    probes, launches = [], {}

    def save(stage):
        """Written at every stage, so that a run cut by its deadline still leaves its data."""
        info["cases"], info["probes"], info["stage"] = cases, probes, stage
        info["seconds"] = round(time.time() - t0, 1)
        tmp = os.path.join(args.out, "splitk.tmp.npz")
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, os.path.join(args.out, "splitk.npz"))
        with open(os.path.join(args.out, "splitk.json.tmp"), "w") as f:
            json.dump(info, f, indent=1)
        os.replace(os.path.join(args.out, "splitk.json.tmp"), os.path.join(args.out, "splitk.json"))

    chosen = {}  # (si, pair) -> (layout index a, layout index b)
    # ---- 2. random inputs, whole outputs ------------------------------------------------------
    for si, (M, N, K, mix) in enumerate(shapes):
        L = -(-K // 128)
        for pair in cap.PAIRS:
            ra, rb = cap.pair_tiles(pair)
            base = {"si": si, "shape": [M, N, K], "mix": mix, "pair": pair}
            if time.time() - t0 > args.budget_s * 0.35:
                cases.append(dict(base, skipped="budget"))
                continue
            try:
                A, B, SA, SB = cap.case_inputs(args.seed, si, M, N, K, mix, pair, torch, dev)
                sums = {"A": cap.checksums(A, torch), "B": cap.checksums(B, torch),
                        "SA": cap.checksums(SA, torch), "SB": cap.checksums(SB, torch)}
                a8, b8, sa, sb = e4m3(A), e4m3(B), f32(SA), f32(SB)
                ea = sa.double().repeat_interleave(ra, 0)[:M].repeat_interleave(128, 1)[:, :K]
                eb = sb.double().repeat_interleave(rb, 0)[:N].repeat_interleave(128, 1)[:, :K]
                ref = (a8.double() * ea) @ (b8.double() * eb).t()
                del ea, eb
            except Exception as ex:
                cases.append(dict(base, error="inputs: %s" % str(ex)[:300]))
                continue
            for o in cap.OUTS:
                od = torch.float32 if o == "fp32" else torch.bfloat16
                name = "s%02d_%s_%s" % (si, pair, o)
                e = dict(base, out=o, case=name, sums=sums)
                errs, got = [], None
                for ia, (na, xa) in enumerate(layouts("a", ra, sa, L)):
                    for ib, (nb_, xb) in enumerate(layouts("b", rb, sb, L)):
                        try:
                            c = smm(a8, b8, xa, xb, od, ra, rb)
                            sync()
                            num = float(torch.linalg.vector_norm(c.double() - ref))
                            den = float(torch.linalg.vector_norm(ref))
                            rel = num / den if den > 0 else num
                            if rel > 0.05:
                                errs.append("%s/%s: rel err %.3g" % (na, nb_, rel))
                                continue
                            got = (c, ia, ib, na, nb_, rel, xa, xb)
                            break
                        except Exception as ex:
                            errs.append("%s/%s: %s" % (na, nb_, str(ex).splitlines()[0][:300]))
                    if got:
                        break
                if errs:
                    e["layout_errors"] = errs
                if got is None:
                    e["error"] = errs[-1] if errs else "no layout"
                    cases.append(e)
                    print("%s: error %s" % (name, e["error"][:150]), flush=True)
                    continue
                c, ia, ib, na, nb_, rel, xa, xb = got
                chosen[(si, pair)] = (ia, ib)
                e["layout"] = {"a": na, "b": nb_}
                e["rel_err_vs_fp64"] = rel
                arrays["c/" + name] = codes(c)
                try:
                    c2 = smm(a8, b8, xa, xb, od, ra, rb)
                    e["repeat_diff"] = int((codes(c2) != arrays["c/" + name]).sum())
                except Exception as ex:
                    e["repeat_diff"] = "error: %s" % str(ex)[:200]
                cases.append(e)
                print("%s: rel %.2e repeat %s  %.1f s" % (name, rel, e["repeat_diff"],
                                                          time.time() - t0), flush=True)
            del A, B, SA, SB, a8, b8, sa, sb, ref
            if cuda:
                torch.cuda.empty_cache()

    save("random")
    # ---- 1. launch records --------------------------------------------------------------------
    try:  # a failure here must not lose the outputs above or the probes below
        if cuda:
            from torch.profiler import profile, ProfilerActivity
            order = []
            with tempfile.TemporaryDirectory() as td:
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for si, (M, N, K, mix) in enumerate(shapes):
                        L = -(-K // 128)
                        a8 = torch.zeros(M, K, device=dev, dtype=torch.uint8).view(
                            torch.float8_e4m3fn)
                        b8 = torch.zeros(N, K, device=dev, dtype=torch.uint8).view(
                            torch.float8_e4m3fn)
                        for pair in cap.PAIRS:
                            if (si, pair) not in chosen:
                                continue
                            ra, rb = cap.pair_tiles(pair)
                            ia, ib = chosen[(si, pair)]
                            sa = torch.ones(-(-M // ra), L, device=dev)
                            sb = torch.ones(-(-N // rb), L, device=dev)
                            xa = layouts("a", ra, sa, L)[ia][1]
                            xb = layouts("b", rb, sb, L)[ib][1]
                            for o in cap.OUTS:
                                od = torch.float32 if o == "fp32" else torch.bfloat16
                                torch.cuda._sleep(10)
                                order.append("s%02d_%s_%s" % (si, pair, o))
                                try:
                                    smm(a8, b8, xa, xb, od, ra, rb)
                                except Exception:  # an empty group: it launched nothing
                                    pass
                    torch.cuda._sleep(10)
                    torch.cuda.synchronize()
                path = os.path.join(td, "trace.json")
                prof.export_chrome_trace(path)
                with open(path) as f:
                    ev = json.load(f)["traceEvents"]
            groups = kernel_groups(ev, with_duration=True)
            if groups and not groups[-1]:
                groups.pop()  # the marker after the last call launched nothing after it
            info["launch_groups"] = [len(groups), len(order)]
            for nm, g in zip(order, groups):
                launches[nm] = g
            for e in cases:
                if e.get("case") in launches:
                    e["kernels"] = launches[e["case"]]
    except Exception as ex:  # evidence only
        info["launch_error"] = str(ex)[:300]
    print("launch records: %d  %.1f s" % (len(launches), time.time() - t0), flush=True)
    save("launch")

    # ---- 3. FPRev over k-blocks, 4. restarts inside k-blocks ---------------------------------
    for si, (M, N, K, mix) in enumerate(shapes):
        if args.no_fprev or K % 128:
            continue
        nb = K // 128
        for pair in cap.PAIRS:
            if (si, pair) not in chosen:
                continue
            if time.time() - t0 > args.budget_s:
                probes.append({"si": si, "pair": pair, "skipped": "budget"})
                continue
            name = "s%02d_%s" % (si, pair)
            splitk = any("splitK" in k[0] for k in launches.get(name + "_fp32", []))
            if cuda and launches and not splitk:
                continue
            ra, rb = cap.pair_tiles(pair)
            # the probing side: one with 1x128 scales (rows along M for A, N for B)
            side = "a" if ra == 1 and (rb != 1 or M >= N) else "b"
            R = M if side == "a" else N
            ia, ib = chosen[(si, pair)]
            pairs_ij = []
            for i in sorted({0, 1, nb // 2, nb - 1}):
                pairs_ij += [(i, j) for j in range(nb) if j != i]
            pairs_ij += [(i, i + 1) for i in range(nb - 1)]
            calls = -(-len(pairs_ij) // R)
            if calls > FPREV_MAX_CALLS:  # keep every anchor-0 pair and the adjacent ones
                pairs_ij = [(0, j) for j in range(1, nb)] + [(i, i + 1) for i in range(nb - 1)]
                pairs_ij = pairs_ij[:FPREV_MAX_CALLS * R]
            counts = np.full(len(pairs_ij), -1, dtype=np.int64)
            t1 = time.time()
            other_rows = N if side == "a" else M
            other_tile = rb if side == "a" else ra
            one = torch.full((other_rows, K), 0x38, dtype=torch.uint8, device=dev)
            s_other = torch.ones(-(-other_rows // other_tile), nb, device=dev)
            try:
                for c0 in range(0, len(pairs_ij), R):
                    if time.time() - t0 > args.budget_s:
                        break  # the rest stays -1
                    blk = pairs_ij[c0:c0 + R]
                    n = len(blk)
                    ii = torch.tensor([q[0] for q in blk] + [blk[0][0]] * (R - n), device=dev)
                    jj = torch.tensor([q[1] for q in blk] + [blk[0][1]] * (R - n), device=dev)
                    x = torch.full((R, nb, 128), 0x38, dtype=torch.uint8, device=dev)
                    x[torch.arange(R, device=dev), jj] = 0xB8
                    s = torch.ones(R, nb, device=dev)
                    s[torch.arange(R, device=dev), ii] = BIG
                    s[torch.arange(R, device=dev), jj] = BIG
                    x8 = x.reshape(R, K).view(torch.float8_e4m3fn)
                    o8 = one.view(torch.float8_e4m3fn)
                    if side == "a":
                        c = smm(x8, o8, layouts("a", 1, s, nb)[ia][1],
                                layouts("b", rb, s_other, nb)[ib][1], torch.float32, 1, rb)
                        v = c[:, 0]
                    else:
                        c = smm(o8, x8, layouts("a", ra, s_other, nb)[ia][1],
                                layouts("b", 1, s, nb)[ib][1], torch.float32, ra, 1)
                        v = c[0, :]
                    v = v.double().cpu().numpy()[:n] / 128.0
                    ok = v == np.rint(v)
                    counts[c0:c0 + n] = np.where(ok, np.rint(v), -2).astype(np.int64)
                arrays["fprev/" + name] = counts
                arrays["fprev_ij/" + name] = np.array(pairs_ij, dtype=np.int32)
                pr = {"si": si, "pair": pair, "case": name, "side": side, "nb": nb,
                      "pairs": len(pairs_ij), "bad": int((counts == -2).sum()),
                      "seconds": round(time.time() - t1, 2)}
                # 4. restarts inside the first 16 k-blocks
                ks_ = [128 * b + o for b in range(min(nb, 16))
                       for o in (0, 15, 16, 31, 32, 63, 64, 95, 96, 126)]
                ks_ = [k for k in ks_ if k + 1 < K]
                dres = np.zeros(len(ks_), dtype=np.uint32)
                for c0 in range(0, len(ks_), R):
                    kk = ks_[c0:c0 + R]
                    n = len(kk)
                    x = torch.zeros(R, K, dtype=torch.uint8, device=dev)
                    kt = torch.tensor(kk + [kk[0]] * (R - n), device=dev)
                    x[torch.arange(R, device=dev), kt] = 0x7E  # 448
                    x[torch.arange(R, device=dev), kt + 1] = 0x01  # 2^-9
                    s = torch.ones(R, nb, device=dev)
                    x8 = x.view(torch.float8_e4m3fn)
                    o8 = one.view(torch.float8_e4m3fn)
                    if side == "a":
                        c = smm(x8, o8, layouts("a", 1, s, nb)[ia][1],
                                layouts("b", rb, s_other, nb)[ib][1], torch.float32, 1, rb)
                        v = c[:, 0]
                    else:
                        c = smm(o8, x8, layouts("a", ra, s_other, nb)[ia][1],
                                layouts("b", 1, s, nb)[ib][1], torch.float32, ra, 1)
                        v = c[0, :]
                    dres[c0:c0 + n] = codes(v.contiguous())[:n]
                arrays["delta/" + name] = dres
                arrays["delta_k/" + name] = np.array(ks_, dtype=np.int64)
                pr["delta_kept"] = int((dres.view(np.float32) != 448.0).sum())
                probes.append(pr)
                print("fprev %s nb %d pairs %d bad %d delta kept %d/%d  %.1f s" % (
                    name, nb, len(pairs_ij), pr["bad"], pr["delta_kept"], len(ks_),
                    time.time() - t0), flush=True)
            except Exception as ex:
                probes.append({"si": si, "pair": pair, "case": name,
                               "error": str(ex).splitlines()[0][:300]})
                print("fprev %s error %s" % (name, str(ex)[:200]), flush=True)
            del one
            sync()
            if len(probes) % 8 == 0:
                save("fprev")
    save("done")
    print("done %.1f s, %d cases, %d probes" % (info["seconds"], len(cases), len(probes)),
          flush=True)


if __name__ == "__main__":
    main()
