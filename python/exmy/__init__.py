"""exmy: a bit-exact reference for low-precision training numerics.

NumPy (or torch) in, NumPy out, the same bits as the ``exmy`` command line (the same library
functions run underneath; ``docs/SEMANTICS.md`` defines every operation):

>>> import numpy as np, exmy
>>> exmy.cast(np.float32([448, 464, 465, -0.0]), "float8_e4m3fn")
array([126, 126, 127, 128], dtype=uint8)
>>> exmy.cast(np.float32([1.0, 464.0, 465.0]), "e4m3fn", overflow="satfinite")
array([ 56, 126, 126], dtype=uint8)
>>> exmy.decode(np.array([56, 126], np.uint8), "e4m3fn")
array([  1., 448.], dtype=float32)

Formats are named as exmy names them (``e4m3fn``, ``e5m2``, ``bf16``, ``e2m1fn``), as ml_dtypes
and torch spell them (``float8_e4m3fn``, ``bfloat16``, ``float4_e2m1fn``), or by their dtype
objects (``ml_dtypes.float8_e4m3fn``, ``torch.float8_e4m3fn``, ``numpy.float16``), wherever a
format is named. Inputs are NumPy arrays (ml_dtypes-typed ones too) or torch tensors. This
package computes on the host (it has no CUDA kernels; the CUDA emulation is the CLI's
``--device cuda`` in a CUDA build): a CUDA tensor is copied to the host first, and the bits are
the same. Results are codes (uint8 up to 8 bits, uint16 above) unless ``out="ml_dtypes"`` or
``out="torch"`` asks for typed arrays.

Bad input raises ValueError (a bad value) or TypeError (a wrong type) naming the argument.
``exmy.fuzz`` fuzzes your own cast; ``exmy.strategies`` (needs Hypothesis) gives the inputs for
your own property tests.
"""

from __future__ import annotations

import numpy as np

from . import _exmy
from ._names import (as_bool, as_float, as_int, as_seed, as_str, codes_like, format_name,
                     is_torch, library_errors, numpy_format, torch_format, torch_to_numpy, typed_output)
from ._gemm import gemm, UnverifiedShapeWarning
from ._fuzz import fuzz, FuzzResult, FuzzFailure

__all__ = [
    "cast",
    "decode",
    "table",
    "quantize",
    "dequantize",
    "step",
    "gemm",
    "golden_check",
    "assert_cast_equal",
    "fuzz",
    "FuzzResult",
    "FuzzFailure",
    "UnverifiedShapeWarning",
    "format_name",
    "__version__",
]

__version__ = _exmy.__version__
git_sha = _exmy.git_sha


def __getattr__(name):
    if name == "strategies":  # imports Hypothesis: only when asked for
        import importlib

        return importlib.import_module(".strategies", __name__)
    raise AttributeError(f"module 'exmy' has no attribute {name!r}")


def _array(x, arg: str = "x"):
    """(array, input kind) for cast: float32/float16 as they are, bfloat16 as uint16 patterns
    ("bf16"), narrower floats (ml_dtypes arrays, torch float8 tensors) widened to float32, which
    holds each of their values exactly."""
    if is_torch(x):
        f = torch_format(x)
        a = torch_to_numpy(x)
        if f == "bf16":
            return a, "bf16"
        if f is not None:
            with library_errors():
                return _exmy.decode(a, f), ""
    else:
        a = x if isinstance(x, np.ndarray) else np.asarray(x)
        f = numpy_format(a)
        if f == "bf16":
            return np.ascontiguousarray(a).view(np.uint16), "bf16"
        if f is not None:
            with library_errors():
                return _exmy.decode(np.ascontiguousarray(a).view(np.uint8), f), ""
        a = np.ascontiguousarray(a)
    if a.dtype == np.float64:
        raise ValueError(f"{arg}: expected float32, float16 or bfloat16 (exmy casts float64 only "
                         "through `exmy cast VALUE`; convert explicitly if that is what you mean)")
    return a, ""


def _float32(x, arg: str) -> np.ndarray:
    """``x`` as a C-contiguous float32 array: narrower floats (bfloat16, FP8 of ml_dtypes or
    torch) widened exactly, others converted by NumPy (float64 rounds to nearest)."""
    a = torch_to_numpy(x) if is_torch(x) else np.asarray(x)
    f = torch_format(x) if is_torch(x) else numpy_format(a)
    if f is not None:
        bits = np.ascontiguousarray(a).view(np.uint16 if a.dtype.itemsize == 2 else np.uint8)
        with library_errors():
            return _exmy.decode(bits, f)
    return np.ascontiguousarray(a, dtype=np.float32)


def _threads(threads) -> int:
    """``threads`` as an int: 0 (every core), 1 (one thread) or N > 1; else ValueError."""
    if isinstance(threads, bool):
        raise ValueError(f"threads: expected a non-negative int, got {threads!r}")
    try:
        t = as_int(threads, "threads")
    except TypeError:
        raise ValueError(f"threads: expected a non-negative int, got {threads!r}") from None
    if t < 0:
        raise ValueError(f"threads: expected 0 (every core), 1 (one thread) or a positive "
                         f"thread count, got {t}")
    return t


def cast(x, fmt, round: str = "rne", overflow: str = "none", seed: int = 0,
         input: str | None = None, threads: int = 1, compat: str = "", out: str = "codes"):
    """Codes of ``x`` in format ``fmt`` (``exmy cast --in``).

    ``x``: float32, float16 or bfloat16 (NumPy, ml_dtypes or torch; ``input="bf16"`` reads a
    uint16 array as bfloat16 bit patterns); narrower floats (an ml_dtypes float8 array, a torch
    float8 tensor) are widened to float32 first, exactly. float64 is refused (ValueError): cast
    it yourself if you mean its rounding to float32. A torch tensor may live on any device: this
    package has no CUDA kernels, so a CUDA tensor is copied to the host (same bits).

    ``fmt``: an exmy name (``"e4m3fn"``), an ml_dtypes/torch name (``"float8_e4m3fn"``,
    ``"bfloat16"``) or a dtype (``ml_dtypes.float8_e4m3fn``, ``torch.float8_e5m2``).

    ``round``: "rne", "rna", "rtz", "rup", "rdn", "rto" or "sr:R" (stochastic, R random bits;
    Philox words from (seed, stream 0, element index), as ``exmy cast --seed``). ``overflow``:
    "none" (the format's rule: NaN for e4m3fn, inf for e5m2), "sat" or "satfinite".

    ``threads``: 1 (the default) casts on the calling thread; 0 takes OpenMP's team
    (``OMP_NUM_THREADS``, else every core); N > 1 takes N threads. The codes are identical for
    every thread count. The cast runs without the GIL.

    ``compat``: a cast profile of ``exmy cast --compat`` ("torch", "ml_dtypes": their e8m0fnu
    conversions) replaces exmy's rounding by that library's rule; it fixes the rounding, so
    ``round`` and ``overflow`` must stay at their defaults.

    ``out``: "codes" (the default: uint8 codes for formats of at most 8 bits, uint16 above, in a
    new C-contiguous NumPy array), "ml_dtypes" (the codes viewed as the ml_dtypes dtype of
    ``fmt``, e.g. ``float8_e4m3fn``; float16 for fp16; needs ml_dtypes) or "torch" (a CPU
    tensor of torch's dtype, e.g. ``torch.float8_e4m3fn``). Not NumPy's ``out=`` buffer.

    >>> import numpy as np, exmy
    >>> exmy.cast(np.float32([0.5, 1.5, 2.5]), "float4_e2m1fn")        # ties to even
    array([1, 3, 4], dtype=uint8)
    >>> exmy.cast(np.float32([0.5, 1.5, 2.5]), "e2m1fn", round="rna")  # ties away
    array([1, 3, 5], dtype=uint8)
    >>> y = exmy.cast(np.float32([1, 300]), "e4m3fn", out="ml_dtypes")
    >>> y.dtype.name, y.astype(np.float32)
    ('float8_e4m3fn', array([  1., 288.], dtype=float32))
    """
    t = _threads(threads)
    f = format_name(fmt, "fmt")
    as_str(round, "round")
    as_str(overflow, "overflow")
    as_str(compat, "compat")
    s = as_seed(seed)
    if input is not None and input != "bf16":
        raise ValueError(f"input: expected None or 'bf16', got {input!r}")
    a, kind = _array(x)
    with library_errors():
        codes = _exmy.cast(a, f, round, overflow, s, input if input is not None else kind, t,
                           compat)
    return typed_output(codes, f, out)


def decode(codes, fmt=None) -> np.ndarray:
    """The float32 values of ``codes`` of format ``fmt``: a new C-contiguous NumPy array.

    ``codes``: uint8 (formats of at most 8 bits) or uint16 codes, or a typed array whose dtype
    names the format (an ml_dtypes array, a torch float8/bfloat16 tensor; then ``fmt`` may be
    left out).

    >>> import numpy as np, exmy
    >>> exmy.decode(np.uint8([0x38, 0x7E, 0x7F]), "float8_e4m3fn")
    array([  1., 448.,  nan], dtype=float32)
    """
    typed = None
    if is_torch(codes):
        typed = torch_format(codes)
        a = torch_to_numpy(codes)
    else:
        a = np.ascontiguousarray(codes)
        typed = numpy_format(a)
        if typed is not None:
            a = a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint8)
    if fmt is None:
        if typed is None:
            raise TypeError("fmt: required for codes of dtype " + str(a.dtype))
        f = typed
    else:
        f = format_name(fmt, "fmt")
        if typed is not None and typed != f:
            raise ValueError(f"fmt: '{f}' but codes are {typed} elements")
    with library_errors():
        return _exmy.decode(a, f)


def table(fmt) -> np.ndarray:
    """The float32 value of every code of ``fmt`` (index = code).

    >>> import exmy
    >>> exmy.table("float4_e2m1fn")[:8]
    array([0. , 0.5, 1. , 1.5, 2. , 3. , 4. , 6. ], dtype=float32)
    """
    with library_errors():
        return _exmy.table(format_name(fmt, "fmt"))


# The options of quantize/dequantize and their types (the switches of `exmy quantize`).
_QUANT_STR = ("variant", "order", "nan", "round", "scale_mode", "norm", "tie", "compat")
_QUANT_BOOL = ("transpose", "two_level", "pow2_scale", "fp16_clamp")
_QUANT_INT = ("seed", "margin")
_QUANT_FLOAT = ("prev_scale", "scale", "amax_epsilon", "tensor_amax", "tensor_scale")


def _quant_options(fn: str, options: dict) -> dict:
    o = {}
    for k, v in options.items():
        if k in _QUANT_STR:
            o[k] = as_str(v, k)
        elif k in _QUANT_BOOL:
            o[k] = as_bool(v, k)
        elif k == "seed":
            o[k] = as_seed(v)
        elif k in _QUANT_INT:
            o[k] = as_int(v, k)
        elif k in _QUANT_FLOAT:
            o[k] = as_float(v, k)
        else:
            known = ", ".join(_QUANT_STR + _QUANT_BOOL + _QUANT_INT + _QUANT_FLOAT)
            raise TypeError(f"{fn}() got an unexpected keyword argument {k!r} (expected one "
                            f"of {known})")
    return o


def quantize(x, scheme: str, to, **options) -> dict:
    """``exmy quantize``: {"codes", "state" or "scales", ["tensor_scale"], "shape"}.

    ``x``: float32 values (NumPy or torch; bf16/fp16/FP8 inputs are widened exactly). ``scheme``:
    "tensor", "rowwise", "colwise", "block:B", "block:RxC", "mx", "nvfp4", ...; ``to``: the
    target ("int8", "e4m3fn" / "float8_e4m3fn" / ``ml_dtypes.float8_e4m3fn``, "nf4", "dynamic",
    ...). Options are the CLI's switches with ``_`` for ``-``: variant, order, nan, round, seed,
    scale_mode, norm, tie, transpose, two_level, pow2_scale, fp16_clamp, margin, prev_scale,
    scale, amax_epsilon, tensor_amax, tensor_scale, and ``compat`` (a profile: "bnb-cuda",
    "triton"; applied by the same library function as the CLI's).

    >>> import numpy as np, exmy
    >>> q = exmy.quantize(np.float32([[1, -2, 4, 8]]), "rowwise", "int8")
    >>> q["codes"], q["state"]
    (array([[ 16, 224,  64, 127]], dtype=uint8), array([8.], dtype=float32))
    """
    a = _float32(x, "x")
    o = _quant_options("quantize", options)
    with library_errors():
        return _exmy.quantize(a, as_str(scheme, "scheme"), format_name(to, "to"), **o)


def dequantize(q: dict, scheme: str, to, **options) -> np.ndarray:
    """``exmy dequantize`` of the dictionary ``quantize`` returned (the same scheme, target and
    options); float32 values.

    >>> import numpy as np, exmy
    >>> q = exmy.quantize(np.float32([[1, -2, 4, 8]]), "rowwise", "int8")
    >>> exmy.dequantize(q, "rowwise", "int8")
    array([[ 1.007874, -2.015748,  4.031496,  8.      ]], dtype=float32)
    """
    if not isinstance(q, dict) or "codes" not in q:
        raise TypeError("q: expected the dict exmy.quantize returned")
    o = _quant_options("dequantize", options)
    with library_errors():
        return _exmy.dequantize(q, as_str(scheme, "scheme"), format_name(to, "to"), **o)


# torch.optim's keyword names -> exmy's; exmy's own names stay accepted as aliases.
_HYPER_ALIASES = {"weight_decay": "wd", "wd": "wd", "beta1": "beta1", "beta2": "beta2",
                  "beta3": "beta3"}
_HYPER_FLOAT = ("lr", "eps", "momentum", "dampening", "alpha")


def _hyper(hyper: dict) -> dict:
    h = {}

    def put(key, value, given_as):
        if key in h:
            raise TypeError(f"{given_as}: given twice (betas and beta1/beta2/beta3, or "
                            f"weight_decay and wd, name the same hyperparameter)")
        h[key] = value

    for k, v in hyper.items():
        if k == "betas":
            try:
                betas = list(v)
            except TypeError:
                raise TypeError(f"betas: expected a tuple of 2 (or AdEMAMix's 3) numbers, "
                                f"got {v!r}") from None
            if len(betas) not in (2, 3):
                raise ValueError(f"betas: expected 2 (or AdEMAMix's 3) numbers, got {len(betas)}")
            for i, b in enumerate(betas):
                put(f"beta{i + 1}", as_float(b, f"betas[{i}]"), "betas")
        elif k in _HYPER_ALIASES:
            put(_HYPER_ALIASES[k], as_float(v, k), k)
        elif k in _HYPER_FLOAT:
            put(k, as_float(v, k), k)
        elif k == "nesterov":
            put(k, as_bool(v, k), k)
        else:  # an optimizer's own (RMSprop's centered, ...): the library checks it
            put(k, bool(v) if isinstance(v, (bool, np.bool_)) else as_float(v, k), k)
    return h


def _param_dtype(params, param_dtype) -> str:
    if param_dtype is None:
        f = torch_format(params) if is_torch(params) else None
        if is_torch(params) and str(params.dtype) == "torch.float16":
            f = "fp16"
        if not is_torch(params):
            a = np.asarray(params) if not isinstance(params, np.ndarray) else params
            f = "fp16" if a.dtype == np.float16 else numpy_format(a)
        return f or "fp32"
    f = format_name(param_dtype, "param_dtype")
    if f not in ("fp32", "bf16", "fp16"):
        raise ValueError(f"param_dtype: expected fp32, bf16 or fp16, got {param_dtype!r}")
    return f


def step(optimizer: str, params, grads, steps: int = 1, param_dtype=None, compat: str = "",
         seed: int = 0, block: int = 256, variant: str = "default", **hyper) -> dict:
    """``exmy step``: ``steps`` optimizer steps from a zero state.

    ``params``: the parameters (float32; a bfloat16/float16 array or tensor sets ``param_dtype``
    unless given); ``grads``: one gradient for every step (shape (steps, *params.shape)) or one
    for all. Returns {"params", state arrays...}, the files ``exmy step`` writes.

    Hyperparameters take torch.optim's names: ``lr``, ``betas`` (a tuple; AdEMAMix's has 3),
    ``eps``, ``weight_decay``, ``momentum``, ``dampening``, ``nesterov``, ``alpha``, and an
    optimizer's own (``centered``); exmy's ``beta1``, ``beta2``, ``beta3`` and ``wd`` stay
    accepted. They are checked against the domains ``exmy step`` enforces; one the optimizer
    does not read is refused. ``param_dtype``: "fp32", "bf16", "fp16" (or their dtypes).
    ``compat``: a profile (torch-cpu, torch-cuda, torch-cuda-foreach, torch-cuda-fused,
    bnb-cuda), applied by the same library function as the CLI's. ``variant``: a named kernel
    variant (SEMANTICS 12).

    >>> import numpy as np, exmy
    >>> r = exmy.step("adamw", np.float32([1, -1]), np.float32([0.5, 0.25]), lr=1e-2,
    ...               betas=(0.9, 0.999), weight_decay=0.0)
    >>> r["params"]
    array([ 0.99, -1.01], dtype=float32)
    """
    as_str(optimizer, "optimizer")
    n = as_int(steps, "steps")
    pd = _param_dtype(params, param_dtype)
    p = _float32(params, "params")
    g = _float32(grads, "grads")
    h = _hyper(hyper)
    with library_errors():
        try:
            return _exmy.step(optimizer, p, g, n, pd, as_str(compat, "compat"), as_seed(seed),
                              as_int(block, "block", 1), as_str(variant, "variant"), **h)
        except ValueError as e:
            if str(e).startswith("unknown hyperparameter"):
                k = str(e).split("'")[1]
                raise TypeError(f"step() got an unexpected keyword argument {k!r} (torch's lr, "
                                f"betas, eps, weight_decay, momentum, dampening, nesterov, "
                                f"alpha; exmy's beta1, beta2, beta3, wd; an optimizer's own, "
                                f"e.g. centered)") from None
            raise


def golden_check(corpus, results, suite: str = "all", strict_nan: bool = False,
                 allow_missing: bool = False) -> dict:
    """``exmy golden check``: {"ok", "checks", "mismatches", "missing", "cases": [...]}."""
    with library_errors():
        return _exmy.golden_check(str(corpus), str(results), as_str(suite, "suite"),
                                  as_bool(strict_nan, "strict_nan"),
                                  as_bool(allow_missing, "allow_missing"))


def assert_cast_equal(x, got, fmt, round: str = "rne", overflow: str = "none",
                      seed: int = 0, max_reported: int = 10) -> None:
    """Asserts that ``got`` (your kernel's codes for ``x``, or its float8/bfloat16 array or
    tensor) equals exmy's, bit for bit; the message lists the first differing elements with the
    input bits in hex.

    >>> import numpy as np, exmy
    >>> x = np.float32([0.5, 1.5, 2.5])
    >>> exmy.assert_cast_equal(x, np.uint8([1, 3, 4]), "e2m1fn")
    """
    want = cast(x, fmt, round=round, overflow=overflow, seed=seed)
    got = codes_like(got, want)
    bad = np.flatnonzero(want.ravel() != got.ravel())
    if bad.size == 0:
        return
    xa, _ = _array(x)
    xbits = xa.ravel().view(np.uint32 if xa.dtype.itemsize == 4 else np.uint16)
    f = format_name(fmt)
    lines = [f"{bad.size} of {want.size} codes differ from exmy's ({f}, {round}, {overflow}):"]
    for i in bad[:max_reported]:
        lines.append(f"  [{i}] x=0x{int(xbits[i]):0{2 * xa.dtype.itemsize}x} "
                     f"expected=0x{int(want.ravel()[i]):02x} got=0x{int(got.ravel()[i]):02x}")
    raise AssertionError("\n".join(lines))
