#!/usr/bin/env bash
# Peak memory (maximum resident set, /usr/bin/time -v) of every exmy subcommand that reads or
# writes arrays (cast, quantize, dequantize, step, gemm, layer, diagnose sharpness), on 1 GiB-class
# inputs of each input dtype it takes, against the README's bound: peak <= 1.2 x (input bytes +
# output bytes) (docs/SEMANTICS.md 11.0). Prints a Markdown table; exits 1 if a row breaks the
# bound. (golden and verify read no user arrays: golden's backend replay reads the corpus' own
# small x.npy files; verify generates its inputs.)
#   scripts/measure-memory.sh EXMY WORKDIR [FILTER]   (WORKDIR needs ~9 GB free; Python 3 +
#   numpy; FILTER: an extended regex, only the rows whose subcommand matches, e.g. 'gemm|layer';
#   ROWS (environment): an extended regex on the whole command line, e.g. ROWS='--kind switchback ')
set -euo pipefail
exmy=$(realpath "$1")
work=$2
filter=${3:-.*}
mkdir -p "$work"
cd "$work"
wants() {  # wants SUBCOMMAND...: true if a row of one of them is selected by FILTER
  local c; for c; do [[ $c =~ ^($filter)$ ]] && return 0; done; return 1
}
if [ ! -f x.npy ] || [ ! -f xb.npy ] || [ ! -f p.npy ]; then
  python3 - <<'PY'
import numpy as np
n = (1 << 30) // 4
r = np.random.default_rng(1)
x = np.empty(n, dtype=np.float32)
for i in range(0, n, 1 << 24):
    x[i:i + (1 << 24)] = r.standard_normal(1 << 24, dtype=np.float32) * 10
np.save("x.npy", x)                                   # 1 GiB, 1-d
np.save("x2.npy", x.reshape(1 << 14, 1 << 14))        # 1 GiB, 2-d
np.save("xb.npy", (x.view(np.uint32) >> 16).astype(np.uint16))  # bf16 bits, 512 MiB
np.save("p.npy", x[: 1 << 26])                        # 256 MiB parameters
np.save("g.npy", (x[1 << 26: 2 << 26] * 1e-3).reshape(1, -1))   # one step of gradients
PY
fi
if [ ! -f b16.npy ] || [ ! -f g16.npy ]; then  # gemm and layer: A/X is x2.npy (1 GiB)
  python3 - <<'PY'
import numpy as np
x2 = np.load("x2.npy", mmap_mode="r")
np.save("b16.npy", np.ascontiguousarray(x2[:16]))                        # B / W: 16 x 2^14
np.save("g16.npy", (np.ascontiguousarray(x2[:, :16]) * 1e-3).astype(np.float32))  # G: 2^14 x 16
PY
fi
if [ ! -f a16.npy ] || [ ! -f a8.npy ]; then  # layer and quantize on codes: bf16 (512 MiB), MX e4m3fn
  python3 - <<'PY'
import numpy as np
x2 = np.load("x2.npy", mmap_mode="r")
a16 = np.lib.format.open_memmap("a16.npy", "w+", np.uint16, x2.shape)
a8 = np.lib.format.open_memmap("a8.npy", "w+", np.uint8, x2.shape)
for i in range(0, x2.shape[0], 1024):
    bits = np.ascontiguousarray(x2[i:i + 1024]).view(np.uint32)
    a16[i:i + 1024] = bits >> 16
    c = (bits >> 20).astype(np.uint8)
    c[(c & 0x7F) == 0x7F] = 0x7E                       # no e4m3fn NaN codes
    a8[i:i + 1024] = c
a16.flush(); a8.flush()
np.save("b16c.npy", np.ascontiguousarray(a16[:16]))
np.save("b8.npy", np.ascontiguousarray(a8[:16]))
r = np.random.default_rng(2)
np.save("sa8.npy", r.integers(120, 135, (x2.shape[0], x2.shape[1] // 32)).astype(np.uint8))
np.save("sb8.npy", r.integers(120, 135, (16, x2.shape[1] // 32)).astype(np.uint8))
PY
fi
# gemm on codes, 1 GiB-class (issue 36; 2026-12-02: a16/a8 are 512/256 MiB, at which the CUDA
# runtime's ~115 MiB alone is 0.22x/0.44x): bf16 codes 32768 x 16384 and MX e4m3fn codes 65536 x
# 16384 (1 GiB each: a16.npy / a8.npy stacked, each further copy rolled by a column and negated
# (sign bit flipped: e4m3fn's NaN codes stay out), with E8M0 block scales 65536 x 512.
if wants gemm && { [ ! -f a16w.npy ] || [ ! -f a8w.npy ] || [ ! -f sa8w.npy ]; }; then
  python3 - <<'PY'
import os
import numpy as np
a16 = np.load("a16.npy", mmap_mode="r")
a8 = np.load("a8.npy", mmap_mode="r")
R, K = a16.shape
w16 = np.lib.format.open_memmap("a16w.tmp.npy", "w+", np.uint16, (2 * R, K))
w8 = np.lib.format.open_memmap("a8w.tmp.npy", "w+", np.uint8, (4 * R, K))
for i in range(0, R, 1024):
    c16 = np.ascontiguousarray(a16[i:i + 1024])
    c8 = np.ascontiguousarray(a8[i:i + 1024])
    for h in range(2):
        w16[h * R + i:h * R + i + 1024] = np.roll(c16, h, axis=1) ^ np.uint16(h << 15)
    for q in range(4):
        w8[q * R + i:q * R + i + 1024] = np.roll(c8, q, axis=1) ^ np.uint8((q & 1) << 7)
w16.flush(); w8.flush()
del w16, w8
r = np.random.default_rng(4)
np.save("sa8w.tmp.npy", r.integers(120, 135, (4 * R, K // 32)).astype(np.uint8))
for f in ("a16w", "a8w", "sa8w"):
    os.replace(f + ".tmp.npy", f + ".npy")
PY
fi
if [ ! -f g16c.npy ] || [ ! -f g16h.npy ]; then  # layer on 16-bit codes: G as bf16 / fp16 codes
  python3 - <<'PY'
import numpy as np
g = np.load("g16.npy")
np.save("g16c.npy", (g.view(np.uint32) >> 16).astype(np.uint16))  # bf16 codes (truncated)
np.save("g16h.npy", g.astype(np.float16).view(np.uint16))          # fp16 codes
PY
fi
if wants cast quantize step diagnose &&
  { [ ! -f xh.npy ] || [ ! -f xd.npy ] || [ ! -f p16.npy ] || [ ! -f lab.npy ]; }; then
  python3 - <<'PY'  # 16-bit and fp64 sources, fp16 parameters, logits' labels
import numpy as np
x = np.load("x.npy", mmap_mode="r")
xh = np.lib.format.open_memmap("xh.npy", "w+", np.float16, x.shape)   # fp16 values, 512 MiB
for i in range(0, x.size, 1 << 24):
    xh[i:i + (1 << 24)] = x[i:i + (1 << 24)]
xh.flush()
np.save("xh2.npy", np.load("xh.npy", mmap_mode="r").reshape(1 << 14, 1 << 14))
xd = np.lib.format.open_memmap("xd.npy", "w+", np.float64, (1 << 13, 1 << 14))  # fp64, 1 GiB
for i in range(0, 1 << 13, 1024):
    xd[i:i + 1024] = x[i << 14:(i + 1024) << 14].reshape(1024, 1 << 14)
xd.flush()
np.save("p16.npy", x[: 1 << 26].astype(np.float16))  # 128 MiB fp16 parameters
r = np.random.default_rng(3)
np.save("lab.npy", r.integers(0, 1 << 14, 1 << 14).astype(np.int64))   # x2.npy's rows
np.save("lab8.npy", r.integers(0, 1 << 14, 1 << 13).astype(np.int64))  # xd.npy's rows
PY
fi
bytes() { local t=0; for f in "$@"; do [ -e "$f" ] && t=$((t + $(du -b "$f" | cut -f1))); done; echo $t; }
bad=0
echo "| command | input MiB | output MiB | peak RSS MiB | bound MiB | ratio to in+out | wall |"
echo "|---|---|---|---|---|---|---|"
row() {  # row "inputs" "outputs" command...
  local ins=$1 outs=$2; shift 2
  [[ $1 =~ ^($filter)$ ]] || return 0
  [[ "$*" =~ ${ROWS:-.} ]] || return 0
  [ -z "${DEVICE:-}" ] || set -- "$@" --device "$DEVICE"
  rm -rf $outs
  /usr/bin/time -v "$exmy" "$@" > /dev/null 2> time.txt || { echo "FAILED: $*"; cat time.txt | head -3; exit 1; }
  local rss wall i o
  rss=$(($(grep "Maximum resident" time.txt | awk '{print $6}') / 1024))
  wall=$(grep "Elapsed (wall" time.txt | awk '{print $8}')
  i=$(($(bytes $ins) / 1048576)); o=$(($(bytes $outs) / 1048576))
  local bound=$(((i + o) * 12 / 10))
  [ "$rss" -le "$bound" ] || bad=1
  printf '| `exmy %s` | %d | %d | %d | %d | %s | %s |\n' "$*" "$i" "$o" "$rss" "$bound" \
    "$(python3 -c "print(f'{$rss/max($i+$o,1):.2f}')")" "$wall"
}
row x.npy y.npy cast e4m3fn --in x.npy --out y.npy
row x.npy y.npy cast e4m3fn --in x.npy --out y.npy --round sr:8
row x.npy y.npy cast e4m3fn --in x.npy --out y.npy --decoded
row x.npy y.npy cast e2m1fn --in x.npy --out y.npy --pack
row x.npy y.npy cast e5m3 --in x.npy --out y.npy
row xb.npy y.npy cast e4m3fn --in xb.npy --in-format bf16 --out y.npy
row x2.npy "q.npy s.npy" quantize --scheme tensor --to int8 --in x2.npy --out q.npy --state-out s.npy
row x2.npy "q.npy s.npy" quantize --scheme rowwise --to int8 --in x2.npy --out q.npy --state-out s.npy --transpose
row x.npy "q.npy s.npy" quantize --scheme block:256 --to dynamic --in x.npy --out q.npy --state-out s.npy
row x.npy "q.npy s.npy" quantize --scheme mx --to e4m3fn --in x.npy --out q.npy --state-out s.npy
row x.npy "q.npy s.npy" quantize --scheme nvfp4 --to e2m1fn --in x.npy --out q.npy --state-out s.npy --pack
row x2.npy "q.npy s.npy" quantize --scheme tensor --to e4m3fn --variant te --in x2.npy --out q.npy --state-out s.npy
row xh.npy y.npy cast e4m3fn --in xh.npy --out y.npy
row xd.npy y.npy cast e4m3fn --in xd.npy --out y.npy
row x.npy y.npy cast binary8p4se --in x.npy --out y.npy
[[ cast =~ ^($filter)$ ]] && [ ! -f p8.npy ] &&
  "$exmy" cast binary8p4se --in x.npy --out p8.npy > /dev/null
row p8.npy y.npy cast binary8p4se --decode --in p8.npy --out y.npy
# 16-bit sources (<f2 values; bf16 bits as <u2 with --in-format bf16; 512 MiB): read through their
# codes, each widened where it is read (2026-12-01; they were widened to fp32 in memory).
row xb.npy "q.npy s.npy" quantize --scheme block:256 --to dynamic --in xb.npy --in-format bf16 --out q.npy --state-out s.npy
row xb.npy "q.npy s.npy" quantize --scheme mx --to e4m3fn --in xb.npy --in-format bf16 --out q.npy --state-out s.npy
row xh.npy "q.npy s.npy" quantize --scheme block:256 --to dynamic --in xh.npy --out q.npy --state-out s.npy
row xh.npy "q.npy s.npy" quantize --scheme nvfp4 --to e2m1fn --in xh.npy --out q.npy --state-out s.npy --pack
row a16.npy "q.npy s.npy" quantize --scheme rowwise --to int8 --in a16.npy --in-format bf16 --out q.npy --state-out s.npy --transpose
row xh2.npy "q.npy s.npy" quantize --scheme tensor --to e4m3fn --variant te --in xh2.npy --out q.npy --state-out s.npy
# bitsandbytes' nf4 / fp4 (--compat bnb-cuda) of fp32 and 16-bit sources
row x.npy "q.npy s.npy" quantize --scheme block:64 --to nf4 --compat bnb-cuda --in x.npy --out q.npy --state-out s.npy
row xb.npy "q.npy s.npy" quantize --scheme block:64 --to nf4 --compat bnb-cuda --in xb.npy --in-format bf16 --out q.npy --state-out s.npy
row xh.npy "q.npy s.npy s2.npy o.npy" quantize --scheme block:64 --to fp4 --compat bnb-cuda --in xh.npy --out q.npy --state-out s.npy --double-quant --state2-out s2.npy --offset-out o.npy
# dequantize: its inputs are made once (dq-*.npy) by the quantize runs of the rows above.
mkq() {  # mkq PREFIX QUANTIZE-ARGS...: PREFIX-q.npy, PREFIX-s.npy (kept between runs)
  local p=$1; shift
  [[ dequantize =~ ^($filter)$ ]] || return 0
  [ -f "$p-q.npy" ] || "$exmy" quantize "$@" --out "$p-q.npy" --state-out "$p-s.npy" > /dev/null
}
mkq dq-blk --scheme block:256 --to dynamic --in x.npy
mkq dq-mx --scheme mx --to e2m1fn --in x.npy --pack
mkq dq-row --scheme rowwise --to int8 --in x2.npy --transpose
mkq dq-nf4 --scheme block:64 --to nf4 --compat bnb-cuda --in x.npy
row "dq-blk-q.npy dq-blk-s.npy" d.npy dequantize --scheme block:256 --from dynamic --in dq-blk-q.npy --state dq-blk-s.npy --out d.npy
row "dq-mx-q.npy dq-mx-s.npy" d.npy dequantize --scheme mx --from e2m1fn --in dq-mx-q.npy --state dq-mx-s.npy --out d.npy --pack
row "dq-row-q.npy dq-row-s.npy" d.npy dequantize --scheme rowwise --from int8 --in dq-row-q.npy --state dq-row-s.npy --out d.npy --transpose
row "dq-nf4-q.npy dq-nf4-s.npy" d.npy dequantize --scheme block:64 --from nf4 --compat bnb-cuda --in dq-nf4-q.npy --state dq-nf4-s.npy --out d.npy
row "dq-nf4-q.npy dq-nf4-s.npy" d.npy dequantize --scheme block:64 --from nf4 --compat bnb-cuda --in dq-nf4-q.npy --state dq-nf4-s.npy --out d.npy --out-format bf16
row "p.npy g.npy" o step --optimizer adamw --params p.npy --grads g.npy --steps 1 --out o
row "p.npy g.npy" o step --optimizer adamw8bit --params p.npy --grads g.npy --steps 1 --out o
row "p.npy g.npy" o step --optimizer sgd --params p.npy --grads g.npy --steps 1 --out o
row "p16.npy g.npy" o step --optimizer adamw --params p16.npy --grads g.npy --steps 1 --out o
[[ step =~ ^($filter)$ ]] && [ ! -d o-adamw ] &&
  "$exmy" step --optimizer adamw --params p.npy --grads g.npy --steps 1 --out o-adamw > /dev/null
row "p.npy g.npy o-adamw" o step --optimizer adamw --params p.npy --grads g.npy --steps 1 --state o-adamw --out o
# gemm and layer (issue 36): a 1 GiB operand (fp32 values, bf16/fp16 codes, MX e4m3fn codes with
# E8M0 block scales), read in place from the mapped file and decoded a few rows at a time; the
# rp row (16-bit split-K partials, 16-bit output) sums its chunks per output element.
row "x2.npy b16.npy" c.npy gemm --a x2.npy --b b16.npy --out c.npy --a-format fp32 --b-format fp32 --out-format fp32 --accum fp32-seq
row "x2.npy b16.npy" c.npy gemm --a x2.npy --b b16.npy --out c.npy --a-format fp32 --b-format fp32 --out-format bf16 --accum fp32-seq
row "a16w.npy b16c.npy" c.npy gemm --a a16w.npy --b b16c.npy --out c.npy --a-format bf16 --b-format bf16 --out-format bf16 --accum sm90
row "a8w.npy b8.npy sa8w.npy sb8.npy" c.npy gemm --a a8w.npy --b b8.npy --out c.npy --a-format e4m3fn --b-format e4m3fn --out-format fp32 --accum sm100 --block-scale-a sa8w.npy --block-scale-b sb8.npy
row "a16w.npy b16c.npy" c.npy gemm --a a16w.npy --b b16c.npy --out c.npy --a-format fp16 --b-format fp16 --out-format fp32 --accum sm90
row "a16w.npy b16c.npy" c.npy gemm --a a16w.npy --b b16c.npy --out c.npy --a-format bf16 --b-format bf16 --out-format bf16 --accum hw:k=16,frac=25,inter=23,chunk=4096,rp
row "x2.npy b16.npy g16.npy" L layer --kind plain --dtype fp32 --x x2.npy --w b16.npy --g g16.npy --out L
# layer on 16-bit codes (X: a16.npy, 512 MiB of <u2; the outputs <u2) and every other kind on the
# 1 GiB fp32 X (issue 36, 2026-12-01): the inputs stay mapped, prepared operands keep their group
# states only, the outputs stream into their files.
row "a16.npy b16c.npy g16c.npy" L layer --kind plain --dtype bf16 --x a16.npy --w b16c.npy --g g16c.npy --out L
row "a16.npy b16c.npy g16h.npy" L layer --kind plain --dtype fp16 --x a16.npy --w b16c.npy --g g16h.npy --out L
row "a16.npy b16c.npy g16c.npy" L layer --kind switchback --dtype bf16 --x a16.npy --w b16c.npy --g g16c.npy --out L
row "a16.npy b16c.npy g16c.npy" L layer --kind llm-int8 --dtype bf16 --x a16.npy --w b16c.npy --g g16c.npy --out L
row "a16.npy b16c.npy g16c.npy" L layer --kind fp8-tensorwise --dtype bf16 --x a16.npy --w b16c.npy --g g16c.npy --out L
for kind in switchback switchback-m switchback-q llm-int8 fp8-tensorwise switchback-fp8 masked:e4m3; do
  row "x2.npy b16.npy g16.npy" L layer --kind $kind --dtype fp32 --x x2.npy --w b16.npy --g g16.npy --out L
done
# diagnose sharpness: 1 GiB of logits (<f4 16384 x 16384; <f8 8192 x 16384) and their labels
row "x2.npy lab.npy" "" diagnose sharpness --logits x2.npy --labels lab.npy
row "xd.npy lab8.npy" "" diagnose sharpness --logits xd.npy --labels lab8.npy
exit $bad
