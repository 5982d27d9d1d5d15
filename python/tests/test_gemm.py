"""exmy.gemm against `exmy gemm` (the CLI), bit for bit: operand formats fp32/tf32/bf16/fp16/FP8/
FP4, every accumulation model by name, per-tensor, per-row and block scales, fp32/bf16/fp16
outputs; and its argument checks."""

import re
import subprocess
import warnings
import zlib

import numpy as np
import pytest

import exmy
from test_exmy import cli, needs_cli


def _operand(rng, fmt, rows, k):
    """Codes (or fp32 values) of `fmt`: normal values times scattered powers of two, with a few
    zeros, signed zeros and the format's largest values."""
    v = (rng.standard_normal((rows, k)) * np.exp2(rng.integers(-6, 4, (rows, k)))).astype(
        np.float32)
    v.flat[:: 7] = 0.0
    v.flat[3:: 11] = -0.0
    if fmt in ("fp32", "tf32"):
        return v
    return exmy.cast(v, fmt, overflow="satfinite")


def _cli_gemm(tmp_path, a, b, fa, fb, fo, extra=(), arrays=None):
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    args = [cli(), "gemm", "--a", str(tmp_path / "a.npy"), "--b", str(tmp_path / "b.npy"),
            "--out", str(tmp_path / "c.npy"), "--a-format", fa, "--b-format", fb,
            "--out-format", fo, *extra]
    for flag, arr in (arrays or {}).items():
        np.save(tmp_path / f"{flag}.npy", arr)
        args += [f"--{flag}", str(tmp_path / f"{flag}.npy")]
    r = subprocess.run(args, check=True, capture_output=True, text=True)
    return np.load(tmp_path / "c.npy"), r.stderr


CASES = [  # (a format, b format, out format, accumulation model)
    ("fp32", "fp32", "fp32", "fp32-seq"),
    ("fp32", "fp32", "fp32", "pairwise"),
    ("fp32", "fp32", "fp32", "exact"),
    ("tf32", "tf32", "fp32", "sm90"),
    ("bf16", "bf16", "fp32", "sm80"),
    ("bf16", "bf16", "bf16", "sm90"),
    ("bf16", "bf16", "bf16", "cublas-sm90"),
    ("fp16", "fp16", "fp16", "sm100"),
    ("fp16", "fp16", "fp32", "hw:k=8,frac=24,split=2"),
    ("bf16", "bf16", "bf16", "fp32-seq:chunk=16"),
    ("e4m3fn", "e4m3fn", "fp32", "sm90"),
    ("e4m3fn", "e5m2", "bf16", "sm90"),
    ("e5m2", "e5m2", "fp16", "cublas-sm90"),
    ("e4m3fn", "e4m3fn", "fp32", "exact"),
    ("e4m3fn", "e4m3fn", "fp32", "cdna3"),
]


@needs_cli
@pytest.mark.parametrize("fa,fb,fo,accum", CASES)
def test_gemm_equals_the_cli(tmp_path, fa, fb, fo, accum):
    rng = np.random.default_rng(zlib.crc32(f"{fa} {fb} {fo} {accum}".encode()))
    a, b = _operand(rng, fa, 7, 96), _operand(rng, fb, 5, 96)
    want, stderr = _cli_gemm(tmp_path, a, b, fa, fb, fo, ["--accum", accum])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = exmy.gemm(a, b, fa, fb, fo, accum)
    assert got.dtype == want.dtype and got.shape == want.shape == (7, 5)
    assert got.tobytes() == want.tobytes()
    # the CLI's unverified-shape line on stderr <-> UnverifiedShapeWarning, the same rule
    notes = [str(x.message) for x in w if issubclass(x.category, exmy.UnverifiedShapeWarning)]
    assert bool(notes) == ("outside the verified set" in stderr)
    if notes:
        assert stderr.split("applied rule: ")[1].strip() == notes[0].split("applied rule: ")[1]
        assert not re.search(r"(?<![\w-])--[a-z]", notes[0])


@needs_cli
def test_gemm_scales_and_compat_equal_the_cli(tmp_path):
    rng = np.random.default_rng(11)
    a, b = _operand(rng, "e4m3fn", 6, 64), _operand(rng, "e4m3fn", 4, 64)
    ra = (rng.random(6) + 0.5).astype(np.float32)
    rb = (rng.random(4) + 0.5).astype(np.float32)
    for order in ("a-first", "b-first", "product"):
        want, _ = _cli_gemm(tmp_path, a, b, "e4m3fn", "e4m3fn", "bf16",
                            ["--accum", "sm90", "--scale-a", "0.5", "--scale-b", "3",
                             "--scale-order", order],
                            {"scale-a-rows": ra, "scale-b-rows": rb})
        got = exmy.gemm(a, b, "float8_e4m3fn", "float8_e4m3fn", "bfloat16", "sm90",
                        scale_a=0.5, scale_b=3.0, scale_a_rows=ra, scale_b_rows=rb,
                        scale_order=order)
        assert got.tobytes() == want.tobytes(), order
    want, _ = _cli_gemm(tmp_path, a, b, "e4m3fn", "e4m3fn", "fp32", ["--compat", "torch-cuda"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", exmy.UnverifiedShapeWarning)
        got = exmy.gemm(a, b, "e4m3fn", "e4m3fn", "fp32", compat="torch-cuda")
    assert got.tobytes() == want.tobytes()


@needs_cli
@pytest.mark.parametrize("fmt,scale_fmt,accum", [("e4m3fn", "e8m0fnu", "sm100"),
                                                 ("e2m1fn", "e8m0fnu", "sm100"),
                                                 ("e2m1fn", "e4m3fn", "sm100")])
def test_gemm_block_scales_equal_the_cli(tmp_path, fmt, scale_fmt, accum):
    rng = np.random.default_rng(13)
    block = 16 if scale_fmt == "e4m3fn" else 32
    a, b = _operand(rng, fmt, 3, 128), _operand(rng, fmt, 2, 128)
    if scale_fmt == "e8m0fnu":
        sa = rng.integers(120, 134, (3, 128 // block), dtype=np.uint8)
        sb = rng.integers(120, 134, (2, 128 // block), dtype=np.uint8)
    else:
        sa = exmy.cast((rng.random((3, 128 // block)) + 0.25).astype(np.float32), "e4m3fn")
        sb = exmy.cast((rng.random((2, 128 // block)) + 0.25).astype(np.float32), "e4m3fn")
    want, _ = _cli_gemm(tmp_path, a, b, fmt, fmt, "fp32",
                        ["--accum", accum, "--block-scale-format", scale_fmt],
                        {"block-scale-a": sa, "block-scale-b": sb})
    got = exmy.gemm(a, b, fmt, fmt, "fp32", accum, block_scale_a=sa, block_scale_b=sb,
                    block_scale_format=scale_fmt)
    assert got.tobytes() == want.tobytes()


def test_gemm_typed_operands_give_their_format():
    ml = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(3)
    v = rng.standard_normal((4, 32)).astype(np.float32)
    w = rng.standard_normal((3, 32)).astype(np.float32)
    codes = exmy.gemm(exmy.cast(v, "bf16"), exmy.cast(w, "bf16"), "bf16", "bf16", "bf16", "sm90")
    typed = exmy.gemm(v.astype(ml.bfloat16), w.astype(ml.bfloat16), out_format=ml.bfloat16,
                      accum="sm90", out="ml_dtypes")
    assert typed.dtype == np.dtype(ml.bfloat16)
    assert typed.tobytes() == codes.tobytes()
    f8 = exmy.gemm(v.astype(ml.float8_e4m3fn), w.astype(ml.float8_e4m3fn), accum="sm90")
    assert f8.tobytes() == exmy.gemm(exmy.cast(v, "e4m3fn"), exmy.cast(w, "e4m3fn"), "e4m3fn",
                                     "e4m3fn", "fp32", "sm90").tobytes()
    h = exmy.gemm(v.astype(np.float16), w.astype(np.float16), accum="fp32-seq")
    assert h.dtype == np.float32


FLAG = re.compile(r"(?<![\w-])--[a-z]")
BAD = [
    (dict(a_format="bf16", b_format="bf16", accum="sm90"), ValueError, "a: float32 values"),
    (dict(accum=None), ValueError, "accum"),
    (dict(accum="sm90", compat="torch-cuda"), ValueError, "compat"),
    (dict(accum="warp-magic"), ValueError, "warp-magic"),
    (dict(accum="sm90", out_format="e4m3fn"), ValueError, "out_format"),
    (dict(accum="sm90", scale_a=-1.0), ValueError, "scale_a"),
    (dict(accum="sm90", scale_a="2"), TypeError, "scale_a"),
    (dict(accum="sm90", scale_a_rows=np.ones(5, np.float32)), ValueError, "scale_a_rows"),
    (dict(accum="sm90", scale_order="c-first"), ValueError, "scale_order"),
    (dict(accum="sm90", block_scale_a=np.ones((2, 1), np.uint8)), ValueError, "block_scale_b"),
    (dict(accum=3), TypeError, "accum"),
    (dict(accum="sm90", a_format=7), TypeError, "a_format"),
]


@pytest.mark.parametrize("kw,kind,word", BAD)
def test_gemm_bad_arguments_name_them(kw, kind, word):
    a = np.ones((2, 32), np.float32)
    with pytest.raises((ValueError, TypeError)) as e:
        exmy.gemm(a, a, **kw)
    assert e.type is kind, (e.type, str(e.value))
    assert word in str(e.value) and not FLAG.search(str(e.value)), str(e.value)


def test_gemm_strict_refuses_an_unverified_shape():
    a = exmy.cast(np.ones((3, 40), np.float32), "bf16")
    with pytest.warns(exmy.UnverifiedShapeWarning, match="applied rule"):
        exmy.gemm(a, a, "bf16", "bf16", "bf16", "cublas-sm90")
    with pytest.raises(ValueError, match="^strict: "):
        exmy.gemm(a, a, "bf16", "bf16", "bf16", "cublas-sm90", strict=True)
