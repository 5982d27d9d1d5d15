#!/usr/bin/env bash
# First device call planned for the session after 2026-12-04 (no device was lent after 21:40 that
# day). The tree is h/int7 = main + scripts/diag/h200-s12-int7.patch (h/adem2's AdEMAMix8bit
# kernel and h/adem3's packed one-word requantization: 6 shared loads an element, was 9; it
# supersedes h200-s11-adem2.patch). Before the call the lead:
#   git apply scripts/diag/h200-s12-int7.patch; builds exmy_test_gpu, bench_optim_gpu,
#   bench_gpu_quant and exmy into after/ and main's bench_optim_gpu into before/ (stripped), plus
#   the libraries, as build-carry-s11/pack.tar.xz; runs scripts/pack-peer-site.sh (.peers);
#   carries ["build-carry-s11", ".peers"] (free ~9 MB of bench/results first: the summary's list).
# Runs, one after the other on the otherwise idle GPU (about 330 s):
#  1. AdEMAMix8bit before/after beside the in-process anchor BM_adamw_torch_default (issue 33:
#     <= 334 us; main about 420, h/adem 383);
#  2. NF4/FP4: exmy's quant/bnb4/* beside copy/fp32, then bitsandbytes 0.50.2's quantize_4bit
#     beside torch's copy (bench/peers/bnb4_speed.py), and their ratios (issue 33's same-call
#     item: >= 3x bitsandbytes, >= 0.85 of copy);
#  3. tests: [gpu][optim] without the CLI ones (h/nan8's NaN-state cases, the AdEMAMix hostile
#     inputs), [gpu][quant] (the refactored bnb4/NVFP4 comparisons; h/vfull's CPU reference),
#     [gpu][lm] (h/pmath's portable exp/log/erf: 0 differing codes against the host), and the
#     CLI grid-stride case.
# Success: every test passes; after's BM_ademamix8bit <= 334 us; every bnb4 ratio >= 3.
set -u
cd "$(dirname "$0")/../.." || exit 1
END=${END:-420}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
mkdir -p /tmp/b && tar xJf build-carry-s11/pack.tar.xz -C /tmp/b
export LD_LIBRARY_PATH=/tmp/b/libs:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/site && tar xJf .peers/site.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/bench/peers PYTHONUNBUFFERED=1
el "unpacked"
G="--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
F="--benchmark_filter=BM_adamw_torch_default|BM_ademamix8bit"
for side in before after; do
  # shellcheck disable=SC2086
  D=30 bg_run "obench_$side" "/tmp/b/$side/bench_optim_gpu" $G "$F"
  wait_jobs
done
grep -hE "_mean" /tmp/v/obench_*.log
el "optimizer benches done"
# shellcheck disable=SC2086
D=40 bg_run qbench /tmp/b/after/bench_gpu_quant $G "--benchmark_filter=copy/fp32|quant/bnb4" \
  --benchmark_out=/tmp/v/qbench.json --benchmark_out_format=json
wait_jobs
D=60 bg_run bnb4 python3 bench/peers/bnb4_speed.py --out /tmp/v/bnb4_speed.json
wait_jobs
python3 bench/peers/bnb4_vs_exmy_speed.py --exmy /tmp/v/qbench.json --bnb /tmp/v/bnb4_speed.json \
  --out /tmp/v/bnb4_vs_exmy.md && cat /tmp/v/bnb4_vs_exmy.md
el "bnb4 same-call done"
export EXMY_CLI=/tmp/b/after/exmy
T=/tmp/b/after/exmy_test_gpu
D=70 bg_run t_optim "$T" "[gpu][optim]~[cli]"
wait_jobs
D=90 bg_run t_quant "$T" "[gpu][quant]"
wait_jobs
D=30 bg_run t_lm "$T" "[gpu][lm]"
wait_jobs
D=55 bg_run t_cli_grid "$T" "exmy step --device cuda: 8-bit Adam and AdEMAMix over several grid-stride*"
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do
  echo "=== $f"
  grep -E "FAILED|failed|passed|rc |with expansion|seed" "$f" | head -20
done
stop_packer
el "all done"
