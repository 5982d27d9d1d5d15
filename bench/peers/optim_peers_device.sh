#!/usr/bin/env bash
# The optimizer half of the differential harness, on the GPU machine: captures bitsandbytes'
# 8-bit optimizers and torch.optim (single-tensor, foreach, fused) on the GPU, then compares
# `exmy step --compat PROFILE` on the CPU engine and on the GPU engine (--device cuda) with every
# case, element by element (bench/peers/optim_peer_diff.py), and writes the tables to OUT:
#   bench/peers/optim_peers_device.sh EXMY OUT [PYTHON [torch|bnb|all]]
# EXMY is an exmy built with CUDA; bitsandbytes must be importable for `bnb` and `all` (its wheel:
# bench/results' notes). Also packs the golden-size captures that golden/peers/ takes from into
# OUT/golden-captures.tar.gz (one file: the device tool returns a bounded number of files).
# Exit status: 1 when any table has a differing element.
set -uo pipefail
exmy=$1
out=$2
py=${3:-python3}
which=${4:-all}
peers="torch bnb"
[ "$which" = all ] || peers=$which
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
tmp=$(mktemp -d)
status=0
echo "== capture (torch $($py -c 'import torch; print(torch.__version__)'))"
for peer in $peers; do
  script=$here/${peer}_optim_capture.py  # torch_optim_capture.py, bnb_optim_capture.py
  $py "$script" "$tmp/$peer" --size full > "$out/$peer-capture.log" 2>&1 || status=1
  $py "$script" "$tmp/golden/$peer" --size golden > /dev/null 2>&1 || status=1
done
rm -f "$tmp"/golden/torch/powf.npy "$tmp"/golden/torch/betas.npy
tar czf "$out/golden-captures.tar.gz" -C "$tmp" golden
for engine in cpu cuda; do
  echo "== exmy --device $engine"
  for peer in $peers; do
    $py "$here/optim_peer_diff.py" "$exmy" "$tmp/$peer" "$out/$peer-$engine.md" --device $engine \
      > /dev/null || status=1
    echo "$peer: $(grep -c ' (.*) |' "$out/$peer-$engine.md") cases"
    grep -E " [1-9][0-9]*/|failed" "$out/$peer-$engine.md" | head -20
  done
done
rm -rf "$tmp"
exit $status
