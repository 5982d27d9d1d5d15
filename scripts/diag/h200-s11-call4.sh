#!/usr/bin/env bash
# Device call 4 of the session of 2026-12-04: h/int4 = main f9ab28a + h/coll2 (column-wise and
# transpose + row-wise int8 in L2-sized bands: one cooperative kernel, each band's second read from
# L2) + h/bnb4c (bnb4_fused_kernel specialised per block size, the NF4/FP4 cell as the bit pattern
# of one round-down FMA) + h/nvfp4 (nvfp4_kernel: one thread per 16-block, no shared memory, the
# two-level level derived in the kernel). One xz pack, build-carry-s11/pack.tar.xz:
#   after/   exmy_test_gpu, bench_gpu_quant and exmy of h/int4;
#   before/  bench_gpu_quant of main e6693e0;
#   libs/    the shared libraries.
# Every bench_gpu_quant benchmark of both trees one after the other (GPU otherwise idle), then
# every [gpu][quant] test, and the three step-CLI cases over the whole optimizer registry in 8
# shards each (call 3's deadline cut two shards of the first, and its script's comma split the
# name of the second).
set -u
cd "$(dirname "$0")/../.." || exit 1
END=${END:-420}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
mkdir -p /tmp/b && tar xJf build-carry-s11/pack.tar.xz -C /tmp/b
export LD_LIBRARY_PATH=/tmp/b/libs:${LD_LIBRARY_PATH:-}
el "unpacked"
G="--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
for side in before after; do
  # shellcheck disable=SC2086
  D=80 bg_run "qbench_$side" "/tmp/b/$side/bench_gpu_quant" $G
  wait_jobs
  el "$side bench done"
done
grep -hE "_mean" /tmp/v/qbench_*.log
export EXMY_CLI=/tmp/b/after/exmy
T=/tmp/b/after/exmy_test_gpu
D=200 bg_run t_quant "$T" "[gpu][quant]" --durations yes
for i in 0 1 2 3 4 5 6 7; do
  EXMY_TEST_SHARD=$i/8 D=220 bg_run "t_cli_all$i" "$T" \
    "exmy step --device cuda writes the CPU's bytes for every optimizer and dtype"
  EXMY_TEST_SHARD=$i/8 D=220 bg_run "t_cli_skip$i" "$T" \
    "exmy step --device cuda: saved states*"
done
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do
  echo "=== $f"
  grep -E "FAILED|failed|passed|rc |with expansion|No test" "$f" | head -12
done
stop_packer
el "all done"
