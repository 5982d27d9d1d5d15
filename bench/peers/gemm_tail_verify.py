"""The nvjet split-K GEMMs cuBLAS leaves short, with random operands (issue 30;
bench/results/2026-12-02-h200-cublas-short-gemms.md). Run on the GPU machine:
    python3 bench/peers/gemm_tail_verify.py --out DIR [--exmy build-dev/cli/exmy]
Per case (type, M, N, K; 6 of the scan's 215 short GEMMs and, for the converse, the K around
two of them): A (M x K) and B (N x K) standard normal from numpy seed 20261204 + case index,
rounded to the type; both outputs (the type's own and fp32, tools/gemm_launch.py's mm) and their
launches. With --exmy: per output, exmy's bytes under the rule's part P = 64 ceil(ceil(K/S)/64)
on all K and under q = 64 ceil(floor(K/S)/64) on the first S q k (SEMANTICS 15.6: cuBLAS's
result there if it drops k >= S q), each compared with cuBLAS's (mismatching outputs). Writes
DIR/tail_verify.json (versions, seeds, per case and output: kernels, S, q, P, mismatches, the
sha256 of the output bytes) and one line per case. Needs torch, numpy and tools/gemm_launch.py.
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))

SEED = 20261204
SHORT = [("fp16", 4, 8, 11528), ("bf16", 1, 8, 16136), ("fp16", 8, 8, 13448),
         ("bf16", 6, 144, 12680), ("fp16", 1, 48, 15368), ("bf16", 96, 80, 15560)]
# The converse: K around two short ones (which are short, which kernel runs there).
NEAR = [("fp16", 4, 8, k) for k in range(11520, 11537)] + \
       [("bf16", 96, 80, k) for k in (15552, 15556, 15560, 15564, 15568)]


def tiles(name, M, N):
    m = re.search(r"_(\d+)x(\d+)_\d+x\d+_(\d+)x(\d+)_", name)
    if not m:
        return None
    a, b, cx, cy = map(int, m.groups())
    cd = lambda x, y: -(-x // y)  # noqa: E731
    return cx * cd(cd(N, a), cx) * cy * cd(cd(M, b), cy)


def exmy_mm(exmy, d, t, a, b, model, out):
    import numpy as np
    np.save(os.path.join(d, "a.npy"), a)
    np.save(os.path.join(d, "b.npy"), b)
    r = subprocess.run([exmy, "gemm", "--a", d + "/a.npy", "--b", d + "/b.npy", "--a-format", t,
                        "--b-format", t, "--out-format", out, "--accum", model, "--out",
                        d + "/c.npy"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    c = np.load(d + "/c.npy")
    return c.view(np.uint32) if c.dtype == np.float32 else c.view(np.uint16)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--exmy", default="")
    p.add_argument("--device", default="cuda")
    args = p.parse_args()
    import numpy as np
    import torch
    import gemm_launch as gl
    os.makedirs(args.out, exist_ok=True)
    dev = args.device
    info = gl.info_block() if dev == "cuda" else {"device": "cpu (smoke test)"}
    dts = {"bf16": torch.bfloat16, "fp16": torch.float16}
    res = {"info": info, "seed": SEED, "cases": []}
    with tempfile.TemporaryDirectory() as d:
        for i, (t, M, N, K) in enumerate(SHORT + NEAR):
            rng = np.random.default_rng(SEED + i)
            a = torch.from_numpy(rng.standard_normal((M, K), dtype=np.float32)).to(dev, dts[t])
            b = torch.from_numpy(rng.standard_normal((N, K), dtype=np.float32)).to(dev, dts[t])
            ones = torch.mm(torch.ones_like(a), torch.ones_like(b).t(),
                            out_dtype=torch.float32) if dev == "cuda" else None
            launch = gl.launch_chunk(t, [(M, N, K)])[0] if dev == "cuda" else [None, None]
            e = {"type": t, "M": M, "N": N, "K": K,
                 "ones_min": float(ones.min()) if ones is not None else None, "outs": {}}
            codes = lambda x: x.cpu().view(torch.int16).numpy().view(np.uint16)  # noqa: E731
            for o, ks in zip(gl.outs_of(t), launch):
                c = gl.mm(t, a, b, o) if dev == "cuda" else (a.float() @ b.float().t()).to(
                    torch.float32 if o == "fp32" else dts[t])
                cb = c.cpu().contiguous().numpy().view(np.uint32) if o == "fp32" else codes(c)
                oe = {"kernels": ks, "sha256": hashlib.sha256(cb.tobytes()).hexdigest()}
                nv = [k for k in (ks or []) if k[0].startswith("nvjet_sm90_")]
                T = tiles(nv[0][0], M, N) if nv else None
                if T:
                    g = nv[0][1]
                    S = g[0] * g[1] * g[2] // T
                    q = 64 * -(-(K // S) // 64)
                    P = 64 * -(-(-(-K // S)) // 64)
                    oe.update(S=S, q=q, P=P)
                    if args.exmy and any("splitKreduce" in k[0] for k in ks):
                        A, B = codes(a), codes(b)
                        full = exmy_mm(args.exmy, d, t, A, B, "hw:k=16,frac=25,chunk=%d" % P, o)
                        cut = exmy_mm(args.exmy, d, t, np.ascontiguousarray(A[:, :S * q]),
                                      np.ascontiguousarray(B[:, :S * q]),
                                      "hw:k=16,frac=25,chunk=%d" % q, o)
                        oe["mismatch_rule"] = int((full.ravel() != cb.ravel()).sum())
                        oe["mismatch_first_Sq"] = int((cut.ravel() != cb.ravel()).sum())
                e["outs"][o] = oe
            res["cases"].append(e)
            print("%s %dx%dx%d: ones min %s; %s" % (t, M, N, K, e["ones_min"], "; ".join(
                "%s %s S %s q %s P %s rule %s first-Sq %s" % (
                    o, ((v["kernels"] or [[None]])[0][0] or "?")[:48], v.get("S"), v.get("q"),
                    v.get("P"), v.get("mismatch_rule"), v.get("mismatch_first_Sq"))
                for o, v in e["outs"].items())), flush=True)
    with open(os.path.join(args.out, "tail_verify.json.tmp"), "w") as f:
        json.dump(res, f)
    os.replace(os.path.join(args.out, "tail_verify.json.tmp"),
               os.path.join(args.out, "tail_verify.json"))


if __name__ == "__main__":
    main()
