#!/usr/bin/env bash
# Device call for h/optimcuda (2026-12-02 ~06:00 UTC): Triton's libdevice.pow on constant bases
# (bench/peers/triton_pow_probe.py) and torchao's low-bit AdamW on shapes the captures lack
# (1-d quantized 8-bit/fp8, a 2-d parameter with a last dimension off 256, amsgrad fp32 on 17x256),
# for the fusion rule of docs/SEMANTICS.md 9.2.7. No exmy build. Results: $OUT/optimcuda-*.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/optimcuda-out}
mkdir -p "$OUT/optimcuda-pow" "$OUT/optimcuda-tao" "$OUT/optimcuda-sass"
timeout 60 python bench/peers/triton_pow_probe.py --out "$OUT/optimcuda-pow" 2>&1 | tail -3
timeout 120 python bench/peers/torchao_optim_capture.py --out "$OUT/optimcuda-tao" --budget 90 \
  --no-sass --shapes '4096;64x192;8x512;17x256' \
  --only adamw8bit_defaults_fp32_4096,adamwfp8_defaults_fp32_4096,adamw8bit_defaults_fp32_64x192,adamw4bit_defaults_fp32_8x512,adamw8bit_defaults_fp32_8x512,adamwfp8_defaults_fp32_17x256 \
  2>&1 | tail -8
# the one-kernel form's PTX/SASS (fp32 AdamW8bit on 17x256: 32 of 4,352 parameters still 1 ulp off)
timeout 60 python bench/peers/torchao_optim_capture.py --out "$OUT/optimcuda-sass" --budget 40 \
  --only adamw8bit_defaults_fp32_17x256 2>&1 | tail -3
cd "$OUT" && tar czf optimcuda-results.tgz --exclude='optimcuda-tao/code.tar.gz' optimcuda-pow \
  optimcuda-tao optimcuda-sass && rm -rf optimcuda-pow optimcuda-tao optimcuda-sass && ls -la "$OUT"
