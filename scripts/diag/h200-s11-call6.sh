#!/usr/bin/env bash
# Device call 6 of the session of 2026-12-04: h/int6 = main + h/adem2, run as h/adem2's script below
# (h/adem2's h200-s11-adem2.sh; the branch is scripts/diag/h200-s11-adem2.patch on main) with the pack build-carry-s11/pack.tar.xz unpacked first
# (after/: exmy_test_gpu, bench_optim_gpu, exmy of h/int6; before/: bench_optim_gpu of main e6693e0).
# Device call for h/adem2 (issue 33): h/adem's AdEMAMix8bit kernel with the fix of its failed
# GPU test. On the H200 (call of 2026-12-04) "GPU AdEMAMix8bit: hostile inputs ..." and "... grid-
# stride passes" failed on the m1/m2 codes alone (51 checks): a NaN state (code 0.0 x absmax inf)
# is code 0 -> 255 by the sign guard on CUDA (+NaN) and stayed 0 on the x86 CPU reference (-NaN).
# The CPU reference now reads m1/m2 NaNs as CUDA's (sim/native/optim_bnb8_ademamix.hpp,
# f32_nan_as_cuda); the host emulation of both kernels on the test's inputs predicted all 51
# first differing indices and now agrees everywhere (the branch's test_bnb8_ademamix_gpu_emul.cpp).
# The kernel itself is h/adem's. The lead has unpacked, LD_LIBRARY_PATH set (/tmp/b/libs):
#   /tmp/b/after/   exmy_test_gpu, bench_optim_gpu and exmy of h/adem2;
#   /tmp/b/before/  bench_optim_gpu of main.
# The AdEMAMix benchmarks of both trees beside the in-process anchor BM_adamw_torch_default
# (bench_optim_gpu has no copy benchmark), one side after the other on an otherwise idle GPU, then
# the optimizer GPU tests without the CLI ones and the CLI grid-stride case. About 80 s.
# Success: every test passes (the two [gpu][optim][bnb8] AdEMAMix cases included: 0 failed
# assertions); after's BM_ademamix8bit mean about h/adem's 383 us (<= 334 us is the issue's target,
# not claimed here), before's about 420 us; BM_adamw_torch_default equal on both sides within 2%.
set -u
cd "$(dirname "$0")/../.."
END=${END:-120}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
mkdir -p /tmp/b && tar xJf build-carry-s11/pack.tar.xz -C /tmp/b
export LD_LIBRARY_PATH=/tmp/b/libs:${LD_LIBRARY_PATH:-}
el "unpacked"
G="--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
F="--benchmark_filter=BM_adamw_torch_default|BM_ademamix8bit"
for side in before after; do
  # shellcheck disable=SC2086
  D=30 bg_run "bench_$side" "/tmp/b/$side/bench_optim_gpu" $G "$F"
  wait_jobs
  el "$side bench done"
done
grep -E "_mean" /tmp/v/bench_*.log
export EXMY_CLI=/tmp/b/after/exmy
T=/tmp/b/after/exmy_test_gpu
D=55 bg_run t_optim "$T" "[gpu][optim]~[cli]"
D=55 bg_run t_cli_grid "$T" "exmy step --device cuda: 8-bit Adam and AdEMAMix over several grid-stride*"
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do
  echo "=== $f"
  grep -E "FAILED|failed|passed|rc |with expansion|seed" "$f" | head -20
done
stop_packer
el "all done"
