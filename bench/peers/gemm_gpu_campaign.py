"""`exmy gemm --accum cublas-sm90[-GPU]` against a random-shape cuBLAS capture of one GPU (issue
30; docs/SEMANTICS.md 15.6), every type the capture holds (bf16, fp16, tf32, fp32, e4m3fn).
Off the GPU:

    python3 bench/peers/gemm_gpu_campaign.py EXMY --capture DIR --out CAMPAIGN.json \
        [--preset cublas-sm90-h200] [--types bf16,fp16,tf32,fp32,e4m3fn] \
        [--full-products 2e6] [--check-products 2e6] [--jobs 2] [--limit N]

The capture is gemm_kernel_select_capture.py's (<type>.npz: outputs, meta with the kernels per
shape; inputs regenerated from the counter hash and checked against its checksums). Per shape
and output:
- the model the preset applies and whether it is announced (launch_model below: a replica of
  accum_model.cpp's selection with the compiled-in H100 records, the H200 delta and the
  profile's entries), and why ("verified rule", "verified entry", "unverified rule",
  "nearest: no record", "nearest: record without a rule", "GPUs differ", "FP8 rule");
- mismatching outputs of that model on the first rows of A (all rows up to --check-products
  products); on every shape up to --full-products products `exmy gemm --accum PRESET` itself runs
  on the whole shape and must give the model's outputs and print a line on stderr exactly when
  the replica says announced (`replica_agrees`);
- the capture's kernel family (the first kernel's family, tools/gemm_launch.py, and the
  reductions that followed), and, where the capture's kernel names determine the launch record
  (one kernel, no split: S = 1; never the xmma FFMA kernels, whose grid may split K), the
  family rule on that record (`cap_rule`, `cap_rule_mismatches`): evidence for the rule table
  of sim/gemm/launch_rules.cpp on this GPU where the compiled-in records do not hold the shape.
Summaries per type and output: shapes, outputs, bit-exact shapes, silent shapes and their
mismatching outputs (must be 0), announced shapes and their mismatches, by why and by family.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools"))
import gemm_kernel_select_capture as capmod  # noqa: E402
import gemm_kernel_select_fit as fit  # noqa: E402
import gemm_kernel_select_merge as merge  # noqa: E402
import gemm_launch  # noqa: E402
import gemm_launch_rules as rules  # noqa: E402

ALL_TYPES = ["bf16", "fp16", "tf32", "fp32", "e4m3fn"]  # the capture's order (its seeds)
FP8_RULE = "hw:k=32,frac=13,inter=13,chunk=128"
PROF = os.path.join(ROOT, "golden", "profiles", "sm90")


def e4m3fn_rne(x):
    """float32 array -> e4m3fn codes, round to nearest even (torch's .to(float8_e4m3fn) for the
    capture's values, |x| < 448: no saturation)."""
    x = x.astype(np.float64)
    a = np.abs(x)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(e, -6)  # subnormals: quantum 2^-9
    q = 2.0 ** (e - 3)
    r = np.round(a / q) * q  # numpy rounds half to even; a / q is exact
    assert (r <= 448).all()
    e2 = np.floor(np.log2(np.where(r > 0, r, 1.0)))
    sub = r < 2.0 ** -6
    code = np.where(sub, np.round(r / 2.0 ** -9),
                    ((e2 + 7) * 8 + np.round(r / 2.0 ** e2 * 8) - 8))
    code = np.where(r == 0, 0, code).astype(np.uint8)
    return code | np.where(x < 0, 0x80, 0).astype(np.uint8)


def capture_entries(capture, t):
    """fit.capture_entries with each output array read once (an npz member is decompressed on
    every access)."""
    d = np.load(os.path.join(capture, t + ".npz"))
    meta = json.loads(str(d["meta"]))
    arrays = {o: d["out_" + o] for o in meta["outs"]}
    offs = {o: 0 for o in meta["outs"]}
    entries = []
    for e in meta["entries"]:
        want = {}
        for o in meta["outs"]:
            n = e["M"] * e["N"]
            want[o] = arrays[o][offs[o]:offs[o] + n].astype(np.uint32)
            offs[o] += n
        entries.append((e, want))
    return meta, entries


def inputs(t, seed, ti, i, M, N, K):
    if t != "e4m3fn":
        return fit.inputs(t, seed, ti, i, M, N, K)
    av = capmod.gen_values(seed + i, 2 * ti, M, K, np)
    bv = capmod.gen_values(seed + i, 2 * ti + 1, N, K, np)
    return (e4m3fn_rne((av.astype(np.float64) * 2.0 ** -15).astype(np.float32)),
            e4m3fn_rne((bv.astype(np.float64) * 2.0 ** -15).astype(np.float32)))


class Profile:
    """The compiled-in profile as exmy reads it: entries (the H100's), the H100's launch records
    and the H200's delta (gemm_profile.cpp)."""

    def __init__(self):
        self.entries = json.load(open(os.path.join(PROF, "cublaslt-h100-gemm.json")))["entries"]
        self.base = gemm_launch.expand(
            json.load(open(os.path.join(PROF, "cublaslt-h100-launch.json")))["launch"])
        d = json.load(open(os.path.join(PROF, "cublaslt-h200-launch.json")))["launch"]
        self.delta = gemm_launch.expand(d)
        self.absent = set()
        for io_key, flat in d.get("absent", {}).items():
            t, o = io_key.split(">")
            for i in range(0, len(flat), 3):
                self.absent.add((t, o) + tuple(flat[i:i + 3]))
        self.gpus = ["h100", "h200"]

    def rec_on(self, gpu, key):
        if gpu == "h100":
            return self.base.get(key)
        if key in self.delta:
            return self.delta[key]
        return None if key in self.absent else self.base.get(key)

    def differ(self, key):
        return key in self.delta and key in self.base

    def target(self, gpu, key):
        if gpu:
            return self.rec_on(gpu, key), False
        for g in self.gpus:
            r = self.rec_on(g, key)
            if r:
                break
        return r, self.differ(key)

    def entries_hold(self, gpu, t, M, N, K):
        if gpu == "h100":
            return True
        for o in gemm_launch.outs_of(t) if t in gemm_launch.TYPES else ():
            key = (t, o, M, N, K)
            if self.differ(key):
                return False
            if gpu and (self.rec_on("h100", key) is None or self.rec_on(gpu, key) is None):
                return False
        return not gpu or t in gemm_launch.TYPES  # FP8: no launch records on another GPU


def launch_model(P, gpu, t, o, M, N, K):
    """Replica of model_for_shape (accum_model.cpp): (model, announced, why, record)."""
    exact = [e for e in P.entries if e["type"] == t and (e["M"], e["N"], e["K"]) == (M, N, K)
             and isinstance(e.get("model"), str)]
    if t == "e4m3fn":
        ok = bool(exact) and P.entries_hold(gpu, t, M, N, K)
        return FP8_RULE, not ok, "FP8 rule (verified shape)" if ok else "FP8 rule", None
    rec, differs = P.target(gpu, (t, o, M, N, K))
    rule = rules.family_rule(rec, t, o, K, M, N) if rec else None
    if rule and rule[1] and not differs:
        return rule[0], False, "verified rule", rec
    if exact and P.entries_hold(gpu, t, M, N, K):
        return exact[0]["model"], False, "verified entry", rec
    if rule:
        return rule[0], True, "GPUs differ" if differs else "unverified rule", rec
    b = merge.nearest(P.entries, t, M, N, K, True, None) or \
        merge.nearest(P.entries, t, M, N, K, False, None)
    why = "GPUs differ" if differs else ("nearest: record without a rule" if rec else
                                         "nearest: no record")
    return b["model"], True, why, rec


def cap_family(kernels):
    """The capture's kernels as a family name: the GEMM kernel's family + the reductions."""
    if not kernels or kernels == ["?"]:
        return "?"
    fam = gemm_launch.family_of(kernels[0])
    return "+".join([fam] + [gemm_launch.reduce_of(k).split("/")[0] for k in kernels[1:]])


def cap_record(kernels):
    """The launch record the capture's kernel names determine (one kernel, S = 1), or None."""
    if not kernels or len(kernels) != 1 or kernels == ["?"]:
        return None
    fam = gemm_launch.family_of(kernels[0])
    if fam in ("xmma_ffma", "other"):
        return None
    return (fam, gemm_launch.key_of(kernels[0]), "", 1)


def run(exmy, tmp, t, a, b, accum, o):
    pa, pb, pc = (os.path.join(tmp, n) for n in ("a.npy", "b.npy", "c.npy"))
    np.save(pa, a)
    np.save(pb, b)
    # An explicit CUDA-core model of a TF32 request reads the fp32 values unrounded (as the
    # preset does when a launch rule or a profile entry names fp32-seq).
    fmt = "fp32" if t == "tf32" and accum.startswith("fp32-seq") else t
    r = subprocess.run([exmy, "gemm", "--a", pa, "--b", pb, "--out", pc, "--a-format", fmt,
                        "--b-format", fmt, "--out-format", o, "--accum", accum],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    c = np.load(pc)
    got = c.view(np.uint32).ravel() if c.dtype == np.float32 else c.astype(np.uint32).ravel()
    return got, [x for x in r.stderr.splitlines() if x.strip()]


def check_shape(args, P, t, ti, seed, e, want):
    M, N, K = e["M"], e["N"], e["K"]
    a, b = inputs(t, seed, ti, e["i"], M, N, K)
    codes = a.view(np.uint32) if a.dtype == np.float32 else a
    res = {"i": e["i"], "M": M, "N": N, "K": K, "outs": {}}
    if int(codes.astype(np.int64).sum()) != e["sum_a"]:
        res["error"] = "input checksum differs"
        return res
    cap_rows = e.get("rows", M)  # gemm_tc_capture.py stores the first rows only
    full = M * N * K <= args.full_products and cap_rows == M
    rows = M if full else max(1, min(cap_rows, int(args.check_products // max(1, N * K))))
    with tempfile.TemporaryDirectory() as tmp:
        for o, w in want.items():
            w = w.reshape(-1, N)[:rows].ravel()
            kern = e.get("kernels", {}).get(o, [])
            model, announced, why, rec = launch_model(P, args.gpu, t, o, M, N, K)
            r = {"outputs": int(w.size), "full": full, "model": model, "announced": announced,
                 "why": why, "record": list(rec) if rec else None, "family": cap_family(kern)}
            try:
                got, _ = run(args.exmy, tmp, t, a[:rows], b, model, o)
                r["mismatches"] = int((got != w).sum())
                if full:
                    pg, lines = run(args.exmy, tmp, t, a, b, args.preset, o)
                    r["line"] = lines[0] if lines else ""
                    r["replica_agrees"] = bool((pg == got).all()) and (
                        (len(lines) > 0) == announced)
                crec = rec or cap_record(kern)
                crule = (rules.family_rule(crec, t, o, K, M, N) if crec and t != "e4m3fn"
                         else None)
                if crule:
                    r["cap_rule"] = crule[0]
                    r["cap_rule_verified"] = crule[1]
                    r["cap_rule_from"] = "compiled-in record" if rec else "capture kernel name"
                    cg = got if crule[0] == model else run(args.exmy, tmp, t, a[:rows], b,
                                                            crule[0], o)[0]
                    r["cap_rule_mismatches"] = int((cg != w).sum())
            except RuntimeError as ex:
                r["error"] = str(ex)
            res["outs"][o] = r
    return res


def summarize(rs, outs):
    s = {}
    for o in outs:
        rows = [r["outs"][o] for r in rs if "error" not in r["outs"].get(o, {"error": 1})]
        d = {"shapes": len(rows), "outputs": sum(r["outputs"] for r in rows),
             "errors": sum(1 for r in rs if "error" in r.get("outs", {}).get(o, {"error": 1})),
             "exact": sum(r["mismatches"] == 0 for r in rows),
             "silent": sum(not r["announced"] for r in rows),
             "silent_exact": sum(not r["announced"] and r["mismatches"] == 0 for r in rows),
             "silent_mismatching_outputs": sum(r["mismatches"] for r in rows
                                               if not r["announced"]),
             "announced": sum(r["announced"] for r in rows),
             "announced_exact": sum(r["announced"] and r["mismatches"] == 0 for r in rows),
             "announced_mismatching_outputs": sum(r["mismatches"] for r in rows
                                                  if r["announced"]),
             "preset_runs": sum(r["full"] for r in rows),
             "preset_disagrees": sum(r["full"] and not r["replica_agrees"] for r in rows)}
        for key in ("why", "family"):
            g = {}
            for r in rows:
                x = g.setdefault(r[key], {"shapes": 0, "exact": 0, "announced": 0,
                                          "mismatching_outputs": 0, "outputs": 0})
                x["shapes"] += 1
                x["exact"] += r["mismatches"] == 0
                x["announced"] += r["announced"]
                x["mismatching_outputs"] += r["mismatches"]
                x["outputs"] += r["outputs"]
            d["by_" + key] = g
        rule = {}
        for r in rows:
            if "cap_rule" not in r:
                continue
            x = rule.setdefault(r["record"][0] if r["record"] else r["family"],
                                {"shapes": 0, "exact": 0, "verified": r["cap_rule_verified"],
                                 "from_capture_names": 0})
            x["shapes"] += 1
            x["exact"] += r["cap_rule_mismatches"] == 0
            x["from_capture_names"] += r["cap_rule_from"] == "capture kernel name"
        d["family_rules"] = rule
        s[o] = d
    return s


def main():
    p = argparse.ArgumentParser()
    p.add_argument("exmy")
    p.add_argument("--capture", required=True)
    p.add_argument("--preset", default="cublas-sm90-h200")
    p.add_argument("--types", default=",".join(ALL_TYPES))
    p.add_argument("--full-products", type=float, default=2e6)
    p.add_argument("--check-products", type=float, default=2e6)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--limit", type=int, default=0, help="first N shapes per type (a trial)")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if args.preset != "cublas-sm90" and not args.preset.startswith("cublas-sm90-"):
        sys.exit("--preset: cublas-sm90 or cublas-sm90-GPU")
    args.gpu = args.preset[len("cublas-sm90-"):] if args.preset != "cublas-sm90" else ""
    P = Profile()
    result = {"preset": args.preset, "capture": os.path.abspath(args.capture),
              "full_products": args.full_products, "check_products": args.check_products}
    for t in args.types.split(","):
        ti = ALL_TYPES.index(t)
        meta, entries = capture_entries(args.capture, t)
        result.setdefault("info", meta["info"])
        if args.limit:
            entries = entries[:args.limit]
        with ThreadPoolExecutor(args.jobs) as ex:
            rs = list(ex.map(lambda j: check_shape(args, P, t, ti, meta["info"]["seed"], j[0],
                                                   j[1]), entries))
        summ = summarize(rs, meta["outs"])
        result[t] = {"summary": summ, "shapes": rs}
        print(t, json.dumps(summ), flush=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(result, f)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
