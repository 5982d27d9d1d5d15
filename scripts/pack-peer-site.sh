#!/usr/bin/env bash
# Packs the peer libraries the GPU machine lacks (it reaches no package registry) into
# .peers/site.tar.xz, a site-packages tree to unpack there and put on PYTHONPATH:
#   tar xJf .peers/site.tar.xz -C /tmp/site && export PYTHONPATH=/tmp/site
# and pass `carry: [".peers"]`. bitsandbytes' wheel ships one library per CUDA release (43 MB in
# all); the device's torch is 2.11.0+cu130 (bench/results of 2026-12), whose CUDA 13.0 selects
# libbitsandbytes_cuda130.so, so only it and the CPU library are kept (about 2 MB packed).
# Usage: scripts/pack-peer-site.sh [bitsandbytes version] [CUDA tag]   (defaults 0.50.2 130)
set -euo pipefail
cd "$(dirname "$0")/.."
ver=${1:-0.50.2}
cu=${2:-130}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --disable-pip-version-check "bitsandbytes==$ver" -d "$tmp/dl"
mkdir -p "$tmp/site"
python3 -m zipfile -e "$tmp"/dl/bitsandbytes-"$ver"-*.whl "$tmp/site"
for so in "$tmp"/site/bitsandbytes/libbitsandbytes_*.so; do
  case "$(basename "$so")" in
    libbitsandbytes_cpu.so | "libbitsandbytes_cuda$cu.so") ;;
    *) rm "$so" ;;
  esac
done
[ -f "$tmp/site/bitsandbytes/libbitsandbytes_cuda$cu.so" ] || {
  echo "pack-peer-site: bitsandbytes $ver has no libbitsandbytes_cuda$cu.so" >&2
  exit 1
}
mkdir -p .peers
tar cf - -C "$tmp/site" . | xz -T2 -9 > .peers/site.tar.xz.tmp
mv .peers/site.tar.xz.tmp .peers/site.tar.xz
du -h .peers/site.tar.xz
