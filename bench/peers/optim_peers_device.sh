#!/usr/bin/env bash
# The optimizer half of the differential harness, on the GPU machine: captures bitsandbytes'
# 8-bit optimizers and torch.optim (single-tensor, foreach, fused) on the GPU, then compares
# `exmy step --compat PROFILE` on the CPU engine and on the GPU engine (--device cuda) with every
# case, element by element (bench/peers/optim_peer_diff.py), and writes the tables to OUT:
#   bench/peers/optim_peers_device.sh EXMY OUT [PYTHON]
# EXMY is an exmy built with CUDA; bitsandbytes must be importable (its wheel: bench/results'
# notes). Also writes the golden-size captures (OUT/golden-*) that golden/peers/ takes from.
# Exit status: 1 when any table has a differing element.
set -uo pipefail
exmy=$1
out=$2
py=${3:-python3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
tmp=$(mktemp -d)
status=0
echo "== capture (torch $($py -c 'import torch; print(torch.__version__)'))"
$py "$here/torch_optim_capture.py" "$tmp/torch" --size full > "$out/torch-capture.log" 2>&1 || status=1
$py "$here/bnb_optim_capture.py" "$tmp/bnb" --size full > "$out/bnb-capture.log" 2>&1 || status=1
$py "$here/torch_optim_capture.py" "$out/golden-torch" --size golden > /dev/null 2>&1 || status=1
$py "$here/bnb_optim_capture.py" "$out/golden-bnb" --size golden > /dev/null 2>&1 || status=1
rm -f "$out"/golden-torch/powf.npy "$out"/golden-torch/betas.npy
for engine in cpu cuda; do
  echo "== exmy --device $engine"
  $py "$here/optim_peer_diff.py" "$exmy" "$tmp/torch" "$out/torch-$engine.md" --device $engine \
    > /dev/null || status=1
  $py "$here/optim_peer_diff.py" "$exmy" "$tmp/bnb" "$out/bnb-$engine.md" --device $engine \
    > /dev/null || status=1
  grep -c "^| " "$out/torch-$engine.md" "$out/bnb-$engine.md"
  grep -E " [1-9][0-9]*/|failed" "$out/torch-$engine.md" "$out/bnb-$engine.md" | head -20
done
rm -rf "$tmp"
exit $status
