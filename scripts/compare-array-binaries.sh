#!/usr/bin/env bash
# Byte identity of two exmy binaries on `exmy quantize` / `dequantize` / `diagnose sharpness` /
# `step` (issue 36: reading a 16-bit source through its codes instead of an fp32 copy, streaming
# dequantize and sharpness, must not change one output bit): every scheme x target family x source dtype (<f4, <f2, <u2 bf16 codes
# with --in-format bf16) x variants / rounding / transpose / pack / two-level, bitsandbytes'
# nf4/fp4 with and without double quantization, dequantize of each (every --out-format of nf4/fp4,
# --pack, --transpose, --two-level), inputs with NaN, infinities, -0, subnormals, zero groups and
# values beyond fp16's range, and error cases. Each run's stdout, stderr, exit code, output files
# (byte for byte) and what it left in its directory are compared. Sharpness: <f4 and <f8 logits,
# odd shapes, non-finite values, bad labels, bad shapes and dtypes. Step: fp32 and fp16 parameters,
# several optimizers, resume. Prints the counts; exits 1 if any run differs (all are listed).
#   scripts/compare-array-binaries.sh OLD_EXMY NEW_EXMY WORKDIR   (Python 3 + numpy)
set -euo pipefail
old=$(realpath "$1")
new=$(realpath "$2")
work=$(realpath -m "$3")
rm -rf "$work"
mkdir -p "$work/in"
/usr/bin/python3 - "$work/in" <<'PY'
import sys, numpy as np
d = sys.argv[1]
def bf16_bits(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(x)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r
rng = np.random.default_rng(20261201)
shapes = {"s": (4, 64), "odd": (33, 96), "r3": (3, 5, 32), "one": (1,), "wide": (2, 4096),
          "big": (300, 4096)}
for name, shape in shapes.items():
    v = (rng.standard_normal(shape) * 4.0).astype(np.float32)
    if name in ("odd", "r3", "wide"):  # specials: NaN, infinities, -0, subnormals, large values
        f = v.reshape(-1)
        k = f.size
        f[rng.integers(0, k, 2)] = np.nan
        f[rng.integers(0, k, 1)] = np.inf
        f[rng.integers(0, k, 1)] = -np.inf
        f[rng.integers(0, k, 2)] = -0.0
        f[rng.integers(0, k, 2)] = 1e-40
        f[rng.integers(0, k, 3)] = 3e-6  # fp16 subnormals
        f[rng.integers(0, k, 2)] = 7e4   # beyond fp16 (inf there)
    if name == "odd":
        v.reshape(v.shape[0], -1)[1] = 0.0  # an all-zero row and groups (absmax 0)
    np.save(f"{d}/{name}_fp32.npy", v)
    with np.errstate(over="ignore"):
        np.save(f"{d}/{name}_fp16.npy", v.astype(np.float16))
    np.save(f"{d}/{name}_bf16.npy", bf16_bits(v))
# signalling-NaN and odd bf16 codes: every 16-bit code once (a 256 x 256 input)
np.save(f"{d}/all_bf16.npy", np.arange(1 << 16, dtype=np.uint16).reshape(256, 256))
np.save(f"{d}/all_fp16.npy", np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(256, 256))
np.save(f"{d}/empty_fp16.npy", np.zeros((0,), np.float16))
np.save(f"{d}/bad_f8.npy", np.zeros((2, 32), np.float64))
np.save(f"{d}/bad_i2.npy", np.zeros((2, 32), np.int16))
# an <f2 file whose data starts at an odd offset: a hand-written header of odd length
hdr = b"{'descr': '<f2', 'fortran_order': False, 'shape': (4, 32), }"
hdr += b" " * ((-(10 + len(hdr) + 1) % 64) + 1) + b"\n"
with open(f"{d}/odd_hdr_fp16.npy", "wb") as fh:
    fh.write(b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr)
    fh.write(np.linspace(-3, 3, 128).astype(np.float16).tobytes())
PY
I=$work/in
cases=()
add() { cases+=("$*"); }
# sources: fp32 (<f4), fp16 (<f2), bf16 codes (<u2 + --in-format bf16)
src() {  # src NAME DT -> the --in arguments
  case $2 in
    bf16) echo "--in $I/$1_bf16.npy --in-format bf16" ;;
    *) echo "--in $I/$1_$2.npy" ;;
  esac
}
Q="--out q.npy --state-out s.npy"
for dt in fp32 fp16 bf16; do
  for shape in s odd r3 one wide; do
    for t in int8 e4m3fn e5m2; do
      for sch in tensor rowwise colwise block:64 block:256; do
        add quantize --scheme $sch --to $t $(src $shape $dt) $Q
      done
    done
    add quantize --scheme block:64 --to dynamic $(src $shape $dt) $Q
    add quantize --scheme block:256 --to dynamic --compat bnb-cuda $(src $shape $dt) $Q
    add quantize --scheme block:64 --to linear-unsigned $(src $shape $dt) $Q --round sr:8 --seed 7
    add quantize --scheme mx --to e4m3fn $(src $shape $dt) $Q
    add quantize --scheme block:64 --to e2m1fn $(src $shape $dt) $Q --pack
  done
  for shape in s odd r3 wide; do
    add quantize --scheme mx --to e2m1fn $(src $shape $dt) $Q --pack --scale-mode rceil
    add quantize --scheme mx --to e5m2 $(src $shape $dt) $Q --variant torchao
    add quantize --scheme nvfp4 --to e2m1fn $(src $shape $dt) $Q
    add quantize --scheme nvfp4 --to e2m1fn $(src $shape $dt) $Q --two-level --tensor-scale-out t.npy
    add quantize --scheme nvfp4 --to e2m1fn $(src $shape $dt) $Q --two-level --tensor-scale-out t.npy --variant te
    add quantize --scheme tensor --to e4m3fn $(src $shape $dt) $Q --variant te --margin 1
    add quantize --scheme tensor --to e4m3fn $(src $shape $dt) $Q --variant te-current --pow2-scale --amax-epsilon 1e-3
    add quantize --scheme rowwise --to e4m3fn $(src $shape $dt) $Q --variant torchao --round sr:12 --seed 3
    add quantize --scheme tensor --to int8 $(src $shape $dt) $Q --order recip-mul --nan ignore --round rtz
    add quantize --scheme block:64 --to nf4 --compat bnb-cuda $(src $shape $dt) $Q
    add quantize --scheme block:64 --to fp4 --compat bnb-cuda $(src $shape $dt) $Q --double-quant --state2-out s2.npy --offset-out o.npy
  done
  for shape in s odd; do
    add quantize --scheme rowwise --to int8 $(src $shape $dt) $Q --transpose
    add quantize --scheme rowwise --to e2m1fn $(src $shape $dt) $Q --transpose --pack
    add quantize --scheme colwise --to e2m1fn $(src $shape $dt) $Q --transpose --pack --json
    add quantize --scheme block:16x32 --to e4m3fn $(src $shape $dt) $Q --variant deepgemm --scale-format ue8m0
    add quantize --scheme block:1x128 --to e4m3fn $(src $shape $dt) $Q --variant te --scale-format pow2
    add quantize --scheme block:4x8 --to e4m3fn $(src $shape $dt) $Q --variant torchao
    add quantize --scheme nvfp4:16x16 --to e2m1fn $(src wide $dt) $Q --variant te --two-level --tensor-scale-out t.npy
    add quantize --scheme nvfp4:16x16 --to e2m1fn $(src $shape $dt) $Q --two-level --tensor-scale-out t.npy --variant te
  done
  add quantize --scheme block:4096 --to dynamic $(src big $dt) $Q --json
  add quantize --scheme mx --to e4m3fn $(src big $dt) $Q --json
  add quantize --scheme block:64 --to nf4 --compat bnb-cuda $(src big $dt) $Q --double-quant --state2-out s2.npy --offset-out o.npy --json
done
add quantize --scheme tensor --to e4m3fn --variant torchao --fp16-clamp $(src odd fp16) $Q
for sch in tensor block:64 mx nvfp4; do
  for t in e4m3fn e2m1fn; do
    [ $sch = nvfp4 ] && [ $t = e4m3fn ] && continue
    add quantize --scheme $sch --to $t --in $I/all_bf16.npy --in-format bf16 $Q
    add quantize --scheme $sch --to $t --in $I/all_fp16.npy $Q
  done
done
add quantize --scheme block:64 --to nf4 --compat bnb-cuda --in $I/all_bf16.npy --in-format bf16 $Q
add quantize --scheme block:64 --to int8 --in $I/odd_hdr_fp16.npy $Q
add quantize --scheme block:64 --to nf4 --compat bnb-cuda --in $I/odd_hdr_fp16.npy $Q
# error cases (exit 2, nothing written)
add quantize --scheme tensor --to int8 --in $I/empty_fp16.npy $Q
add quantize --scheme block:64 --to nf4 --compat bnb-cuda --in $I/empty_fp16.npy $Q
add quantize --scheme tensor --to int8 --in $I/bad_f8.npy $Q
add quantize --scheme tensor --to int8 --in $I/bad_i2.npy $Q
add quantize --scheme tensor --to int8 --in $I/s_fp16.npy --in-format bf16 $Q
add quantize --scheme tensor --to int8 --in $I/s_bf16.npy $Q
add quantize --scheme nvfp4 --to e2m1fn --in $I/r3_bf16.npy --in-format bf16 $Q --variant deepgemm
add quantize --scheme rowwise --to int8 --in $I/r3_fp16.npy $Q --transpose
add quantize --scheme tensor --to int8 --in $I/missing.npy $Q
add quantize --scheme tensor --to int8 --in $I/s_fp16.npy --out q.npy --state-out q.npy
add quantize --scheme tensor --to int8 --in $I/s_fp16.npy --out nodir/q.npy --state-out s.npy
add quantize --scheme tensor --to int8 --in $I/s_fp16.npy $Q --device cuda
# dequantize: of codes the old binary writes (made once, in $work/deq)
deq=()
mkdeq() {  # mkdeq NAME QUANTIZE-ARGS... (the outputs land in $work/deq/NAME/)
  local name=$1; shift
  mkdir -p "$work/deq/$name"
  (cd "$work/deq/$name" && "$old" quantize "$@" > /dev/null)
}
D=$work/deq
for dt in fp32 bf16; do
  mkdeq blk_$dt --scheme block:64 --to dynamic $(src odd $dt) $Q
  add dequantize --scheme block:64 --from dynamic --in $D/blk_$dt/q.npy --state-in $D/blk_$dt/s.npy --out d.npy
  mkdeq i8t_$dt --scheme rowwise --to int8 $(src odd $dt) $Q --transpose
  add dequantize --scheme rowwise --from int8 --in $D/i8t_$dt/q.npy --state-in $D/i8t_$dt/s.npy --out d.npy --transpose
  mkdeq mx_$dt --scheme mx --to e2m1fn $(src wide $dt) $Q --pack
  add dequantize --scheme mx --from e2m1fn --in $D/mx_$dt/q.npy --state-in $D/mx_$dt/s.npy --out d.npy --pack
  add dequantize --scheme mx --from e2m1fn --in $D/mx_$dt/q.npy --state-in $D/mx_$dt/s.npy --out d.npy
  mkdeq nv_$dt --scheme nvfp4 --to e2m1fn $(src s $dt) $Q --two-level --tensor-scale-out t.npy
  add dequantize --scheme nvfp4 --from e2m1fn --in $D/nv_$dt/q.npy --state-in $D/nv_$dt/s.npy --out d.npy --two-level --tensor-scale-in $D/nv_$dt/t.npy
  mkdeq tile_$dt --scheme block:4x8 --to e4m3fn $(src s $dt) $Q --variant torchao
  add dequantize --scheme block:4x8 --from e4m3fn --in $D/tile_$dt/q.npy --state-in $D/tile_$dt/s.npy --out d.npy --variant torchao
  mkdeq big_$dt --scheme block:256 --to e4m3fn $(src big $dt) $Q
  add dequantize --scheme block:256 --from e4m3fn --in $D/big_$dt/q.npy --state-in $D/big_$dt/s.npy --out d.npy --json
  mkdeq nf_$dt --scheme block:64 --to nf4 --compat bnb-cuda $(src odd $dt) $Q
  mkdeq fpd_$dt --scheme block:64 --to fp4 --compat bnb-cuda $(src big $dt) $Q --double-quant --state2-out s2.npy --offset-out o.npy
  for of in fp32 fp16 bf16; do
    add dequantize --scheme block:64 --from nf4 --compat bnb-cuda --in $D/nf_$dt/q.npy --state-in $D/nf_$dt/s.npy --out d.npy --shape 33,96 --out-format $of
    add dequantize --scheme block:64 --from fp4 --compat bnb-cuda --in $D/fpd_$dt/q.npy --state-in $D/fpd_$dt/s.npy --out d.npy --double-quant --state2 $D/fpd_$dt/s2.npy --offset $D/fpd_$dt/o.npy --out-format $of
  done
done
add dequantize --scheme block:64 --from nf4 --compat bnb-cuda --in $D/nf_fp32/q.npy --state-in $D/nf_fp32/s.npy --out d.npy
add dequantize --scheme block:64 --from nf4 --compat bnb-cuda --in $D/nf_fp32/q.npy --state-in $D/nf_fp32/s.npy --out d.npy --shape 5,5
add dequantize --scheme block:64 --from dynamic --in $D/blk_fp32/q.npy --state-in $D/mx_fp32/s.npy --out d.npy
add dequantize --scheme mx --from e2m1fn --in $D/mx_fp32/q.npy --state-in $D/mx_fp32/s.npy --out d.npy --pack --transpose
add dequantize --scheme block:64 --from dynamic --in $D/blk_fp32/q.npy --state-in $D/blk_fp32/s.npy --out nodir/d.npy
/usr/bin/python3 - "$D" <<'PY'
import sys, numpy as np
d = sys.argv[1]
q = np.load(f"{d}/i8t_fp32/q.npy")
q.view(np.uint8).reshape(-1)[5] = 0x80  # int8 -128: never written
np.save(f"{d}/bad_i8.npy", q)
np.save(f"{d}/bad_u8_as_i8.npy", q.view(np.uint8))
m = np.load(f"{d}/blk_fp32/q.npy")
np.save(f"{d}/blk_f4.npy", m.astype(np.float32))
c = np.load(f"{d}/mx_fp32/q.npy")
np.save(f"{d}/mx_wide.npy", np.full(2 * c.size, 0x1F, np.uint8).reshape(c.shape[0], -1))
raw = open(f"{d}/blk_fp32/q.npy", "rb").read()
open(f"{d}/trunc.npy", "wb").write(raw[:-7])
PY
add dequantize --scheme rowwise --from int8 --in $D/bad_i8.npy --state-in $D/i8t_fp32/s.npy --out d.npy --transpose
add dequantize --scheme rowwise --from int8 --in $D/bad_u8_as_i8.npy --state-in $D/i8t_fp32/s.npy --out d.npy --transpose
add dequantize --scheme block:64 --from dynamic --in $D/blk_f4.npy --state-in $D/blk_fp32/s.npy --out d.npy
add dequantize --scheme block:64 --from nf4 --compat bnb-cuda --in $D/blk_f4.npy --state-in $D/nf_fp32/s.npy --out d.npy
add dequantize --scheme mx --from e2m1fn --in $D/mx_wide.npy --state-in $D/mx_fp32/s.npy --out d.npy
add dequantize --scheme mx --from e2m1fn --in $D/blk_f4.npy --state-in $D/mx_fp32/s.npy --out d.npy --pack
add dequantize --scheme block:64 --from dynamic --in $D/trunc.npy --state-in $D/blk_fp32/s.npy --out d.npy
add dequantize --scheme block:64 --from nf4 --compat bnb-cuda --in $D/trunc.npy --state-in $D/nf_fp32/s.npy --out d.npy
add dequantize --scheme block:64 --from dynamic --in $D/blk_fp32/q.npy --state-in $D/blk_fp32/s.npy --out d.npy --device cuda
add dequantize --scheme block:64 --from nf4 --compat bnb-cuda --in $D/nf_fp32/q.npy --state-in $D/nf_fp32/s.npy --out d.npy --device cuda
# diagnose sharpness
/usr/bin/python3 - "$I" <<'PY'
import sys, numpy as np
d = sys.argv[1]
r = np.random.default_rng(7)
for name, (m, k) in {"a": (5, 7), "b": (64, 1000), "c": (1, 2)}.items():
    l = (r.standard_normal((m, k)) * 8).astype(np.float32)
    np.save(f"{d}/lg_{name}_f4.npy", l)
    np.save(f"{d}/lg_{name}_f8.npy", l.astype(np.float64) * 1.000001)
    np.save(f"{d}/lb_{name}.npy", r.integers(0, k, m).astype(np.int64))
    np.save(f"{d}/lb_{name}_u1.npy", r.integers(0, min(k, 255), m).astype(np.uint8))
l = np.load(f"{d}/lg_b_f4.npy"); l[3, 17] = np.inf; np.save(f"{d}/lg_inf_f4.npy", l)
l = np.load(f"{d}/lg_b_f8.npy"); l[9, 2] = np.nan; np.save(f"{d}/lg_nan_f8.npy", l)
np.save(f"{d}/lg_f2.npy", np.zeros((5, 7), np.float16))
np.save(f"{d}/lg_1d.npy", np.zeros(7, np.float32))
np.save(f"{d}/lg_1c.npy", np.zeros((5, 1), np.float32))
np.save(f"{d}/lb_bad.npy", np.array([0, 1, 2, 7, 0], np.int64))
np.save(f"{d}/lb_f4.npy", np.zeros(5, np.float32))
np.save(f"{d}/lg_ft.npy", np.asfortranarray(np.ones((5, 7), np.float32)))
# step: fp32 and fp16 parameters, gradients
p = (r.standard_normal((33, 70))).astype(np.float32)
np.save(f"{d}/sp_f4.npy", p)
np.save(f"{d}/sp_f2.npy", p.astype(np.float16))
np.save(f"{d}/sp_bf.npy", (p.view(np.uint32) & 0xFFFF0000).view(np.float32))
np.save(f"{d}/sg.npy", (r.standard_normal((33, 70)) * 1e-2).astype(np.float32))
np.save(f"{d}/sg3.npy", (r.standard_normal((3, 33, 70)) * 1e-2).astype(np.float32))
PY
for dt in f4 f8; do
  for n in a b c; do
    add diagnose sharpness --logits $I/lg_${n}_$dt.npy --labels $I/lb_$n.npy
    add diagnose sharpness --logits $I/lg_${n}_$dt.npy --labels $I/lb_${n}_u1.npy --eps 0.25 --json
    add diagnose sharpness --logits $I/lg_${n}_$dt.npy --labels $I/lb_$n.npy --quiet --eps 1e-3
  done
done
add diagnose sharpness --logits $I/lg_inf_f4.npy --labels $I/lb_b.npy
add diagnose sharpness --logits $I/lg_nan_f8.npy --labels $I/lb_b.npy
add diagnose sharpness --logits $I/lg_f2.npy --labels $I/lb_a.npy
add diagnose sharpness --logits $I/lg_1d.npy --labels $I/lb_a.npy
add diagnose sharpness --logits $I/lg_1c.npy --labels $I/lb_a.npy
add diagnose sharpness --logits $I/lg_a_f4.npy --labels $I/lb_bad.npy
add diagnose sharpness --logits $I/lg_a_f4.npy --labels $I/lb_f4.npy
add diagnose sharpness --logits $I/lg_a_f4.npy --labels $I/lb_b.npy
add diagnose sharpness --logits $I/lg_ft.npy --labels $I/lb_a.npy
add diagnose sharpness --logits $I/missing.npy --labels $I/lb_a.npy
for opt in adamw sgd adamw8bit rmsprop8bit; do
  add step --optimizer $opt --params $I/sp_f4.npy --grads $I/sg.npy --steps 2 --out o
  add step --optimizer $opt --params $I/sp_f2.npy --grads $I/sg3.npy --steps 3 --out o
  add step --optimizer $opt --params $I/sp_bf.npy --param-dtype bf16 --grads $I/sg.npy --steps 1 --out o
done
add step --optimizer adamw --params $I/sp_f4.npy --grads $I/sg.npy --steps 1 --out o --param-dtype fp16
add step --optimizer adamw --params $I/lg_f2.npy --grads $I/sg.npy --steps 1 --out o
run_one() {  # run_one BIN DIR ARGS...
  local bin=$1 dir=$2; shift 2
  mkdir -p "$dir"
  (cd "$dir" && set +e; "$bin" "$@" > stdout 2> stderr; echo $? > rc)
}
same=0 differ=0 n=0
for c in "${cases[@]}"; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  run_one "$old" "$work/a/$n" $c
  # shellcheck disable=SC2086
  run_one "$new" "$work/b/$n" $c
  if diff -r "$work/a/$n" "$work/b/$n" > /dev/null; then
    same=$((same + 1))
  else
    differ=$((differ + 1))
    echo "DIFFER $n: exmy $c"
    diff -r "$work/a/$n" "$work/b/$n" | head -5
  fi
done
ok=$(grep -lx 0 "$work"/a/*/rc | wc -l)
echo "quantize/dequantize/sharpness/step runs: $n; byte-identical (stdout, stderr, exit code, every output file, nothing else left): $same; differing: $differ; runs that exited 0: $ok"
[ "$differ" -eq 0 ]
