#!/usr/bin/env bash
# Issue 37 (branch h/gemmtile), on an H200: the tiled GEMM emulation kernel against the CPU
# bytes and its speed beside the generic kernel (the kernel of main, GemmPath::generic) in one
# process. Builds exmy_test_gpu and bench_gemm_emulation (build-dev), then
#  - $OUT/gemmtile-tests.txt: exmy_test_gpu "[gpu][gemm]" (every output byte vs the CPU model);
#  - $OUT/gemmtile-bench.txt: bench_gemm_emulation, JSON: products_per_s of generic and auto
#    (tiled) per shape, tiled, mismatches_vs_generic, mismatches_vs_cpu, outputs_vs_cpu;
#  - $OUT/gemmtile-build.txt: the device, the build's tail and the steps' exit codes.
# Every step under timeout; about 300 s in all with the build.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gemmtile-out}
mkdir -p "$OUT"
t0=$(date +%s)
log=$OUT/gemmtile-build.txt
el() { echo "[$(( $(date +%s) - t0 )) s] $*" >> "$log"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader > "$log" 2>&1
git log -1 --format='%H %s' >> "$log" 2>&1
export LD_LIBRARY_PATH=$PWD/.devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
timeout -k 5 190 scripts/device-build.sh exmy_test_gpu bench_gemm_emulation > /tmp/gemmtile-build.log 2>&1
el "build rc $?"
tail -n 40 /tmp/gemmtile-build.log >> "$log"
T=build-dev/tests/exmy_test_gpu
B=build-dev/bench/bench_gemm_emulation
if [ -x "$B" ]; then
  timeout -k 5 50 "$B" --benchmark_min_time=0.05 --benchmark_format=json \
    > "$OUT/gemmtile-bench.txt" 2>&1
  el "bench rc $?"
fi
if [ -x "$T" ]; then
  left=$(( 290 - ($(date +%s) - t0) ))
  [ $left -lt 20 ] && left=20
  timeout -k 5 $left "$T" "[gpu][gemm]" --durations yes > "$OUT/gemmtile-tests.txt" 2>&1
  el "tests rc $?"
fi
el "done"
