#!/usr/bin/env bash
# Device call for issue 33's last NF4/FP4 item: exmy against bitsandbytes IN THE SAME CALL (the
# done-when asks for same-call ratios; 2026-12-04's 15x / 5-6.4x came from bitsandbytes timings of
# an earlier call). exmy's quant/bnb4/* beside copy/fp32 (bench_gpu_quant, one process), then
# bench/peers/bnb4_speed.py (bitsandbytes 0.50.2's quantize_4bit beside torch's copy, one process),
# one after the other on the otherwise idle GPU; both sides count bytes the same way (input + n/2
# codes + 4 n/block absmax), so the ratio of their copy-normalised bandwidths and of their times
# are both printed by bench/peers/bnb4_vs_exmy_speed.py.
# The lead has: carried ".peers" (scripts/pack-peer-site.sh: bitsandbytes trimmed to CUDA 13.0)
# and the pack with /tmp/b/after/bench_gpu_quant (main), LD_LIBRARY_PATH=/tmp/b/libs set.
# About 70 s. Success: every case's time ratio bitsandbytes/exmy >= 3 (issue 33's target) with
# exmy's copy-normalised bandwidth >= 0.85 (16-bit inputs 0.88-0.91 on 2026-12-04).
set -u
cd "$(dirname "$0")/../.." || exit 1
END=${END:-150}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
el "start"
mkdir -p /tmp/site && tar xJf .peers/site.tar.xz -C /tmp/site
export PYTHONPATH=/tmp/site:$PWD/bench/peers PYTHONUNBUFFERED=1
python3 -c "import torch, bitsandbytes as b; print('torch', torch.__version__, 'bitsandbytes', b.__version__)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
G="--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true"
# shellcheck disable=SC2086
D=40 bg_run qbench /tmp/b/after/bench_gpu_quant $G "--benchmark_filter=copy/fp32|quant/bnb4" \
  --benchmark_out=/tmp/v/qbench.json --benchmark_out_format=json
wait_jobs
el "exmy bench done"
D=60 bg_run bnb4 python3 bench/peers/bnb4_speed.py --out /tmp/v/bnb4_speed.json
wait_jobs
el "bitsandbytes bench done"
python3 bench/peers/bnb4_vs_exmy_speed.py --exmy /tmp/v/qbench.json --bnb /tmp/v/bnb4_speed.json \
  --out /tmp/v/bnb4_vs_exmy.md
cat /tmp/v/bnb4_vs_exmy.md
stop_packer
el "all done"
