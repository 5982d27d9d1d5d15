#!/usr/bin/env bash
# Device call 2 of the session of 2026-12-02 (12:59-15:59 UTC), on an H200:
#  - torchao 0.18 AdamWFp8 fp32/bf16 on (-1, 256) views, a fresh seed (issue 33: the state form
#    found offline for the one-kernel form, checked on inputs it was not found on);
#  - AdEMAMix8bit at 4 CTAs per SM: BM_ademamix8bit beside the in-process torch-arithmetic AdamW,
#    and its step-CLI GPU test;
#  - verify --reference device on one 2^32-input case with the JSON's seconds (checks/s);
#  - scripts/diag/nf4bw-device.sh where the tree has it (NF4/FP4 kernel: [bnb4] + bench).
set -u
cd "$(dirname "$0")/../.."
root=$PWD
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
END=${END:-540}
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( END - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
export LD_LIBRARY_PATH=$root/.devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/v /tmp/w
pack() { (cd /tmp/v && tar cf "$OUT/verify.tar.tmp" . 2>/dev/null && mv "$OUT/verify.tar.tmp" "$OUT/verify.tar"); }
( while true; do sleep 15; pack; done ) & packer=$!
( python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$root/bench/peers PYTHONUNBUFFERED=1
  python3 -c "import torch, torchao, triton; print(torch.__version__, torchao.__version__, triton.__version__)"
  timeout -k 5 200 python3 bench/peers/torchao_optim_capture.py --out /tmp/w/tao --budget 150 \
    --seed 424242 --no-sass --shapes '4096;17x256;8x512;64x256' --only adamwfp8_defaults_fp32,adamwfp8_defaults_bf16
  echo "[tao rc $?]"; ls -la /tmp/w/tao; cd /tmp/w && tar czf "$OUT/tao-fp8.tgz" tao ) > /tmp/v/tao.log 2>&1 &
(scripts/device-build.sh exmy exmy_test_gpu bench_optim_gpu bench_gpu_quant > /tmp/v/build.log 2>&1; echo "build rc $?" >> /tmp/v/build.log) &
bpid=$!
wait_for() { while ! grep -q "Built target $1\$" /tmp/v/build.log 2>/dev/null && kill -0 $bpid 2>/dev/null; do sleep 3; done; }
wait_for exmy; el "exmy built"
E=$root/build-dev/cli/exmy
timeout -k 3 60 "$E" verify --device cuda --depth full --reference device --campaign casts \
  --formats e4m3fn,e5m2 --modes rne,sr:8 --json > /tmp/v/full_dev.json 2> /tmp/v/full_dev.err
el "verify json rc $?"
timeout -k 3 60 "$E" verify --device cuda --depth ci --campaign casts \
  --formats e4m3fn,e5m2,e2m1fn,bf16,fp16 --modes rne,rtz,sr:8 > /tmp/v/ci_casts.log 2>&1
el "verify ci rc $?"
wait_for exmy_test_gpu; el "exmy_test_gpu built"
T=$root/build-dev/tests/exmy_test_gpu
export EXMY_CLI=$E EXMY=$E EXMY_TEST_GPU=$T EXMY_SRC=$root
d=$(( $(left) - 40 )); [ $d -lt 20 ] && d=20
run() { local n=$1; shift; ( timeout -k 3 $d "$@" > /tmp/v/$n.log 2>&1; echo "[$n rc $? at $(( $(date +%s) - t0 )) s]" >> /tmp/v/$n.log ) & }
EXMY_TEST_ONLY=ademamix8bit,paged_ademamix8bit run t_adem "$T" "exmy step --device cuda*"
wait_for bench_optim_gpu
timeout -k 3 60 build-dev/bench/bench_optim_gpu --benchmark_min_time=0.05 \
  '--benchmark_filter=BM_(adamw_torch_default|adamw8bit/.*/256/1|ademamix8bit)' --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_out=/tmp/v/optim.json \
  --benchmark_out_format=json > /tmp/v/optim.log 2>&1; el "optim bench rc $?"
wait $bpid; tail -2 /tmp/v/build.log; el "build done"
if [ -x scripts/diag/nf4bw-device.sh ]; then
  mkdir -p /tmp/v/nf4bw && OUT=/tmp/v/nf4bw timeout -k 3 120 bash scripts/diag/nf4bw-device.sh > /tmp/v/nf4bw.log 2>&1
  el "nf4bw rc $?"
fi
while [ "$(left)" -gt 4 ] && [ "$(jobs -rp | grep -vc "^$packer$")" -gt 0 ]; do sleep 2; done
kill $packer 2>/dev/null
for f in /tmp/v/*.log; do echo "=== $f"; tail -6 "$f"; done
pack
el "all done"
