#!/usr/bin/env bash
# Device call 2 of the session of 2026-12-02, on an H200. Binaries built off the device
# (scripts/pack-device-binaries.sh: exmy, exmy_test_gpu, bench_optim_gpu; carry build-carry and
# build-libs), so the call spends no time compiling:
#  - the helpers' capture scripts (.caps/list), one after another, each under its own deadline,
#    all packed into $OUT/caps.tar as each ends;
#  - issue 31: bench_optim_gpu of 3436d35 (build-before/) against this tree's, alternated, after
#    the 16-bit kernels lost their per-element tail/amsgrad branches;
#  - the GPU step-CLI tests (cut by call 1's deadline) and the three verification scripts call 1
#    could not finish, /tmp/v packed into $OUT/verify.tar every 15 s and at the end.
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
export LD_LIBRARY_PATH=$root/build-libs:$root/build-before:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/b /tmp/caps /tmp/v /tmp/w && tar xJf build-carry/build-pack.tar.xz -C /tmp/b && ls /tmp/b
E=/tmp/b/exmy; T=/tmp/b/exmy_test_gpu
export EXMY_CLI=$E EXMY=$E EXMY_TEST_GPU=$T
"$E" --version
# Step tests first, on the GPU beside the captures (they are CPU-bound: exmy step on the CPU).
( timeout -k 3 $(( END - 20 )) "$T" "exmy step --device cuda writes the CPU's bytes for every optimizer and dtype" > /tmp/v/t_step1.log 2>&1; echo "[t_step1 rc $? at $(( $(date +%s) - t0 )) s]" >> /tmp/v/t_step1.log ) &
( timeout -k 3 $(( END - 20 )) "$T" "exmy step --device cuda: saved states*" > /tmp/v/t_step2.log 2>&1; echo "[t_step2 rc $? at $(( $(date +%s) - t0 )) s]" >> /tmp/v/t_step2.log ) &
# (Catch2 v2 joins separate arguments into one AND-ed filter: one argument, ',' for OR.)
( timeout -k 3 200 "$T" "[gpu][quant],GPU 16-bit Adam/SGD*" > /tmp/v/t_quant.log 2>&1; echo "[t_quant rc $?]" >> /tmp/v/t_quant.log ) &
if [ -f .caps/list ]; then
  while read -r n s; do
    [ -n "$n" ] || continue
    mkdir -p /tmp/caps/$n
    el "capture $n"
    (cd .caps/$n && timeout -k 5 100 python3 "$root/.caps/$n/${s#.caps/$n/}" --out /tmp/caps/$n > /tmp/caps/$n/log.txt 2>&1;
     echo "capture $n rc $?" | tee -a /tmp/caps/$n/log.txt)
    du -sh /tmp/caps/$n
    (cd /tmp/caps && tar cf "$OUT/caps.tar.tmp" . && mv "$OUT/caps.tar.tmp" "$OUT/caps.tar")
  done < .caps/list
fi
el "captures done"
mkdir -p /tmp/ba3/before /tmp/ba3/after
xz -dc build-before/bench_optim_gpu-3436d35.xz > /tmp/ba3/before/bench_optim_gpu && chmod +x /tmp/ba3/before/bench_optim_gpu
cp /tmp/b/bench_optim_gpu /tmp/ba3/after/
OUT=/tmp/bench timeout -k 5 150 bash bench/gpu_before_after.sh /tmp/ba3/before /tmp/ba3/after 2 bench_optim_gpu 2>&1 | tail -14
(cd /tmp/bench && tar cf "$OUT/bench.tar.tmp" . && mv "$OUT/bench.tar.tmp" "$OUT/bench.tar")
el "bench done"
pack() { (cd /tmp/v && tar cf "$OUT/verify.tar.tmp" . 2>/dev/null && mv "$OUT/verify.tar.tmp" "$OUT/verify.tar"); }
( while true; do sleep 15; pack; done ) & packer=$!
d=$(( $(left) - 8 )); [ $d -lt 20 ] && d=20
run() { local n=$1; shift; ( timeout -k 3 $d "$@" > /tmp/v/$n.log 2>&1; echo "[$n rc $? at $(( $(date +%s) - t0 )) s]" >> /tmp/v/$n.log ) & }
run recipes python3 bench/peers/torchao_float8_vs_exmy.py --exmy "$E" --seed 20261202 --out /tmp/w/recipes-v --device cuda --fit --json /tmp/v/recipes-verify.json
run qlora python3 bench/peers/qlora_matmul_vs_exmy.py --exmy "$E" --fresh --seed 31337 --device cuda --out /tmp/w/qlora_vs
run blockwise python3 bench/peers/blockwise_cast_vs_torch.py --exmy "$E" --out /tmp/w/bw --device cuda --te-ref .teref
while [ "$(left)" -gt 4 ] && [ "$(jobs -rp | grep -vc "^$packer$")" -gt 0 ]; do sleep 2; done
kill $packer 2>/dev/null
for f in /tmp/w/*/summary* /tmp/w/*/*.json /tmp/w/*/*.md; do [ -f "$f" ] && [ $(stat -c %s "$f") -lt 2000000 ] && cp "$f" /tmp/v/$(basename $(dirname $f))-$(basename $f); done 2>/dev/null
for f in /tmp/v/*.log; do echo "=== $f"; tail -5 "$f"; done
pack
el "all done"
