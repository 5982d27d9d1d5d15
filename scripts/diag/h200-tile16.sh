#!/usr/bin/env bash
# Device call for branch h/tile16 (issue 32's last done-when item, the 2-D tile quantizers at
# >= 0.85 of same-call copy bandwidth): the tile benchmarks beside copy/fp32 in one process first
# (GPU otherwise idle), then the tile tests and every [gpu][quant] test. Binaries: the pack
# build-carry-tile16/build-pack.tar.xz (bench_gpu_quant, exmy_test_gpu built for sm_90) when
# present, else the directory $BIN (default build-host/, carried). Logs under $OUT (verify.tar).
set -u
cd "$(dirname "$0")/../.." || exit 1
END=${END:-540}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
export LD_LIBRARY_PATH=$root/build-libs:${LD_LIBRARY_PATH:-}
B=${BIN:-$root/build-host}
if [ -f build-carry-tile16/build-pack.tar.xz ]; then
  mkdir -p /tmp/b && tar xJf build-carry-tile16/build-pack.tar.xz -C /tmp/b
  B=/tmp/b
fi
bench=$(find "$B" -name bench_gpu_quant -type f | head -1)
tests=$(find "$B" -name exmy_test_gpu -type f | head -1)
el "bench $bench tests $tests"
nvcc --version 2>/dev/null | tail -2
D=120 bg_run bench_tile "$bench" --benchmark_filter='copy/fp32|quant/tile' \
  --benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
wait_jobs
el "bench done"
grep -E "_mean|_median|rc " /tmp/v/bench_tile.log
bg_run t_tile "$tests" "[block2d],[nvfp4_2d]"
wait_jobs
bg_run t_quant "$tests" "[gpu][quant]"
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do
  echo "=== $f"
  tail -4 "$f"
done
stop_packer
el "all done"
