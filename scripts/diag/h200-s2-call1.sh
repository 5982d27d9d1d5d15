#!/usr/bin/env bash
# Device call 1 of the session of 2026-12-01 (22:37-01:37 UTC), on an H200:
#  - builds exmy at this tree (build-dev: exmy, exmy_test_gpu, bench_gpu_quant, bench_optim_gpu)
#    and at 3436d35 (build-before/src.tar.xz → build-dev-before: the two benchmarks) side by side,
#    for issue 31's same-call before/after of the launcher tables (run by h200-s2-call2.sh);
#  - runs the capture scripts the helpers listed in .caps/list ("name script" per line; outputs
#    in $OUT/cap-NAME.tar), two at a time, each under a deadline;
#  - then the GPU tests of this tree and the full blockwise_cast_vs_torch.py (every group) and the
#    step-CLI GPU test alone, side by side, until the call's deadline.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$root/bench/peers:$root/.caps/scripts
python3 -c "import torch, bitsandbytes, torchao; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'bnb', bitsandbytes.__version__, 'torchao', torchao.__version__)"
export PYTHONUNBUFFERED=1
p=$root/.devdeps/usr
export LD_LIBRARY_PATH=$p/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cfg() {  # cfg SRC BUILD: the flags of scripts/device-build.sh
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DEXMY_CUDA_ARCHS=90 -DCMAKE_PREFIX_PATH="$p" \
    -DMPFR_INCLUDE_DIR="$p/include" -DMPFR_LIBRARY="$p/lib/x86_64-linux-gnu/libmpfr.a" \
    -DGMP_LIBRARY="$p/lib/x86_64-linux-gnu/libgmp.a" -DCMAKE_CXX_FLAGS="-I$p/include" >/dev/null
}
( cfg . build-dev && cmake --build build-dev -j9 --target exmy exmy_test_gpu bench_gpu_quant bench_optim_gpu \
    > /tmp/build-after.log 2>&1; echo "after build rc $?" >> /tmp/build-after.log ) &
ba=$!
( rm -rf /tmp/before && mkdir -p /tmp/before && tar xJf build-before/src.tar.xz -C /tmp/before &&
  cfg /tmp/before build-dev-before && cmake --build build-dev-before -j5 --target bench_gpu_quant bench_optim_gpu \
    > /tmp/build-before.log 2>&1; echo "before build rc $?" >> /tmp/build-before.log ) &
bb=$!
# Captures, two at a time; each a deadline of 150 s.
run_cap() {
  local n=$1 s=$2
  mkdir -p /tmp/caps/$n
  timeout -k 5 150 python3 "$s" --out /tmp/caps/$n > /tmp/caps/$n/log.txt 2>&1
  echo "capture $n rc $?" | tee -a /tmp/caps/$n/log.txt
  (cd /tmp/caps/$n && tar cf "$OUT/cap-$n.tar" .)
  du -sh /tmp/caps/$n
}
if [ -f .caps/list ]; then
  i=0
  while read -r n s; do
    [ -n "$n" ] || continue
    run_cap "$n" "$s" &
    i=$((i + 1))
    [ $((i % 2)) -eq 0 ] && wait -n
  done < .caps/list
fi
wait $ba; tail -3 /tmp/build-after.log; el "after build done"
T=$(find build-dev -name exmy_test_gpu -type f -perm -u+x | head -1)
E=$root/$(find build-dev -path '*cli/exmy' -type f | head -1)
export EXMY_CLI=$E
P=/tmp/peers; mkdir -p $P
dl=$(( 560 - ($(date +%s) - t0) ))
[ $dl -lt 60 ] && dl=60
# Every GPU test but the step CLI's (it alone takes more than 250 s), that one, and the library
# comparison, side by side.
timeout -k 5 $dl "$T" "~exmy step --device cuda writes the CPU's bytes for every optimizer and dtype" \
  > $P/gputests.log 2>&1 &
timeout -k 5 $dl python3 bench/peers/blockwise_cast_vs_torch.py --exmy "$E" --out $P/bw --device cuda \
  --te-ref .teref > $P/bw.log 2>&1 &
timeout -k 5 $dl "$T" "exmy step --device cuda writes the CPU's bytes for every optimizer and dtype" \
  > $P/step.log 2>&1 &
wait   # the captures and the two runs above
wait $bb 2>/dev/null; tail -2 /tmp/build-before.log
for f in gputests bw step; do echo "--- $f"; tail -5 $P/$f.log; done
(cd $P && tar cf "$OUT/peers.tar" .)
ls -la build-dev-before/bench 2>/dev/null | head -3
el "all done"
