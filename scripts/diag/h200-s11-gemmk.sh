#!/usr/bin/env bash
# Device call for h/gemmk (issue 37: bf16 tall-K GEMM emulation to >= 5e11 products/s). The lead
# has unpacked, LD_LIBRARY_PATH=/tmp/b/libs set:
#   /tmp/b/after/   exmy_test_gpu and bench_gemm_emulation of h/gemmk (the branch-free group
#                   tail, the truncating kernel, 32 x 32 tiles where 64 x 64 leave SMs idle,
#                   the device scratch kept between calls);
#   /tmp/b/before/  bench_gemm_emulation of main.
# The GEMM benchmarks' tiled rows (auto, auto_int; each row also counts its mismatches against
# the generic kernel and the CPU model) of both trees one after the other on an otherwise idle
# GPU (at most 30 s each), then the [gpu][gemm] tests of h/gemmk (at most 55 s). Under 120 s.
set -u
cd "$(dirname "$0")/../.." || exit 1
END=${END:-125}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
G="--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
for side in before after; do
  # shellcheck disable=SC2086
  D=30 bg_run "bench_$side" "/tmp/b/$side/bench_gemm_emulation" $G \
    --benchmark_filter='copy/fp32|gemm_cublas_sm90/.*/auto'
  wait_jobs
  el "$side bench done"
done
grep -E "_mean" /tmp/v/bench_*.log
D=55 bg_run t_gemm /tmp/b/after/exmy_test_gpu "[gpu][gemm]" --durations yes
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do echo "=== $f"; grep -E "FAILED|failed|passed|rc |with expansion" "$f" | head -20; done
stop_packer
el "all done"
