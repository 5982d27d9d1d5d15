#!/usr/bin/env bash
# Host memory of `exmy gemm --device cuda` and `exmy layer --device cuda` on 1 GiB-class inputs
# (issue 36's bound, docs/SEMANTICS.md 11.0: peak RSS <= 1.2 x (input + output bytes)), on a
# machine with a GPU: scripts/measure-memory.sh's gemm and layer rows with --device cuda. The
# operands are staged to the device a block of rows at a time (gpu/gemm/gemm_emulation.cu,
# gpu/layer/layer.cu: every layer kind's prepared operands and int8 codes stay on the device), so
# the host should hold the mapped inputs, one block and the CUDA runtime (~115 MiB). Writes the
# table to stdout; exit 1 if a row breaks the bound.
#   scripts/measure-memory-cuda.sh EXMY WORKDIR   (WORKDIR needs ~12 GB free; Python 3 + numpy)
#   ROWS (environment): an extended regex on the command line, to run some rows only (each row
#   takes 2-15 s on an H200; making the inputs once, about a minute): e.g. ROWS='^gemm'
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROWS="${ROWS:-^(gemm --a (x2|a16w|a8w)|layer --kind)}" \
  DEVICE=cuda "$here/measure-memory.sh" "$1" "$2" 'gemm|layer'
