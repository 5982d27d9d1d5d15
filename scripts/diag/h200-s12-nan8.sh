#!/usr/bin/env bash
# Device call for h/nan8 (issue 33 follow-up): the CPU reference of every bitsandbytes 8-bit
# optimizer now reads a NaN state before the sign guard as CUDA's NaN (f32_nan_as_cuda: code 255,
# SEMANTICS 9.4, 9.4.1, 9.4.2); the GPU kernels are unchanged (the function is no instruction on
# the device). This call confirms on an H200 that the kernels write what the reference now says:
#   t_nan    tests/gpu/bnb8_nan_states_test.cpp, "[gpu][optim][bnb8]": the NaN-state table of
#            tests/optim/bnb8_nan_cases.hpp for adam8bit, sgd8bit, rmsprop8bit, adagrad8bit,
#            lion8bit, ademamix8bit (exact and bnb-cuda, fp32 and bf16, blocks 256 and 2048,
#            whole/partial/misaligned), every output bit against the CPU and the table's codes on
#            the GPU's own output;
#   t_optim  the other [gpu][optim] tests, without the [cli] ones.
# Binaries: /tmp/b/after/exmy_test_gpu (this tree), LD_LIBRARY_PATH=/tmp/b/libs set by the lead.
# No benchmark: no kernel changed. About 60 s.
set -u
cd "$(dirname "$0")/../.." || exit
END=${END:-120}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
T=/tmp/b/after/exmy_test_gpu
D=80 bg_run t_nan "$T" "[gpu][optim][bnb8]" -d yes
wait_jobs
el "nan-state tests done"
D=30 bg_run t_optim "$T" "[gpu][optim]~[cli]~[bnb8]"
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do
  echo "=== $f"
  grep -E "FAILED|failed|passed|rc |with expansion|differs|GPU code|NaN-state GPU cases" "$f" | head -40
done
stop_packer
el "all done"
