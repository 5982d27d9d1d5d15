#!/usr/bin/env bash
# The session's last device call (2026-12-01): exmy built on the device from the merged tree
# while the GPU records cuBLAS's launches for the held-out capture's shapes (issue 30), then the
# GPU tests of the merged tree and the library comparisons of the fixes made from call 2's
# findings (issues 32, 33): bitsandbytes Lion/AdEMAMix and double quantization, torchao's fp16
# block casts, torch.optim's new families (when their script exists), and the optimizer
# benchmark before/after the launcher table (issue 31) when the before-binaries were carried.
# Writes $OUT/log.txt, $OUT/launch2.tar, $OUT/peers.tar, $OUT/bench.tar.
set -u
cd "$(dirname "$0")/../.."
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1
targets="exmy exmy_test_gpu"
[ -d build-before ] && targets="$targets bench_optim_gpu"
(scripts/device-build.sh $targets > /tmp/build.log 2>&1; echo "build rc $?" >> /tmp/build.log) &
bpid=$!
python3 bench/peers/gemm_launch_probe.py --plan bench/results/2026-12-01-h200-gemm-campaign/plan_launch.json \
  --out /tmp/lp2 --budget-s 60 | grep -v "^launch .* eta"
(cd /tmp/lp2 && tar cf "$OUT/launch2.tar" .)
el "launch probe done"
wait $bpid
tail -2 /tmp/build.log
el "build done"
T=$(find build-dev -name exmy_test_gpu -type f -perm -u+x | head -1)
E=$PWD/$(find build-dev -path '*cli/exmy' -type f | head -1)
export EXMY_CLI=$E LD_LIBRARY_PATH=$PWD/.devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
timeout 60 "$T" "[gpu][quant],[gpu][gemm],[gpu][layer]" 2>&1 | tail -3
el "gpu tests done"
P=/tmp/peers; mkdir -p $P
# The four comparisons at once (each is mostly exmy processes on the CPU and small GPU calls),
# each with its own log and a deadline that leaves the benchmark its quiet GPU.
dl=$(( 470 - ($(date +%s) - t0) ))
[ $dl -lt 60 ] && dl=60
timeout -k 5 $dl python3 bench/peers/bnb_optim8_vs_exmy.py --exmy "$E" --out $P/o8 --exmy-device both \
  --only ademamix32bit,paged_ademamix32bit,lion8bit,lion32bit,paged_lion8bit,paged_lion32bit \
  > $P/o8.log 2>&1 &
timeout -k 5 $dl python3 bench/peers/bnb4bit_vs_exmy.py --exmy "$E" --device cuda --out $P/b4 \
  --only double-quant > $P/b4.log 2>&1 &
timeout -k 5 $dl python3 bench/peers/blockwise_cast_vs_torch.py --exmy "$E" --out $P/bw --device cuda \
  --te-ref .teref --only torchao > $P/bw.log 2>&1 &
timeout -k 5 $dl python3 bench/peers/torch_optim_vs_exmy.py --exmy "$E" --out $P/topt > $P/topt.log 2>&1 &
wait
for f in o8 b4 bw topt; do echo "--- $f"; tail -4 $P/$f.log; done
el "peers done"
(cd $P && tar cf "$OUT/peers.tar" .)
left=$(( 585 - ($(date +%s) - t0) ))
if [ -d build-before ] && [ $left -gt 40 ]; then
  # before: bench_optim_gpu of 3436d35 (the commit before the launcher tables), built off the
  # device and carried xz-packed with its libbenchmark; after: this tree's, built above.
  B=$(find build-dev -name bench_optim_gpu -type f -perm -u+x | head -1)
  mkdir -p /tmp/ba-after /tmp/ba-before && cp "$B" /tmp/ba-after/
  xz -dc build-before/bench_optim_gpu.xz > /tmp/ba-before/bench_optim_gpu
  chmod +x /tmp/ba-before/bench_optim_gpu
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$PWD/build-before
  OUT=/tmp/bench timeout $left bash bench/gpu_before_after.sh /tmp/ba-before /tmp/ba-after 2 bench_optim_gpu 2>&1 | tail -16
  (cd /tmp/bench && tar cf "$OUT/bench.tar" .)
fi
el "all done"
