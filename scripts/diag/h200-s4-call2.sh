#!/usr/bin/env bash
# Device call 2 of the session of 2026-12-02 (04:50-07:50 UTC), on an H200, on the tree with the
# helpers' GPU branches merged (int/call2):
#  - builds exmy, exmy_test_gpu, bench_gpu_quant, bench_optim_gpu, bench_gemm_emulation (build-dev);
#  - issue 33's speed targets in one call: bench_gpu_quant quant/bnb4/* beside copy/fp32 and
#    bench/peers/bnb4_speed.py (bitsandbytes' quantize_4bit beside its own copy); bench_optim_gpu's
#    8-bit steps and bench/peers/bnb_adamw8bit_time.py (torch fused AdamW, bitsandbytes AdamW8bit);
#  - h/gemmtile's tiled GEMM kernel (merged): bench_gemm_emulation (generic vs tiled, one
#    process) and the [gpu][gemm] tests (every output byte against the CPU model);
#  - the whole-tile absmax GPU test (fixed in call 1), the probe-a-GPU tutorial, the last memory row.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
END=${END:-560}
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( END - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$root/bench/peers
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$root/.devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/v /tmp/w
pack() { (cd /tmp/v && tar cf "$OUT/verify.tar.tmp" --exclude='*.tar' . 2>/dev/null && mv "$OUT/verify.tar.tmp" "$OUT/verify.tar"); }
( while true; do sleep 15; pack; done ) & packer=$!
# Peers first: they need no exmy binary and the GPU is idle while exmy builds.
( timeout -k 3 90 python3 bench/peers/bnb4_speed.py --out /tmp/v/bnb4_speed.json > /tmp/v/bnb4_speed.log 2>&1
  timeout -k 3 60 python3 bench/peers/bnb_adamw8bit_time.py > /tmp/v/anchor_fp32.log 2>&1
  timeout -k 3 60 python3 bench/peers/bnb_adamw8bit_time.py --bf16 > /tmp/v/anchor_bf16.log 2>&1 ) &
[ -d .devdeps/usr ] || { mkdir -p .devdeps && ln -s "$root/build-devdeps/usr" .devdeps/usr; }
(scripts/device-build.sh exmy bench_gemm_emulation bench_gpu_quant bench_optim_gpu exmy_test_gpu > /tmp/v/build.log 2>&1; echo "build rc $?" >> /tmp/v/build.log) &
bpid=$!
wait_for() { while ! grep -q "Built target $1\$" /tmp/v/build.log 2>/dev/null && kill -0 $bpid 2>/dev/null; do sleep 3; done; }
wait_for exmy; el "exmy built"
E=$root/build-dev/cli/exmy
export EXMY_CLI=$E EXMY=$E EXMY_SRC=$root
( ROWS='^layer --kind fp8-tensorwise --dtype bf16' timeout -k 5 200 bash scripts/measure-memory-cuda.sh "$E" /tmp/mm > /tmp/v/mem.log 2>&1; echo "[mem rc $?]" >> /tmp/v/mem.log ) &
bm() { local n=$1 b=$2; shift 2; timeout -k 3 50 "build-dev/bench/$b" --benchmark_min_time=0.05 "$@" \
  --benchmark_out=/tmp/v/$n.json --benchmark_out_format=json > /tmp/v/$n.log 2>&1; el "$n rc $?"; }
wait_for bench_gemm_emulation; el "bench_gemm_emulation built"
mkdir -p /tmp/v/gemmtile
# h/gemmtile's benchmark (its scripts/diag/gemmtile-device.sh steps, run here so that no second
# build runs in build-dev): generic vs tiled in one process.
timeout -k 5 60 build-dev/bench/bench_gemm_emulation --benchmark_min_time=0.05 --benchmark_format=json > /tmp/v/gemmtile/gemmtile-bench.txt 2>&1; el "gemm bench rc $?"
wait_for bench_gpu_quant
bm bench_bnb4 bench_gpu_quant --benchmark_filter='^(copy/fp32|quant/bnb4/.*|quant/tensor/fp32/int8/rne)(/manual_time)?$' --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
wait_for bench_optim_gpu
bm bench_optim bench_optim_gpu --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
TO=60 timeout -k 3 200 bash scripts/diag/probe-tutorial-device.sh > /tmp/v/probe.log 2>&1 &
wait $bpid; tail -2 /tmp/v/build.log; el "build done"
T=$root/build-dev/tests/exmy_test_gpu
export EXMY_TEST_GPU=$T
d=$(( $(left) - 8 )); [ $d -lt 20 ] && d=20
run() { local n=$1; shift; ( timeout -k 3 $d "$@" > /tmp/v/$n.log 2>&1; echo "[$n rc $? at $(( $(date +%s) - t0 )) s]" >> /tmp/v/$n.log ) & }
run t_absmax "$T" "GPU absmax of groups of whole tiles*"
run t_gemm "$T" "[gpu][gemm]" --durations yes
while [ "$(left)" -gt 4 ] && [ "$(jobs -rp | grep -vc "^$packer$")" -gt 0 ]; do sleep 2; done
kill $packer 2>/dev/null
for f in /tmp/v/*.log; do echo "=== $f"; tail -4 "$f"; done
pack
el "all done"
