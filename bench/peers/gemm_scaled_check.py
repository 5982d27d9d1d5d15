"""Where torch._scaled_mm applies FP8 scales on an H100: per-tensor scales (cuBLASLt) and
row-wise scales (torch's CUTLASS row-wise kernel, bf16 out), against `exmy gemm --accum
cublas-sm90 --device cuda` with each epilogue order exmy models (SEMANTICS 15.1). Run on the GPU
machine: python3 bench/peers/gemm_scaled_check.py EXMY OUT.json
Scales are random non-powers of two (2^u * (1 + f), u in [-3, 3]); inputs N(0, 1) cast to e4m3fn.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch


def main(exmy, out):
    torch.manual_seed(20261127)
    dev = "cuda"
    tmp = tempfile.mkdtemp()
    rows = []
    for (M, N, K) in ((256, 128, 1024), (128, 64, 4096), (64, 32, 8192), (64, 128, 256)):
        a = torch.randn(M, K, device=dev).to(torch.float8_e4m3fn)
        b = torch.randn(N, K, device=dev).to(torch.float8_e4m3fn)
        np.save(os.path.join(tmp, "a.npy"), a.view(torch.uint8).cpu().numpy())
        np.save(os.path.join(tmp, "b.npy"), b.view(torch.uint8).cpu().numpy())

        def scales(n):
            u = torch.randint(-3, 4, (n,), device=dev).float()
            return (2.0 ** u) * (1.0 + torch.rand(n, device=dev))

        for kind in ("tensor-fp32", "tensor-bf16", "rowwise-bf16"):
            if kind.startswith("tensor"):
                sa, sb = scales(1), scales(1)
                od = torch.float32 if kind.endswith("fp32") else torch.bfloat16
                c = torch._scaled_mm(a, b.t(), scale_a=sa.reshape(()), scale_b=sb.reshape(()),
                                     out_dtype=od)
                sa_rows = sa.repeat(M)
                sb_cols = sb.repeat(N)
            else:
                sa_rows, sb_cols = scales(M), scales(N)
                od = torch.bfloat16
                try:
                    c = torch._scaled_mm(a, b.t(), scale_a=sa_rows.reshape(M, 1),
                                         scale_b=sb_cols.reshape(1, N), out_dtype=od)
                except Exception as e:
                    rows.append({"shape": [M, N, K], "kind": kind, "error": str(e)[:200]})
                    continue
            np.save(os.path.join(tmp, "sa.npy"), sa_rows.cpu().numpy())
            np.save(os.path.join(tmp, "sb.npy"), sb_cols.cpu().numpy())
            want = (c.cpu().numpy().view(np.uint32) if od == torch.float32 else
                    c.view(torch.int16).cpu().numpy().view(np.uint16).astype(np.uint32))
            of = "fp32" if od == torch.float32 else "bf16"
            result = {"shape": [M, N, K], "kind": kind, "outputs": int(want.size)}
            variants = [("rows-" + o, ["--scale-a-rows", os.path.join(tmp, "sa.npy"),
                                       "--scale-b-rows", os.path.join(tmp, "sb.npy"),
                                       "--scale-order", o])
                        for o in ("a-first", "b-first", "product")]
            if kind.startswith("tensor"):
                variants.append(("alpha", ["--scale-a", repr(float(sa[0])),
                                           "--scale-b", repr(float(sb[0]))]))
            for name, extra in variants:
                pc = os.path.join(tmp, "c.npy")
                if os.path.exists(pc):
                    os.remove(pc)
                subprocess.run([exmy, "gemm", "--a", os.path.join(tmp, "a.npy"), "--b",
                                os.path.join(tmp, "b.npy"), "--a-format", "e4m3fn",
                                "--b-format", "e4m3fn", "--out-format", of, "--accum",
                                "cublas-sm90", "--device", "cuda", "--out", pc] + extra,
                               check=True)
                got = np.load(pc)
                got = got.view(np.uint32) if got.dtype == np.float32 else got.astype(np.uint32)
                result[name] = int((got != want).sum())
            print(json.dumps(result), flush=True)
            rows.append(result)
    with open(out + ".tmp", "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "rows": rows}, f, indent=1)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
