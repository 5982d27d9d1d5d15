#!/usr/bin/env bash
# Device call of branch h/optspeed (issue 33's speed targets), on an H200, from the packed
# binaries of scripts/pack-device-binaries.sh (carried as build-carry-optspeed/, beside
# build-libs/; main's bench binaries, built at main's commit, beside them):
#   - bench_optim_gpu: BM_ademamix8bit under each EXMY_ADEMAMIX_VARIANT (0..5), each process with
#     the torch-arithmetic AdamW and AdamW8bit beside it; main's binary the same way;
#   - bench_gpu_quant: copy/fp32 and quant/bnb4/* under each EXMY_BNB4_VARIANT (0..4); main's;
#   - exmy_test_gpu "[bnb4]" under each NF4 variant, the step-CLI GPU tests of ademamix8bit and
#     adamw8bit under the AdEMAMix variants (in parallel, after the benchmarks).
# MODE=final runs only the default variants and main's binaries. EXMY_ADEMAMIX_VARIANT and
# EXMY_BNB4_VARIANT existed only in commit 043c1ecd (the kept kernels are the defaults since).
# Every step under timeout; END (s) bounds the whole call. Call 1 (2026-12-02) ran it: the step
# tests needed more than 60 s each with seven in parallel, and only 8 files came back (fixed
# below); scripts/diag/h200-s7-optspeed-call2.sh re-ran what was lost, medians on stdout.
set -u
cd "$(dirname "$0")/.."
root=$PWD
C=$root/build-carry-optspeed
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
END=${END:-270}
MODE=${MODE:-variants}
el() { echo "[$(($(date +%s) - t0)) s] $*"; }
left() { echo $((END - ($(date +%s) - t0))); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
nvidia-smi | grep -i "cuda version"
export LD_LIBRARY_PATH=$root/build-libs:${LD_LIBRARY_PATH:-}
# One tar of this branch's binaries (b/) and main's (base/), xz with a 256 MiB dictionary: the
# binaries share most of their device code, so together they pack to 18 MB (the tracked tree
# and the carry travel under 64 MiB together).
mkdir -p /tmp/x && tar xJf "$C/all.tar.xz" -C /tmp/x && ln -sfn /tmp/x/b /tmp/b && ln -sfn /tmp/x/base /tmp/base
el "unpacked"
G='--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out_format=json'
OF='--benchmark_filter=BM_(adamw_torch_default|adamw8bit/.*/256/1|ademamix8bit)'
QF='--benchmark_filter=^(copy/fp32|quant/bnb4/.*)(/manual_time)?$'
bo() { local tag=$1 bin=$2; shift 2
  timeout -k 3 40 env "$@" "$bin" $G "$OF" --benchmark_out=$OUT/optim-$tag.json > $OUT/optim-$tag.txt 2>&1
  el "optim $tag rc $?"; }
bq() { local tag=$1 bin=$2; shift 2
  timeout -k 3 45 env "$@" "$bin" $G "$QF" --benchmark_out=$OUT/quant-$tag.json > $OUT/quant-$tag.txt 2>&1
  el "quant $tag rc $?"; }
if [ "$MODE" = final ]; then AV="d"; QV="d"; else AV="0 1 2 3 4 5"; QV="0 1 2 3 4"; fi
bo main /tmp/base/bench_optim_gpu
for v in $AV; do bo v$v /tmp/b/bench_optim_gpu EXMY_ADEMAMIX_VARIANT=$v; done
bo main2 /tmp/base/bench_optim_gpu
for v in $QV; do bq v$v /tmp/b/bench_gpu_quant EXMY_BNB4_VARIANT=$v; done
[ "$(left)" -gt 90 ] && bq main /tmp/base/bench_gpu_quant
T=/tmp/b/exmy_test_gpu
export EXMY_CLI=/tmp/b/exmy EXMY=/tmp/b/exmy EXMY_TEST_GPU=$T EXMY_SRC=$root
for v in $QV; do
  timeout -k 3 40 env EXMY_BNB4_VARIANT=$v "$T" "[bnb4]" > $OUT/t-bnb4-v$v.txt 2>&1
  el "test bnb4 v$v rc $?"
done
# The per-optimizer case and the grid-stride one (the saved-state case runs every optimizer).
SPEC='exmy step --device cuda writes*,exmy step --device cuda: 8-bit*'
d=$(($(left) - 8)); [ $d -lt 20 ] && d=20
el "step tests, ${d} s each"
pids=""
for v in $AV; do
  ( timeout -k 3 $d env EXMY_ADEMAMIX_VARIANT=$v EXMY_TEST_ONLY=ademamix8bit "$T" \
      "$SPEC" > $OUT/t-step-adem-v$v.txt 2>&1
    el "test step ademamix v$v rc $?" ) &
  pids="$pids $!"
done
( timeout -k 3 $d env EXMY_TEST_ONLY=adamw8bit "$T" "$SPEC" \
    > $OUT/t-step-adamw.txt 2>&1; el "test step adamw8bit rc $?" ) &
# A bare `wait` also waits for the tee of the log's process substitution (it hung call 1 until
# the run's limit): wait for the test jobs by pid.
wait $pids $!
for f in $OUT/t-*.txt; do echo "== $f"; tail -3 "$f"; done
el "all done"
# At most 8 files come back from $OUT (call 1 lost 25 of 33): one archive of them all.
(cd "$OUT" && tar czf results.tgz --remove-files ./*.json ./*.txt)
