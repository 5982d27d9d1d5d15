"""Replica of sim/gemm/launch_rules.cpp's family rules (docs/SEMANTICS.md 15.6) for the campaign
scripts (gemm_gpu_campaign.py, gemm_launch_select_check.py): a launch record (family, key,
reduce, S) of a GEMM with input type t, output type o and depth K -> (model, verified) or None.
Keep in step with kRules there; the C++ table is the definition."""
import re


def split_part(K, S, g):
    """P = g ceil(ceil(K/S)/g): split-K parts made of whole units of g k."""
    return g * (-(-(-(-K // S)) // g))


FROM_NAME = -1
# (family, in, out): (base model, unit g, verified, ktile (0, FROM_NAME or T), aligned unit)
RULES = {
    ("simt_sgemm", "fp32", "fp32"): ("fp32-seq", 4, True, 0, 0),
    ("simt_sgemm", "tf32", "fp32"): ("fp32-seq", 4, True, 0, 0),
    ("s1688gemm", "bf16", "bf16"): ("hw:k=8,frac=25", 8, True, 32, 64),
    ("s1688gemm", "fp16", "fp16"): ("hw:k=8,frac=25", 8, True, 32, 64),
    ("s1688gemm", "bf16", "fp32"): ("hw:k=8,frac=25", 8, True, 32, 64),
    ("s1688gemm", "fp16", "fp32"): ("hw:k=8,frac=25", 8, True, 32, 64),
    ("wmma", "bf16", "bf16"): ("hw:k=16,frac=25", 8, True, FROM_NAME, 64),
    ("wmma", "bf16", "fp32"): ("hw:k=16,frac=25", 8, True, FROM_NAME, 64),
    ("wmma", "fp16", "fp16"): ("hw:k=16,frac=25", 8, True, FROM_NAME, 64),
    ("wmma", "fp16", "fp32"): ("hw:k=16,frac=25", 8, True, FROM_NAME, 64),
    ("s16816gemm", "bf16", "bf16"): ("hw:k=16,frac=25", 8, True, FROM_NAME, 64),
    ("s16816gemm", "bf16", "fp32"): ("hw:k=16,frac=25", 8, True, FROM_NAME, 64),
    ("s16816gemm", "fp16", "fp16"): ("hw:k=16,frac=25", 8, True, FROM_NAME, 64),
    ("s16816gemm", "fp16", "fp32"): ("hw:k=16,frac=25", 8, True, FROM_NAME, 64),
    ("nvjet", "bf16", "bf16"): ("hw:k=16,frac=25", 64, True, 0, 0),
    ("nvjet", "bf16", "fp32"): ("hw:k=16,frac=25", 64, True, 0, 0),
    ("nvjet", "fp16", "fp16"): ("hw:k=16,frac=25", 64, True, 0, 0),
    ("nvjet", "fp16", "fp32"): ("hw:k=16,frac=25", 64, True, 0, 0),
    ("xmma_tf32", "tf32", "fp32"): ("hw:k=8,frac=25,tf32=rne", 4, True, 0, 0),
    ("s1688gemm_tf32", "tf32", "fp32"): ("hw:k=8,frac=25,tf32=rne", 4, True, FROM_NAME, 0),
}
# Rules whose split parts are whole 32-k units (P = 32 ceil(ceil(K/S)/32)) where 32 divides K
# and K >= 32 S, else the unit's; unverified where that differs from the earlier clause (whole
# k-tiles T ceil(ceil(K/T)/S) where T divides K and K >= T S) (kRules' tile_parts).
TILE_PARTS = {("s1688gemm_tf32", "tf32", "fp32")}
# Rules that hold only for kernels whose name starts so.
KEY_PREFIX = {"xmma_tf32": "sm80_xmma_gemm_", "nvjet": "nvjet_sm90_"}
# sm80 xmma FFMA (kRules' xmma_slices): k-tiles of the name's tilesize<M>x<N>x<T> round-robin
# over the S = gridDim.z CTAs, their partials added in CTA order by xmma's split_k kernel or by
# the kernel's own fold without it. (family, in, out): verified.
XMMA_SLICES = {("xmma_ffma", "fp32", "fp32"): True, ("xmma_ffma", "tf32", "fp32"): False}
# Rules whose records hold the CTA count: split = S / nvjet_tiles (kRules' grid_split).
GRID_SPLIT = {"nvjet"}
# Rules not verified for a split where K is a multiple of this (kRules' unverified_aligned; none
# since s16816gemm's 64-k parts were checked on a held-out capture).
UNVERIFIED_ALIGNED = {}


def nvjet_tiles(key, M, N):
    """Tiles of an nvjet launch: the name's _<a>x<b>_ (a along N, b along M) padded to its
    cluster _<cx>x<cy>_ (0 if the name has no such fields or M, N are unknown)."""
    m = re.match(r"nvjet_sm90_[a-z]+_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_", key)
    if not m or not M or not N:
        return 0
    a, b, cx, cy = (int(m.group(i)) for i in (1, 2, 5, 6))
    if 0 in (a, b, cx, cy):
        return 0
    pad = lambda v, c: c * -(-v // c)  # noqa: E731
    return pad(-(-N // a), cx) * pad(-(-M // b), cy)
# The instruction k of each base (a k-tile must be a multiple of it).
INSTR_K = {"hw:k=8,frac=25": 8, "hw:k=16,frac=25": 16, "hw:k=8,frac=25,tf32=rne": 8}


def name_ktile(key):
    """The k-tile T of a CUTLASS name's _<M>x<N>_<T>x<stages>_ (0 if none)."""
    m = re.search(r"_(\d+)x(\d+)_(\d+)x(\d+)_", key)
    return int(m.group(3)) if m else 0


kernel_ktile = name_ktile  # the older name


def xmma_ktile(key):
    """The k-tile T of an xmma name's tilesize<M>x<N>x<T> (0 if none)."""
    m = re.search(r"tilesize(\d+)x(\d+)x(\d+)", key)
    return int(m.group(3)) if m else 0


# CUDA-core gemv / dot / small-N kernels (cuda_core_rule in launch_rules.cpp): (family, kernel
# name prefix, reduction) -> model. fp32 and TF32 requests (the CUDA cores read fp32 unrounded),
# and bf16/fp16 inputs with a 16-bit or fp32 output (the same kernels with 16-bit loads and fp32
# FMA chains: a product of two 16-bit values is exact in fp32).
GEMVX = "internal::gemvx::kernel<int, int, float, float, float, float, "
GEMVX_V_MAX, GEMVX_1_MIN = 513, 644  # gemvx<..., 7>: vec=auto seen up to 513, vec=1 from 644
# 16-bit gemvx<..., 7> with 32x4 blocks: (largest K with vec=auto seen, smallest strided K,
# fewest CTAs a strided launch was seen with) per input type (kGemvx16 in launch_rules.cpp);
# the largest K of the fp16 4x64 and 16x4 kernels' trees.
GEMVX16 = {"bf16": (700, 758, 21), "fp16": (523, 758, 25)}
GEMVX_4X64_MAX, GEMVX_16X4_MAX = 121, 700
T16 = {"bf16": "__nv_bfloat16", "fp16": "__half"}
GEMV2 = "gemv2T_kernel_val<int, int, %s, float, float, float, 128, 16, 4, 4, false, false, "


def cuda_core_rule16(fam, key, red, S, t, o, K, M=0, N=0):
    """The 16-bit-input forms (launch_rules.cpp's cuda_core_rule16): (model, verified) or None."""
    T = T16[t]
    X = "float" if o == "fp32" else T
    typed = ("cublasGemvTensorStridedBatched<%s const>" % T) in key  # dot, gemmSN
    if typed and fam == "dot" and key.startswith("dot_kernel<float, 128, 0,") and \
            red == "reduce_1Block":
        return "fp32-seq:dot=%d" % S, 16 <= S <= 66 or S == 496
    if typed and fam == "gemmSN" and key.startswith("gemmSN_TN_kernel<float, 128, 16, 2, 4, ") and \
            not red and S == 1:
        return "fp32-seq:lanes=16,lanesum=seq,lanechunk=16", True
    pre = "internal::gemvx::kernel<int, int, %s, %s, %s, float, " % (T, X, X)
    if fam == "gemvx" and key.startswith(pre) and not red and S == 1:
        rest = key[len(pre):]
        if rest.startswith("true, true, true, false, 7, false,"):  # 2x64 blocks
            return "fp32-seq:lanes=2,vec=auto", True
        if t == "fp16" and rest.startswith("true, true, true, false, 8, false,"):  # 4x64
            return "fp32-seq:lanes=4,vec=auto", K <= GEMVX_4X64_MAX
        if t == "fp16" and rest.startswith("false, true, true, false, 6, false,"):  # 16x4
            return "fp32-seq:lanes=16,vec=auto", K <= GEMVX_16X4_MAX
        if rest.startswith("false, true, true, false, 7, false,"):  # 32x4 blocks
            vmax, smin, sctas = GEMVX16[t]
            ctas = -(-(M * N) // 4)
            strided = K > vmax and ctas >= sctas
            m = "fp32-seq:lanes=32" if strided else "fp32-seq:lanes=32,vec=auto"
            return m, K <= vmax or (strided and K >= smin)
    if fam == "gemv2" and key.startswith(GEMV2 % T) and red == "splitKreduce/f32" and S > 1:
        return "fp32-seq:lanes=16,lanesum=seq,lanechunk=32,split=%d" % S, True
    return None


def cuda_core_rule(fam, key, red, S, t, K, o="fp32", M=0, N=0):
    if t in T16:
        return cuda_core_rule16(fam, key, red, S, t, o, K, M, N)
    if t not in ("fp32", "tf32") or o != "fp32":
        return None
    if fam == "dot" and key.startswith("dot_kernel<float, 128, 0,") and red == "reduce_1Block":
        return "fp32-seq:dot=%d" % S, 16 <= S <= 66  # the CTA counts trees/outputs hold
    if fam == "gemmSN" and key.startswith("gemmSN_TN_kernel<float, 128, 16, 2, 4, ") and \
            not red and S == 1:
        return "fp32-seq:lanes=16,lanesum=seq,lanechunk=16", True
    if fam == "gemvx" and key.startswith(GEMVX):
        rest = key[len(GEMVX):]
        if rest.startswith("true, true, true, false, 6, false,") and not red and S == 1:
            return "fp32-seq:lanes=2,vec=auto", True
        if rest.startswith("false, true, true, false, 7, false,") and not red and S == 1:
            if K <= GEMVX_V_MAX:
                return "fp32-seq:lanes=32,vec=auto", True
            return "fp32-seq:lanes=32", K >= GEMVX_1_MIN
        if rest.startswith(("false, true, false, false, 7, false,",
                            "false, true, true, false, 7, false,")) and \
                red == "splitKreduce/f32":
            return "fp32-seq:lanes=32,split=%d" % S, t == "tf32"
    return None


def segment_tiles(key, M, N):
    """(tiles, k-tile) of an sm90 xmma segment-k name's _tilesize<a>x<b>x<T>_ (a along M)."""
    m = re.search(r"_tilesize(\d+)x(\d+)x(\d+)_", key)
    if not m or not M or not N or 0 in [int(x) for x in m.groups()]:
        return 0, 0
    a, b, T = (int(x) for x in m.groups())
    return -(-M // a) * -(-N // b), T


def family_rule(rec, t, o, K, M=0, N=0):
    """(model, verified) of the family rule for record `rec`, or None (no rule applies)."""
    fam, key, red, S = rec
    if fam in ("dot", "gemmSN", "gemvx", "gemv2"):
        return cuda_core_rule(fam, key, red, S, t, K, o, M, N)
    if (fam, t, o) in XMMA_SLICES:
        T = xmma_ktile(key)
        if red not in ("", "xmma_split_k") or not T or S > 4096:
            return None
        m = "fp32-seq"
        if S > 1:
            m += ":lanes=%d,vec=%d,lanesum=%s" % (S, T, "seq" if red else "fold")
        # the split counts the trees and outputs covered (kRules' xmma_rule)
        seen = S == 1 or (S <= 88 if red else 16 <= S <= 264)
        return m, XMMA_SLICES[(fam, t, o)] and seen
    if (fam, t, o) == ("xmma_tf32", "tf32", "fp32") and key.startswith("sm90_xmma_gemm_"):
        # kRules' segment_k row (not verified): segments of whole k-tiles, a tree in the kernel
        tiles, T = segment_tiles(key, M, N)
        if "segment_k" not in key or not tiles or S % tiles or red:
            return None
        seg = S // tiles
        m = "hw:k=8,frac=25,tf32=rne"
        return (m + (",split=%d,tile=%d,tail,tree" % (seg, T) if seg > 1 else "")), False
    rule = RULES.get((fam, t, o))
    if rule is None or not key.startswith(KEY_PREFIX.get(fam, "")):
        return None
    base, g, verified, ktile, aligned = rule
    if fam in GRID_SPLIT:
        tiles = nvjet_tiles(key, M, N)
        if not tiles or S % tiles:
            return None
        S = S // tiles
    split = red.startswith("splitKreduce/")
    ua = UNVERIFIED_ALIGNED.get(fam, 0)
    if ua and split and S > 1 and K % ua == 0:
        verified = False
    if (S > 1 and not split) or (red and not split):
        return None
    m = base
    T = 0
    if ktile:
        T = name_ktile(key) if ktile == FROM_NAME else ktile
        if not T or T % INSTR_K.get(base, 1):
            return None
        m += ",ktile=%d" % T
    if split:
        seq = base.startswith("fp32-seq")
        if aligned and K % aligned == 0:
            if fam == "s1688gemm" and split_part(K, S, aligned) != split_part(K, S, g):
                verified = False  # kRules' aligned_once: one launch (64x17x4160) decides
            g = aligned
        P = split_part(K, S, g)
        if (fam, t, o) in TILE_PARTS:
            old = split_part(K, S, T) if T and K % T == 0 and K >= T * S else P
            if K % 32 == 0 and K >= 32 * S:
                P = split_part(K, S, 32)
            if P != old:
                verified = False  # 32-k units vs whole k-tiles: only 2 fitted shapes decide
        if fam in GRID_SPLIT and S > 1 and 64 * -(-(K // S) // 64) != P:
            verified = False  # cuBLAS's floor(K/S) part may leave k unaccumulated
        m += (":chunk=%d" if seq else ",chunk=%d") % P
        if red in ("splitKreduce/bf16", "splitKreduce/fp16"):
            if seq:
                return None
            m += ",rp"
    return m, verified
