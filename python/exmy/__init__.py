"""exmy: a bit-exact reference for low-precision training numerics.

NumPy in, NumPy out, the same bits as the ``exmy`` command line (the same library functions run
underneath; ``docs/SEMANTICS.md`` defines every operation):

>>> import numpy as np, exmy
>>> exmy.cast(np.array([1.0, 464.0, 465.0], np.float32), "e4m3fn", overflow="satfinite")
array([ 56, 126, 126], dtype=uint8)
>>> exmy.decode(np.array([56, 126], np.uint8), "e4m3fn")
array([  1., 448.], dtype=float32)

Bad input raises ValueError with the CLI's message. ``cast`` runs on one thread unless given
``threads=0`` (every core) or ``threads=N``; the codes do not depend on the thread count. Array
results are ordinary NumPy arrays allocated by NumPy (huge pages for large ones, as NumPy's own).
"""

from __future__ import annotations

import operator

import numpy as np

from . import _exmy

__all__ = [
    "cast",
    "decode",
    "table",
    "quantize",
    "dequantize",
    "step",
    "golden_check",
    "assert_cast_equal",
    "__version__",
]

__version__ = _exmy.__version__
git_sha = _exmy.git_sha


def _bf16_bits(x):
    """The uint16 bit patterns of a torch.bfloat16 / ml_dtypes.bfloat16 array, else None."""
    dt = getattr(x, "dtype", None)
    if dt is not None and str(dt) in ("bfloat16", "torch.bfloat16"):
        if hasattr(x, "view") and hasattr(x, "numpy") and not isinstance(x, np.ndarray):
            import torch  # a torch tensor: reinterpret its bits

            return x.detach().cpu().contiguous().view(torch.int16).numpy().view(np.uint16)
        return np.ascontiguousarray(x).view(np.uint16)
    return None


def _array(x):
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch tensor
        x = x.detach().cpu().contiguous()
        b = _bf16_bits(x)
        if b is not None:
            return b, "bf16"
        return x.numpy(), ""
    b = _bf16_bits(x)
    if b is not None:
        return b, "bf16"
    a = np.ascontiguousarray(x)
    if a.dtype == np.float64:
        raise ValueError("x: expected float32, float16 or bfloat16 (exmy casts float64 only "
                         "through `exmy cast VALUE`; convert explicitly if that is what you mean)")
    return a, ""


def _threads(threads) -> int:
    """``threads`` as an int: 0 (every core), 1 (one thread) or N > 1; else ValueError."""
    if isinstance(threads, bool):
        raise ValueError(f"threads: expected a non-negative int, got {threads!r}")
    try:
        t = operator.index(threads)
    except TypeError:
        raise ValueError(f"threads: expected a non-negative int, got {threads!r}") from None
    if t < 0:
        raise ValueError(f"threads: expected 0 (every core), 1 (one thread) or a positive "
                         f"thread count, got {t}")
    return t


def cast(x, fmt: str, round: str = "rne", overflow: str = "none", seed: int = 0,
         input: str | None = None, threads: int = 1, compat: str = "") -> np.ndarray:
    """Codes of ``x`` (float32, float16, bfloat16; NumPy or torch) in format ``fmt``.

    uint8 for formats of at most 8 bits, uint16 for 9..16 bits; ``round`` is an exmy mode
    ("rne", "rna", "rtz", "rup", "rdn", "rto", "sr:R"), ``overflow`` "none", "sat" or
    "satfinite"; stochastic modes take Philox words (seed, stream 0, element index), as
    ``exmy cast --seed``. ``input="bf16"`` reads a uint16 array as bfloat16 bit patterns.

    ``threads``: 1 (the default) casts on the calling thread; 0 takes OpenMP's team
    (``OMP_NUM_THREADS``, else every core); N > 1 takes N threads. The codes are identical for
    every thread count (every code is a function of its element and its index, stochastic
    rounding included). A negative or non-integer value raises ValueError. The cast runs
    without the GIL.

    ``compat``: a cast profile of ``exmy cast --compat`` ("torch", "ml_dtypes": their e8m0fnu
    conversions) replaces exmy's rounding by that library's rule, on the input widened to fp32;
    it fixes the rounding, so ``round`` and ``overflow`` must stay at their defaults. A compat cast
    runs on the calling thread whatever ``threads`` says (its codes would be the same either way).

    The result is a new C-contiguous, writable NumPy array with the shape of ``x``, allocated by
    NumPy (``numpy.empty``), so large outputs get NumPy's transparent huge pages as NumPy's own
    arrays do.
    """
    t = _threads(threads)
    a, kind = _array(x)
    return _exmy.cast(a, fmt, round, overflow, seed, input if input is not None else kind, t,
                      compat)


def decode(codes, fmt: str) -> np.ndarray:
    """The float32 values of ``codes`` (uint8 or uint16) of format ``fmt``: a new C-contiguous
    NumPy array (``numpy.empty``) with the shape of ``codes``."""
    return _exmy.decode(np.ascontiguousarray(codes), fmt)


def table(fmt: str) -> np.ndarray:
    """The float32 value of every code of ``fmt`` (index = code)."""
    return _exmy.table(fmt)


def quantize(x, scheme: str, to: str, **options) -> dict:
    """``exmy quantize``: {"codes", "state" or "scales", ["tensor_scale"], "shape"}.

    Options are the CLI's switches with ``_`` for ``-``: variant, order, nan, round, seed,
    scale_mode, norm, tie, transpose, two_level, pow2_scale, fp16_clamp, margin, prev_scale,
    scale, amax_epsilon, tensor_amax, tensor_scale, compat (``--compat``: "bnb-cuda", "triton";
    applied by the same library function as the CLI's).
    """
    return _exmy.quantize(np.ascontiguousarray(x, dtype=np.float32), scheme, to, **options)


def dequantize(q: dict, scheme: str, to: str, **options) -> np.ndarray:
    """``exmy dequantize`` of the dictionary ``quantize`` returned (same options)."""
    return _exmy.dequantize(q, scheme, to, **options)


def step(optimizer: str, params, grads, steps: int = 1, param_dtype: str = "fp32",
         compat: str = "", seed: int = 0, block: int = 256, **hyper) -> dict:
    """``exmy step``: ``steps`` steps from a zero state; ``grads`` holds one gradient for every
    step (shape (steps, *params.shape)) or one for all. Returns {"params", state arrays...} as
    the files ``exmy step`` writes. ``hyper``: lr, beta1, beta2, eps, wd, momentum, dampening,
    nesterov (checked against the domains ``exmy step`` enforces). ``compat``: a ``--compat``
    profile (torch-cpu, torch-cuda, torch-cuda-foreach, torch-cuda-fused, bnb-cuda), applied by
    the same library function as the CLI's and the golden corpus's."""
    p = np.ascontiguousarray(params, dtype=np.float32)
    g = np.ascontiguousarray(grads, dtype=np.float32)
    return _exmy.step(optimizer, p, g, steps, param_dtype, compat, seed, block, **hyper)


def golden_check(corpus: str, results: str, suite: str = "all", strict_nan: bool = False,
                 allow_missing: bool = False) -> dict:
    """``exmy golden check``: {"ok", "checks", "mismatches", "missing", "cases": [...]}."""
    return _exmy.golden_check(str(corpus), str(results), suite, strict_nan, allow_missing)


def assert_cast_equal(x, got, fmt: str, round: str = "rne", overflow: str = "none",
                      seed: int = 0, max_reported: int = 10) -> None:
    """Asserts that ``got`` (your kernel's codes for ``x``) equals exmy's, bit for bit; the
    message lists the first differing elements with the input bits in hex."""
    want = cast(x, fmt, round=round, overflow=overflow, seed=seed)
    if hasattr(got, "detach"):  # torch float8 tensors: their bits
        import torch

        got = got.detach().cpu().contiguous().view(torch.uint8).numpy()
    got = np.ascontiguousarray(got).view(want.dtype).reshape(want.shape)
    bad = np.flatnonzero(want.ravel() != got.ravel())
    if bad.size == 0:
        return
    xa, _ = _array(x)
    xbits = xa.ravel().view(np.uint32 if xa.dtype.itemsize == 4 else np.uint16)
    lines = [f"{bad.size} of {want.size} codes differ from exmy's ({fmt}, {round}, {overflow}):"]
    for i in bad[:max_reported]:
        lines.append(f"  [{i}] x=0x{int(xbits[i]):0{2 * xa.dtype.itemsize}x} "
                     f"expected=0x{int(want.ravel()[i]):02x} got=0x{int(got.ravel()[i]):02x}")
    raise AssertionError("\n".join(lines))
