#!/usr/bin/env bash
# On the GPU machine: build the GPU targets, run the GPU tests and properties, the benchmarks
# (with the torch baselines) and the exhaustive cast campaign; logs and results under $OUT.
# Usage: bench/gpu_device_run.sh [build] [tests] [bench] [campaign-ci] [campaign-full]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
B=build-dev
stamp() { echo "=== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/steps.log"; }
for step in "$@"; do
  case $step in
    build)
      stamp build
      nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
      scripts/device-build.sh exmy_gpu > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
      cmake --build $B -j16 --target exmy_test_gpu exmy_test_properties_gpu exmy bench_gpu_quant \
        >> "$OUT/build.log" 2>&1 || { grep -B2 -A8 -m5 "error" "$OUT/build.log"; exit 1; }
      ;;
    tests)
      stamp tests
      $B/tests/exmy_test_gpu 2>&1 | tail -40 | tee "$OUT/tests.log"
      stamp properties
      $B/properties/exmy_test_properties_gpu 2>&1 | tail -40 | tee "$OUT/properties.log"
      ;;
    bench)
      stamp bench
      $B/bench/bench_gpu_quant --benchmark_repetitions=3 --benchmark_min_time=0.2s \
        --benchmark_out="$OUT/bench.json" --benchmark_out_format=json > "$OUT/bench.txt" 2>&1 ||
        tail -20 "$OUT/bench.txt"
      stamp torch
      PYTHONUNBUFFERED=1 python3 bench/gpu_quant_torch.py > "$OUT/torch.json" 2> "$OUT/torch.err" ||
        tail -5 "$OUT/torch.err"
      python3 bench/gpu_quant_report.py "$OUT/bench.json" "$OUT/torch.json" "$OUT/quant.md"
      ;;
    campaign-ci)
      stamp campaign-ci
      $B/cli/exmy verify --device cuda --depth ci --out "$OUT/campaign-ci.md" > /dev/null
      echo "exit $?"; cat "$OUT/campaign-ci.md"
      ;;
    campaign-full)
      stamp campaign-full
      $B/cli/exmy verify --device cuda --depth full --out "$OUT/campaign-full.md" > /dev/null \
        2> "$OUT/campaign-full.progress"
      echo "exit $?"; cat "$OUT/campaign-full.md"
      ;;
  esac
done
stamp done
