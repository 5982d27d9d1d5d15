#!/usr/bin/env bash
# Device call of the tile fast-path session (bench/results/2026-12-03-h200-tile.md): the tile GPU
# tests, then the tile benchmarks with copy/fp32 in the same process. Run from the repo root of
# the device copy: bash build-carry-tile/h200-tile-call.sh. The carry holds one of the two binaries
# (the 64 MiB limit with the tracked tree): the tests or the benchmark, whichever was packed.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/build-libs:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/b && tar xJf build-carry-tile/build-pack.tar.xz -C /tmp/b
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/device.txt"
nvcc --version 2>/dev/null | tail -2 >> "$OUT/device.txt"
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' >> "$OUT/device.txt" 2>&1
if [ -x /tmp/b/exmy_test_gpu ]; then
/tmp/b/exmy_test_gpu "[block2d],[nvfp4_2d]" > "$OUT/test-tile.txt" 2>&1
echo "test rc $?" >> "$OUT/test-tile.txt"
tail -4 "$OUT/test-tile.txt"
fi
[ -x /tmp/b/bench_gpu_quant ] || exit 0
/tmp/b/bench_gpu_quant --benchmark_filter='copy/fp32|quant/tile' --benchmark_min_time=0.05 \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true > "$OUT/bench-tile.txt" 2>&1
echo "bench rc $?" >> "$OUT/bench-tile.txt"
grep -E "mean|rc" "$OUT/bench-tile.txt"
