#!/usr/bin/env bash
# Device call of the session of 2026-12-03 afternoon on the merged tree (main at 5bbdc23: h/colB,
# h/tile16 and h/q37 merged), one xz pack in build-carry-s10/pack.tar.xz:
#   after/   exmy_test_gpu and bench_gpu_quant of the merged tree;
#   before/  bench_gpu_quant of h/tile16 alone, whose kernels other than the tile quantizers are
#            main's before the merges (the same-call "before" of the colB and q37 paths);
#   libs/    the shared libraries the binaries need.
# Benchmarks first, one binary at a time beside copy/fp32 in the same process (GPU otherwise
# idle), then every [gpu][quant] test of the merged tree.
set -u
cd "$(dirname "$0")/../.."
END=${END:-330}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
mkdir -p /tmp/b && tar xJf build-carry-s10/pack.tar.xz -C /tmp/b
export LD_LIBRARY_PATH=/tmp/b/libs:${LD_LIBRARY_PATH:-}
el "unpacked"
G="--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
F='copy/fp32|quant/(colwise|rowwise|transpose|tensor|mx/|nvfp4|amax/fp32|block4096)'
# shellcheck disable=SC2086
D=70 bg_run bench_before /tmp/b/before/bench_gpu_quant $G --benchmark_filter="$F"
wait_jobs
el "before bench done"
# shellcheck disable=SC2086
D=90 bg_run bench_after /tmp/b/after/bench_gpu_quant $G --benchmark_filter="$F|quant/tile"
wait_jobs
el "after bench done"
grep -E "_mean" /tmp/v/bench_*.log
bg_run t_quant /tmp/b/after/exmy_test_gpu "[gpu][quant]"
wait_jobs
el "tests done"
grep -E "FAILED|failed|passed|rc |with expansion" /tmp/v/t_quant.log | head -30
stop_packer
el "all done"
