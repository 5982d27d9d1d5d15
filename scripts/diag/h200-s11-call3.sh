#!/usr/bin/env bash
# Device call 3 of the session of 2026-12-04: h/int3 = main e6693e0 + h/adem (AdEMAMix8bit's
# vectorised kernel: keyed requantization, h/adem's optim_bnb8_keyed.hpp; branch-free
# non-finite gradients; wd as a template argument). One xz pack, build-carry-s11/pack.tar.xz:
#   after/   exmy_test_gpu, bench_optim_gpu and exmy of h/int3;
#   before/  bench_optim_gpu of main e6693e0;
#   libs/    the shared libraries.
# Every bench_optim_gpu benchmark of both trees one after the other (GPU otherwise idle;
# BM_adamw_torch_default the in-process anchor), then the optimizer GPU tests: the [gpu][optim]
# cases, and every step-CLI case over the whole optimizer registry in shards (call 2's deadline
# cut the every-optimizer case; here it runs in 4 processes with its own time).
set -u
cd "$(dirname "$0")/../.." || exit 1
END=${END:-300}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
mkdir -p /tmp/b && tar xJf build-carry-s11/pack.tar.xz -C /tmp/b
export LD_LIBRARY_PATH=/tmp/b/libs:${LD_LIBRARY_PATH:-}
el "unpacked"
G="--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
for side in before after; do
  # shellcheck disable=SC2086
  D=55 bg_run "bench_$side" "/tmp/b/$side/bench_optim_gpu" $G
  wait_jobs
  el "$side bench done"
done
grep -hE "_mean" /tmp/v/bench_*.log
export EXMY_CLI=/tmp/b/after/exmy
T=/tmp/b/after/exmy_test_gpu
D=150 bg_run t_optim "$T" "[gpu][optim]~[cli]"
for i in 0 1 2 3; do
  EXMY_TEST_SHARD=$i/4 D=170 bg_run "t_cli_all$i" "$T" \
    "exmy step --device cuda writes the CPU's bytes for every optimizer and dtype"
  EXMY_TEST_SHARD=$i/4 D=170 bg_run "t_cli_skip$i" "$T" \
    "exmy step --device cuda: saved states, loss scaling, skipped steps"
done
D=170 bg_run t_cli_grid "$T" \
  "exmy step --device cuda: 8-bit Adam and AdEMAMix over several grid-stride blocks"
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do
  echo "=== $f"
  grep -E "FAILED|failed|passed|rc |with expansion|No test" "$f" | head -12
done
stop_packer
el "all done"
