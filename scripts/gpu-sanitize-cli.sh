#!/usr/bin/env bash
# compute-sanitizer (memcheck with leak check, then racecheck) on the CLI's GPU paths, one
# representative command per kernel family: `exmy step --device cuda` for every optimizer entry
# with a GPU kernel and each dtype it takes (3 steps, then 3 more resumed from the saved state),
# `exmy cast --device cuda` (fast presets, a generic format, sr), `exmy quantize --device cuda`
# (each scheme). The CLI test suites run hundreds of child processes, which the tool's start-up
# cost per process makes too slow to cover whole; these commands reach the same host wrappers
# (gpu/optim/optim_host.cu, gpu/host_arrays.cu, gpu/quant/*.cu) and kernels.
#   scripts/gpu-sanitize-cli.sh EXMY OUTDIR [TOOLS="memcheck racecheck"]
# Writes OUTDIR/cli-sanitize.tsv (tool, command, exit, summary) and the logs as a .tar.gz.
set -uo pipefail
exmy=$1 out=$2 tools=${3:-memcheck racecheck}
work=$(mktemp -d)
mkdir -p "$out/logs-cli"
python3 - "$work" <<'PY'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
n = 70001  # several 256- and 2048-blocks and a partial last block; > 4096 (no 32-bit fallback)
p = rng.standard_normal(n).astype(np.float32)
np.save(f"{d}/p.npy", p)
np.save(f"{d}/pb.npy", (p.view(np.uint32) & 0xFFFF0000).view(np.float32))  # bf16 values
np.save(f"{d}/ph.npy", p.astype(np.float16).astype(np.float32))  # fp16 values
g = (rng.standard_normal((3, n)) * 1e-2).astype(np.float32)
g[1, 17] = np.inf; g[2, 99] = np.nan; g[0, :64] = 0.0
np.save(f"{d}/g.npy", g)
np.save(f"{d}/ps.npy", rng.standard_normal(1000).astype(np.float32))  # < 4096: fallback
np.save(f"{d}/gs.npy", (rng.standard_normal((3, 1000)) * 1e-2).astype(np.float32))
x = rng.standard_normal(1 << 20).astype(np.float32) * 100
x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 448.0, 464.0]
np.save(f"{d}/x.npy", x)
np.save(f"{d}/x2.npy", x.reshape(1024, 1024))
PY
cmds=()
for opt in adamw adam sgd; do
  cmds+=("step --optimizer $opt --params P --grads G"
         "step --optimizer $opt --param-dtype bf16 --params PB --grads G"
         "step --optimizer $opt --param-dtype fp16 --params PH --grads G")
done
for opt in adamw8bit adam8bit momentum8bit; do
  cmds+=("step --optimizer $opt --params P --grads G" "step --optimizer $opt --params PS --grads GS"
         "step --optimizer $opt --params P --grads G --block 2048")
done
cmds+=("step --optimizer stableadamw --params P --grads G" "step --optimizer adamw-bf16+8:sr --params P --grads G"
       "step --optimizer sgd-fp16+4 --params P --grads G" "step --optimizer adamw --params P --grads G --loss-scale dynamic")
for f in e4m3fn e5m2 e2m1fn e8m0fnu e3m4 e6m5; do
  cmds+=("cast $f --in X --out Y" "cast $f --in X --out Y --round sr:8 --seed 3")
done
cmds+=("quantize --scheme tensor --to int8 --in X2 --out Y --state-out S"
       "quantize --scheme rowwise --to int8 --in X2 --out Y --state-out S --transpose"
       "quantize --scheme block:256 --to dynamic --in X --out Y --state-out S"
       "quantize --scheme mx --to e4m3fn --in X --out Y --state-out S"
       "quantize --scheme nvfp4 --to e2m1fn --in X --out Y --state-out S --pack"
       "quantize --scheme tensor --to e4m3fn --variant te --in X2 --out Y --state-out S")
i=0
: > "$out/cli-sanitize.tsv"
for tool in $tools; do
  extra=(); [ "$tool" = memcheck ] && extra=(--leak-check full)
  for c in "${cmds[@]}"; do
    i=$((i + 1))
    run="$c "; run=${run//P /$work/p.npy }; run=${run//G /$work/g.npy }
    run=${run//PS /$work/ps.npy }; run=${run//PB /$work/pb.npy }; run=${run//PH /$work/ph.npy }; run=${run//GS /$work/gs.npy }
    run=${run//X2 /$work/x2.npy }; run=${run//X /$work/x.npy }
    run=${run//Y /$work/y.npy }; run=${run//S /$work/s.npy }
    run=${run%% }
    rm -rf "$work/o" "$work/o2"
    case $c in step*) run="$run --steps 3 --out $work/o";; esac
    [ "${run: -1}" = "S" ] && run="${run%S}$work/s.npy"
    log="$out/logs-cli/$tool-$i.log"
    # shellcheck disable=SC2086
    compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 "$exmy" $run --device cuda > "$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && [[ $c == step* ]]; then
      # Resume from the saved state and the written parameters for three more steps (the
      # state-loading path).
      resume=$(printf '%s' "$run" | sed -E "s|--params [^ ]+|--params $work/o/params.npy|; s|--out [^ ]+|--state $work/o --out $work/o2|")
      # shellcheck disable=SC2086
      compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 "$exmy" $resume \
        --device cuda >> "$log" 2>&1
      rc=$?
    fi
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1 | sed 's/^=* *//')
    printf '%s\t%s\t%d\t%s\n' "$tool" "$c" "$rc" "$summary" | tee -a "$out/cli-sanitize.tsv"
  done
done
tar czf "$out/logs-cli.tar.gz" -C "$out" logs-cli && rm -rf "$out/logs-cli" "$work"
awk -F'\t' '$3 != 0 {bad=1} END {exit bad}' "$out/cli-sanitize.tsv"
