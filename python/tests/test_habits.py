"""numpy / ml_dtypes / torch habits of the Python API (issue 34): dtype names and objects,
typed arrays in and out, torch.optim's keyword names, errors that name the argument."""

import re

import numpy as np
import pytest

import exmy


def test_the_issue_example():
    # 448 exact; 464 the tie of 448 and 480 -> even 448; 465 above it -> 480 > max -> NaN
    # (e4m3fn's overflow under "none", as ml_dtypes and torch); -0 -> 0x80.
    got = exmy.cast(np.float32([448, 464, 465, -0.0]), "float8_e4m3fn")
    assert got.tolist() == [0x7E, 0x7E, 0x7F, 0x80]
    assert np.isnan(exmy.decode(got, "e4m3fn")[2])


def test_the_issue_example_agrees_with_ml_dtypes():
    ml = pytest.importorskip("ml_dtypes")
    x = np.float32([448, 464, 465, -0.0])
    assert exmy.cast(x, "float8_e4m3fn").tobytes() == x.astype(ml.float8_e4m3fn).tobytes()


NAMES = [("float8_e4m3fn", "e4m3fn"), ("float8_e5m2", "e5m2"), ("float8_e4m3fnuz", "e4m3fnuz"),
         ("float8_e5m2fnuz", "e5m2fnuz"), ("float8_e4m3b11fnuz", "e4m3b11fnuz"),
         ("float8_e4m3", "e4m3"), ("float8_e3m4", "e3m4"), ("float8_e8m0fnu", "e8m0fnu"),
         ("float6_e2m3fn", "e2m3fn"), ("float6_e3m2fn", "e3m2fn"), ("float4_e2m1fn", "e2m1fn"),
         ("bfloat16", "bf16"), ("float16", "fp16"), ("half", "fp16"),
         ("torch.float8_e4m3fn", "e4m3fn"), ("torch.bfloat16", "bf16"), ("e4m3fn", "e4m3fn")]


@pytest.mark.parametrize("name,exmy_name", NAMES)
def test_library_names_are_exmy_formats(name, exmy_name):
    assert exmy.format_name(name) == exmy_name
    x = np.float32([0.0, 1.0, -2.0, 0.3])
    assert exmy.cast(x, name).tobytes() == exmy.cast(x, exmy_name).tobytes()
    assert exmy.table(name).tobytes() == exmy.table(exmy_name).tobytes()


def test_numpy_and_ml_dtypes_dtype_objects_name_formats():
    assert exmy.format_name(np.float16) == "fp16"
    assert exmy.format_name(np.dtype("float32")) == "fp32"
    ml = pytest.importorskip("ml_dtypes")
    for name, exmy_name in NAMES:
        base = name.removeprefix("torch.")
        if hasattr(ml, base):
            assert exmy.format_name(getattr(ml, base)) == exmy_name
            assert exmy.format_name(np.dtype(getattr(ml, base))) == exmy_name


def _ml_formats():
    ml = pytest.importorskip("ml_dtypes")
    return ml, [(n, e) for n, e in NAMES[:12] if hasattr(ml, n)]


def test_out_ml_dtypes_gives_typed_arrays_with_exmys_bits():
    ml, formats = _ml_formats()
    x = np.float32([1.0, -0.5, 3.0, 0.0])
    for name, e in formats:
        codes = exmy.cast(x, e)
        typed = exmy.cast(x, e, out="ml_dtypes")
        assert typed.dtype == np.dtype(getattr(ml, name)), name
        assert typed.tobytes() == codes.tobytes()
    assert exmy.cast(x, "fp16", out="ml_dtypes").dtype == np.float16
    with pytest.raises(ValueError, match="out"):
        exmy.cast(x, "e4m3fn", out="float8")


def test_ml_dtypes_arrays_in():
    ml, formats = _ml_formats()
    v = np.float32([1.0, -0.5, 3.0, 0.0, 0.375])
    for name, _ in formats:
        typed = v.astype(getattr(ml, name))
        # decode reads a typed array's format; cast widens it to float32 exactly
        assert np.array_equal(exmy.decode(typed), typed.astype(np.float32), equal_nan=True)
        assert exmy.cast(typed, "fp16").tobytes() == exmy.cast(typed.astype(np.float32),
                                                               "fp16").tobytes()
    b = v.astype(ml.bfloat16)
    assert exmy.cast(b, "e4m3fn").tobytes() == exmy.cast(v, "e4m3fn").tobytes()
    with pytest.raises(ValueError, match="fmt"):
        exmy.decode(v.astype(ml.float8_e5m2), "e4m3fn")


# ---- casts equal ml_dtypes' astype, every ml_dtypes format, on the designed boundary inputs --

def _boundary(fmt):
    d = exmy._exmy.designed_inputs(fmt, "rne", 5, 1 << 14, 0)
    return d["x"].view(np.float32)


NO_NAN = ("e2m3fn", "e3m2fn", "e2m1fn")  # FP6/FP4: no NaN code


@pytest.mark.parametrize("name,e", NAMES[:11] + [("bfloat16", "bf16")])
def test_cast_equals_ml_dtypes_astype(name, e):
    """exmy.cast equals x.astype(ml_dtypes type) on the designed boundary inputs of every format
    ml_dtypes has, NaN codes compared as a class, except the differences docs/SEMANTICS.md lists
    (section 12's table): NaN into FP6/FP4 (exmy +0; ml_dtypes the -0 pattern for +NaN)."""
    ml = pytest.importorskip("ml_dtypes")
    if not hasattr(ml, name):
        pytest.skip(f"ml_dtypes {ml.__version__} has no {name}")
    x = _boundary(e)
    got = exmy.cast(x, e)
    with np.errstate(invalid="ignore", over="ignore"):
        want = x.astype(getattr(ml, name)).view(got.dtype)
    table = exmy.table(e)
    same = (got == want) | (np.isnan(table[got]) & np.isnan(table[want]))
    if e in NO_NAN:
        nan = np.isnan(x)
        assert (got[nan] == 0).all()  # exmy: +0 (SEMANTICS 4.1)
        sign = np.uint8(1 << (exmy.table(e).size.bit_length() - 2))
        pos = nan & ~np.signbit(x)
        assert (want[pos] == sign).all()  # ml_dtypes: the -0 pattern for +NaN (documented)
        same |= nan
    bad = np.flatnonzero(~same)
    assert bad.size == 0, [(hex(int(x.view(np.uint32)[i])), int(got[i]), int(want[i]))
                           for i in bad[:5]]


def test_e8m0fnu_against_ml_dtypes_by_version():
    """ml_dtypes 0.6 rounds fp32 subnormals in (2^-127, 1.5 2^-127) to 2^-126 (exmy's
    compat="ml_dtypes" models it, SEMANTICS 12); ml_dtypes 0.7 rounds them to nearest (2^-127),
    as exmy's own e8m0fnu cast: checked here on every fp32 subnormal and the binades around."""
    ml = pytest.importorskip("ml_dtypes")
    if not hasattr(ml, "float8_e8m0fnu"):
        pytest.skip("ml_dtypes without float8_e8m0fnu")
    x = np.concatenate([np.arange(0, 1 << 24, dtype=np.uint32), _boundary("e8m0fnu").view(
        np.uint32)]).view(np.float32)
    with np.errstate(invalid="ignore"):
        want = x.astype(ml.float8_e8m0fnu).view(np.uint8)
    version = tuple(int(v) for v in ml.__version__.split(".")[:2])
    if version == (0, 6):
        assert exmy.cast(x, "e8m0fnu", compat="ml_dtypes").tobytes() == want.tobytes()
    elif version >= (0, 7):
        assert exmy.cast(x, "e8m0fnu").tobytes() == want.tobytes()
        diff = np.flatnonzero(exmy.cast(x, "e8m0fnu", compat="ml_dtypes") != want)
        lo, hi = x.view(np.uint32)[diff].min(), x.view(np.uint32)[diff].max()
        n = np.unique(x.view(np.uint32)[diff]).size
        assert (lo, hi, n) == (0x400001, 0x5FFFFF, 0x1FFFFF)


# ---- torch --------------------------------------------------------------------------------

def test_torch_tensors_in_and_out():
    torch = pytest.importorskip("torch")
    x = torch.tensor([448.0, 464.0, 465.0, -0.0])
    assert exmy.cast(x, torch.float8_e4m3fn).tolist() == [0x7E, 0x7E, 0x7F, 0x80]
    t = exmy.cast(x, "e4m3fn", out="torch")
    assert t.dtype == torch.float8_e4m3fn
    assert t.view(torch.uint8).tolist() == [0x7E, 0x7E, 0x7F, 0x80]
    b = exmy.cast(x, "bfloat16", out="torch")
    assert b.dtype == torch.bfloat16 and b.float().tolist()[:2] == [448.0, 464.0]
    assert exmy.decode(t).tolist()[:2] == [448.0, 448.0]


# ---- step: torch.optim's names ----------------------------------------------------------------

def test_step_torch_names_equal_exmy_names():
    rng = np.random.default_rng(5)
    p = rng.standard_normal(300).astype(np.float32)
    g = (rng.standard_normal((2, 300)) * 0.1).astype(np.float32)
    a = exmy.step("adamw", p, g, steps=2, lr=3e-3, betas=(0.8, 0.95), eps=1e-6,
                  weight_decay=0.1)
    b = exmy.step("adamw", p, g, steps=2, lr=3e-3, beta1=0.8, beta2=0.95, eps=1e-6, wd=0.1)
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].tobytes() == b[k].tobytes(), k
    d = exmy.step("adamw", p, g, steps=2)
    assert a["params"].tobytes() != d["params"].tobytes()


def test_step_bf16_params_set_param_dtype():
    ml = pytest.importorskip("ml_dtypes")
    p = np.float32([1.0, -2.0, 0.5]).astype(ml.bfloat16)
    g = np.float32([0.1, 0.2, 0.3])
    a = exmy.step("adamw", p, g, lr=1e-2)
    b = exmy.step("adamw", p.astype(np.float32), g, lr=1e-2, param_dtype="bf16")
    c = exmy.step("adamw", p.astype(np.float32), g, lr=1e-2, param_dtype=ml.bfloat16)
    assert a["params"].tobytes() == b["params"].tobytes() == c["params"].tobytes()


FLAG = re.compile(r"(?<![\w-])--[a-z]")


def _message(excinfo):
    msg = str(excinfo.value)
    assert not FLAG.search(msg), msg  # never a command-line flag
    return msg


def test_step_errors_name_the_python_argument():
    p = np.zeros(8, np.float32)
    with pytest.raises(ValueError) as e:
        exmy.step("adamw", p, p, lr=-1.0)
    assert "lr" in _message(e)
    with pytest.raises(ValueError) as e:
        exmy.step("adamw8bit", p, p, betas=(0.9, 1.0))
    assert "betas[1]" in _message(e)
    with pytest.raises(ValueError) as e:
        exmy.step("sgd", p, p, betas=(0.9, 0.99))
    assert "betas[0]" in _message(e) and "does not read it" in str(e.value)
    with pytest.raises(ValueError) as e:
        exmy.step("adamw8bit", p, p, compat="torch-cuda")
    assert "compat" in _message(e)
    with pytest.raises(TypeError, match="given twice"):
        exmy.step("adamw", p, p, betas=(0.9, 0.99), beta1=0.9)
    with pytest.raises(TypeError, match="unexpected keyword argument 'amsgradd'"):
        exmy.step("adamw", p, p, amsgradd=True)
    with pytest.raises(TypeError, match="lr"):
        exmy.step("adamw", p, p, lr="fast")
    with pytest.raises(TypeError, match="betas"):
        exmy.step("adamw", p, p, betas=0.9)
    with pytest.raises(TypeError, match="steps"):
        exmy.step("adamw", p, p, steps=1.5)


def test_step_extra_hyperparameters_by_keyword():
    # RMSprop's centered (a family's own option) goes through as a keyword.
    p = np.float32([1.0, -1.0, 0.5])
    g = np.float32([[0.1, 0.2, -0.3], [0.3, -0.1, 0.2]])
    a = exmy.step("rmsprop", p, g, steps=2, lr=1e-2, centered=True)
    b = exmy.step("rmsprop", p, g, steps=2, lr=1e-2)
    assert a["params"].tobytes() != b["params"].tobytes()


BAD_CALLS = [
    (lambda: exmy.cast(np.zeros(2, np.float32), 5), TypeError, "fmt"),
    (lambda: exmy.cast(np.zeros(2, np.float32), "e4m3fn", round=1), TypeError, "round"),
    (lambda: exmy.cast(np.zeros(2, np.float32), "e4m3fn", seed=-1), ValueError, "seed"),
    (lambda: exmy.cast(np.zeros(2, np.float32), "e4m3fn", seed="1"), TypeError, "seed"),
    (lambda: exmy.cast(np.zeros(2, np.int32), "e4m3fn"), ValueError, "x"),
    (lambda: exmy.cast(np.zeros(2, np.float32), "e4m3fn", input="fp8"), ValueError, "input"),
    (lambda: exmy.decode(np.zeros(2, np.uint8), None), TypeError, "fmt"),
    (lambda: exmy.decode(np.zeros(2, np.float32), "e4m3fn"), ValueError, "codes"),
    (lambda: exmy.quantize(np.zeros((2, 4), np.float32), "rowwise", "int8", order=3),
     TypeError, "order"),
    (lambda: exmy.quantize(np.zeros((2, 4), np.float32), "rowwise", "int8", bogus=1),
     TypeError, "bogus"),
    (lambda: exmy.quantize(np.zeros((2, 4), np.float32), "rowwise", "int8", transpose="yes"),
     TypeError, "transpose"),
    (lambda: exmy.quantize(np.zeros((2, 4), np.float32), "rowwise", "int8", compat="triton",
                           order="recip-mul"), ValueError, "compat"),
    (lambda: exmy.quantize(np.zeros((2, 4), np.float32), 3, "int8"), TypeError, "scheme"),
    (lambda: exmy.dequantize([1, 2], "rowwise", "int8"), TypeError, "q"),
    (lambda: exmy.golden_check("/nonexistent", "/nonexistent", strict_nan="no"), TypeError,
     "strict_nan"),
]


@pytest.mark.parametrize("call,kind,word", BAD_CALLS)
def test_bad_arguments_raise_valueerror_or_typeerror_naming_them(call, kind, word):
    with pytest.raises((ValueError, TypeError)) as e:
        call()
    assert e.type is kind, (e.type, str(e.value))
    msg = _message(e)
    assert word in msg, msg
    assert "incompatible function arguments" not in msg  # never nanobind's own TypeError
