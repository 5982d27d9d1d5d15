#!/usr/bin/env bash
# Device call for h/nvfp4 (issue 37: the NVFP4 quantize pass, one- and two-level, by its own
# kernel, gpu/quant/detail_nvfp4.cuh). The lead unpacks the binaries and sets LD_LIBRARY_PATH
# (=/tmp/b/libs) before this runs:
#   /tmp/b/after/   exmy_test_gpu and bench_gpu_quant of h/nvfp4;
#   /tmp/b/before/  bench_gpu_quant of main (the branch's base).
# The NVFP4, MX and tensor-absmax benchmarks of both beside copy/fp32 (GPU otherwise idle), then
# every [gpu][quant] test of h/nvfp4 (the new ones: tests/gpu/quantize_nvfp4_test.cpp). About
# 2 x 30 s of benchmarks and under 60 s of tests.
set -u
cd "$(dirname "$0")/../.." || exit 1
END=${END:-120}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
el "start"
G="--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
F='copy/fp32|quant/amax/fp32/tensor|quant/nvfp4|quant/mx/'
for side in before after; do
  # shellcheck disable=SC2086
  D=30 bg_run "bench_$side" "/tmp/b/$side/bench_gpu_quant" $G --benchmark_filter="$F"
  wait_jobs
  el "$side bench done"
done
grep -E "_mean" /tmp/v/bench_*.log
bg_run t_quant /tmp/b/after/exmy_test_gpu "[gpu][quant]"
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do echo "=== $f"; grep -E "FAILED|failed|passed|rc |with expansion|seed" "$f" | head -30; done
stop_packer
el "all done"
