"""Which k meet k = 0 inside the tensor-core sum, and which only in an fp32 add? (issue 12 probe)

Designed inputs (FPRev-style): A = 1 everywhere; row j of B has a large term H at k = 0 and a
small term s at k = k_j, zeros elsewhere, so C[0, j] = H + s computed by the library. Inside one
fused tensor-core unit the small term is truncated (toward zero, to the unit's fraction bits)
and the sum normalised toward zero; across units (promotion chunks, split-K parts) the partial
sums meet in an fp32 add that rounds to nearest. H and s are chosen so that the two give
different fp32 results; each k_j is then classified "fused" or "fp32 add".

python3 bench/peers/gemm_probe_units.py OUT.json     (on the GPU machine)
"""
import json
import sys

import torch


def probe(dtype_name, M, N, K, stride):
    dev = "cuda"
    ks = [stride * j for j in range(1, N)]
    ks = [k for k in ks if k < K][: N - 1]
    n = len(ks) + 1
    if dtype_name == "fp8":
        H, s = 256.0, 0.046875  # e8m13 unit: 256 + 2^-5 (truncated); fp32 add: 256.046875
        a = torch.ones(M, K, device=dev).to(torch.float8_e4m3fn)
        b = torch.zeros(n, K, device=dev)
        b[:, 0] = H
        for j, k in enumerate(ks, start=1):
            b[j, k] = s
        b = b.to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device=dev)
        c = torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.float32)
        fused, added = 256.03125, 256.046875
    else:
        H, s = 2.0 ** 24, 3.0  # fused (RZ, 23 bits): 2^24 + 2; fp32 add (RNE): 2^24 + 4
        fused, added = H + 2, H + 4
        if dtype_name == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
            dt = torch.float32
        else:
            dt = torch.bfloat16 if dtype_name == "bf16" else torch.float16
            if dtype_name == "fp16":
                # s = 1.5 fp32 ulps of 2048: fused (RZ) 2048 + 2^-12, fp32 add (RNE, tie to
                # even) 2048 + 2^-11.
                H, s = 2048.0, 3.0 * 2 ** -13
                fused, added = 2048.0 + 2.0 ** -12, 2048.0 + 2.0 ** -11
        a = torch.ones(M, K, device=dev, dtype=dt)
        b = torch.zeros(n, K, device=dev, dtype=torch.float32)
        b[:, 0] = H
        for j, k in enumerate(ks, start=1):
            b[j, k] = s
        b = b.to(dt)
        try:
            c = torch.mm(a, b.t(), out_dtype=torch.float32) if dt != torch.float32 else \
                torch.mm(a, b.t())
        except TypeError:
            return {"dtype": dtype_name, "shape": [M, N, K], "error": "torch.mm has no out_dtype"}
        torch.backends.cuda.matmul.allow_tf32 = False
    row = c[0].double().cpu().tolist()
    res = {}
    for j, k in enumerate(ks, start=1):
        v = row[j]
        res[k] = "fused" if v == fused else "fp32 add" if v == added else "other %r" % v
    return {"dtype": dtype_name, "shape": [M, N, K], "stride": stride, "H": H, "s": s,
            "k0_only": row[0], "units": res}


def main(out):
    cases = []
    for dt in ("fp8", "bf16", "fp16", "tf32"):
        for (M, N, K, stride) in ((64, 64, 512, 8), (64, 64, 4096, 64), (128, 64, 8192, 128),
                                  (32, 32, 16384, 512)):
            cases.append(probe(dt, M, N, K, stride))
    info = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "cases": cases}
    json.dump(info, open(out, "w"), indent=1)
    for c in cases:
        if "error" in c:
            print(c["dtype"], c["shape"], c["error"])
            continue
        runs, prev, start = [], None, None
        for k, v in c["units"].items():
            if v != prev:
                if prev is not None:
                    runs.append("%s..%s: %s" % (start, last, prev))
                prev, start = v, k
            last = k
        runs.append("%s..%s: %s" % (start, last, prev))
        print(c["dtype"], c["shape"], "stride", c["stride"], "|", "; ".join(runs))


if __name__ == "__main__":
    main(sys.argv[1])
