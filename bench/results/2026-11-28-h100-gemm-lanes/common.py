import json, os, sys, re
import numpy as np
sys.path.insert(0, '/work/main/bench/peers')
import gemm_kernel_select_capture as cap
import gemm_kernel_select_fit as fit
CAP = {'L': '/work/gemm-captures-2026-11-27/h100-seed20261127', 'H': '/work/gemm-captures-2026-11-27/h100-seed20261128'}
TYPES = ["bf16", "fp16", "tf32", "fp32", "e4m3fn"]

def bf16_rne(x32):
    u = x32.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return r

def inputs(t, seed, i, M, N, K):
    ti = TYPES.index(t)
    av = cap.gen_values(seed + i, 2 * ti, M, K, np)
    bv = cap.gen_values(seed + i, 2 * ti + 1, N, K, np)
    a = (av.astype(np.float64) * 2.0 ** -15).astype(np.float32)
    b = (bv.astype(np.float64) * 2.0 ** -15).astype(np.float32)
    if t == 'bf16':
        return bf16_rne(a), bf16_rne(b)
    if t == 'fp16':
        return a.astype(np.float16).view(np.uint16), b.astype(np.float16).view(np.uint16)
    return a, b

def values(t, codes):
    """float64 values of the input codes."""
    if t == 'bf16':
        return (codes.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if t == 'fp16':
        return codes.view(np.float16).astype(np.float64)
    return codes.astype(np.float64)

def load(which, t):
    meta, entries = fit.capture_entries(CAP[which], t)
    return meta, entries

def fam(kernels):
    return ' + '.join(re.sub(r'<.*', '', re.sub(r'^void ', '', k)).strip() for k in kernels)
