#!/usr/bin/env bash
# Device call 2 of the session of 2026-12-04: the integration tree h/int2 = main ba2e8e3 + h/gmax
# (one group_absmax helper in gpu/quant) + h/gemmk (GEMM emulation: branch-free group tail,
# truncating kernel, 32 x 32 tiles for groups of 16 where 64 x 64 leave SMs idle, device scratch
# kept) + h/bnb4b (bnb4_pipe_kernel for 16-bit NF4/FP4 inputs, the FP4 sign as a predicated OR).
# One xz pack, build-carry-s11/pack.tar.xz:
#   after/   exmy_test_gpu, bench_gpu_quant, bench_gemm_emulation and exmy of h/int2;
#   before/  bench_gpu_quant of b6b063f (call 1's before) and bench_gemm_emulation of main + h/gmax
#            (main's GEMM code);
#   libs/    the shared libraries.
# Benchmarks one at a time on the otherwise idle GPU (before, after), then the GPU tests: every
# [gpu] case with the exmy executable for the CLI-driven ones (call 1 lacked it), and the two
# older [bnb4] cases on the old kernel (EXMY_BNB4_PIPE=0).
set -u
cd "$(dirname "$0")/../.." || exit 1
END=${END:-330}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
mkdir -p /tmp/b && tar xJf build-carry-s11/pack.tar.xz -C /tmp/b
export LD_LIBRARY_PATH=/tmp/b/libs:${LD_LIBRARY_PATH:-}
export EXMY_CLI=/tmp/b/after/exmy
el "unpacked"
G="--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
QF='copy/fp32|quant/bnb4|quant/mx/|quant/nvfp4|quant/amax|quant/tile1x128-deepgemm/bf16'
for side in before after; do
  # shellcheck disable=SC2086
  D=40 bg_run "qbench_$side" "/tmp/b/$side/bench_gpu_quant" $G "--benchmark_filter=$QF"
  wait_jobs
  # shellcheck disable=SC2086
  D=35 bg_run "gbench_$side" "/tmp/b/$side/bench_gemm_emulation" $G \
    --benchmark_filter='gemm_cublas_sm90/.*/auto'
  wait_jobs
  el "$side benches done"
done
grep -hE "_mean" /tmp/v/qbench_*.log /tmp/v/gbench_*.log
D=90 bg_run t_quant /tmp/b/after/exmy_test_gpu "[gpu][quant]"
D=90 bg_run t_gemm /tmp/b/after/exmy_test_gpu "[gpu][gemm]" --durations yes
D=120 bg_run t_other /tmp/b/after/exmy_test_gpu "[gpu]~[quant]~[gemm]"
wait_jobs
el "tests done"
D=30 bg_run t_bnb4_nopipe env EXMY_BNB4_PIPE=0 /tmp/b/after/exmy_test_gpu \
  "GPU bnb 4-bit quantize/dequantize*" "GPU bnb 4-bit fused quantizer*"
wait_jobs
for f in /tmp/v/t_*.log; do echo "=== $f"; grep -E "FAILED|failed|passed|rc |with expansion" "$f" | head -20; done
stop_packer
el "all done"
