"""exmy gemm with fp32 tile scales against cuBLASLt's blockwise FP8 GEMM as torch._scaled_mm ran
it (the outputs of bench/peers/blockfp8_gemm_capture.py; issue 32 item 2, docs/SEMANTICS.md 15.7).

    python3 bench/peers/blockfp8_gemm_vs_exmy.py --exmy build/cli/exmy --caps DIR
        [--accum cublas-sm90] [--also "MODEL;MODEL..."] [--device cpu|cuda] [--max-macs N] [--json F]
    python3 bench/peers/blockfp8_gemm_vs_exmy.py --exmy build/cli/exmy --recapture DIR
        [--seed S] [--shapes MxNxK[:mix],...]   (on the GPU: capture new shapes, then compare)

For every captured case (shape, block pair, output type) the inputs are rebuilt from the capture's
counter hash (numpy; the stored checksums must match), written as exmy's operands (A M x K and
B N x K e4m3fn codes, SA ceil(M/Ra) x ceil(K/128) and SB ceil(N/Rb) x ceil(K/128) fp32) and
`exmy gemm --block-scale-format fp32 --block-a RaxC --block-b RbxC --accum MODEL` runs on them;
its output codes are compared bit for bit with torch's. --max-macs bounds the work per case (CPU):
whole tiles of rows of A and of B, evenly spread, are kept until M' N' K fits (the outputs of
those rows and columns are compared). --also runs further models on the same cases and reports
their mismatches too (e.g. the other promotion equations: what the data distinguishes).
Cases stored as per-row hashes (beyond the capture's full-storage budget) are compared row by
row (a differing row counts all its N outputs as mismatches; --max-macs keeps whole rows).
Cases whose launch shows cuBLASLt's split-K (splitK kernels, splitKreduce_kernel) are reported
apart ("[split-K launch]"): exmy does not model the blockwise split-K reduction yet.
Exit 1 if the main model mismatches anywhere else.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blockfp8_gemm_capture as cap  # noqa: E402


def pick(n_rows, tile, budget_rows):
    """Rows of whole tiles, evenly spread over the ceil(n_rows / tile) tiles, about budget_rows
    of them (all if it fits); returns (row indices, tile indices)."""
    tiles = -(-n_rows // tile)
    want = max(1, min(tiles, -(-budget_rows // tile)))
    ti = np.unique(np.linspace(0, tiles - 1, want).round().astype(np.int64))
    rows = np.concatenate([np.arange(t * tile, min(n_rows, (t + 1) * tile)) for t in ti])
    return rows, ti


def run_exmy(exmy, d, model, pair, out, device):
    ta, tb = pair.split(".")
    cmd = [exmy, "gemm", "--a", d + "/A.npy", "--b", d + "/B.npy", "--a-format", "e4m3fn",
           "--b-format", "e4m3fn", "--block-scale-a", d + "/SA.npy", "--block-scale-b",
           d + "/SB.npy", "--block-scale-format", "fp32", "--block-a", ta, "--block-b", tb,
           "--out-format", out, "--accum", model, "--device", device, "--out", d + "/C.npy"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    c = np.load(d + "/C.npy")
    return (c.view(np.uint32) if out == "fp32" else c.view(np.uint16)), r.stderr.strip()


def compare(args, caps_dir):
    meta = json.load(open(os.path.join(caps_dir, "blockfp8_gemm.json")))
    z = np.load(os.path.join(caps_dir, "blockfp8_gemm.npz"))
    models = [args.accum] + [m for m in args.also.split(";") if m]
    seed = meta["seed"]
    summary = {}
    notes = []
    skipped = []
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        for e in meta["cases"]:
            if "case" not in e or (args.cases and not re.search(args.cases, e["case"])):
                continue
            if e.get("suspect_layout"):
                # cuBLAS read the scales other than as meant (no layout torch accepted gave a
                # small error against fp64): not a GEMM of these inputs.
                skipped.append(e["case"])
                continue
            hashed = ("h/" + e["case"]) in z.files
            if not hashed and ("c/" + e["case"]) not in z.files:
                continue
            M, N, K = e["shape"]
            pair, out, mix, si = e["pair"], e["out"], e["mix"], e["si"]
            A, B, SA, SB = cap.case_inputs(seed, si, M, N, K, mix, pair, np)
            sums = {"A": cap.checksums(A, np), "B": cap.checksums(B, np),
                    "SA": cap.checksums(SA, np), "SB": cap.checksums(SB, np)}
            if sums != e["sums"] or ("sha256" in e and
                                     cap.input_digests(A, B, SA, SB) != e["sha256"]):
                print("%s: input checksums differ from the capture's: %s vs %s" % (
                    e["case"], sums, e["sums"]))
                bad += 1
                continue
            ra, rb = cap.pair_tiles(pair)
            rows_a, ta = np.arange(M), np.arange(SA.shape[0])
            rows_b, tb = np.arange(N), np.arange(SB.shape[0])
            if args.max_macs and M * N * K > args.max_macs:
                if hashed:  # whole rows of C (their hashes): rows of A only
                    rows_a, ta = pick(M, ra, max(args.max_macs // (N * K), 1))
                else:
                    side = int((args.max_macs / K) ** 0.5) + 1
                    rows_a, ta = pick(M, ra, max(side, 1))
                    rows_b, tb = pick(N, rb, max(args.max_macs // (K * len(rows_a)), 1))
            np.save(d + "/A.npy", A[rows_a].astype(np.uint8))
            np.save(d + "/B.npy", B[rows_b].astype(np.uint8))
            np.save(d + "/SA.npy", SA[ta].astype(np.int32).view(np.float32))
            np.save(d + "/SB.npy", SB[tb].astype(np.int32).view(np.float32))
            if hashed:
                ref = z["h/" + e["case"]][rows_a]
            else:
                ref = z["c/" + e["case"]].reshape(M, N)[np.ix_(rows_a, rows_b)]
            line = []
            for mi, model in enumerate(models):
                c, err = run_exmy(args.exmy, d, model, pair, out, args.device)
                splitk = any("splitK" in k for k in e.get("kernels", []))
                key = "%s %s | %s%s" % (pair, out, model, " [split-K launch]" if splitk else "")
                s = summary.setdefault(key, {"outputs": 0, "mismatches": 0, "cases": 0,
                                             "errors": 0})
                if c is None:
                    s["errors"] += 1
                    notes.append("%s %s: %s" % (e["case"], model, err))
                    line.append("%s: error" % model)
                    if mi == 0:
                        bad += 1
                    continue
                if hashed:  # a row whose hash differs counts all its outputs as mismatches
                    rows_bad = cap.row_hashes(c.reshape(len(rows_a), N)) != ref
                    mis = int(rows_bad.sum()) * N
                    s["outputs"] += len(rows_a) * N
                    s["cases"] += 1
                    s["hashed_rows"] = s.get("hashed_rows", 0) + len(rows_a)
                    line.append("%s: %d/%d rows differ" % (model, int(rows_bad.sum()),
                                                          len(rows_a)))
                    s["mismatches"] += mis
                    if mi == 0 and mis and not splitk:
                        bad += 1
                        r0 = z["r0/" + e["case"]]
                        if 0 in rows_a:
                            notes.append("%s: row 0 differs in %d of %d outputs" % (
                                e["case"], int((c.reshape(len(rows_a), N)[0] != r0).sum()), N))
                    continue
                mis = int((c.reshape(ref.shape) != ref).sum())
                s["outputs"] += ref.size
                s["mismatches"] += mis
                s["cases"] += 1
                line.append("%s: %d/%d" % (model, mis, ref.size))
                if mi == 0 and mis and not splitk:
                    bad += 1
                    idx = np.argwhere(c.reshape(ref.shape) != ref)[:3]
                    notes.append("%s: first mismatches at %s: exmy %s torch %s" % (
                        e["case"], idx.tolist(),
                        [hex(int(c.reshape(ref.shape)[tuple(i)])) for i in idx],
                        [hex(int(ref[tuple(i)])) for i in idx]))
            print("%s %dx%dx%d (%dx%d compared) %s" % (e["case"], M, N, K, len(rows_a),
                                                        len(rows_b), "; ".join(line)), flush=True)
    print("\nper pair, output and model: outputs compared, mismatches")
    for k in sorted(summary):
        s = summary[k]
        print("  %-40s %9d outputs, %7d mismatches, %d cases, %d errors" % (
            k, s["outputs"], s["mismatches"], s["cases"], s["errors"]))
    for n in notes[:40]:
        print("note:", n)
    if skipped:
        print("skipped (suspect scale layout in the capture): %d cases: %s" % (
            len(skipped), " ".join(skipped)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"caps": caps_dir, "models": models, "device": args.device,
                       "max_macs": args.max_macs, "summary": summary, "notes": notes,
                       "skipped_suspect_layout": skipped}, f,
                      indent=1)
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--exmy", required=True)
    p.add_argument("--caps", help="a capture directory (blockfp8_gemm.json/.npz)")
    p.add_argument("--recapture", help="capture new shapes into this directory first (GPU)")
    p.add_argument("--seed", type=int, default=20261202)
    # New shapes cuBLASLt runs without split-K and torch 2.11 lays out correctly (rows of a 1x128
    # operand a multiple of 4, N a multiple of 16, K/128 a multiple of 4), plus two split-K ones.
    p.add_argument("--shapes", default="512x2048x2048:full,1024x1536x4096:narrow,"
                   "2048x1024x1024:narrow,768x768x7168:narrow,4096x512x512:full,"
                   "256x4096x1536:narrow,132x2064x2560:full,1028x400x3584:narrow,"
                   "100x2048x512:pow2,64x128x65536:narrow,32x64x32768:full")
    p.add_argument("--accum", default="cublas-sm90")
    p.add_argument("--also", default="")
    p.add_argument("--device", default="cpu")
    p.add_argument("--max-macs", type=int, default=0)
    p.add_argument("--json", default="")
    p.add_argument("--cases", default="", help="a regular expression on case names")
    args = p.parse_args()
    caps_dir = args.caps
    if args.recapture:
        os.makedirs(args.recapture, exist_ok=True)
        r = subprocess.run([sys.executable, os.path.join(os.path.dirname(
            os.path.abspath(__file__)), "blockfp8_gemm_capture.py"), "--out", args.recapture,
            "--seed", str(args.seed), "--shapes", args.shapes])
        if r.returncode != 0:
            sys.exit("capture failed (exit %d)" % r.returncode)
        caps_dir = args.recapture
    if not caps_dir:
        sys.exit("--caps DIR or --recapture DIR")
    sys.exit(compare(args, caps_dir))


if __name__ == "__main__":
    main()
