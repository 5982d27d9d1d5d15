#!/usr/bin/env bash
# Final device call of the session of 2026-12-02 (17:00-20:00 UTC), on an H200, on the merged
# tree's binaries (built on the build machine for sm_90 and carried: build-carry-final/,
# build-libs/): the GPU tests of every path this session's branches changed, then the quantizer
# and 8-bit optimizer benchmarks with copy and the torch-arithmetic AdamW in the same process.
set -u
cd "$(dirname "$0")/../.."
END=${END:-500}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
export LD_LIBRARY_PATH=$root/build-libs:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/b && tar xJf build-carry-final/build-pack.tar.xz -C /tmp/b
T=/tmp/b/exmy_test_gpu
export EXMY_CLI=/tmp/b/exmy EXMY=/tmp/b/exmy EXMY_TEST_GPU=$T EXMY_SRC=$root
D=300 bg_run t_quant "$T" "[gpu][quant]"
D=300 bg_run t_cast "$T" "[gpu][cast],[gpu][gemm],[gpu][layer]"
for k in 0 1 2; do
  EXMY_TEST_SHARD=$k/3 EXMY_TEST_ONLY=ademamix8bit,adamw8bit,lion8bit,rmsprop8bit D=300 \
    bg_run t_step$k "$T" "exmy step --device cuda*"
done
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do echo "=== $f"; tail -4 "$f"; done
bm() {
  local n=$1
  shift
  timeout -k 3 "$(($(left) - 10))" "$@" --benchmark_min_time=0.05 --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_out="/tmp/v/$n.json" \
    --benchmark_out_format=json >"/tmp/v/$n.log" 2>&1
  el "$n rc $?"
}
bm optim /tmp/b/bench_optim_gpu '--benchmark_filter=BM_(adamw_torch|adamw8bit|ademamix8bit|lion8bit)'
bm quant /tmp/b/bench_gpu_quant '--benchmark_filter=copy|quant/|bnb4|nf4|fp4'
stop_packer
el "all done"
