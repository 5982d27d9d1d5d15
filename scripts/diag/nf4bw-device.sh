#!/usr/bin/env bash
# Issue 33/37 (branch h/nf4bw), on an H200, after `scripts/device-build.sh exmy_test_gpu
# bench_gpu_quant` has built build-dev/ (the caller builds; this script only runs): the 4-bit
# quantizer with the cell table (bnb4_fused_kernel, 16 elements a thread) against the CPU
# reference, and its speed beside the copy kernel in one process. Writes
#  - $OUT/nf4bw-tests.txt: exmy_test_gpu "[bnb4]" (every byte of the GPU's codes, absmax and
#    dequantized values against the CPU reference: blocks 32..4096, odd sizes, misaligned
#    buffers, special values);
#  - $OUT/nf4bw-bench.txt: bench_gpu_quant copy/fp32 and quant/bnb4/* (fused kernel), 3
#    repetitions, aggregates only (bytes_per_second is the copy-equivalent traffic);
#  - $OUT/nf4bw-bench-two-pass.txt: the same filter with EXMY_BNB4_TWO_PASS=1 (the two-kernel
#    path the fused one is tested against), if time is left;
#  - $OUT/nf4bw-run.txt: the device, the commit and each step's rc and seconds.
# Every step under timeout; under 90 s in all.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/nf4bw-out}
mkdir -p "$OUT"
t0=$(date +%s)
log=$OUT/nf4bw-run.txt
el() { echo "[$(($(date +%s) - t0)) s] $*" >> "$log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader \
  > "$log" 2>&1
git log -1 --format='%H %s' >> "$log" 2>&1
export LD_LIBRARY_PATH=$PWD/.devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
T=build-dev/tests/exmy_test_gpu
B=build-dev/bench/bench_gpu_quant
FILTER='--benchmark_filter=^(copy/fp32|quant/bnb4/.*)(/manual_time)?$'
if [ -x "$T" ]; then
  timeout -k 5 30 "$T" "[bnb4]" > "$OUT/nf4bw-tests.txt" 2>&1
  el "tests [bnb4] rc $?"
else
  el "missing $T"
fi
if [ -x "$B" ]; then
  timeout -k 5 30 "$B" --benchmark_min_time=0.05 "$FILTER" --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true > "$OUT/nf4bw-bench.txt" 2>&1
  el "bench rc $?"
  left=$((85 - ($(date +%s) - t0)))
  if [ $left -gt 10 ]; then
    EXMY_BNB4_TWO_PASS=1 timeout -k 2 $((left - 3)) "$B" --benchmark_min_time=0.05 "$FILTER" \
      > "$OUT/nf4bw-bench-two-pass.txt" 2>&1
    el "bench two-pass rc $?"
  fi
else
  el "missing $B"
fi
el "done"
