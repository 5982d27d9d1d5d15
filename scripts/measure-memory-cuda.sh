#!/usr/bin/env bash
# Host memory of `exmy gemm --device cuda` and `exmy layer --device cuda` on 1 GiB-class inputs
# (issue 36's bound, docs/SEMANTICS.md 11.0: peak RSS <= 1.2 x (input + output bytes)), on a
# machine with a GPU: scripts/measure-memory.sh's gemm and layer rows with --device cuda. The
# operands are staged to the device a block of rows at a time (gpu/gemm/gemm_emulation.cu), so
# the host should hold the mapped inputs, one block and the CUDA runtime; the layer kinds other
# than plain still hold their prepared operands whole (gpu/layer/layer.hpp), measured here to say
# by how much. Writes the table to stdout; exit 1 if a row breaks the bound.
#   scripts/measure-memory-cuda.sh EXMY WORKDIR   (WORKDIR needs ~9 GB free; Python 3 + numpy)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROWS="${ROWS:-gemm --a (x2|a16|a8)|layer --kind (plain|switchback) --dtype (fp32|bf16)}" \
  DEVICE=cuda "$here/measure-memory.sh" "$1" "$2" 'gemm|layer'
