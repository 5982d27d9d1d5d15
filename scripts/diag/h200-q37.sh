#!/usr/bin/env bash
# Device call for branch h/q37 (issue 37): the tensor-wise sr:8 span kernel
# (gpu/quant/detail_tensor_sr8.cuh) and the MX e2m1fn magic-number run
# (gpu/quant/detail_mx_e2m1.cuh), on an H200. First the quantization benchmarks beside copy/fp32
# in one process (GPU otherwise idle); where BEFORE names a directory holding main's
# bench_gpu_quant, main and the branch alternate twice (main, branch, main, branch) so that the
# 5% rule compares figures of one call. Then the new tests and every [gpu][quant] test. Logs and
# the benchmarks' JSON go to /tmp/v, packed into $OUT every 15 s (scripts/diag/lib.sh).
#   B=dir BEFORE=dir scripts/diag/h200-q37.sh
# B (default build-host): the build directory of the branch's bench_gpu_quant and exmy_test_gpu
# (found by name, up to three levels down).
set -u
cd "$(dirname "$0")/../.."
END=${END:-540}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
B=${B:-build-host}
BEFORE=${BEFORE:-}
bench_args=(--benchmark_filter='copy/fp32|quant/tensor|quant/mx|quant/nvfp4'
  --benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true)
find_bin() { # the first of DIR/NAME, DIR/*/NAME
  local d=$1 n=$2
  if [ -x "$d/$n" ]; then
    echo "$d/$n"
  else
    find "$d" -maxdepth 3 -name "$n" -type f -perm -u+x | head -1
  fi
}
bench=$(find_bin "$B" bench_gpu_quant)
tests=$(find_bin "$B" exmy_test_gpu)
el "branch bench: $bench, tests: $tests"
rounds=(after)
if [ -n "$BEFORE" ]; then
  bench_before=$(find_bin "$BEFORE" bench_gpu_quant)
  el "main bench: $bench_before"
  rounds=(before after before after)
fi
i=0
for r in "${rounds[@]}"; do
  i=$((i + 1))
  bin=$bench
  [ "$r" = before ] && bin=$bench_before
  D=150 bg_run "bench_${r}_$i" "$bin" "${bench_args[@]}" \
    --benchmark_out="/tmp/v/bench_${r}_$i.json" --benchmark_out_format=json
  wait_jobs
  el "bench $r $i done"
  grep -E "_median" "/tmp/v/bench_${r}_$i.log"
done
# The new tests by name first (they settle the two kernels), then the whole tag.
D=120 bg_run t_sr8 "$tests" "GPU tensor-wise sr:8 span kernel equals the CPU reference"
wait_jobs
D=120 bg_run t_e2m1 "$tests" "GPU MX e2m1fn magic-number run equals the CPU reference"
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
