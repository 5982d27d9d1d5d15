#!/usr/bin/env bash
# The SASS of every kernel torch.optim launches for one step, per mode (single-tensor, foreach,
# fused) × dtype × optimizer, read with Nsight Compute on the GPU machine:
#   bench/peers/torch_cuda_sass.sh OUTDIR
# Writes OUTDIR/sass/<mode>-<dtype>-<opt>.csv (ncu's source page: one row per SASS instruction of
# each kernel) and OUTDIR/sass/summary.txt: per kernel, its name and its floating-point opcodes
# (FFMA/FMUL/FADD/MUFU/...) — the evidence for the contraction and division forms in SEMANTICS 9.2.
set -uo pipefail
out=$1/sass
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
# The configurations whose kernels differ: the element-wise ops of single-tensor and foreach
# (fp32 and a 16-bit dtype; Adam's L2 add; SGD), the fused kernels.
configs="single-fp32-adamw single-bf16-adamw single-fp32-adam single-fp32-sgd single-bf16-sgd
  foreach-fp32-adamw foreach-bf16-adamw foreach-fp32-sgd fused-fp32-adamw fused-fp32-adam
  fused-bf16-adamw fused-fp32-sgd fused-bf16-sgd"
for c in $configs; do
  IFS=- read -r mode dt opt <<< "$c"
  f="$out/$c"
  ncu --clock-control none --section SourceCounters --page source --print-source sass --csv \
    --kernel-name regex:'^(?!.*(normal|uniform|fill|copy|distribution)).*' \
    python3 "$here/torch_cuda_optim_kernels.py" "$mode" "$dt" "$opt" > "$f.csv" 2> "$f.err"
done
python3 - "$out" <<'PY'
import csv, glob, io, os, re, sys
out = sys.argv[1]
lines = []
for path in sorted(glob.glob(os.path.join(out, "*.csv"))):
    text = open(path, errors="replace").read()
    # ncu prints one CSV block per kernel, each preceded by a line naming the kernel.
    blocks = re.split(r'\n(?=\s*"?Kernel Name|\S.*\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\))', text)
    lines.append(f"== {os.path.basename(path)}")
    for b in blocks:
        head = b.strip().splitlines()[0] if b.strip() else ""
        ops = re.findall(r'\b(FFMA|FMUL|FADD|DFMA|DMUL|DADD|MUFU\.\w+|FSETP|FCHK|HFMA2|HMUL2|HADD2|F2F\.\S+|FRND\S*|DSETP)\b', b)
        if not ops:
            continue
        counts = {}
        for o in ops:
            counts[o] = counts.get(o, 0) + 1
        lines.append(f"  {head[:160]}")
        lines.append("    " + " ".join(f"{k}x{v}" for k, v in sorted(counts.items())))
open(os.path.join(out, "summary.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
tar czf "$1/sass.tar.gz" -C "$1" sass
