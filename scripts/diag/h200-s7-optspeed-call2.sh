#!/usr/bin/env bash
# Call 2 of h/optspeed (2026-12-02): the variants whose results call 1 lost (only 8 files come
# back from $OUT), their medians on stdout; the grid-stride step test for the fastest AdEMAMix one.
# (EXMY_ADEMAMIX_VARIANT / EXMY_BNB4_VARIANT existed only in commit 043c1ecd; the kept kernels are
# the defaults since.)
set -u
cd "$(dirname "$0")/.."
root=$PWD; C=$root/build-carry-optspeed; t0=$(date +%s)
el() { echo "[$(($(date +%s) - t0)) s] $*"; }
export LD_LIBRARY_PATH=$root/build-libs:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/x && tar xJf "$C/all.tar.xz" -C /tmp/x; B=/tmp/x/b
G='--benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out_format=json'
med() { python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
print(' | '.join('%s %.1f'%(b['run_name'].replace('/manual_time','').replace('67108864','').replace('BM_',''),b['real_time']) for b in d['benchmarks'] if b.get('aggregate_name')=='median'))" $1; }
QF='--benchmark_filter=^(copy/fp32|quant/bnb4/bf16/.*|quant/bnb4/fp32/.*/b4096)(/manual_time)?$'
for v in 1 2 4; do
  timeout -k 2 20 env EXMY_BNB4_VARIANT=$v $B/bench_gpu_quant $G "$QF" --benchmark_out=$OUT/q$v.json > /dev/null 2>&1
  el "quant v$v rc $?: $(med $OUT/q$v.json)"
done
OF='--benchmark_filter=BM_(adamw_torch_default|ademamix8bit)'
for v in 3 5; do
  timeout -k 2 15 env EXMY_ADEMAMIX_VARIANT=$v $B/bench_optim_gpu $G "$OF" --benchmark_out=$OUT/o$v.json > /dev/null 2>&1
  el "optim v$v rc $?: $(med $OUT/o$v.json)"
done
w=$(python3 -c "
import json
best=(419.9,1)
for v in (3,5):
    try:
        d=json.load(open('$OUT/o%d.json'%v))
        t=[b['real_time'] for b in d['benchmarks'] if b.get('aggregate_name')=='median' and 'ademamix' in b['run_name']][0]
        best=min(best,(t,v))
    except Exception: pass
print(best[1])")
el "ademamix winner v$w; grid-stride step test"
export EXMY_CLI=$B/exmy EXMY=$B/exmy EXMY_SRC=$root
timeout -k 2 $((62 - ($(date +%s) - t0))) env EXMY_ADEMAMIX_VARIANT=$w EXMY_TEST_ONLY=ademamix8bit $B/exmy_test_gpu \
  "exmy step --device cuda: 8-bit*" > $OUT/t-gs.txt 2>&1
el "test gs v$w rc $?: $(tail -2 $OUT/t-gs.txt | tr '\n' ' ')"
