#!/usr/bin/env bash
# Device call 5 of the session of 2026-12-04: h/int5 = main 66365fa + h/bnb4c (bnb4_fused_kernel
# per block size, the NF4/FP4 cell by one round-down FMA) + h/nvfp4 (nvfp4_kernel: one thread per
# 16-block, no shared memory, the two-level level derived in the kernel): the tree to merge,
# without h/coll2 (rejected in call 4). One xz pack, build-carry-s11/pack.tar.xz:
#   after/   exmy_test_gpu and bench_gpu_quant of h/int5;
#   before/  bench_gpu_quant of main e6693e0 (the same quantizer code as 66365fa);
#   libs/    the shared libraries.
# The changed quantizers' benchmarks only (call 4's full list ran out of time), before then after
# on the idle GPU, then every [gpu][quant] test alone (call 4 ran them beside 16 CLI shards).
set -u
cd "$(dirname "$0")/../.." || exit 1
END=${END:-280}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
mkdir -p /tmp/b && tar xJf build-carry-s11/pack.tar.xz -C /tmp/b
export LD_LIBRARY_PATH=/tmp/b/libs:${LD_LIBRARY_PATH:-}
el "unpacked"
G="--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
F='copy/fp32|quant/bnb4|quant/nvfp4|quant/mx/|quant/amax/fp32/tensor'
for side in before after; do
  # shellcheck disable=SC2086
  D=35 bg_run "qbench_$side" "/tmp/b/$side/bench_gpu_quant" $G "--benchmark_filter=$F"
  wait_jobs
  el "$side bench done"
done
grep -hE "_mean" /tmp/v/qbench_*.log
bg_run t_quant /tmp/b/after/exmy_test_gpu "[gpu][quant]" --durations yes
wait_jobs
el "tests done"
grep -E "FAILED|failed|passed|rc |with expansion" /tmp/v/t_quant.log | head -20
stop_packer
el "all done"
