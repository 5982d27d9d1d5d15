#!/usr/bin/env python3
"""cuBLAS launch records of the F.linear GEMMs that bitsandbytes' 4-bit matmul runs on its
"dequantize + F.linear" path (issue 33 item 2, issue 30's GEMM model; docs/SEMANTICS.md 15.6).

    python3 bench/peers/qlora_linear_launch_capture.py --out DIR [--budget-s 50] [--cpu-dry-run]

bitsandbytes 0.50's CUDA gemm_4bit falls back to `F.linear(A, dequantize_4bit(W), bias)`
(backends/cuda/ops.py, _dequant_linear_fallback): A of the call's shape (2-d, or 3-d for the
capture's M = 6 case), W_dq a fresh contiguous N x K tensor of A's dtype, the bias (N values of
A's dtype) or None. That GEMM is y = x W^T, the layout of torch.mm(a, b.t()) that
tools/gemm_launch.py records (cuBLAS "TN"), with cuBLASLt's bias epilogue where a bias is given
(torch's addmm; its kernels are other ones: nvjet ..._bias_..., a gemmSN with beta = 1 for fp32).
This script records, with torch.profiler on zero operands (the kernel choice does not depend on
the values, as bench/peers/gemm_launch_probe.py), the kernels, grids and blocks of one F.linear
per GEMM, for:

- every (dtype, M, N, K, bias) of bench/peers/qlora_matmul_capture.py's case table: its Y
  (bnb.matmul_4bit; the dequant+linear path at the H200's dispatch for some of them, every one
  recorded, each case's path as bitsandbytes' own heuristic gives it written beside) and its
  Y_linear (F.linear on dequantize_4bit, M in 1, 8, 64, bf16/fp16, no bias). The table does not
  depend on the seed (qlora_matmul_capture.py --seed changes the values only), so this list holds
  for the default seed 20261201 and for --fresh --seed 31337 alike;
- M = 8..64 for the LLaMA shapes N x K = 4096x4096, 11008x4096, 4096x11008, 1536x4096, bf16 and
  fp16, with and without a bias.

DIR/launch.json: the GEMMs without bias in tools/gemm_launch.py's capture form, {"info": {device,
driver, torch, cuda, cublas, the reduced-precision switches}, "types": {bf16|fp16|fp32: [{"M",
"N", "K", "kernels": {OUT: [[name, grid, block], ...]}}]}} with OUT the input's own type
(F.linear returns it), so `tools/gemm_launch.py --from DIR/launch.json ...` reads it unchanged.
DIR/launch_bias.json: the same for the GEMMs with a bias, OUT "bf16+bias" (etc.): records
"IN>OUT+bias" of the profile (exmy reads them for a GEMM with a bias epilogue, SEMANTICS 15.6).
DIR/cases.json: per capture case the GEMM it maps to and bitsandbytes' path; the 3-d inputs'
launches compared with the 2-d ones of the same M; elapsed time. No exmy binary is needed.
--cpu-dry-run: the plan, the files and their format without a GPU (kernel lists are stand-ins
named "dry-run", device "cpu-dry-run": a merge into a GPU's profile refuses them).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from profiler_groups import kernel_groups  # noqa: E402
import qlora_matmul_capture as Q  # noqa: E402  (the case table: WEIGHTS, case_list, case_shape)

LLAMA = [(4096, 4096), (11008, 4096), (4096, 11008), (1536, 4096)]  # (N, K)
LLAMA_M = list(range(8, 65))
Y_LINEAR_M = (1, 8, 64)  # qlora_matmul_capture.py stores F.linear on dequantize_4bit there


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=50.0,
                    help="stop starting profiler chunks after this many seconds (cases.json says so)")
    ap.add_argument("--chunk", type=int, default=150, help="GEMMs per profiler session")
    ap.add_argument("--cpu-dry-run", action="store_true", help="no GPU: plan and file format only")
    ap.add_argument("--no-llama", action="store_true", help="only the qlora case table")
    return ap.parse_args()


# ---- the plan ------------------------------------------------------------------------------------
def gemm_key(dtype, M, N, K, bias, xdim):
    return (dtype, M, N, K, bool(bias), xdim)


def plan():
    """(gemms, cases): gemms = {key: [sources]}, key = (dtype, M, N, K, bias, x dims); cases =
    one row per qlora capture output (Y and Y_linear) naming its GEMM."""
    gemms, cases = {}, []

    def add(key, src):
        gemms.setdefault(key, []).append(src)

    for wi, (wname, N, K, qt, bs, comp, wdt) in enumerate(Q.WEIGHTS):
        for ci, cname, adt, M, use_bias in Q.case_list(wname):
            shape = Q.case_shape(M, K, use_bias)
            k = gemm_key(adt, M, N, K, use_bias, len(shape))
            add(k, "qlora Y " + cname)
            cases.append({"case": cname, "output": "Y", "weight": wname, "blocksize": bs,
                          "dtype": adt, "M": M, "N": N, "K": K, "bias": use_bias,
                          "x_shape": list(shape)})
            if M in Y_LINEAR_M and not use_bias and adt != "fp32":
                k2 = gemm_key(adt, M, N, K, False, len(shape))
                add(k2, "qlora Y_linear " + cname)
                cases.append({"case": cname, "output": "Y_linear", "weight": wname,
                              "blocksize": bs, "dtype": adt, "M": M, "N": N, "K": K,
                              "bias": False, "x_shape": list(shape)})
            if len(shape) == 3:  # the 2-d GEMM of the same M as well (the record's form)
                add(gemm_key(adt, M, N, K, use_bias, 2), "2-d twin of " + cname)
    return gemms, cases


def llama_gemms(gemms):
    for N, K in LLAMA:
        for dt in ("bf16", "fp16"):
            for M in LLAMA_M:
                for b in (False, True):
                    gemms.setdefault(gemm_key(dt, M, N, K, b, 2), []).append(
                        "llama %dx%d" % (N, K))


# ---- on the GPU ----------------------------------------------------------------------------------
def info_block(dry):
    import torch
    info = {"torch": torch.__version__, "cuda": torch.version.cuda,
            "script": "bench/peers/qlora_linear_launch_capture.py",
            "call": "torch.nn.functional.linear(x, W, bias) on zeros (bitsandbytes 0.50.2's "
                    "_dequant_linear_fallback)"}
    if dry:
        info.update(device="cpu-dry-run", driver="none", cublas="none", dry_run=True)
        return info
    m = torch.backends.cuda.matmul
    info.update(device=torch.cuda.get_device_name(),
                allow_tf32=m.allow_tf32,
                allow_bf16_reduced_precision_reduction=m.allow_bf16_reduced_precision_reduction,
                allow_fp16_reduced_precision_reduction=m.allow_fp16_reduced_precision_reduction)
    try:
        info["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                         "--format=csv,noheader"], capture_output=True,
                                        text=True, timeout=20).stdout.strip().splitlines()[0]
    except Exception as e:  # noqa: BLE001
        info["driver"] = "unknown (%s)" % e
    info["cublas"] = cublas_version()
    return info


def cublas_version():
    """cuBLAS's version as tools/probe_gemm.py reads it (the profile's provenance key)."""
    try:
        sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
        import probe_gemm  # noqa: E402
        return probe_gemm.cublas_version()
    except Exception:  # noqa: BLE001
        pass
    try:
        import ctypes
        import glob
        import torch
        libs = glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cublas",
                                      "lib", "libcublas.so*"))
        lib = ctypes.CDLL(libs[0] if libs else "libcublas.so")
        v, h = ctypes.c_int(), ctypes.c_void_p()
        lib.cublasCreate_v2(ctypes.byref(h))
        lib.cublasGetVersion_v2(h, ctypes.byref(v))
        return v.value
    except Exception as e:  # noqa: BLE001
        return "unknown (%s)" % e


class Operands:
    """Zero operands, one W per (N, K, dtype) and one bias per (N, dtype), allocated before the
    profiler runs (their fill kernels stay outside the trace)."""

    def __init__(self, dev):
        self.dev, self.w, self.b = dev, {}, {}

    def get(self, key):
        import torch
        dt, M, N, K, bias, xdim = key
        t = Q.DT[dt]
        if (N, K, dt) not in self.w:
            self.w[(N, K, dt)] = torch.zeros(N, K, dtype=t, device=self.dev)
        if bias and (N, dt) not in self.b:
            self.b[(N, dt)] = torch.zeros(N, dtype=t, device=self.dev)
        shape = (2, M // 2, K) if xdim == 3 else (M, K)
        x = torch.zeros(*shape, dtype=t, device=self.dev)
        return x, self.w[(N, K, dt)], self.b[(N, dt)] if bias else None


def launch_chunk(keys, ops, dry):
    """[[name, grid, block], ...] of one F.linear per key (None where the trace held none). Each
    call sits between two torch.cuda._sleep markers, as tools/gemm_launch.py's launch_chunk."""
    import torch
    F = torch.nn.functional
    args = [ops.get(k) for k in keys]
    if dry:
        out = []
        for (x, w, b) in args:
            y = F.linear(x, w, b)
            out.append([["dry-run F.linear -> N %d" % y.shape[-1], [1, 1, 1], [1, 1, 1]]])
        return out
    from torch.profiler import ProfilerActivity, profile
    torch.backends.cuda.matmul.allow_tf32 = False  # torch's default: fp32 is SGEMM (the captures')
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as td:
        with torch.inference_mode(), profile(activities=[ProfilerActivity.CUDA]) as prof:
            for (x, w, b) in args:
                torch.cuda._sleep(10)
                F.linear(x, w, b)
            torch.cuda._sleep(10)
            torch.cuda.synchronize()
        path = os.path.join(td, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            ev = json.load(f)["traceEvents"]
    groups = kernel_groups(ev)
    # groups[i] = the kernels between marker i and marker i + 1: F.linear i
    return [groups[i] if i < len(groups) and groups[i] else None for i in range(len(keys))]


def bnb_paths(cases, dry):
    """bitsandbytes' own choice per Y case (backends/cuda/ops.py: custom kernel or dequant +
    F.linear), where its private heuristic can be imported; else None."""
    if dry:
        return None
    try:
        import torch
        from bitsandbytes.backends.cuda import ops as bops
        use_custom = bops._gemm_4bit_use_custom_fn
        max_m = bops._gemm_4bit_custom_max_m
    except Exception as e:  # noqa: BLE001
        return "not available (%s: %s)" % (type(e).__name__, e)
    for c in cases:
        if c["output"] != "Y":
            continue
        M, N, K = c["M"], c["N"], c["K"]
        if M > max_m or K % c["blocksize"] != 0:
            c["bnb_path"] = "dequant+linear"
        else:
            try:
                custom = use_custom(torch.cuda.current_device(), Q.DT[c["dtype"]], M, N, K)
                c["bnb_path"] = "custom kernel" if custom else "dequant+linear"
            except Exception as e:  # noqa: BLE001
                c["bnb_path"] = "unknown (%s)" % e
    return "bitsandbytes.backends.cuda.ops._gemm_4bit_use_custom_fn"


def out_name(dt, bias):
    return dt + ("+bias" if bias else "")


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, separators=(",", ":"))
    os.replace(tmp, path)


def main():
    a = parse_args()
    t0 = time.time()
    import torch
    dry = a.cpu_dry_run
    if not dry and not torch.cuda.is_available():
        print("qlora_linear_launch_capture: no CUDA device (--cpu-dry-run tests the plan)",
              file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    gemms, cases = plan()
    n_table = len(gemms)
    if not a.no_llama:
        llama_gemms(gemms)
    keys = sorted(gemms)
    info = info_block(dry)
    print(json.dumps(info), flush=True)
    ops = Operands("meta" if dry else "cuda")  # meta: shapes only, no arithmetic
    launches, truncated = {}, None
    for c0 in range(0, len(keys), a.chunk):
        if time.time() - t0 > a.budget_s:
            truncated = "budget %.0f s reached after %d of %d GEMMs" % (a.budget_s, c0, len(keys))
            print(truncated, flush=True)
            break
        chunk = keys[c0:c0 + a.chunk]
        for k, ks in zip(chunk, launch_chunk(chunk, ops, dry)):
            launches[k] = ks
        none = sum(1 for k in chunk if launches[k] is None)
        print("[%5.1fs] GEMMs %d-%d of %d: %s" % (time.time() - t0, c0 + 1, c0 + len(chunk),
                                                  len(keys), "%d without kernels" % none
                                                  if none else "all recorded"), flush=True)
    # The launch-record files: 2-d GEMMs (the record's form), without and with a bias.
    for bias, fname in ((False, "launch.json"), (True, "launch_bias.json")):
        types = {}
        for (dt, M, N, K, b, xdim), ks in sorted(launches.items()):
            if b != bias or xdim != 2 or ks is None:
                continue
            types.setdefault(dt, []).append({"M": M, "N": N, "K": K,
                                             "kernels": {out_name(dt, b): ks}})
        write_json(os.path.join(a.out, fname), {"info": info, "types": types})
    # 3-d inputs against the 2-d GEMM of the same M.
    three = []
    for k, ks in sorted(launches.items()):
        if k[5] != 3:
            continue
        twin = launches.get(k[:5] + (2,))
        three.append({"dtype": k[0], "M": k[1], "N": k[2], "K": k[3], "bias": k[4],
                      "same_as_2d": twin == ks, "kernels_3d": ks, "kernels_2d": twin})
    src = bnb_paths(cases, dry)
    for c in cases:
        k = gemm_key(c["dtype"], c["M"], c["N"], c["K"], c["bias"], len(c["x_shape"]))
        ks = launches.get(k)
        c["record"] = "%s>%s %dx%dx%d" % (c["dtype"], out_name(c["dtype"], c["bias"]), c["M"],
                                          c["N"], c["K"])
        c["gemm_kernel"] = ks[0][0] if ks else None
    summary = {"info": info, "elapsed_s": round(time.time() - t0, 2), "truncated": truncated,
               "gemms": len(keys), "gemms_of_the_qlora_table": n_table,
               "recorded": sum(1 for v in launches.values() if v),
               "bnb_path_from": src, "three_d": three, "cases": cases,
               "sources": {"%s %dx%dx%d%s%s" % (k[0], k[1], k[2], k[3], " bias" if k[4] else "",
                                                " 3d" if k[5] == 3 else ""): v
                           for k, v in sorted(gemms.items())},
               "python": platform.python_version()}
    write_json(os.path.join(a.out, "cases.json"), summary)
    size = sum(os.path.getsize(os.path.join(a.out, f)) for f in os.listdir(a.out))
    dl = sum(1 for c in cases if c.get("bnb_path") == "dequant+linear")
    print("qlora_linear_launch_capture: %d GEMMs (%d of the qlora case table), %d recorded, "
          "3-d = 2-d launch %d/%d, %s dequant+linear Y cases by bitsandbytes' heuristic; "
          "%.1f s, %.2f MiB in %s" % (len(keys), n_table, summary["recorded"],
                                      sum(t["same_as_2d"] for t in three), len(three),
                                      dl if src and not str(src).startswith("not") else "no",
                                      time.time() - t0, size / 2**20, a.out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
