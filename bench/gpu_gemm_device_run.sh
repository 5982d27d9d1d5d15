#!/usr/bin/env bash
# One device call for issue 12's GPU work (run from the repository root on the GPU machine after
# scripts/pack-device-binaries.sh; carry build-libs and build-carry): the GEMM/layer GPU tests,
# the emulation kernel's speed against the CPU reference, the >= 10^6-output comparison with
# cuBLASLt through torch, and `exmy layer --device cuda` against the CPU on the same files.
set -euo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/build-libs:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/b && tar xJf build-carry/build-pack.tar.xz -C /tmp/b
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
echo "== GPU tests: gemm emulation and layers"
/tmp/b/exmy_test_gpu "[gemm],[layer]" 2>&1 | tail -3 | tee "$OUT/gpu_tests.txt"
echo "== emulation kernel vs CPU reference (one core)"
/tmp/b/bench_gemm_emulation | tee "$OUT/bench_gemm_emulation.jsonl"
PY=python3; $PY -c 'import torch' 2>/dev/null || PY=/opt/torch/.venv/bin/python
echo "== exmy layer --device cuda vs cpu"
$PY - <<'PYEOF'
import numpy as np, subprocess, os, sys
r = np.random.default_rng(5)
def bf16(a):
    u = a.astype(np.float32).view(np.uint32)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)
os.makedirs("/tmp/L", exist_ok=True)
np.save("/tmp/L/x.npy", bf16(r.standard_normal((512, 256)) * 2))
np.save("/tmp/L/w.npy", bf16(r.standard_normal((128, 256)) * 0.05))
np.save("/tmp/L/g.npy", bf16(r.standard_normal((512, 128)) * 1e-3))
for kind in ["plain", "switchback", "switchback-m", "switchback-q", "llm-int8", "fp8-tensorwise",
             "switchback-fp8", "masked:e5m2", "masked:e8m5"]:
    outs = []
    for dev in ["cpu", "cuda"]:
        d = "/tmp/L/%s_%s" % (kind.replace(":", "_"), dev)
        subprocess.run(["/tmp/b/exmy", "layer", "--kind", kind, "--x", "/tmp/L/x.npy", "--w",
                        "/tmp/L/w.npy", "--g", "/tmp/L/g.npy", "--out-dir", d, "--accum",
                        "cublas-sm90", "--device", dev], check=True)
        outs.append([open(os.path.join(d, f), "rb").read() for f in ("y.npy", "x_grad.npy", "w_grad.npy")])
    print(kind, "cpu == cuda:", outs[0] == outs[1], flush=True)
PYEOF
echo "== >= 10^6 outputs per type vs cuBLASLt"
$PY bench/peers/gemm_million_check.py /tmp/b/exmy "$OUT/gemm_million.json"
