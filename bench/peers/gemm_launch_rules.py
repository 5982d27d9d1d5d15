"""Replica of sim/gemm/launch_rules.cpp's family rules (docs/SEMANTICS.md 15.6) for the campaign
scripts (gemm_gpu_campaign.py, gemm_launch_select_check.py): a launch record (family, key,
reduce, S) of a GEMM with input type t, output type o and depth K -> (model, verified) or None.
Keep in step with kRules there; the C++ table is the definition."""


def split_part(K, S, g):
    """P = g ceil(ceil(K/S)/g): split-K parts made of whole units of g k."""
    return g * (-(-(-(-K // S)) // g))


# (family, in, out): (base model, unit g, verified)
RULES = {
    ("simt_sgemm", "fp32", "fp32"): ("fp32-seq", 4, True),
    ("simt_sgemm", "tf32", "fp32"): ("fp32-seq", 4, True),
    ("s1688gemm", "bf16", "bf16"): ("hw:k=8,frac=25", 8, True),
    ("s1688gemm", "fp16", "fp16"): ("hw:k=8,frac=25", 8, False),
    ("s1688gemm", "bf16", "fp32"): ("hw:k=8,frac=25", 8, False),
    ("s1688gemm", "fp16", "fp32"): ("hw:k=8,frac=25", 8, False),
    ("xmma_tf32", "tf32", "fp32"): ("hw:k=8,frac=25,tf32=rne", 4, True),
    ("s1688gemm_tf32", "tf32", "fp32"): ("hw:k=8,frac=25,tf32=rne", 4, False),
}
# Rules that hold only for kernels whose name starts so.
KEY_PREFIX = {"xmma_tf32": "sm80_xmma_gemm_"}
# Families whose model takes ktile=T, T the k tile of the kernel's name.
KTILE_FROM_KEY = {"s1688gemm_tf32"}


def kernel_ktile(key):
    """The k tile of a CUTLASS name ("..._64x64_16x6_tn_align1" -> 16), 0 if none."""
    import re
    m = re.search(r"_(\d+)x(\d+)_(\d+)x(\d+)_", key)
    return int(m.group(3)) if m else 0


def family_rule(rec, t, o, K):
    """(model, verified) of the family rule for record `rec`, or None (no rule applies)."""
    fam, key, red, S = rec
    rule = RULES.get((fam, t, o))
    if rule is None or not key.startswith(KEY_PREFIX.get(fam, "")):
        return None
    base, g, verified = rule
    split = red.startswith("splitKreduce/")
    if (S > 1 and not split) or (red and not split):
        return None
    m = base
    if split:
        seq = base.startswith("fp32-seq")
        m += (":chunk=%d" if seq else ",chunk=%d") % split_part(K, S, g)
        if red in ("splitKreduce/bf16", "splitKreduce/fp16"):
            if seq:
                return None
            m += ",rp"
    if fam in KTILE_FROM_KEY:
        T = kernel_ktile(key)
        if not T:
            return None
        m += ",ktile=%d" % T
    return m, verified
