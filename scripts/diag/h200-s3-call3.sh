#!/usr/bin/env bash
# Device call 3 of the session of 2026-12-02, on an H200, after the merges:
#  - builds the merged tree (build-dev: bench_optim_gpu, bench_gpu_quant, exmy, exmy_test_gpu)
#    while the GPU runs the helpers' capture scripts (.caps/list) side by side, each packed into
#    its own $OUT/cap-NAME.tar when it ends;
#  - issue 31: bench_optim_gpu of 3436d35 against this tree's (the fp16 NaN-pattern fix);
#  - issue 37: bench_gpu_quant's paths with the copy baseline in the same process;
#  - the GPU tests by tag (step-CLI tests in 6 processes) and the helpers' verification commands
#    (.caps/verify3.sh), /tmp/v packed into $OUT/verify.tar every 15 s and at the end.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
END=${END:-420}
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( END - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$root/bench/peers
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$root/.devdeps/usr/lib/x86_64-linux-gnu:$root/build-before:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/caps /tmp/v /tmp/w
(scripts/device-build.sh bench_optim_gpu bench_gpu_quant exmy exmy_test_gpu > /tmp/build.log 2>&1; echo "build rc $?" >> /tmp/build.log) &
bpid=$!
if [ -f .caps/list ]; then
  while read -r n s; do
    [ -n "$n" ] || continue
    mkdir -p /tmp/caps/$n
    el "capture $n"
    (cd .caps/$n && timeout -k 5 100 python3 "$root/.caps/$n/${s#.caps/$n/}" --out /tmp/caps/$n > /tmp/caps/$n/log.txt 2>&1;
     echo "capture $n rc $? at $(( $(date +%s) - t0 )) s" | tee -a /tmp/caps/$n/log.txt;
     cd /tmp/caps && tar cf "$OUT/cap-$n.tar.tmp" $n && mv "$OUT/cap-$n.tar.tmp" "$OUT/cap-$n.tar") &
  done < .caps/list
  # Captures of the verification batch that need no exmy binary run here too.
  ( timeout -k 5 80 python3 bench/peers/gemm_simt16_capture.py --out /tmp/w/simt16b --seed 20261205 --budget-s 60 > /tmp/v/simt16b.log 2>&1; echo "[simt16b capture rc $?]" >> /tmp/v/simt16b.log ) &
  ( timeout -k 5 80 python3 bench/peers/torchao_optim_capture.py --out /tmp/w/torchao_optim2 --budget 70 --no-sass --only amsgrad,adamw4bit_defaults_fp32_1000,adamw4bit_defaults_fp32_17x256,adamw4bit_defaults_bf16_4224,adamw4bit_defaults_bf16_17x256,adamw4bit_defaults_fp16,adamw4bit_defaults_bf16_1000_sr,adamwfp8_defaults_fp32_1000,adamwfp8_defaults_fp32_17x256,adamwfp8_defaults_bf16_4224,adamwfp8_defaults_fp16,adamwfp8_defaults_bf16_1000_sr,_eager > /tmp/v/tao2.log 2>&1; echo "[tao2 rc $?]" >> /tmp/v/tao2.log
    timeout -k 5 40 python3 bench/peers/torchao_optim_capture.py --out /tmp/w/torchao_optim_sass --budget 30 --only adamw8bit_defaults_fp32_32x128,adamw8bit_defaults_fp32_1000 > /tmp/v/tao3.log 2>&1; echo "[tao3 rc $?]" >> /tmp/v/tao3.log
    cd /tmp/w && tar cf "$OUT/w-tao.tar" torchao_optim2 torchao_optim_sass ) &
  while [ "$(jobs -rp | grep -vc "^$bpid$")" -gt 0 ]; do sleep 2; done
  for c in /tmp/caps/*/; do tail -1 $c/log.txt; du -sh $c; done
fi
el "captures done"
while ! grep -q "Built target bench_optim_gpu" /tmp/build.log 2>/dev/null && kill -0 $bpid 2>/dev/null; do sleep 3; done
el "bench_optim_gpu built"
mkdir -p /tmp/ba3/before /tmp/ba3/after /tmp/bench
xz -dc build-before/bench_optim_gpu-3436d35.xz > /tmp/ba3/before/bench_optim_gpu && chmod +x /tmp/ba3/before/bench_optim_gpu
cp "$root/build-dev/bench/bench_optim_gpu" /tmp/ba3/after/
OUT=/tmp/bench timeout -k 5 90 bash bench/gpu_before_after.sh /tmp/ba3/before /tmp/ba3/after 1 bench_optim_gpu 2>&1 | tail -14
(cd /tmp/bench && tar cf "$OUT/bench.tar.tmp" . && mv "$OUT/bench.tar.tmp" "$OUT/bench.tar")
el "bench_optim done"
while ! grep -q "Built target bench_gpu_quant" /tmp/build.log 2>/dev/null && kill -0 $bpid 2>/dev/null; do sleep 3; done
timeout -k 5 45 build-dev/bench/bench_gpu_quant --benchmark_filter='^(copy/fp32|quant/tensor/fp32/(e4m3fn/rne|e4m3fn/sr8|int8/rne)|quant/mx/fp32/(e4m3fn|e2m1fn)/rne|quant/mx-torchao/fp32/e4m3fn/ceil|quant/nvfp4-(torchao|torchao-2level|te-2level)/fp32|quant/amax/fp32/tensor|quant/(rowwise|colwise|transpose-rowwise)/fp16/int8/rne)(/manual_time)?$' \
  --benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_out=/tmp/bench/quant-roofline.json --benchmark_out_format=json 2>&1 | grep -E "median|copy" | head -40
(cd /tmp/bench && tar cf "$OUT/bench.tar.tmp" . && mv "$OUT/bench.tar.tmp" "$OUT/bench.tar")
el "bench_gpu_quant done"
wait $bpid; tail -2 /tmp/build.log; el "build done"
T=$root/$(find build-dev -name exmy_test_gpu -type f -perm -u+x | head -1)
E=$root/$(find build-dev -path '*cli/exmy' -type f | head -1)
export EXMY_CLI=$E EXMY=$E EXMY_TEST_GPU=$T
pack() { (cd /tmp/v && tar cf "$OUT/verify.tar.tmp" . 2>/dev/null && mv "$OUT/verify.tar.tmp" "$OUT/verify.tar"); }
( while true; do sleep 15; pack; done ) & packer=$!
d=$(( $(left) - 8 )); [ $d -lt 20 ] && d=20
run() { local n=$1; shift; ( timeout -k 3 $d "$@" > /tmp/v/$n.log 2>&1; echo "[$n rc $? at $(( $(date +%s) - t0 )) s]" >> /tmp/v/$n.log ) & }
for k in 0 1 2 3 4 5 6 7; do
  EXMY_TEST_SHARD=$k/8 run t_step$k "$T" "exmy step --device cuda*"
done
# (Catch2 v2 joins separate arguments into one AND-ed filter: one argument, ',' for OR.)
run t_quant "$T" "[gpu][quant],GPU 16-bit Adam/SGD*"
run t_gemm "$T" "[gpu][gemm],[gpu][layer]"
run t_cast "$T" "[gpu][cast]"
[ -f .caps/verify3.sh ] && DL=$d run verify3 bash .caps/verify3.sh
while [ "$(left)" -gt 4 ] && [ "$(jobs -rp | grep -vc "^$packer$")" -gt 0 ]; do sleep 2; done
kill $packer 2>/dev/null
for f in /tmp/w/*/summary* /tmp/w/*/*.json /tmp/w/*/*.md; do [ -f "$f" ] && [ $(stat -c %s "$f") -lt 2000000 ] && cp "$f" /tmp/v/$(basename $(dirname $f))-$(basename $f); done 2>/dev/null
for f in /tmp/v/*.log; do echo "=== $f"; tail -4 "$f"; done
pack
el "all done"
