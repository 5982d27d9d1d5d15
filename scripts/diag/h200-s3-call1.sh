#!/usr/bin/env bash
# Device call 1 of the session of 2026-12-02 (01:50-04:50 UTC), on an H200. Every step has its
# own deadline and its results are packed into $OUT as soon as it ends (the last session's
# verification batch was lost when killed GPU processes outlived the call's limit):
#  - builds this tree (build-dev: bench_optim_gpu, exmy, exmy_test_gpu) while the GPU runs a
#    fresh held-out tensor-core GEMM capture (seed 20261203: the s16816gemm 64 | K split check);
#  - issue 31: bench_optim_gpu of 3436d35 (carried, build-before/) against this tree's,
#    alternated (the amsgrad-split kernel should bring BM_adamw_16bit to <= 1.05x);
#  - the GPU tests by tag and scripts/diag/h200-verify-batch.sh's commands, one per step,
#    /tmp/v re-packed into $OUT/verify.tar every 15 s and at the end.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
END=${END:-540}
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( END - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$root/bench/peers
python3 -c "import torch, bitsandbytes, torchao; print('torch', torch.__version__, torch.version.cuda, 'bnb', bitsandbytes.__version__, 'torchao', torchao.__version__)"
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$root/.devdeps/usr/lib/x86_64-linux-gnu:$root/build-before:${LD_LIBRARY_PATH:-}
(scripts/device-build.sh bench_optim_gpu exmy exmy_test_gpu > /tmp/build.log 2>&1; echo "build rc $?" >> /tmp/build.log) &
bpid=$!
mkdir -p /tmp/caps/tc /tmp/v /tmp/w
timeout -k 5 125 python3 bench/peers/gemm_tc_capture.py --out /tmp/caps/tc --seed 20261203 --budget-s 105 \
  > /tmp/caps/tc/log.txt 2>&1; echo "capture rc $?" >> /tmp/caps/tc/log.txt
tail -3 /tmp/caps/tc/log.txt; du -sh /tmp/caps/tc
(cd /tmp/caps/tc && tar cf "$OUT/cap-tc.tar.tmp" . && mv "$OUT/cap-tc.tar.tmp" "$OUT/cap-tc.tar")
el "capture done"
while ! grep -q "Built target bench_optim_gpu" /tmp/build.log 2>/dev/null && kill -0 $bpid 2>/dev/null; do sleep 3; done
B=$root/$(find build-dev -name bench_optim_gpu -type f -perm -u+x | head -1)
el "bench_optim_gpu built: $B"
mkdir -p /tmp/ba3/before /tmp/ba3/after
xz -dc build-before/bench_optim_gpu-3436d35.xz > /tmp/ba3/before/bench_optim_gpu && chmod +x /tmp/ba3/before/bench_optim_gpu
cp "$B" /tmp/ba3/after/
OUT=/tmp/bench timeout -k 5 140 bash bench/gpu_before_after.sh /tmp/ba3/before /tmp/ba3/after 1 bench_optim_gpu 2>&1 | tail -14
(cd /tmp/bench && tar cf "$OUT/bench.tar.tmp" . && mv "$OUT/bench.tar.tmp" "$OUT/bench.tar")
el "bench done"
wait $bpid; tail -2 /tmp/build.log; el "build done"
T=$root/$(find build-dev -name exmy_test_gpu -type f -perm -u+x | head -1)
E=$root/$(find build-dev -path '*cli/exmy' -type f | head -1)
export EXMY_CLI=$E EXMY=$E EXMY_TEST_GPU=$T
pack() { (cd /tmp/v && tar cf "$OUT/verify.tar.tmp" . 2>/dev/null && mv "$OUT/verify.tar.tmp" "$OUT/verify.tar"); }
( while true; do sleep 15; pack; done ) & packer=$!
d=$(( $(left) - 10 )); [ $d -lt 30 ] && d=30
run() { local n=$1; shift; ( timeout -k 3 $d "$@" > /tmp/v/$n.log 2>&1; echo "[$n rc $? at $(( $(date +%s) - t0 )) s]" >> /tmp/v/$n.log ) & }
run t_gemm "$T" "[gpu][gemm],[gpu][layer]"
run t_optim "$T" "[gpu][optim]"
run t_step "$T" "exmy step --device cuda writes the CPU's bytes for every optimizer and dtype" "exmy step --device cuda: saved states, loss scaling, skipped steps"
run t_quant "$T" "[gpu][quant]" "[gpu][quant][bnb4]"
run t_cast "$T" "[gpu][cast]"
run blockfp8 python3 bench/peers/blockfp8_gemm_vs_exmy.py --exmy "$E" --recapture /tmp/w/blockfp8_new --device cuda --json /tmp/v/blockfp8_vs_new.json
run recipes python3 bench/peers/torchao_float8_vs_exmy.py --exmy "$E" --seed 20261202 --out /tmp/w/recipes-v --device cuda --fit --json /tmp/v/recipes-verify.json
run optim2cpu python3 bench/peers/torch_optim_vs_exmy.py --exmy "$E" --capabilities "" --only adagrad,nadam,radam,amsgrad,maximize --out /tmp/w/optim2_cuda_cpuengine
run optim2gpu python3 bench/peers/torch_optim_vs_exmy.py --exmy "$E" --exmy-device cuda --quick --capabilities "" --only adagrad,nadam,radam,amsgrad,maximize --out /tmp/w/optim2_cuda_gpuengine
run qlora python3 bench/peers/qlora_matmul_vs_exmy.py --exmy "$E" --fresh --seed 31337 --device cuda --out /tmp/w/qlora_vs
run blockwise python3 bench/peers/blockwise_cast_vs_torch.py --exmy "$E" --out /tmp/w/bw --device cuda --te-ref .teref
run memcuda bash scripts/measure-memory-cuda.sh "$E" /tmp/mem-cuda
wait_all() { while [ "$(jobs -rp | grep -vc "^$packer$")" -gt 0 ] && [ "$(left)" -gt 3 ]; do sleep 2; done; }
wait_all
kill $packer 2>/dev/null
for f in /tmp/w/*/summary* /tmp/w/*/*.json /tmp/w/*/*.md; do [ -f "$f" ] && [ $(stat -c %s "$f") -lt 2000000 ] && cp "$f" /tmp/v/$(basename $(dirname $f))-$(basename $f); done 2>/dev/null
for f in /tmp/v/*.log; do echo "=== $f"; tail -5 "$f"; done
pack
el "all done"
