"""Launch records of torch._scaled_mm's blockwise-scaled FP8 GEMMs (the capture of
bench/peers/blockfp8_splitk_capture.py) into exmy's compiled-in H200 launch records
(golden/profiles/sm90/cublaslt-h200-launch.json; docs/SEMANTICS.md 15.6, 15.7):

    python3 bench/peers/blockfp8_splitk_records.py --caps DIR [--profile PATH]

Each captured (shape, pair, output) becomes a record "e4m3fn:PAIR>OUT": [M, N, K, kernel, S]
with tools/gemm_launch.py's record_of (nvjet: S is the CTA count; the reduction that followed).
The trace's kernels after the GEMM's own (torch's fills and copies of the next case's inputs)
are dropped: only nvjet and cublasLt kernels belong to the call. The H100 holds no such records,
so in the delta they are GEMMs its base lacks ("new"). Refused if the capture's device, driver,
torch, CUDA or cuBLAS differ from the profile's info. Written atomically.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
from gemm_launch import dumps_delta, record_of  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--caps", required=True)
    p.add_argument("--profile", default=os.path.join(HERE, "..", "..", "golden", "profiles",
                                                     "sm90", "cublaslt-h200-launch.json"))
    args = p.parse_args()
    meta = json.load(open(os.path.join(args.caps, "splitk.json")))
    prof = json.load(open(args.profile))
    L = prof["launch"]
    info = L["info"]
    for k in ("device", "driver", "torch", "cuda", "cublas"):
        if str(info[k]) != str(meta[k]):
            sys.exit("%s: the capture's %s is %r, the profile's %r" % (args.caps, k, meta[k],
                                                                       info[k]))
    kernels = [tuple(k) for k in L["kernels"]]
    added = 0
    for e in meta["cases"]:
        ks = [k[:3] for k in e.get("kernels") or []
              if k[0].startswith("nvjet") or "cublasLt::" in k[0]]
        if not ks:
            continue
        fam, key, red, S = record_of(ks)
        if (fam, key, red) not in kernels:
            kernels.append((fam, key, red))
        M, N, K = e["shape"]
        io = "e4m3fn:%s>%s" % (e["pair"], e["out"])
        rec = [M, N, K, kernels.index((fam, key, red)), S]
        flat = L["records"].setdefault(io, [])
        groups = [flat[i:i + 5] for i in range(0, len(flat), 5)]
        same = [g for g in groups if g[:3] == rec[:3]]
        if same and same[0] != rec:
            sys.exit("%s %dx%dx%d: recorded as %s already, captured %s" % (io, M, N, K, same[0],
                                                                           rec))
        if not same:
            flat.extend(rec)
            added += 1
    L["kernels"] = [list(k) for k in kernels]
    L["base"]["new"] = L["base"].get("new", 0) + added
    src = "bench/peers/blockfp8_splitk_capture.py (torch._scaled_mm blockwise FP8, seed %d)" % (
        meta["seed"])
    if src not in info.get("source", ""):
        info["source"] = info.get("source", "") + "; + " + src + ", 2026-12-02"
    tmp = args.profile + ".tmp"
    with open(tmp, "w") as f:
        f.write(dumps_delta(prof))  # the layout tools/gemm_launch.py --base writes
    os.replace(tmp, args.profile)
    print("%d records added to %s" % (added, args.profile))


if __name__ == "__main__":
    main()
