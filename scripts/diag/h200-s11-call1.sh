#!/usr/bin/env bash
# Device call 1 of the session of 2026-12-04: h/tile16b's 1x128 kernel (8 tiles per 16-lane group
# for 16-bit inputs, fix-ups after the pass), applied to main b6b063f from h/tile16b's patch
# (03303bf). One xz pack, build-carry-s11/pack.tar.xz:
#   after/   exmy_test_gpu and bench_gpu_quant of main + the patch;
#   before/  bench_gpu_quant of main b6b063f (the tree verified on 2026-12-03 at 12:24);
#   libs/    the shared libraries.
# The tile benchmarks of both beside copy/fp32 (GPU otherwise idle), then every [gpu][quant] test
# and, beside it, the other GPU tests (their reference is the CPU engine h/rtime changed, not yet
# run under them on a GPU).
set -u
cd "$(dirname "$0")/../.."
END=${END:-300}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
mkdir -p /tmp/b && tar xJf build-carry-s11/pack.tar.xz -C /tmp/b
export LD_LIBRARY_PATH=/tmp/b/libs:${LD_LIBRARY_PATH:-}
el "unpacked"
G="--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
for side in before after; do
  # shellcheck disable=SC2086
  D=45 bg_run "bench_$side" "/tmp/b/$side/bench_gpu_quant" $G --benchmark_filter='copy/fp32|quant/tile'
  wait_jobs
  el "$side bench done"
done
grep -E "_mean" /tmp/v/bench_*.log
bg_run t_quant /tmp/b/after/exmy_test_gpu "[gpu][quant]"
bg_run t_other /tmp/b/after/exmy_test_gpu "[gpu]~[quant]"
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do echo "=== $f"; grep -E "FAILED|failed|passed|rc |with expansion" "$f" | head -20; done
stop_packer
el "all done"
