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
# issue 30: a fresh 16-bit SIMT capture and its family check
( timeout -k 5 80 python3 bench/peers/gemm_simt16_capture.py --out /tmp/w/simt16b --seed 20261205 --budget-s 60 > /tmp/v/simt16b.log 2>&1
  timeout -k 5 $d python3 bench/peers/gemm_family_check.py "$E" --capture /tmp/w/simt16b --families gemvx,gemmSN,dot,gemv2 --types bf16,fp16 --launch /tmp/w/simt16b/launch.json --check-products 1e12 --jobs 8 --out /tmp/v/simt16b-check.json >> /tmp/v/simt16b.log 2>&1; echo "[simt16b rc $?]" >> /tmp/v/simt16b.log ) &
# issue 33: torchao's remaining CUDA cases and the SASS of the fp32 8-bit step
( timeout -k 5 80 python3 bench/peers/torchao_optim_capture.py --out /tmp/w/torchao_optim2 --budget 70 --no-sass --only amsgrad,adamw4bit_defaults_fp32_1000,adamw4bit_defaults_fp32_17x256,adamw4bit_defaults_bf16_4224,adamw4bit_defaults_bf16_17x256,adamw4bit_defaults_fp16,adamw4bit_defaults_bf16_1000_sr,adamwfp8_defaults_fp32_1000,adamwfp8_defaults_fp32_17x256,adamwfp8_defaults_bf16_4224,adamwfp8_defaults_fp16,adamwfp8_defaults_bf16_1000_sr,_eager > /tmp/v/tao2.log 2>&1; echo "[tao2 rc $?]" >> /tmp/v/tao2.log
  timeout -k 5 40 python3 bench/peers/torchao_optim_capture.py --out /tmp/w/torchao_optim_sass --budget 30 --only adamw8bit_defaults_fp32_32x128,adamw8bit_defaults_fp32_1000 > /tmp/v/tao3.log 2>&1; echo "[tao3 rc $?]" >> /tmp/v/tao3.log ) &
# issue 33: Adafactor's CPU model on the device host's CPU
run adafactor_cpu python3 bench/peers/torch_optim_vs_exmy.py --exmy "$E" --out /tmp/w/af-cpu --no-cuda --adafactor --quick --capabilities avx512
wait
(cd /tmp/w && tar cf "$OUT/w-simt16b.tar" simt16b 2>/dev/null)
(cd /tmp/w && tar cf "$OUT/w-tao.tar" --exclude='*.npy' torchao_optim2 torchao_optim_sass af-cpu 2>/dev/null)
ls -la /tmp/v
