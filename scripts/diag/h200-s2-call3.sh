#!/usr/bin/env bash
# Device call 3 of the session of 2026-12-01 (22:37-01:37 UTC), on an H200, after the merges:
#  - builds the merged tree (build-dev: exmy, exmy_test_gpu, bench_optim_gpu) while the GPU runs
#    the one capture call 1 could not (.caps/list, outputs $OUT/cap-NAME.tar);
#  - issue 31: bench_optim_gpu of 3436d35 (built off the device with the same nvcc 13.0, carried
#    xz-packed in build-before/) against this tree's, alternated on a quiet GPU, after the fix of
#    the torch-cpu tail index (BM_adamw_16bit was 1.49x/1.24x in call 2);
#  - then the GPU tests and the helpers' verification commands (.caps/verify.sh), side by side,
#    until the call's deadline. Everything they write goes to /tmp/v, returned as $OUT/verify.tar.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$root/bench/peers
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$root/.devdeps/usr/lib/x86_64-linux-gnu:$root/build-before:${LD_LIBRARY_PATH:-}
(scripts/device-build.sh bench_optim_gpu exmy exmy_test_gpu > /tmp/build.log 2>&1; echo "build rc $?" >> /tmp/build.log) &
bpid=$!
if [ -f .caps/list ]; then
  while read -r n s; do
    [ -n "$n" ] || continue
    mkdir -p /tmp/caps/$n
    (timeout -k 5 170 python3 "$s" --out /tmp/caps/$n > /tmp/caps/$n/log.txt 2>&1;
     echo "capture $n rc $?" | tee -a /tmp/caps/$n/log.txt)
    (cd /tmp/caps/$n && tar cf "$OUT/cap-$n.tar" .)
    du -sh /tmp/caps/$n
  done < .caps/list
fi
# bench_optim_gpu is built first; the benchmark runs while the CPU builds the rest (its times are
# the GPU's: cudaEvent manual time), before and after alternated.
while ! grep -q "Built target bench_optim_gpu" /tmp/build.log 2>/dev/null && kill -0 $bpid 2>/dev/null; do sleep 3; done
B=$root/$(find build-dev -name bench_optim_gpu -type f -perm -u+x | head -1)
el "bench_optim_gpu built"
mkdir -p /tmp/ba3/before /tmp/ba3/after /tmp/v
xz -dc build-before/bench_optim_gpu-3436d35.xz > /tmp/ba3/before/bench_optim_gpu && chmod +x /tmp/ba3/before/bench_optim_gpu
cp "$B" /tmp/ba3/after/
OUT=/tmp/bench3 timeout -k 5 150 bash bench/gpu_before_after.sh /tmp/ba3/before /tmp/ba3/after 1 bench_optim_gpu 2>&1 | tail -14
(cd /tmp/bench3 && tar cf "$OUT/bench.tar" .)
el "bench done"
wait $bpid; tail -2 /tmp/build.log; el "build done"
T=$root/$(find build-dev -name exmy_test_gpu -type f -perm -u+x | head -1)
E=$root/$(find build-dev -path '*cli/exmy' -type f | head -1)
export EXMY_CLI=$E EXMY=$E EXMY_TEST_GPU=$T
dl=$(( 545 - ($(date +%s) - t0) ))
[ $dl -lt 60 ] && dl=60
timeout -k 5 $dl "$T" "~exmy step --device cuda writes the CPU's bytes for every optimizer and dtype" \
  > /tmp/v/gputests.log 2>&1 &
[ -f .caps/verify.sh ] && DL=$dl timeout -k 5 $dl bash .caps/verify.sh > /tmp/v/verify.log 2>&1 &
wait
echo "--- gputests"; tail -4 /tmp/v/gputests.log
echo "--- verify"; tail -30 /tmp/v/verify.log
(cd /tmp/v && tar cf "$OUT/verify.tar" .)
el "all done"
