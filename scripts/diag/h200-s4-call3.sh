#!/usr/bin/env bash
# Device call 3 of the session of 2026-12-02 (04:50-07:50 UTC), on an H200, after the merges:
#  - h/optimcuda's captures (Triton's libdevice pow, torchao low-bit AdamW shapes; no exmy) while
#    this tree builds (exmy, bench_gemm_emulation, bench_gpu_quant, bench_optim_gpu, exmy_test_gpu);
#  - issue 37: bench_gemm_emulation (generic vs tiled, the tiled kernel's K split and float pass);
#  - issue 33: the fused NF4/FP4 quantizer against the two-kernel one (EXMY_BNB4_TWO_PASS=1) beside
#    copy/fp32, the vectorised one-state 8-bit steps beside AdamW8bit;
#  - the GPU tests of what changed: [gpu][quant][bnb4], [gpu][gemm], the step-CLI test for the
#    one-state 8-bit optimizers (EXMY_TEST_ONLY, 4 shards).
set -u
cd "$(dirname "$0")/../.."
root=$PWD
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
END=${END:-570}
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( END - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$root/bench/peers
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$root/.devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/v /tmp/w
pack() { (cd /tmp/v && tar cf "$OUT/verify.tar.tmp" --exclude='*.tgz' . 2>/dev/null && mv "$OUT/verify.tar.tmp" "$OUT/verify.tar"); }
( while true; do sleep 15; pack; done ) & packer=$!
( mkdir -p /tmp/w/optimcuda && OUT=/tmp/w/optimcuda timeout -k 5 250 bash scripts/diag/optimcuda-device.sh > /tmp/v/optimcuda.log 2>&1
  echo "[optimcuda rc $?]" >> /tmp/v/optimcuda.log; cp /tmp/w/optimcuda/*.tgz "$OUT/" 2>/dev/null ) &
cpid=$!
[ -d .devdeps/usr ] || { mkdir -p .devdeps && ln -s "$root/build-devdeps/usr" .devdeps/usr; }
(scripts/device-build.sh exmy bench_gemm_emulation bench_gpu_quant bench_optim_gpu exmy_test_gpu > /tmp/v/build.log 2>&1; echo "build rc $?" >> /tmp/v/build.log) &
bpid=$!
wait_for() { while ! grep -q "Built target $1\$" /tmp/v/build.log 2>/dev/null && kill -0 $bpid 2>/dev/null; do sleep 3; done; }
wait_for bench_gemm_emulation; el "bench_gemm_emulation built"
# The benchmarks after the captures (the GPU to themselves), at most 30 s of waiting.
for i in $(seq 10); do kill -0 $cpid 2>/dev/null || break; sleep 3; done
el "captures: $(kill -0 $cpid 2>/dev/null && echo running || echo done)"
timeout -k 5 60 build-dev/bench/bench_gemm_emulation --benchmark_min_time=0.05 --benchmark_format=json > /tmp/v/gemmtile-bench.txt 2>&1; el "gemm bench rc $?"
bm() { local n=$1 b=$2; shift 2; timeout -k 3 50 "build-dev/bench/$b" --benchmark_min_time=0.05 "$@" \
  --benchmark_out=/tmp/v/$n.json --benchmark_out_format=json > /tmp/v/$n.log 2>&1; el "$n rc $?"; }
wait_for bench_gpu_quant
f='--benchmark_filter=^(copy/fp32|quant/bnb4/.*)(/manual_time)?$'
bm bnb4_fused bench_gpu_quant "$f" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
EXMY_BNB4_TWO_PASS=1 bm bnb4_two_pass bench_gpu_quant "$f" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
wait_for bench_optim_gpu
bm optim bench_optim_gpu '--benchmark_filter=BM_(adamw_torch|adamw8bit|bnb1_8bit|ademamix8bit)' --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
wait $bpid; tail -2 /tmp/v/build.log; el "build done"
E=$root/build-dev/cli/exmy
T=$root/build-dev/tests/exmy_test_gpu
export EXMY_CLI=$E EXMY=$E EXMY_TEST_GPU=$T
d=$(( $(left) - 8 )); [ $d -lt 20 ] && d=20
run() { local n=$1; shift; ( timeout -k 3 $d "$@" > /tmp/v/$n.log 2>&1; echo "[$n rc $? at $(( $(date +%s) - t0 )) s]" >> /tmp/v/$n.log ) & }
run t_bnb4 "$T" "[bnb4]"
run t_gemm "$T" "[gpu][gemm]" --durations yes
for k in 0 1 2 3; do
  EXMY_TEST_SHARD=$k/4 EXMY_TEST_ONLY=rmsprop8bit,adagrad8bit,lion8bit,paged_lion8bit run t_step$k "$T" "exmy step --device cuda*"
done
while [ "$(left)" -gt 4 ] && [ "$(jobs -rp | grep -vc "^$packer$")" -gt 0 ]; do sleep 2; done
kill $packer 2>/dev/null
for f in /tmp/v/*.log; do echo "=== $f"; tail -4 "$f"; done
pack
el "all done"
