#!/usr/bin/env bash
# One device call (issue 30's H200 half, and the GPU tests of issues 32/33): while exmy builds
# for sm_90 in the background (scripts/device-build.sh, carried .devdeps), the GPU
#   1. records cuBLAS's launches for the 8,020 shapes of the H100 launch records (same shapes:
#      does the H200 pick the same kernels and split counts?) and FPRev trees of the families
#      without a rule (bench/results/2026-12-01-h200-gemm/plan.json; fp16 included);
#   2. captures a held-out random-shape campaign (seed 20261201) for every type;
#   3. then runs the GPU tests that have not run on a GPU yet.
# Writes $OUT/log.txt, $OUT/launch.tar and $OUT/cap_<type>.npz.
set -u
cd "$(dirname "$0")/../.."
log=$OUT/log.txt
exec > >(tee -a "$log") 2>&1
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
(scripts/device-build.sh exmy exmy_test_gpu > /tmp/build.log 2>&1; echo "build rc $?" >> /tmp/build.log) &
bpid=$!
export PYTHONUNBUFFERED=1
python3 bench/peers/gemm_launch_probe.py --plan bench/results/2026-12-01-h200-gemm/plan.json \
  --out /tmp/lp --budget-s 150 | grep -v "^fprev \|^launch .* eta" 
(cd /tmp/lp && tar cf "$OUT/launch.tar" .)
echo "probe done $(( $(date +%s) - t0 )) s"
python3 bench/peers/gemm_kernel_select_capture.py --out /tmp/cap --seed 20261201 --max-mib 8.5 \
  --budget-s 200 --no-scan 2>&1 | grep -v Warn
for f in /tmp/cap/*.npz; do cp "$f" "$OUT/cap_$(basename "$f")"; done
echo "capture done $(( $(date +%s) - t0 )) s"
wait $bpid
tail -3 /tmp/build.log
echo "build done $(( $(date +%s) - t0 )) s"
T=$(find build-dev -name exmy_test_gpu -type f -perm -u+x | head -1)
export EXMY_CLI=$PWD/$(find build-dev -path '*cli/exmy' -type f | head -1)
export LD_LIBRARY_PATH=$PWD/.devdeps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
left=$(( 560 - ($(date +%s) - t0) ))
echo "tests with $left s left"
timeout 60 "$T" "[gpu][quant]" 2>&1 | tail -4
timeout 40 "$T" "[gpu][gemm],[gpu][layer]" 2>&1 | tail -4
left=$(( 575 - ($(date +%s) - t0) ))
[ $left -gt 20 ] && timeout $left "$T" "exmy step --device cuda writes the CPU's bytes for every optimizer and dtype" 2>&1 | tail -6
echo "all done $(( $(date +%s) - t0 )) s"
