#!/usr/bin/env bash
# Device call 1 of the session of 2026-12-02 (07:56-10:56 UTC), on an H200:
#  - torchao AdamWFp8 fp32 in its one-kernel form, with its PTX/SASS (issue 33: 5-9 elements off);
#  - the tree with AdEMAMix8bit's vectorised kernel and the resident_grid refactor: the step-CLI
#    GPU test of the 8-bit optimizers it touches (4 shards), [bnb4], BM_* of the 8-bit steps;
#  - NF4/FP4 quantization: bench beside copy/fp32 and Nsight Compute counters of bnb4_fused_kernel;
#  - docs/tutorials/probe-a-gpu.md as written (its step 2 after the hw-row fix).
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
pack() { (cd /tmp/v && tar cf "$OUT/verify.tar.tmp" --exclude='*.tgz' . 2>/dev/null && mv "$OUT/verify.tar.tmp" "$OUT/verify.tar"); }
( while true; do sleep 15; pack; done ) & packer=$!
( mkdir -p /tmp/v/tao && timeout -k 5 200 python bench/peers/torchao_optim_capture.py --out /tmp/w/tao --budget 150 \
    --shapes '4096;17x256' --only adamwfp8_defaults_fp32_4096,adamwfp8_defaults_fp32_17x256 > /tmp/v/tao.log 2>&1
  echo "[tao rc $?]" >> /tmp/v/tao.log; cd /tmp/w && tar czf "$OUT/tao-fp8.tgz" tao; ls -la /tmp/w/tao >> /tmp/v/tao.log ) &
cpid=$!
[ -d .devdeps/usr ] || { mkdir -p .devdeps && ln -s "$root/build-devdeps/usr" .devdeps/usr; }
(scripts/device-build.sh exmy bench_gpu_quant bench_optim_gpu exmy_test_gpu > /tmp/v/build.log 2>&1; echo "build rc $?" >> /tmp/v/build.log) &
bpid=$!
wait_for() { while ! grep -q "Built target $1\$" /tmp/v/build.log 2>/dev/null && kill -0 $bpid 2>/dev/null; do sleep 3; done; }
bm() { local n=$1 b=$2; shift 2; timeout -k 3 50 "build-dev/bench/$b" --benchmark_min_time=0.05 "$@" \
  --benchmark_out=/tmp/v/$n.json --benchmark_out_format=json > /tmp/v/$n.log 2>&1; el "$n rc $?"; }
wait_for bench_gpu_quant; el "bench_gpu_quant built"
for i in $(seq 20); do kill -0 $cpid 2>/dev/null || break; sleep 3; done
el "capture: $(kill -0 $cpid 2>/dev/null && echo running || echo done)"
f='--benchmark_filter=^(copy/fp32|quant/bnb4/.*)(/manual_time)?$'
bm bnb4 bench_gpu_quant "$f" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
( for q in 'quant/bnb4/bf16/nf4/b64' 'quant/bnb4/fp32/nf4/b64' 'quant/bnb4/bf16/fp4/b4096' 'copy/fp32'; do
  echo "=== $q"
  timeout 40 ncu --clock-control none -k regex:'bnb4|copy|Copy' --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis --section InstructionStats --section SchedulerStats \
      build-dev/bench/bench_gpu_quant --benchmark_filter="^$q" --benchmark_min_time=0.001 2>&1 |
    grep -E "bnb4|copy|Throughput|Duration|Registers|Occupancy|Block Limit|Stall|Warp Cycles|Issued|Executed Ipc|Eligible|Mem Busy|Max Bandwidth|Waves|One or More|No Eligible|Instructions" | head -50
done ) > /tmp/v/ncu_bnb4.txt 2>&1; el "ncu done"
wait_for bench_optim_gpu
bm optim bench_optim_gpu '--benchmark_filter=BM_(adamw_torch|adamw8bit|bnb1_8bit|ademamix8bit)' --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
wait $bpid; tail -2 /tmp/v/build.log; el "build done"
E=$root/build-dev/cli/exmy
T=$root/build-dev/tests/exmy_test_gpu
export EXMY_CLI=$E EXMY=$E EXMY_TEST_GPU=$T EXMY_SRC=$root
d=$(( $(left) - 8 )); [ $d -lt 20 ] && d=20
run() { local n=$1; shift; ( timeout -k 3 $d "$@" > /tmp/v/$n.log 2>&1; echo "[$n rc $? at $(( $(date +%s) - t0 )) s]" >> /tmp/v/$n.log ) & }
run t_bnb4 "$T" "[bnb4]"
for k in 0 1 2 3; do
  EXMY_TEST_SHARD=$k/4 EXMY_TEST_ONLY=ademamix8bit,paged_ademamix8bit,rmsprop8bit,adagrad8bit,lion8bit,adamw8bit run t_step$k "$T" "exmy step --device cuda*"
done
( mkdir -p /tmp/v/probe && OUT=/tmp/v/probe TO=100 bash scripts/diag/probe-tutorial-device.sh > /dev/null 2>&1 ) &
while [ "$(left)" -gt 4 ] && [ "$(jobs -rp | grep -vc "^$packer$")" -gt 0 ]; do sleep 2; done
kill $packer 2>/dev/null
for f in /tmp/v/*.log; do echo "=== $f"; tail -4 "$f"; done
pack
el "all done"
