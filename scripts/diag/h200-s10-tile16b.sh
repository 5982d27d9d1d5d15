#!/usr/bin/env bash
# Device call 2 of the session of 2026-12-03 afternoon (refused, so the merge was reverted; the
# patch of h/tile16b ran in the call of 2026-12-04, scripts/diag/h200-s11-call1.sh, and is 03303bf):
# main at f6e759f (h/tile16b merged: the
# 1x128 fast tile kernel with 8 tiles per group for 16-bit inputs, fix-ups after the pass; h/rtime
# merged: the CPU reference's quantize over group runs). One xz pack, build-carry-s10/pack.tar.xz:
#   after/   exmy_test_gpu and bench_gpu_quant of this tree;
#   before/  bench_gpu_quant of 5bbdc23 (the tree of call 1: h/tile16's tile kernels);
#   libs/    the shared libraries.
# The tile benchmarks of both beside copy/fp32 (GPU otherwise idle), then every [gpu][quant] test
# and, beside it, the other GPU tests (their reference is the CPU engine h/rtime changed).
set -u
cd "$(dirname "$0")/../.."
END=${END:-300}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
mkdir -p /tmp/b && tar xJf build-carry-s10/pack.tar.xz -C /tmp/b
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
