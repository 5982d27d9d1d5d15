"""Compare FPRev summation trees of cuBLAS's CUDA-core kernels (sm80 xmma FFMA, gemvx, gemmSN,
dot_kernel + reduce_1Block, gemv2T + splitKreduce; fp32, TF32-request and bf16/fp16 inputs, the
fp32 output; issue 30) with the tree of the model exmy's family rule gives for the
kernel's launch (docs/SEMANTICS.md 15.2, 15.6). Off the GPU, numpy only:

    python3 bench/peers/gemm_simt_trees.py FPREV.npz LAUNCH.json[.xz] [--families ...] [--show N]

FPREV.npz (gemm_launch_probe.py, gemm_simt_capture.py, gemm_simt16_capture.py): per shape, for
anchors i and swept j, the count K - |leaves(lca(i, j))|; a shape probed in several passes of
anchors (gemm_simt16_capture.py) has one entry per pass, each compared. LAUNCH.json: the raw launch capture of the same shapes
(kernel names and grids). The model's tree is built by running the model's summation on
symbols: every fp32 addition (an FMA into a running sum, or the sum of two partials) joins two
subtrees; adding an empty lane (+0) joins nothing. The model string comes from the replica of
launch_rules.cpp (gemm_launch_rules.py) on the launch record (record_of in tools/gemm_launch.py).
Prints per family the shapes compared and those whose every count equals the model's.
"""
import argparse
import json
import lzma
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import gemm_launch  # noqa: E402
import gemm_launch_rules as rules  # noqa: E402


# fp16 FPRev operands (gemm_launch_probe.py): +-BIG SMALL = +-2^-8 and units SMALL^2 = 2^-46. A
# partial of -2^-8 plus n units lies in [2^-9, 2^-8), whose ulp is 2^-32 = 2^14 units: from
# n = 2^13 units on, the units are rounded to a multiple of 2^14 and the count is not the lca's.
# fp16 trees are compared only up to K = 2^13 (bf16's BIG = 2^40 holds every K <= 16384).
FP16_KMAX = 8192


class Tree:
    """Joins of subtrees; tracks, for each anchor, the size of the node that first joins it with
    every other leaf."""

    def __init__(self, K, anchors):
        self.K = K
        self.size = {}
        self.kids = {}
        self.next = K
        self.root_of = {i: i for i in anchors}  # anchor -> node holding it
        self.lca = {i: np.zeros(K, np.int64) for i in anchors}

    def leaves(self, n):
        out, st = [], [n]
        while st:
            x = st.pop()
            if x < self.K:
                out.append(x)
            else:
                st.extend(self.kids[x])
        return out

    def sz(self, n):
        return 1 if n < self.K else self.size[n]

    def join(self, x, y):
        if x is None:
            return y
        if y is None:
            return x
        z = self.next
        self.next += 1
        self.kids[z] = (x, y)
        self.size[z] = self.sz(x) + self.sz(y)
        for i, r in self.root_of.items():
            if r == x or r == y:
                other = y if r == x else x
                self.lca[i][self.leaves(other)] = self.size[z]
                self.root_of[i] = z
        return z


def chain(t, ks):
    c = None
    for k in ks:
        c = t.join(c, k)
    return c


def halving(t, vals):
    """lane i += lane i + L/2, ..., + 1 (L a power of two)."""
    v = list(vals)
    h = len(v) // 2
    while h >= 1:
        for i in range(h):
            v[i] = t.join(v[i], v[i + h])
        h //= 2
    return v[0]


def model_tree(t, model, K):
    """The root of `model`'s summation over k = 0 .. K-1 (fp32-seq forms of the rules)."""
    if model == "fp32-seq":
        return chain(t, range(K))
    opts = dict(x.split("=") for x in model.split(":", 1)[1].split(","))
    if "dot" in opts:
        G = int(opts["dot"])
        stride = 256 * G
        part = [None] * 128
        for c in range(G):
            if 256 * c >= K:
                break
            th = []
            for tid in range(128):
                g = c * 128 + tid
                th.append(t.join(chain(t, range(2 * g, K, stride)),
                                 chain(t, range(2 * g + 1, K, stride))))
            part[c % 128] = t.join(part[c % 128], halving(t, th))
        for h in (64, 32):
            for i in range(h):
                part[i] = t.join(part[i], part[i + h])
        total = None
        for r in range(4):
            s = None
            for i in range(r, 32, 4):
                s = t.join(s, part[i])
            total = t.join(total, s)
        return total
    if "chunk" in opts:
        P = int(opts["chunk"])
        total = None
        for c0 in range(0, K, P):
            total = t.join(total, chain(t, range(c0, min(K, c0 + P))))
        return total
    L = int(opts["lanes"])
    S = int(opts.get("split", 1))
    per = -(-K // S)
    total = None
    for p0 in range(0, K, per):
        n = min(K, p0 + per) - p0
        v = opts.get("vec", "1")
        v = -(-n // L) if v == "auto" else int(v)
        v = max(v, 1)
        lc = int(opts.get("lanechunk", 0))
        lanes = []
        for l in range(L):
            ks = [p0 + j for j in range(n) if (j // v) % L == l]
            if lc:  # the lane's chain restarts every lc of its k, chunk sums added in order
                c = None
                for c0 in range(0, len(ks), lc):
                    c = t.join(c, chain(t, ks[c0:c0 + lc]))
                lanes.append(c)
            else:
                lanes.append(chain(t, ks))
        how = opts.get("lanesum", "tree")
        if how == "seq":
            s = None
            for x in lanes:
                s = t.join(s, x)
        elif how == "fold":
            h = (L + 1) // 2
            s = t.join(lanes[0], lanes[h] if h < L else None)
            if h < L - 1:
                s = t.join(s, lanes[L - 1])
            for i in range(1, h):
                s = t.join(s, t.join(lanes[i], lanes[i + h]) if i + h < L - 1 else lanes[i])
        else:
            s = halving(t, lanes)
        total = t.join(total, s)
    return total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("fprev")
    p.add_argument("launch")
    p.add_argument("--families", default="xmma_ffma,gemvx,gemmSN,dot,gemv2")
    p.add_argument("--show", type=int, default=20, help="differing shapes to print")
    args = p.parse_args()
    z = np.load(args.fprev, allow_pickle=True)
    meta = json.loads(str(z["meta"]))
    t = meta["type"]
    op = lzma.open if args.launch.endswith(".xz") else open
    with op(args.launch, "rt") as f:
        cap = json.load(f)
    recs = {(r["M"], r["N"], r["K"]): r["kernels"]["fp32"] for r in cap["types"][t]}
    fams = set(args.families.split(","))
    summ, shown, skipped = {}, 0, {}
    for s in meta["shapes"]:
        M, N, K = s["M"], s["N"], s["K"]
        ks = recs.get((M, N, K))
        if not ks:
            continue
        rec = gemm_launch.record_of(ks)
        if rec[0] not in fams:
            continue
        rule = rules.family_rule(rec, t, "fp32", K, M, N)
        if t == "fp16" and K > FP16_KMAX:
            skipped[rec[0]] = skipped.get(rec[0], 0) + 1
            continue
        key = s["key"]
        an, sw = z[key + "_anchors"], z[key + "_sweep"]
        cnt = z[key + "_counts"].astype(np.int64)
        fam = rec[0]
        e = summ.setdefault(fam, {"shapes": 0, "equal": 0, "no_rule": 0, "counts": 0,
                                  "keys": set(), "bad_keys": set()})
        e["shapes"] += 1
        e["keys"].add((M, N, K))
        if rule is None:
            e["no_rule"] += 1
            continue
        tr = Tree(K, [int(i) for i in an])
        model_tree(tr, rule[0], K)
        pred = np.array([K - tr.lca[int(i)][sw] for i in an])
        bad = int((pred != cnt).sum())
        e["counts"] += int(cnt.size)
        e["equal"] += bad == 0
        if bad:
            e["bad_keys"].add((M, N, K))
        if bad and shown < args.show:
            shown += 1
            print("differs: %s %dx%dx%d %s (%s): %d of %d counts" %
                  (fam, M, N, K, rule[0], re.sub(r"\(.*", "", ks[0][0])[:60], bad, cnt.size))
    for fam, e in sorted(summ.items()):
        passes = "" if e["shapes"] == len(e["keys"]) else " (%d shapes, %d with every pass " \
            "equal)" % (len(e["keys"]), len(e["keys"] - e["bad_keys"]))
        print("%s %s: %d shapes, %d equal to the model's tree (%d counts), %d without a rule%s" %
              (t, fam, e["shapes"], e["equal"], e["counts"], e["no_rule"], passes))
    for fam, n in sorted(skipped.items()):
        print("%s %s: %d entries with K > %d not compared (the fp16 operands' range)" %
              (t, fam, n, FP16_KMAX))


if __name__ == "__main__":
    main()
