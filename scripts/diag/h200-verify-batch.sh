#!/usr/bin/env bash
# The verification batch of this session (2026-12-02), run by h200-s2-call3.sh from .caps/verify.sh;
# it ran past that call's limit. Needs EXMY, EXMY_TEST_GPU and DL (seconds) set.
# The helpers' verification commands, side by side, each under the call's deadline $DL
# (logs and JSON summaries in /tmp/v, bulky outputs in /tmp/w).
set -u
E=$EXMY; T=$EXMY_TEST_GPU
mkdir -p /tmp/v /tmp/w
d=$(( ${DL:-250} - 5 ))
run() { local n=$1; shift; ( timeout -k 5 $d "$@" > /tmp/v/$n.log 2>&1; echo "[$n rc $?]" >> /tmp/v/$n.log ) & }
run step "$T" "exmy step --device cuda writes the CPU's bytes for every optimizer and dtype"
run blockfp8 python3 bench/peers/blockfp8_gemm_vs_exmy.py --exmy "$E" --recapture /tmp/w/blockfp8_new --device cuda --json /tmp/v/blockfp8_vs_new.json
run recipes python3 bench/peers/torchao_float8_vs_exmy.py --exmy "$E" --seed 20261202 --out /tmp/w/recipes-v --device cuda --fit --json /tmp/v/recipes-verify.json
run optim2cpu python3 bench/peers/torch_optim_vs_exmy.py --exmy "$E" --capabilities "" --only adagrad,nadam,radam,amsgrad,maximize --out /tmp/w/optim2_cuda_cpuengine
run optim2gpu python3 bench/peers/torch_optim_vs_exmy.py --exmy "$E" --exmy-device cuda --quick --capabilities "" --only adagrad,nadam,radam,amsgrad,maximize --out /tmp/w/optim2_cuda_gpuengine
run qlora python3 bench/peers/qlora_matmul_vs_exmy.py --exmy "$E" --fresh --seed 31337 --device cuda --out /tmp/w/qlora_vs
run blockwise python3 bench/peers/blockwise_cast_vs_torch.py --exmy "$E" --out /tmp/w/bw --device cuda --te-ref .teref
wait
for f in /tmp/w/*/summary* /tmp/w/*/*.json /tmp/w/*/*.md; do [ -f "$f" ] && [ $(stat -c %s "$f") -lt 2000000 ] && cp "$f" /tmp/v/$(basename $(dirname $f))-$(basename $f); done 2>/dev/null
for f in /tmp/v/*.log; do echo "=== $f"; tail -6 "$f"; done
