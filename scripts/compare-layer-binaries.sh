#!/usr/bin/env bash
# Byte identity of two exmy binaries on `exmy layer` (issue 36's streaming layer must not change one
# output bit): every kind x dtype (fp32; bf16/fp16 as <f4 values and as <u2 codes) x a few
# accumulation models x small, odd and multi-block shapes, inputs with NaN, infinities, -0 and
# subnormals, and the error cases. Each run's stdout, stderr, exit code, output files (byte for
# byte) and what it left in its working directory are compared. Prints the counts; exits 1 on the
# first difference class found (all differences are listed).
#   scripts/compare-layer-binaries.sh OLD_EXMY NEW_EXMY WORKDIR   (Python 3 + numpy)
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
def bf16_vals(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)
rng = np.random.default_rng(20261201)
shapes = {"s": (2, 3, 4), "one": (1, 1, 1), "odd": (7, 13, 5), "mid": (33, 70, 17),
          "big": (150, 8200, 70)}
for name, (b, n, m) in shapes.items():
    for t, scale in (("x", 4.0), ("w", 0.5), ("g", 1e-2)):
        shape = {"x": (b, n), "w": (m, n), "g": (b, m)}[t]
        v = (rng.standard_normal(shape) * scale).astype(np.float32)
        if name in ("odd", "mid"):  # specials: NaN, infinities, -0, subnormals, large values
            f = v.reshape(-1)
            k = f.size
            f[rng.integers(0, k, 2)] = np.nan
            f[rng.integers(0, k, 1)] = np.inf
            f[rng.integers(0, k, 1)] = -np.inf
            f[rng.integers(0, k, 2)] = -0.0
            f[rng.integers(0, k, 2)] = 1e-40
            f[rng.integers(0, k, 2)] = 6e4
            f[rng.integers(0, k, 1)] = 0.0
        np.save(f"{d}/{name}_{t}_fp32.npy", v)
        h = v.astype(np.float16)
        np.save(f"{d}/{name}_{t}_fp16.npy", h.astype(np.float32))
        np.save(f"{d}/{name}_{t}_fp16c.npy", h.view(np.uint16))
        bb = bf16_bits(v)
        np.save(f"{d}/{name}_{t}_bf16.npy", bf16_vals(bb))
        np.save(f"{d}/{name}_{t}_bf16c.npy", bb)
    # a zero row: an all-zero group (absmax 0)
    x = np.load(f"{d}/{name}_x_fp32.npy"); x[0] = 0; np.save(f"{d}/{name}_xz_fp32.npy", x)
# error inputs
np.save(f"{d}/bad_1d.npy", np.zeros(6, np.float32))
np.save(f"{d}/bad_f8.npy", np.zeros((2, 3), np.float64))
np.save(f"{d}/bad_notbf16.npy", np.full((2, 3), 1.1, np.float32))
np.save(f"{d}/bad_u1.npy", np.zeros((2, 3), np.uint8))
PY
cases=()
add() { cases+=("$*"); }
I=$work/in
for kind in plain switchback switchback-m switchback-q llm-int8 fp8-tensorwise switchback-fp8 masked:e4m3 masked:e5m2 masked:e3m0; do
  for shape in s one odd mid; do
    for dt in fp32 bf16 fp16; do
      for accum in fp32-seq pairwise sm90; do
        add --kind $kind --x $I/${shape}_x_$dt.npy --w $I/${shape}_w_$dt.npy --g $I/${shape}_g_$dt.npy --dtype $dt --accum $accum
      done
      [ $dt = fp32 ] || add --kind $kind --x $I/${shape}_x_${dt}c.npy --w $I/${shape}_w_${dt}c.npy --g $I/${shape}_g_${dt}c.npy --dtype $dt --accum fp32-seq --json
    done
  done
  add --kind $kind --x $I/odd_x_bf16c.npy --w $I/odd_w_bf16.npy --g $I/odd_g_bf16c.npy --dtype bf16 --accum cublas-sm90
  add --kind $kind --x $I/s_x_fp16c.npy --w $I/s_w_fp16c.npy --g $I/s_g_fp16c.npy --dtype fp16 --accum exact
  add --kind $kind --x $I/mid_xz_fp32.npy --w $I/mid_w_fp32.npy --g $I/mid_g_fp32.npy --dtype fp32 --accum hw:k=16,frac=25
  add --kind $kind --x $I/big_x_bf16c.npy --w $I/big_w_bf16c.npy --g $I/big_g_bf16c.npy --dtype bf16 --accum fp32-seq
  add --kind $kind --x $I/big_x_fp32.npy --w $I/big_w_fp32.npy --g $I/big_g_fp32.npy --dtype fp32 --accum sm90
done
for f in "--fwd-format e5m2 --bwd-format e4m3fn" "--fwd-format e3m2 --bwd-format e2m1" "--fwd-format e4m3 --bwd-format e5m2fnuz"; do
  for kind in fp8-tensorwise switchback-fp8; do
    add --kind $kind --x $I/odd_x_fp16c.npy --w $I/odd_w_fp16c.npy --g $I/odd_g_fp16c.npy --dtype fp16 $f
    add --kind $kind --x $I/mid_x_fp32.npy --w $I/mid_w_fp32.npy --g $I/mid_g_fp32.npy --dtype fp32 $f
  done
done
for o in clamp keep; do for i in min zero keep; do
  add --kind masked:e2m1 --x $I/odd_x_bf16c.npy --w $I/odd_w_bf16c.npy --g $I/odd_g_bf16c.npy --mask-outer $o --mask-inner $i
done; done
# error cases (exit 2, nothing written)
add --kind plain --x $I/bad_1d.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32
add --kind plain --x $I/bad_f8.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32
add --kind switchback --x $I/bad_notbf16.npy --w $I/s_w_bf16.npy --g $I/s_g_bf16.npy --dtype bf16
add --kind switchback --x $I/s_x_fp32.npy --w $I/s_w_bf16.npy --g $I/s_g_bf16.npy --dtype bf16
add --kind llm-int8 --x $I/s_x_bf16c.npy --w $I/s_w_bf16c.npy --g $I/s_g_bf16c.npy --dtype fp32
add --kind plain --x $I/bad_u1.npy --w $I/s_w_bf16c.npy --g $I/s_g_bf16c.npy
add --kind plain --x $I/s_x_fp32.npy --w $I/odd_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32
add --kind masked:e9m2 --x $I/s_x_fp32.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32
add --kind nope --x $I/s_x_fp32.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32
add --kind plain --x $I/s_x_fp32.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp64
add --kind plain --x $I/s_x_fp32.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32 --accum bogus
add --kind fp8-tensorwise --x $I/s_x_fp32.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32 --fwd-format bf16
add --kind plain --x $I/odd_x_bf16c.npy --w $I/odd_w_bf16c.npy --g $I/odd_g_bf16c.npy --accum cublas-sm90 --strict
add --kind plain --x $I/odd_x_bf16c.npy --w $I/odd_w_bf16c.npy --g $I/odd_g_bf16c.npy --accum cublas-sm90 --quiet
add --kind plain --x $I/s_x_fp32.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32 --device cuda
add --kind plain --x $I/s_x_fp32.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32 --device cuda --accum exact
add --kind plain --x $I/missing.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32
add --kind plain --x $I/s_x_fp32.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32 --mask-outer wide
add --kind plain --x $I/s_x_fp32.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32 --out-exists
add --kind plain --x $I/s_x_fp32.npy --w $I/s_w_fp32.npy --g $I/s_g_fp32.npy --dtype fp32 --out-noparent
run_one() {  # run_one BIN DIR ARGS...: in DIR, out dir "o" (or the two special cases)
  local bin=$1 dir=$2; shift 2
  mkdir -p "$dir"
  local args=() out=o
  for a in "$@"; do
    case $a in
      --out-exists) mkdir -p "$dir/o" ;;
      --out-noparent) out=nodir/o ;;
      *) args+=("$a") ;;
    esac
  done
  (cd "$dir" && set +e; "$bin" layer "${args[@]}" --out "$out" > stdout 2> stderr; echo $? > rc)
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
    echo "DIFFER $n: exmy layer $c"
    diff -r "$work/a/$n" "$work/b/$n" | head -5
  fi
done
ok=$(grep -lx 0 "$work"/a/*/rc | wc -l)
echo "layer runs: $n; byte-identical (stdout, stderr, exit code, every output file, nothing else left): $same; differing: $differ; runs that exited 0: $ok"
[ "$differ" -eq 0 ]
