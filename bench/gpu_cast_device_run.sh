#!/usr/bin/env bash
# On the GPU machine, from binaries packed by scripts/pack-device-binaries.sh (carry build-carry
# and build-libs): the cast tests, the cast benchmarks with torch's anchors in the same call and
# issue 15's target rows, and the exhaustive 2^32 campaigns. Results under $OUT.
# Usage: bench/gpu_cast_device_run.sh [tests] [bench] [campaign-generic] [campaign-presets]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/build-libs:${LD_LIBRARY_PATH:-}
B=/tmp/b
[ -x $B/exmy ] || { mkdir -p $B && tar xJf build-carry/build-pack.tar.xz -C $B; }
PY=python3
$PY -c 'import torch' 2>/dev/null || PY=/opt/torch/.venv/bin/python
stamp() { echo "=== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/steps.log"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/gpu.txt"
for step in "$@"; do
  case $step in
    tests)
      stamp tests
      $B/exmy_test_gpu "[cast]" 2>&1 | tail -5 | tee "$OUT/test-cast.txt"
      ;;
    tests-all)
      stamp tests-all
      $B/exmy_test_gpu 2>&1 | tail -5 | tee "$OUT/test-gpu.txt"
      $B/exmy_test_properties_gpu 2>&1 | tail -5 | tee "$OUT/test-properties-gpu.txt"
      ;;
    bench)
      stamp bench
      $B/bench_gpu_quant --benchmark_filter="${BENCH_FILTER:-copy|cast|fakequant|quant/tensor/fp32/e4m3fn|quant/amax}" \
        --benchmark_repetitions=3 --benchmark_min_time=0.05 --benchmark_out="$OUT/bench.json" \
        --benchmark_out_format=json > "$OUT/bench.txt" 2>&1
      $PY bench/gpu_quant_torch.py > "$OUT/torch.json" 2> "$OUT/torch.err"
      $PY bench/gpu_cast_targets.py "$OUT/bench.json" "$OUT/torch.json" "$OUT/targets.md" \
        "$OUT/targets.json" | head -60
      ;;
    campaign-generic)
      stamp campaign-generic
      $B/exmy verify-cuda --depth full --formats "${FORMATS:-e8m3,e5m3,e3m4b5}" \
        --modes rne,rtz,sr:8 --out "$OUT/campaign-generic.json" > "$OUT/campaign-generic.txt" 2>&1
      tail -40 "$OUT/campaign-generic.txt"
      ;;
    campaign-presets)
      stamp campaign-presets
      $B/exmy verify-cuda --depth full --out "$OUT/campaign-presets.json" \
        > "$OUT/campaign-presets.txt" 2>&1
      tail -45 "$OUT/campaign-presets.txt"
      ;;
  esac
done
stamp done
