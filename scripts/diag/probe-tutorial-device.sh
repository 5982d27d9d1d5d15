#!/usr/bin/env bash
# Runs docs/tutorials/probe-a-gpu.md's commands as written, on a machine with a GPU, and keeps
# their output in $OUT/probe-tutorial.txt (the tutorial quotes it). EXMY: the exmy binary.
set -u
E=${EXMY:?}
W=$(mktemp -d); cd "$W"
exec > >(tee -a "$OUT/probe-tutorial.txt") 2>&1
step() { echo; echo "\$ $*"; local t=$(date +%s.%N); timeout -k 3 ${TO:-120} "$@"; echo "[exit $? in $(python3 -c "print(round($(date +%s.%N)-$t,1))") s]"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
step "$E" verify --device cuda --depth ci
step "$E" probe sfu --device cuda --out sfu
ls -la sfu
step "$E" probe gemm --device cuda --lib cublaslt --out prof.json --types bf16 --shapes 64x96x8192,128x128x4096
step "$E" probe gemm --device cuda --lib cublaslt --launch --types bf16 --shapes 64x96x8192,128x128x4096,256x64x1000 --out prof.json
python3 -c "import json;d=json.load(open('prof.json'));print(sorted(d.keys()))"
step python3 "${EXMY_SRC:?}/examples/probe_gpu/compare_mm.py" --exmy "$E" --m 64 --n 96 --k 8192
EXMY_GEMM_PROFILE=prof.json step python3 "$EXMY_SRC/examples/probe_gpu/compare_mm.py" --exmy "$E" --m 256 --n 64 --k 1000
step python3 "$EXMY_SRC/examples/probe_gpu/compare_mm.py" --exmy "$E" --m 256 --n 64 --k 1000
cp prof.json "$OUT/probe-tutorial-prof.json" 2>/dev/null
