#!/usr/bin/env bash
# Device call 2 of the session of 2026-12-01 (22:37-01:37 UTC), right after call 1 on the same
# warm H200 (build-dev and build-dev-before kept): issue 31's same-call speed before/after of the
# launcher tables, bench_gpu_quant and bench_optim_gpu of 3436d35 against this tree, alternated
# (bench/gpu_before_after.sh), on a quiet GPU.
set -u
cd "$(dirname "$0")/../.."
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
export LD_LIBRARY_PATH=$PWD/.devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/ba2/before /tmp/ba2/after
for b in bench_gpu_quant bench_optim_gpu; do
  cp "$(find build-dev-before -name $b -type f -perm -u+x | head -1)" /tmp/ba2/before/ || echo "no before $b"
  cp "$(find build-dev -name $b -type f -perm -u+x | head -1)" /tmp/ba2/after/ || echo "no after $b"
done
ls -la /tmp/ba2/*
OUT=/tmp/bench timeout -k 5 ${1:-540} bash bench/gpu_before_after.sh /tmp/ba2/before /tmp/ba2/after 2 \
  "bench_optim_gpu bench_gpu_quant" 2>&1 | tail -30
python3 bench/compare_gbench.py /tmp/bench > /tmp/bench/compare-final.txt 2>&1; tail -5 /tmp/bench/compare-final.txt
(cd /tmp/bench && tar cf "$OUT/bench.tar" .)
echo "[$(( $(date +%s) - t0 )) s] done"
