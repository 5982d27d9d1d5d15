"""Compare FPRev summation trees of cuBLAS's CUTLASS 2.x kernels (wmma, s1688gemm, s16816gemm) and
nvjet kernels with the tree of exmy's model `hw:k=G,frac=25[,ktile=T][,chunk=P]` (issue 30;
docs/SEMANTICS.md 15.2, 15.6; nvjet: no k-tile residue, 64-k parts, its split = CTAs / tiles).
Off the GPU, numpy only:

    python3 bench/peers/gemm_tile_trees.py FPREV.npz LAUNCH.json[.xz] TYPE [--families wmma,s1688gemm]

FPREV.npz (bench/peers/gemm_launch_probe.py): per shape, for anchors i and swept j, the count
K - |leaves(lca(i, j))|. The model's tree: split parts of P = 8 ceil(ceil(K/S)/8) k (S = gridDim.z
of the GEMM kernel where splitKreduce follows, else one part; wmma with K a multiple of 64:
P = 64 ceil(ceil(K/S)/64)), each part a chain of fused groups
of G k (16 for wmma, 8 for s1688gemm) over its k-tiles of T k with the residue tile first, the
parts added in order from +0. A fused group takes the running accumulator as a term, so for i, j
in one part |leaves(lca)| = end(group of the later of i, j) - part start; in parts p < q it is
end(part q). Prints per family the shapes and anchor rows compared, the shapes whose every count
equals the model's, and each differing shape.
"""
import argparse
import json
import lzma
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import gemm_launch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_launch_rules as rules  # noqa: E402


def parts(K, S, U=8):
    if S <= 1:
        return [0, K]
    per = -(-K // S)
    P = U * (-(-per // U))
    st = [0]
    while st[-1] + P < K:
        st.append(st[-1] + P)
    return st + [K]


def group_end(K, S, G, T, U):
    """(part index, end of k's group) for every k."""
    st = parts(K, S, U)
    part = np.zeros(K, np.int64)
    end = np.zeros(K, np.int64)
    for p in range(len(st) - 1):
        k0, k1 = st[p], st[p + 1]
        r = (k1 - k0) % T if T else 0
        k = k0
        while k < k1:
            lim = k0 + r if k < k0 + r else k1
            e = min(k + G, lim)
            part[k:e] = p
            end[k:e] = e
            k = e
    return part, end, st


def model_counts(K, S, G, T, U, anchors, sweep):
    part, end, st = group_end(K, S, G, T, U)
    out = np.zeros((len(anchors), len(sweep)), np.int64)
    sw = np.asarray(sweep)
    for ai, i in enumerate(anchors):
        same = part[sw] == part[i]
        later = np.maximum(end[sw], end[i])
        lv_same = later - np.asarray(st)[part[sw]]
        pq = np.maximum(part[sw], part[i])
        lv_diff = np.asarray(st)[pq + 1]
        out[ai] = K - np.where(same, lv_same, lv_diff)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("fprev")
    p.add_argument("launch")
    p.add_argument("type")
    p.add_argument("--families", default="wmma,s1688gemm,s16816gemm,nvjet")
    p.add_argument("--s1688-ktile", type=int, default=32)
    # wmma: parts of U ceil(ceil(K/S)/U) k with U = 64 where K is a multiple of 64, else 8
    p.add_argument("--wmma-aligned-unit", type=int, default=64)
    # s16816gemm (mma.sync m16n8k16, k-tile from the name): parts of 8-k units, 64-k units
    # where 64 | K (as wmma; no tree has a split with 64 | K, the outputs of two held-out
    # captures do: bench/results/2026-12-02-h200-gemm-tc-heldout.md)
    p.add_argument("--s16816-aligned-unit", type=int, default=64)
    args = p.parse_args()
    d = np.load(args.fprev)
    meta = json.loads(str(d["meta"]))
    opener = lzma.open if args.launch.endswith(".xz") else open
    L = json.load(opener(args.launch))
    rec = {(r["M"], r["N"], r["K"]): r["kernels"]["fp32"] for r in L["types"][args.type]}
    fams = args.families.split(",")
    stats = {}
    for s in meta["shapes"]:
        M, N, K, key = s["M"], s["N"], s["K"], s["key"]
        ks = rec.get((M, N, K))
        if not ks:
            continue
        fam, name, red, S = gemm_launch.record_of(ks)
        if fam not in fams:
            continue
        if fam in ("wmma", "s16816gemm"):
            m = re.search(r"_(\d+)x(\d+)_(\d+)x(\d+)_", name)
            G, T = 16, int(m.group(3))
            au = args.wmma_aligned_unit if fam == "wmma" else args.s16816_aligned_unit
            U = au if au and K % au == 0 else 8
        elif fam == "nvjet":
            # groups of 16 from each part's start, parts of 64-k units, the split = CTAs /
            # tiles (the record's S is the CTA count; launch_rules.cpp grid_split)
            G, T, U = 16, 0, 64
            tiles = rules.nvjet_tiles(name, M, N)
            if not tiles or S % tiles:
                continue
            S = S // tiles
        else:
            G, T, U = 8, args.s1688_ktile, 8
        Sx = S if red.startswith("splitKreduce/") else 1
        got = d[key + "_counts"].astype(np.int64)
        want = model_counts(K, Sx, G, T, U, [int(x) for x in d[key + "_anchors"]],
                            [int(x) for x in d[key + "_sweep"]])
        ok = got == want
        st = stats.setdefault(fam, {"shapes": 0, "rows": 0, "counts": 0, "clean": 0, "bad": []})
        st["shapes"] += 1
        st["rows"] += got.shape[0]
        st["counts"] += got.size
        if ok.all():
            st["clean"] += 1
        else:
            ai, ji = np.argwhere(~ok)[0]
            st["bad"].append("%dx%dx%d %s S=%d: %d of %d counts differ (first: anchor %d, j %d: "
                             "%d, model %d)" % (M, N, K, name, Sx, int((~ok).sum()), ok.size,
                                                d[key + "_anchors"][ai], d[key + "_sweep"][ji],
                                                got[ai, ji], want[ai, ji]))
    for fam, st in stats.items():
        print("%s %s: %d shapes (%d anchor rows, %d counts), %d with every count the model's"
              % (args.type, fam, st["shapes"], st["rows"], st["counts"], st["clean"]))
        for b in st["bad"]:
            print("  differs: " + b)


if __name__ == "__main__":
    main()
