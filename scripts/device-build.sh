#!/usr/bin/env bash
# On the GPU machine: configure and build exmy for sm_90 against the carried .devdeps.
# Usage: scripts/device-build.sh [targets...]   (build dir: build-dev)
set -euo pipefail
cd "$(dirname "$0")/.."
p=$PWD/.devdeps/usr
export LD_LIBRARY_PATH=$p/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DEXMY_CUDA_ARCHS=90 \
  -DCMAKE_PREFIX_PATH="$p" -DMPFR_INCLUDE_DIR="$p/include" \
  -DMPFR_LIBRARY="$p/lib/x86_64-linux-gnu/libmpfr.a" -DGMP_LIBRARY="$p/lib/x86_64-linux-gnu/libgmp.a" \
  -DCMAKE_CXX_FLAGS="-I$p/include" >/dev/null
if [ $# -gt 0 ]; then
  for t in "$@"; do cmake --build build-dev -j16 --target "$t"; done
else
  cmake --build build-dev -j16
fi
