#!/usr/bin/env bash
# The steps campaign at full depth, split into parts that each fit one device call (SEMANTICS
# 13.2): part 1 = every quantization and matmul op plus the torch CPU and CUDA single-tensor
# ops; part 2 = the foreach ops, 8-bit, StableAdamW, split formats and loss scaling.
#   scripts/run-steps-full.sh EXMY PART OUTDIR [LIMIT_S]
# Writes OUTDIR/steps-full-partN.json (the campaign's --json) and .log; the limit sends SIGINT,
# which the campaign answers with the counts of what it checked (exit 130: inconclusive).
set -uo pipefail
exmy=$1 part=$2 out=$3 limit=${4:-540}
mkdir -p "$out"
names=$("$exmy" verify --campaign steps --op '?' 2>&1 | sed 's/.*expected one of //' | tr -d ' ')
pick() { echo "$names" | tr ',' '\n' | grep -E "$1" | paste -sd, -; }
case $part in
  1) ops="$(pick '^(quant|matmul)-'),$(pick '^(adamw?|sgd)-(fp32|bf16|fp16)(-cuda)?$')" ;;
  2) ops="$(pick 'cuda-foreach$|8bit|requant|stable|\+|^loss-')" ;;
  *) echo "part: expected 1 or 2" >&2; exit 2 ;;
esac
echo "part $part: $(echo "$ops" | tr ',' '\n' | wc -l) ops" >&2
start=$(date +%s)
timeout -s INT "$limit" "$exmy" verify --campaign steps --depth full --op "$ops" --json \
  > "$out/steps-full-part$part.json" 2> "$out/steps-full-part$part.log"
rc=$?
echo "part $part: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$out/steps-full-part$part.log" >&2
exit $rc
