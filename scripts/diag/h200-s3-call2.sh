#!/usr/bin/env bash
# Device call 2 of the session of 2026-12-02, on an H200:
#  - builds this tree on the device (build-dev: bench_optim_gpu first, then exmy, exmy_test_gpu)
#    while the GPU runs the helpers' capture scripts (.caps/list), one after another, each under
#    its own deadline, all packed into $OUT/caps.tar as each ends;
#  - issue 31: bench_optim_gpu of 3436d35 (build-before/) against this tree's, alternated, after
#    the 16-bit kernels lost their per-element tail/amsgrad branches;
#  - the GPU step-CLI tests in 4 processes (EXMY_TEST_SHARD; call 1's single process was cut at
#    its deadline), the quant tests and the three verification scripts call 1 could not finish,
#    /tmp/v packed into $OUT/verify.tar every 15 s and at the end.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
END=${END:-545}
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( END - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$root/bench/peers
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$root/.devdeps/usr/lib/x86_64-linux-gnu:$root/build-before:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/caps /tmp/v /tmp/w
(scripts/device-build.sh bench_optim_gpu exmy exmy_test_gpu > /tmp/build.log 2>&1; echo "build rc $?" >> /tmp/build.log) &
bpid=$!
# The captures side by side (each under its own deadline; GPU results do not depend on it).
if [ -f .caps/list ]; then
  while read -r n s; do
    [ -n "$n" ] || continue
    mkdir -p /tmp/caps/$n
    el "capture $n"
    (cd .caps/$n && timeout -k 5 100 python3 "$root/.caps/$n/${s#.caps/$n/}" --out /tmp/caps/$n > /tmp/caps/$n/log.txt 2>&1;
     echo "capture $n rc $? at $(( $(date +%s) - t0 )) s" | tee -a /tmp/caps/$n/log.txt) &
  done < .caps/list
  while [ "$(jobs -rp | grep -vc "^$bpid$")" -gt 0 ]; do sleep 2; done
  for c in /tmp/caps/*/; do tail -2 $c/log.txt; du -sh $c; done
  (cd /tmp/caps && tar cf "$OUT/caps.tar.tmp" . && mv "$OUT/caps.tar.tmp" "$OUT/caps.tar")
fi
el "captures done"
while ! grep -q "Built target bench_optim_gpu" /tmp/build.log 2>/dev/null && kill -0 $bpid 2>/dev/null; do sleep 3; done
el "bench_optim_gpu built"
mkdir -p /tmp/ba3/before /tmp/ba3/after
xz -dc build-before/bench_optim_gpu-3436d35.xz > /tmp/ba3/before/bench_optim_gpu && chmod +x /tmp/ba3/before/bench_optim_gpu
cp "$root/build-dev/bench/bench_optim_gpu" /tmp/ba3/after/
OUT=/tmp/bench timeout -k 5 110 bash bench/gpu_before_after.sh /tmp/ba3/before /tmp/ba3/after 1 bench_optim_gpu 2>&1 | tail -14
(cd /tmp/bench && tar cf "$OUT/bench.tar.tmp" . && mv "$OUT/bench.tar.tmp" "$OUT/bench.tar")
el "bench done"
wait $bpid; tail -2 /tmp/build.log; el "build done"
T=$root/$(find build-dev -name exmy_test_gpu -type f -perm -u+x | head -1)
E=$root/$(find build-dev -path '*cli/exmy' -type f | head -1)
export EXMY_CLI=$E EXMY=$E EXMY_TEST_GPU=$T
pack() { (cd /tmp/v && tar cf "$OUT/verify.tar.tmp" . 2>/dev/null && mv "$OUT/verify.tar.tmp" "$OUT/verify.tar"); }
( while true; do sleep 15; pack; done ) & packer=$!
d=$(( $(left) - 8 )); [ $d -lt 20 ] && d=20
run() { local n=$1; shift; ( timeout -k 3 $d "$@" > /tmp/v/$n.log 2>&1; echo "[$n rc $? at $(( $(date +%s) - t0 )) s]" >> /tmp/v/$n.log ) & }
for k in 0 1 2 3; do
  EXMY_TEST_SHARD=$k/4 run t_step$k "$T" "exmy step --device cuda*"
done
# (Catch2 v2 joins separate arguments into one AND-ed filter: one argument, ',' for OR.)
run t_quant "$T" "[gpu][quant],GPU 16-bit Adam/SGD*"
run recipes python3 bench/peers/torchao_float8_vs_exmy.py --exmy "$E" --seed 20261202 --out /tmp/w/recipes-v --device cuda --fit --json /tmp/v/recipes-verify.json
run qlora python3 bench/peers/qlora_matmul_vs_exmy.py --exmy "$E" --fresh --seed 31337 --device cuda --out /tmp/w/qlora_vs
run blockwise python3 bench/peers/blockwise_cast_vs_torch.py --exmy "$E" --out /tmp/w/bw --device cuda --te-ref .teref
while [ "$(left)" -gt 4 ] && [ "$(jobs -rp | grep -vc "^$packer$")" -gt 0 ]; do sleep 2; done
kill $packer 2>/dev/null
for f in /tmp/w/*/summary* /tmp/w/*/*.json /tmp/w/*/*.md; do [ -f "$f" ] && [ $(stat -c %s "$f") -lt 2000000 ] && cp "$f" /tmp/v/$(basename $(dirname $f))-$(basename $f); done 2>/dev/null
for f in /tmp/v/*.log; do echo "=== $f"; tail -5 "$f"; done
pack
el "all done"
