#!/usr/bin/env bash
# The helpers' verification commands of call 3 (2026-12-02), run by h200-s3-call3.sh from
# .caps/verify3.sh with EXMY, EXMY_TEST_GPU and DL (seconds) set; logs in /tmp/v, bulky outputs in
# /tmp/w. Memory rows first (they need the CPU and the disk), the rest side by side.
set -u
E=$EXMY; T=$EXMY_TEST_GPU
mkdir -p /tmp/v /tmp/w
d=$(( ${DL:-250} - 5 ))
run() { local n=$1; shift; ( timeout -k 5 $d "$@" > /tmp/v/$n.log 2>&1; echo "[$n rc $?]" >> /tmp/v/$n.log ) & }
# issue 36: host memory of gemm/layer --device cuda (inputs made once, then the row groups)
( ROWS='^none' timeout -k 5 $d bash scripts/measure-memory-cuda.sh "$E" /tmp/mm > /tmp/v/mem0.log 2>&1
  for g in '^gemm' '^layer --kind [^ ]+ --dtype (bf16|fp16)' '^layer --kind (plain|switchback|switchback-m|switchback-q) --dtype fp32' '^layer --kind (llm-int8|fp8-tensorwise|switchback-fp8|masked:e4m3) --dtype fp32'; do
    ROWS="$g" timeout -k 5 $d bash scripts/measure-memory-cuda.sh "$E" /tmp/mm >> /tmp/v/mem.log 2>&1; echo "[mem '$g' rc $?]" >> /tmp/v/mem.log
  done ) &
# issue 30: the family check of the fresh 16-bit SIMT capture (made in the capture phase)
( timeout -k 5 $d python3 bench/peers/gemm_family_check.py "$E" --capture /tmp/w/simt16b --families gemvx,gemmSN,dot,gemv2 --types bf16,fp16 --launch /tmp/w/simt16b/launch.json --check-products 1e12 --jobs 8 --out /tmp/v/simt16b-check.json >> /tmp/v/simt16b.log 2>&1; echo "[simt16b check rc $?]" >> /tmp/v/simt16b.log ) &
# issue 33: Adafactor's CPU model on the device host's CPU
run adafactor_cpu python3 bench/peers/torch_optim_vs_exmy.py --exmy "$E" --out /tmp/w/af-cpu --no-cuda --adafactor --quick --capabilities avx512
wait
(cd /tmp/w && tar cf "$OUT/w-simt16b.tar" simt16b 2>/dev/null)
(cd /tmp/w && tar cf /tmp/v/af-cpu.tar af-cpu 2>/dev/null)
ls -la /tmp/v
