"""A random-shape capture (gemm_kernel_select_capture.py) as a small JSON for the repository:
per type the capture's info, the distinct kernel names, and per shape M, N, K, the input
checksums, the kernels (indices into the names), the restart scan and the SHA-256 of each
output's codes (so that a new capture can be compared bit for bit without the 10 MB arrays).

    python3 bench/peers/gemm_kernel_select_digest.py CAPTURE_DIR OUT.json
"""
import hashlib
import json
import os
import sys

import numpy as np


def main():
    cap, out = sys.argv[1], sys.argv[2]
    res = {}
    for t in ("bf16", "fp16", "tf32", "fp32", "e4m3fn"):
        path = os.path.join(cap, t + ".npz")
        if not os.path.exists(path):
            continue
        d = np.load(path)
        meta = json.loads(str(d["meta"]))
        names = []
        offs = {o: 0 for o in meta["outs"]}
        rows = []
        for e in meta["entries"]:
            n = e["M"] * e["N"]
            r = {k: e[k] for k in ("i", "M", "N", "K", "sum_a", "sum_b")}
            r["kernels"] = {}
            for o in meta["outs"]:
                ks = []
                for k in e["kernels"][o]:
                    if k not in names:
                        names.append(k)
                    ks.append(names.index(k))
                r["kernels"][o] = ks
                arr = d["out_" + o][offs[o]:offs[o] + n]
                offs[o] += n
                r["sha256_" + o] = hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()
            if "restarts" in e:
                rs = e["restarts"]
                r["restarts"] = ("none" if not rs else "every k" if rs == list(range(1, e["K"]))
                                 else rs)
            rows.append(r)
        res[t] = {"info": meta["info"], "outs": meta["outs"], "kernel_names": names,
                  "shapes": rows}
    with open(out, "w") as f:
        json.dump(res, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
