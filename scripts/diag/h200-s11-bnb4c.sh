#!/usr/bin/env bash
# Device call for h/bnb4c (issue 33, second attempt: bitsandbytes NF4/FP4 with 16-bit inputs to
# >= 0.85 of copy inside bnb4_fused_kernel): the kernel specialised by block size (unrolled
# shuffles, one barrier a step with two alternating sets of partials), every tile's maximum
# before any code (all 8 16-byte loads of a step issued up front; 16-bit maxima by max.f16x2 /
# max.bf16x2), and a cell table of one FFMA.RM a code (FP4's sign in the table, NaN folded onto
# the code-0 cell by the 32-bit address): 7 instructions a code for NF4 and FP4 alike.
# The lead unpacks beforehand and sets LD_LIBRARY_PATH=/tmp/b/libs:
#   /tmp/b/after/   exmy_test_gpu and bench_gpu_quant of h/bnb4c;
#   /tmp/b/before/  bench_gpu_quant of main (e6693e0).
# The bnb4 benchmarks beside copy/fp32, before then after in their own processes on the otherwise
# idle GPU, then every [gpu][quant] test (the [bnb4] cases among them: the device's cell table
# on its whole domain, every block size on full steps, unaligned and odd inputs). About 100 s.
set -u
cd "$(dirname "$0")/../.." || exit 1
END=${END:-150}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
el "start"
G="--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
QF='copy/fp32|quant/bnb4'
for side in before after; do
  # shellcheck disable=SC2086
  D=30 bg_run "qbench_$side" "/tmp/b/$side/bench_gpu_quant" $G "--benchmark_filter=$QF"
  wait_jobs
  el "$side bench done"
done
grep -hE "_mean" /tmp/v/qbench_*.log
D=80 bg_run t_quant /tmp/b/after/exmy_test_gpu "[gpu][quant]" --durations yes
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do
  echo "=== $f"
  grep -E "FAILED|failed|passed|rc |with expansion|bnb 4-bit" "$f" | head -30
done
stop_packer
el "all done"
