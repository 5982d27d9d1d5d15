"""Merge a random-shape fit (gemm_kernel_select_fit.py) into the cublas-sm90 profile and measure
the shape rule (issue 30; docs/SEMANTICS.md 15.6):

    python3 bench/peers/gemm_kernel_select_merge.py FIT.json PROFILE.json [--write] [--tag T]

Entries are added for every shape of the fit: with `model` when the fitted model reproduced every
output checked (0 mismatches), without it otherwise (kept as evidence; exmy skips entries without
a model). Then, leave-one-out over the profile's modelled shapes of each type, it reports how
often the rule exmy applies to a shape outside the verified set (the nearest modelled shape of
the same type and alignment class, accum_model.cpp) names the very model fitted there, and how
often the previous rule (nearest shape of the type, any class) did.
"""
import argparse
import json
import math
import re


def short(ks):
    out = []
    for k in ks:
        m = (re.search(r"(cutlass_\w+?)(?:>|\()", k) or re.search(r"(nvjet_\w+)", k) or
             re.search(r"(sm\d+_xmma_\w+?)(?:__5x_cublas|$)", k))
        if m:
            out.append(m.group(1))
            continue
        m = re.search(r"splitKreduce_kernel<32, 16, int, ([^,]+),", k)
        if m:
            out.append("splitKreduce<%s>" % m.group(1))
            continue
        m = re.search(r"(gemmSN_TN_kernel|gemvx::kernel|gemv2T_kernel_val|dot_kernel|"
                      r"reduce_1Block_kernel)", k)
        out.append(m.group(1) if m else k[:60])
    return out


ALIGN = {"bf16": 8, "fp16": 8, "tf32": 4, "fp32": 4, "e4m3fn": 16, "e5m2": 16}


def cls(t, M, N, K):
    """The alignment class (accum_model.cpp shape_class): vector-like, K, N and M aligned to
    16 bytes of the input type."""
    a = ALIGN.get(t, 1)
    return (M == 1 or N == 1, K % a == 0, N % a == 0, M % a == 0)


def dist(e, M, N, K):
    l2 = lambda x: math.log2(max(1, x))  # noqa: E731
    return 4 * abs(l2(e["K"]) - l2(K)) + abs(l2(e["M"]) - l2(M)) + abs(l2(e["N"]) - l2(N))


def nearest(entries, t, M, N, K, same_class, skip):
    best, bd = None, float("inf")
    c = cls(t, M, N, K)
    for e in entries:
        if e is skip or e["type"] != t or not isinstance(e.get("model"), str):
            continue
        if same_class and cls(t, e["M"], e["N"], e["K"]) != c:
            continue
        d = dist(e, M, N, K)
        if d < bd:
            best, bd = e, d
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("fit")
    p.add_argument("profile")
    p.add_argument("--write", action="store_true")
    p.add_argument("--tag", default="random-shape campaign 2026-11-27 (H100)")
    args = p.parse_args()
    fit = json.load(open(args.fit))
    prof = json.load(open(args.profile))
    entries = [e for e in prof["entries"] if "campaign" not in e]
    stats = {}
    for t, v in fit.items():
        n = clean = outs = 0
        for s in v["shapes"]:
            ok = ("model" in s and "check" in s and
                  all(c["mismatches"] == 0 for c in s["check"].values()))
            out0 = v["outs"][0]
            r = s.get("restarts")
            e = {"type": t, "M": s["M"], "N": s["N"], "K": s["K"]}
            if ok:
                e["model"] = s["model"]
            else:
                e["fitted"] = s.get("model")
            e["kernels"] = {o: short(k) for o, k in s["kernels"].items()}
            if r is not None:
                e["restarts"] = ("none" if not r else "every k" if r == list(range(1, s["K"]))
                                 else r[:8] + (["..."] if len(r) > 8 else []))
            if "check" in s:
                e["check"] = s["check"]
            e["campaign"] = args.tag
            entries.append(e)
            n += 1
            clean += ok
            outs += sum(c["outputs"] for c in s.get("check", {}).values()) if ok else 0
        stats[t] = {"shapes": n, "verified": clean, "outputs_checked_clean": outs}
    print(json.dumps(stats))
    # Leave-one-out: the rule's model at each modelled shape, the shape itself left out.
    for t in fit:
        mod = [e for e in entries if e["type"] == t and isinstance(e.get("model"), str)]
        hit_new = hit_old = 0
        for e in mod:
            for same, ctr in ((True, "new"), (False, "old")):
                b = nearest(entries, t, e["M"], e["N"], e["K"], same, e)
                if b is not None and b["model"] == e["model"]:
                    if same:
                        hit_new += 1
                    else:
                        hit_old += 1
        print("%s leave-one-out over %d modelled shapes: class rule %d (%.0f%%), old rule %d "
              "(%.0f%%)" % (t, len(mod), hit_new, 100.0 * hit_new / max(1, len(mod)), hit_old,
                            100.0 * hit_old / max(1, len(mod))))
    if args.write:
        prof["entries"] = entries
        prof.setdefault("campaigns", []).append({
            "tag": args.tag, "fit": "bench/peers/gemm_kernel_select_fit.py",
            "capture": "bench/peers/gemm_kernel_select_capture.py", "stats": stats})
        tmp = args.profile + ".tmp"
        with open(tmp, "w") as f:
            json.dump(prof, f, indent=1)
            f.write("\n")
        import os
        os.replace(tmp, args.profile)


if __name__ == "__main__":
    main()
