#!/usr/bin/env bash
# Device call 1 of the session of 2026-12-02 (04:50-07:50 UTC), on an H200: the device work the
# last session left (its closing note, "Not run"):
#  - builds this tree (build-dev: exmy, exmy_test_gpu) and, while it builds, nothing needs exmy;
#  - the step-CLI GPU tests in full, 8 processes (EXMY_TEST_SHARD), each logged to /tmp/v;
#  - [gpu][quant] (the NVFP4/MX tests included) and the GPU 16-bit Adam/SGD cases;
#  - issue 36: the 9 fp32 layer memory rows of scripts/measure-memory-cuda.sh;
#  - issue 30: bench/peers/gemm_tail_verify.py (cuBLAS's short nvjet split-K GEMMs vs exmy);
#  - issue 33: QLoRA dequantize + F.linear on a fresh seed (31337).
# Results: /tmp/v packed into $OUT/verify.tar every 15 s and at the end; END (s) is the deadline.
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
(scripts/device-build.sh exmy exmy_test_gpu > /tmp/v/build.log 2>&1; echo "build rc $?" >> /tmp/v/build.log) &
bpid=$!
while ! grep -q "Built target exmy$" /tmp/v/build.log 2>/dev/null && kill -0 $bpid 2>/dev/null; do sleep 3; done
el "exmy built"
E=$root/build-dev/cli/exmy
export EXMY_CLI=$E EXMY=$E
d=$(( $(left) - 8 ))
run() { local n=$1; shift; ( timeout -k 3 $d "$@" > /tmp/v/$n.log 2>&1; echo "[$n rc $? at $(( $(date +%s) - t0 )) s]" >> /tmp/v/$n.log ) & }
run tail python3 bench/peers/gemm_tail_verify.py --out /tmp/w/tail --exmy "$E"
run qlora python3 bench/peers/qlora_matmul_vs_exmy.py --exmy "$E" --out /tmp/w/qlora --fresh --seed 31337 --quick --linear-only
( ROWS='^none' timeout -k 5 $d bash scripts/measure-memory-cuda.sh "$E" /tmp/mm > /tmp/v/mem0.log 2>&1
  for g in '^layer --kind (plain|switchback|switchback-m|switchback-q) --dtype fp32' '^layer --kind (llm-int8|fp8-tensorwise|switchback-fp8|masked:e4m3) --dtype fp32'; do
    ROWS="$g" timeout -k 5 $(( $(left) - 6 )) bash scripts/measure-memory-cuda.sh "$E" /tmp/mm >> /tmp/v/mem.log 2>&1; echo "[mem '$g' rc $?]" >> /tmp/v/mem.log
  done ) &
wait $bpid; tail -2 /tmp/v/build.log; el "build done"
T=$root/build-dev/tests/exmy_test_gpu
[ -x "$T" ] || T=$root/$(find build-dev -name exmy_test_gpu -type f -perm -u+x | head -1)
d=$(( $(left) - 8 )); [ $d -lt 20 ] && d=20
for k in 0 1 2 3 4 5 6 7; do
  EXMY_TEST_SHARD=$k/8 run t_step$k "$T" "exmy step --device cuda*"
done
run t_quant "$T" "[gpu][quant],GPU 16-bit Adam/SGD*"
while [ "$(left)" -gt 4 ] && [ "$(jobs -rp | grep -vc "^$packer$")" -gt 0 ]; do sleep 2; done
kill $packer 2>/dev/null
for f in /tmp/w/*/*.json /tmp/w/*/*.md; do [ -f "$f" ] && [ $(stat -c %s "$f") -lt 2000000 ] && cp "$f" /tmp/v/$(basename $(dirname $f))-$(basename $f); done 2>/dev/null
for f in /tmp/v/*.log; do echo "=== $f"; tail -4 "$f"; done
pack
el "all done"
