#!/usr/bin/env bash
# On the GPU machine: the same GPU benchmarks from two builds (BEFORE and AFTER packs of
# scripts/pack-device-binaries.sh), alternated ROUNDS times in one call so both see the same card,
# clocks and temperature; then bench/compare_gbench.py prints AFTER/BEFORE per benchmark (median
# of the per-round medians) and flags any more than 5% slower. Writes $OUT/{before,after}-*.json.
#   bench/gpu_before_after.sh BEFORE AFTER [ROUNDS] [BENCHES]     (each a .tar.xz pack or a directory)
# BENCHES defaults to "bench_gpu_quant bench_optim_gpu bench_gemm_emulation".
set -uo pipefail
before=$1
after=$2
rounds=${3:-2}
benches=${4:-"bench_gpu_quant bench_optim_gpu bench_gemm_emulation"}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/ba/before /tmp/ba/after
# A pack (tar.xz) is unpacked; a directory of binaries is used as it is.
for side in before after; do
  src=${!side}
  if [ -d "$src" ]; then
    cp "$src"/* "/tmp/ba/$side/"
  else
    tar xJf "$src" -C "/tmp/ba/$side"
  fi
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
for r in $(seq 1 "$rounds"); do
  for side in before after; do
    for b in $benches; do
      [ -x "/tmp/ba/$side/$b" ] || { echo "missing $side/$b"; continue; }
      "/tmp/ba/$side/$b" --benchmark_min_time=0.05 --benchmark_repetitions=3 \
        --benchmark_report_aggregates_only=true --benchmark_out="$OUT/$side-$b-r$r.json" \
        --benchmark_out_format=json > "$OUT/$side-$b-r$r.log" 2>&1 ||
        echo "$side $b round $r: exit $?"
    done
  done
done
python3 "$(dirname "$0")/compare_gbench.py" "$OUT" | tee "$OUT/compare.txt"
