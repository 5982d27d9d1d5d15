"""Random-shape capture of cuBLASLt GEMMs through torch, for learning and checking the kernel
selection model of `--accum cublas-sm90` (issue 30; docs/SEMANTICS.md 15.6). Run on the GPU:

    python3 bench/peers/gemm_kernel_select_capture.py --out DIR [--types bf16,fp16,tf32,fp32,
        e4m3fn] [--seed S] [--max-mib 15.5] [--budget-s 420] [--no-scan]

Per input type, shapes (M, N, K) are drawn log-uniformly from M, N in 1..512 and K in 1..16384
(FP8: multiples of 16, torch._scaled_mm's rule), plus the odd shapes issue 30 reported; no
alignment is assumed. Per shape:
- inputs from a counter hash (gen_values below: integer arithmetic only, so the same codes are
  rebuilt off the GPU by the same function with numpy; a checksum of the codes is stored);
- the outputs of torch.mm(a, b.t()) (16-bit inputs: the 16-bit output and out_dtype=fp32; fp32
  inputs: TF32 allowed (type tf32) or not (type fp32); FP8: torch._scaled_mm with unit scales,
  fp32 and bf16 out), as codes;
- the CUDA kernels torch.profiler sees for each of those calls (names encode the kernel family,
  tile, stages, split-K and reduction kernels);
- (bf16, fp16, tf32 unless --no-scan) the restart scan of tools/probe_gemm.py at exactly this
  shape: which k start a new accumulation (a BIG/DELTA pair straddling k-1, k gives BIG + ulp
  when an fp32 addition joins them, BIG when one fused tensor-core sum holds both); each output
  (r, c) probes one pair: B's row c is ones over a window of k, A's row r holds one pair per
  window.
Writes DIR/<type>.npz (outputs, shapes, checksums, and a JSON string `meta` with kernels and
restarts per shape). Files stay under --max-mib (shapes beyond are dropped, and counted).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

M31 = (1 << 31) - 1


def hash31(x, xp):
    """A 31-bit mixing of non-negative int64 counters (no overflow: products < 2^62)."""
    for mul, add in ((1103515245, 12345), (69069, 1), (1664525, 1013904223)):
        x = (x * mul + add) & M31
        x = x ^ (x >> 13)
    return x


def gen_values(seed, which, rows, cols, xp, device=None):
    """rows x cols values v * 2^-15, v an Irwin-Hall sum of four 15/16-bit uniforms minus its
    mean (about N(0, 1.15^2), exact in fp32). xp: numpy or torch. Integer arithmetic only."""
    n = rows * cols
    if xp.__name__ == "torch":
        idx = xp.arange(n, dtype=xp.int64, device=device)
    else:
        idx = xp.arange(n, dtype=xp.int64)
    base = (seed * 7919 + which * 104729) & M31
    h1 = hash31((idx * 2 + base) & M31, xp)
    h2 = hash31((idx * 2 + 1 + base * 3) & M31, xp)
    v = (h1 & 0xFFFF) + ((h1 >> 15) & 0xFFFF) + (h2 & 0xFFFF) + ((h2 >> 15) & 0xFFFF) - 131070
    return v.reshape(rows, cols)


def draw_shapes(rng, n, fp8):
    out = []
    for _ in range(n):
        M = int(round(math.exp(rng.uniform(0, math.log(512)))))
        N = int(round(math.exp(rng.uniform(0, math.log(512)))))
        K = int(round(math.exp(rng.uniform(0, math.log(16384)))))
        if fp8:
            M, N, K = (max(16, 16 * round(x / 16)) for x in (M, N, K))
        out.append((max(1, M), max(1, N), max(1, K)))
    return out


ISSUE_SHAPES = [(163, 159, 66), (1, 85, 4371), (116, 26, 1646), (33, 65, 777), (96, 80, 3000),
                (17, 31, 4097), (64, 48, 5000), (128, 256, 12288), (64, 32, 4096)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--types", default="bf16,fp16,tf32,fp32,e4m3fn")
    p.add_argument("--seed", type=int, default=20261127)
    p.add_argument("--shapes-per-type", type=int, default=420)
    p.add_argument("--max-mib", type=float, default=15.5)
    p.add_argument("--budget-s", type=float, default=420)
    p.add_argument("--no-scan", action="store_true")
    p.add_argument("--device", default="cuda")  # cpu: a smoke test of this script only
    args = p.parse_args()
    import torch
    os.makedirs(args.out, exist_ok=True)
    dev = args.device
    cuda = dev == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def marker():
        if cuda:
            torch.cuda._sleep(10)
    t_start = time.time()
    types = args.types.split(",")
    info = {
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "driver": subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                  "--format=csv,noheader"], capture_output=True,
                                 text=True).stdout.strip() if cuda else "",
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "allow_bf16_reduced_precision_reduction":
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "allow_fp16_reduced_precision_reduction":
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "seed": args.seed,
    }
    try:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
        import probe_gemm
        info["cublas"] = probe_gemm.cublas_version()
    except Exception as e:  # evidence only
        info["cublas"] = "unknown (%s)" % e
    print(json.dumps(info), flush=True)
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32,
              "fp32": torch.float32, "e4m3fn": torch.float8_e4m3fn}
    per_type_budget = args.budget_s / len(types)

    def mm(t, a, b, out):
        if t == "e4m3fn":
            one = torch.tensor(1.0, device=dev)
            od = torch.float32 if out == "fp32" else torch.bfloat16
            return torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=od)
        torch.backends.cuda.matmul.allow_tf32 = t == "tf32"
        try:
            if out == "fp32" and t in ("bf16", "fp16"):
                if not cuda:  # smoke test only
                    return torch.mm(a.float(), b.float().t())
                return torch.mm(a, b.t(), out_dtype=torch.float32)
            return torch.mm(a, b.t())
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False

    def codes(c):
        if c.dtype == torch.float32:
            return c.contiguous().view(torch.int32).cpu().numpy().view(np.uint32)
        return c.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)

    def scan(t, M, N, K):
        """Restart positions k (a new accumulation starts at k) for k in 1..K-1."""
        dt = dtypes[t]
        big, delta = 1024.0, 3.0 * 2.0 ** -15
        bigbits = int(np.float32(big).view(np.uint32))
        if K < 2:
            return []
        w = max(2, -(-K // N))  # window of k per output column
        # Set 0: windows [c w, c w + w), pairs at offsets 0..w-2; set 1: windows shifted by
        # s = w // 2 so that the pair at c w + w - 1 lies inside one window.
        sets = [(0, list(range(w - 1)))]
        if w >= 2:
            s = w // 2
            sets.append((s, [w - 1 - s]))
        found = set()
        for shift, offs in sets:
            kk = torch.arange(K, device=dev)
            lo = torch.arange(N, device=dev)[:, None] * w + shift
            b = ((kk[None, :] >= lo) & (kk[None, :] < lo + w)).to(dt)
            res = []
            ar_n = torch.arange(N, device=dev)
            for r0 in range(0, len(offs), M):
                chunk = torch.tensor(offs[r0:r0 + M], device=dev, dtype=torch.int64)
                R = chunk.numel()
                cols = ar_n[None, :] * w + shift + chunk[:, None]  # R x N: k of each pair
                rows = torch.arange(R, device=dev)[:, None].expand(R, N)
                ok = cols + 1 < K
                a = torch.zeros(M, K, device=dev)
                a[rows[ok], cols[ok]] = big
                a[rows[ok], cols[ok] + 1] = delta
                out = mm(t, a.to(dt), b, "fp32")
                res.append((R, cols, ok, out.float()))
            for R, cols, ok, out in res:
                o = out.contiguous().view(torch.int32).cpu().numpy().view(np.uint32)[:R]
                hit = (o != bigbits) & ok.cpu().numpy()
                found.update(int(i) + 1 for i in cols.cpu().numpy()[hit])
        return sorted(found)

    def capture_type(ti, t, summary):
        t0 = time.time()
        rng = np.random.default_rng(args.seed + 1000 * ti)
        fp8 = t == "e4m3fn"
        shapes = ([] if fp8 else list(ISSUE_SHAPES)) + draw_shapes(rng, args.shapes_per_type, fp8)
        outs = ("fp32", "bf16") if fp8 else ("fp32",) if t in ("tf32", "fp32") else (t, "fp32")
        bytes_per = sum(4 if o == "fp32" else 2 for o in outs)
        cap = args.max_mib * 2 ** 20 - 2 ** 20  # room for meta and npz headers
        data = {o: [] for o in outs}
        meta = []
        used = 0
        dropped = 0
        from torch.profiler import profile, ProfilerActivity
        kept = []
        for si, (M, N, K) in enumerate(shapes):
            if used + M * N * bytes_per > cap:
                dropped += 1
                continue
            used += M * N * bytes_per
            kept.append((si, M, N, K))
        # Outputs and kernels (one profiler session; a marker kernel between calls).
        with profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
            for si, M, N, K in kept:
                if time.time() - t0 > per_type_budget * 0.5:
                    dropped += 1
                    continue
                av = gen_values(args.seed + si, 2 * ti, M, K, torch, dev)
                bv = gen_values(args.seed + si, 2 * ti + 1, N, K, torch, dev)
                a = (av.to(torch.float64) * 2.0 ** -15).to(torch.float32)
                b = (bv.to(torch.float64) * 2.0 ** -15).to(torch.float32)
                if t in ("bf16", "fp16", "e4m3fn"):
                    a = a.to(dtypes[t])
                    b = b.to(dtypes[t])
                if fp8:
                    ca = a.view(torch.uint8).cpu().numpy()
                    cb = b.view(torch.uint8).cpu().numpy()
                else:
                    ca, cb = codes(a), codes(b)
                e = {"i": si, "M": M, "N": N, "K": K,
                     "sum_a": int(ca.astype(np.int64).sum()), "sum_b": int(cb.astype(np.int64).sum())}
                for o in outs:
                    marker()
                    c = mm(t, a, b, o)
                    data[o].append(codes(c).ravel())
                marker()
                sync()
                meta.append(e)
        try:
            evs = sorted([ev for ev in prof.events()
                          if ev.device_type == torch.autograd.DeviceType.CUDA],
                         key=lambda ev: ev.time_range.start)
            groups, cur = [], None
            for ev in evs:
                if "spin_kernel" in ev.name or "sleep" in ev.name.lower():
                    if cur is not None:
                        groups.append(cur)
                    cur = []
                elif cur is not None and not ev.name.startswith(("Memcpy", "Memset")):
                    cur.append(ev.name)
            if cur:
                groups.append(cur)
            # Each shape: one group per output, then an empty group before the next shape.
            gi = 0
            for e in meta:
                e["kernels"] = {}
                for o in outs:
                    e["kernels"][o] = groups[gi] if gi < len(groups) else ["?"]
                    gi += 1
                gi += 1  # the group after a shape's last marker: the next shape's inputs
            ok_groups = len(groups)
        except Exception as ex:  # the profiler is evidence, not a requirement
            ok_groups = "profiler failed: %s" % ex
        t_out = time.time() - t0
        # Restart scans (not profiled).
        scanned = 0
        if t in ("bf16", "fp16", "tf32") and not args.no_scan:
            for e in meta:
                if time.time() - t0 > per_type_budget:
                    break
                try:
                    e["restarts"] = scan(t, e["M"], e["N"], e["K"])
                    scanned += 1
                except Exception as ex:
                    e["restarts_error"] = str(ex)
        arrays = {"shapes": np.array([[e["M"], e["N"], e["K"]] for e in meta], dtype=np.int64),
                  "index": np.array([e["i"] for e in meta], dtype=np.int64)}
        for o in outs:
            arrays["out_" + o] = (np.concatenate(data[o]) if data[o] else np.zeros(0))
        arrays["meta"] = np.array(json.dumps({"info": info, "type": t, "outs": outs,
                                              "groups": ok_groups, "entries": meta}))
        path = os.path.join(args.out, t + ".npz")
        np.savez_compressed(path, **arrays)
        summary[t] = {"shapes": len(meta), "dropped": dropped, "scanned": scanned,
                      "outputs": int(sum(e["M"] * e["N"] for e in meta)),
                      "s_outputs": round(t_out, 1), "s_total": round(time.time() - t0, 1),
                      "mib": round(os.path.getsize(path) / 2 ** 20, 2)}
        print(t, json.dumps(summary[t]), flush=True)

    summary = {}
    for ti, t in enumerate(types):
        try:
            capture_type(ti, t, summary)
        except Exception as ex:  # keep the other types
            import traceback
            traceback.print_exc()
            summary[t] = "failed: %s" % ex
    print("total %.1f s" % (time.time() - t_start), json.dumps(summary), flush=True)



if __name__ == "__main__":
    main()
