#!/usr/bin/env bash
# Issue 37 (branch h/gemmtile), on an H200: the tiled GEMM emulation kernel against the CPU
# bytes and its speed beside the generic kernel (main's kernel, GemmPath::generic) in one
# process. Builds bench_gemm_emulation, then (while the benchmark runs) exmy_test_gpu, in
# build-dev (scripts/device-build.sh), and writes
#  - $OUT/gemmtile-bench.txt: bench_gemm_emulation --benchmark_min_time=0.05, JSON:
#    products_per_s of generic and auto (tiled) per shape, tiled, mismatches_vs_generic,
#    mismatches_vs_cpu, outputs_vs_cpu;
#  - $OUT/gemmtile-tests.txt: exmy_test_gpu "[gpu][gemm]" (every output byte vs the CPU model);
#  - $OUT/gemmtile-build.txt: the device, the commit, the builds' tails and each step's rc.
# Every step under timeout; at most about 300 s in all with the builds.
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
timeout -k 5 200 scripts/device-build.sh bench_gemm_emulation > /tmp/gemmtile-build1.log 2>&1
el "build bench_gemm_emulation rc $?"
tail -n 25 /tmp/gemmtile-build1.log >> "$log"
( timeout -k 5 $(( 285 - ($(date +%s) - t0) )) scripts/device-build.sh exmy_test_gpu \
    > /tmp/gemmtile-build2.log 2>&1; echo "rc $?" >> /tmp/gemmtile-build2.log ) &
bp=$!
B=build-dev/bench/bench_gemm_emulation
if [ -x "$B" ]; then
  timeout -k 5 60 "$B" --benchmark_min_time=0.05 --benchmark_format=json \
    > "$OUT/gemmtile-bench.txt" 2>&1
  el "bench rc $?"
fi
wait $bp
el "build exmy_test_gpu $(tail -n 1 /tmp/gemmtile-build2.log)"
tail -n 25 /tmp/gemmtile-build2.log >> "$log"
T=build-dev/tests/exmy_test_gpu
if [ -x "$T" ]; then
  left=$(( 295 - ($(date +%s) - t0) ))
  [ $left -lt 15 ] && left=15
  timeout -k 5 $left "$T" "[gpu][gemm]" --durations yes > "$OUT/gemmtile-tests.txt" 2>&1
  el "tests rc $?"
fi
el "done"
