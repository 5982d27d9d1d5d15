#!/usr/bin/env bash
# Device call 1 of the session of 2026-12-02 (12:59-15:59 UTC), on an H200:
#  - the GPU tests of this tree not yet run: [gpu][campaign] (ci depth on designed inputs, --gpus
#    merge of per-class counts, --reference device and its planted-difference probe);
#  - the 8-bit optimizer step tests after AdEMAMix's kernels moved to optim_bnb8_ademamix.cu;
#  - verify --depth full on e4m3fn,e5m2 x rne,sr:8 with --reference device and cpu (checks/s);
#  - BM_adamw8bit / BM_ademamix8bit beside the in-process torch-arithmetic AdamW (no slowdown from the split).
set -u
cd "$(dirname "$0")/../.."
root=$PWD
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
END=${END:-570}
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( END - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
nvcc --version | tail -2
export LD_LIBRARY_PATH=$root/.devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/v
pack() { (cd /tmp/v && tar cf "$OUT/verify.tar.tmp" . 2>/dev/null && mv "$OUT/verify.tar.tmp" "$OUT/verify.tar"); }
( while true; do sleep 15; pack; done ) & packer=$!
(scripts/device-build.sh exmy exmy_test_gpu bench_optim_gpu > /tmp/v/build.log 2>&1; echo "build rc $?" >> /tmp/v/build.log) &
bpid=$!
wait_for() { while ! grep -q "Built target $1\$" /tmp/v/build.log 2>/dev/null && kill -0 $bpid 2>/dev/null; do sleep 3; done; }
wait_for exmy; el "exmy built"
E=$root/build-dev/cli/exmy
vr() { local n=$1; shift; local a=$(date +%s%N)
  timeout -k 3 120 "$E" verify --device cuda "$@" --out /tmp/v/$n.md > /tmp/v/$n.log 2>&1; local rc=$?
  echo "[$n rc $rc wall $(( ($(date +%s%N) - a) / 1000000 )) ms]" | tee -a /tmp/v/$n.log; }
vr full_dev --depth full --reference device --campaign casts --formats e4m3fn,e5m2 --modes rne,sr:8
vr full_cpu --depth full --reference cpu --campaign casts --formats e4m3fn,e5m2 --modes rne,sr:8
vr ci_casts --depth ci --campaign casts --formats e4m3fn,e5m2,e2m1fn,bf16,f16 --modes rne,rtz,sr:8
el "verify done"
wait_for exmy_test_gpu; el "exmy_test_gpu built"
T=$root/build-dev/tests/exmy_test_gpu
export EXMY_CLI=$E EXMY=$E EXMY_TEST_GPU=$T EXMY_SRC=$root
d=$(( $(left) - 60 )); [ $d -lt 20 ] && d=20
run() { local n=$1; shift; ( timeout -k 3 $d "$@" > /tmp/v/$n.log 2>&1; echo "[$n rc $? at $(( $(date +%s) - t0 )) s]" >> /tmp/v/$n.log ) & }
run t_campaign "$T" "[gpu][campaign]"
for k in 0 1 2; do
  EXMY_TEST_SHARD=$k/3 EXMY_TEST_ONLY=ademamix8bit,adamw8bit,lion8bit run t_step$k "$T" "exmy step --device cuda*"
done
wait_for bench_optim_gpu; el "bench built"
sleep 1
timeout -k 3 60 build-dev/bench/bench_optim_gpu --benchmark_min_time=0.05 \
  '--benchmark_filter=BM_(adamw_torch|adamw8bit|ademamix8bit)' --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_out=/tmp/v/optim.json \
  --benchmark_out_format=json > /tmp/v/optim.log 2>&1; el "bench rc $?"
while [ "$(left)" -gt 4 ] && [ "$(jobs -rp | grep -vc "^$packer$")" -gt 0 ]; do sleep 2; done
kill $packer 2>/dev/null
for f in /tmp/v/*.log; do echo "=== $f"; tail -6 "$f"; done
pack
el "all done"
