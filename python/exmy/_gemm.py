"""exmy.gemm: ``exmy gemm`` on arrays (C = A B^T under an accumulation model, SEMANTICS 15)."""

from __future__ import annotations

import warnings

import numpy as np

from . import _exmy
from ._names import (as_bool, as_float, as_int, as_str, format_name, is_torch, library_errors,
                     numpy_format, torch_format, torch_to_numpy, typed_output)


class UnverifiedShapeWarning(UserWarning):
    """A library model (``cublas-sm90``) ran on a shape outside the set it was verified on; the
    message names the rule applied (``exmy gemm`` prints the same line on stderr)."""


def _operand(x, fmt, arg: str):
    """(2-d array, exmy format) of operand ``arg`` ("a" or "b"): float32 values for fp32/tf32,
    else codes; a typed array (ml_dtypes, float16, torch float8/bfloat16/float16) gives its
    format, and its bits are the codes."""
    if is_torch(x):
        typed = torch_format(x)
        if typed is None and str(x.dtype) == "torch.float16":
            typed = "fp16"
        a = torch_to_numpy(x)
    else:
        a = np.ascontiguousarray(x)
        typed = numpy_format(a)
        if a.dtype == np.float16:
            typed = "fp16"
    if typed is not None:
        a = a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint8)
    f = None if fmt is None else format_name(fmt, f"{arg}_format")
    if f is None:
        if typed is not None:
            f = typed
        elif a.dtype == np.float32:
            f = "fp32"
        else:
            raise TypeError(f"{arg}_format: required for {arg} of dtype {a.dtype} (codes)")
    elif typed is not None and typed != f:
        raise ValueError(f"{arg}_format: '{f}' but {arg} holds {typed} elements")
    if a.dtype == np.float32 and f not in ("fp32", "tf32"):
        raise ValueError(f"{arg}: float32 values with {arg}_format='{f}': pass its codes (e.g. "
                         f"exmy.cast({arg}, '{f}')) or an array of that dtype")
    return np.ascontiguousarray(a), f


def _optional_array(x, dtype, arg: str):
    if x is None:
        return None
    a = torch_to_numpy(x) if is_torch(x) else np.asarray(x)
    if a.dtype != dtype:
        if dtype == np.float32 and a.dtype.kind == "f":
            a = a.astype(np.float32)
        else:
            raise TypeError(f"{arg}: expected {np.dtype(dtype).name} elements, got {a.dtype}")
    return np.ascontiguousarray(a)


def gemm(a, b, a_format=None, b_format=None, out_format="fp32", accum: str | None = None, *,
         compat: str = "", scale_a: float = 1.0, scale_b: float = 1.0, scale_a_rows=None,
         scale_b_rows=None, scale_order: str = "product", block_scale_a=None,
         block_scale_b=None, block_scale_format="e8m0fnu", block: int | None = None,
         strict: bool = False, out: str = "codes"):
    """C = A B^T under an accumulation model, as ``exmy gemm`` computes it on the CPU (the same
    library function; the same bits).

    ``a`` is M x K, ``b`` is N x K (``torch.nn.functional.linear(a, b)``'s layout), C is M x N.
    Operands are float32 arrays (formats "fp32", "tf32") or codes of a float format of at most
    16 bits (uint8 up to 8 bits, uint16 above), or typed arrays whose dtype names the format (an
    ml_dtypes float8/bfloat16 array, numpy float16, a torch float8/bfloat16/float16 tensor:
    then ``a_format``/``b_format`` may be left out). A float32 array with a narrow format is
    refused: cast it first (``exmy.cast``). Formats are named as everywhere (``"e4m3fn"``,
    ``"float8_e4m3fn"``, ``torch.bfloat16``, ...). This package computes on the host: a CUDA
    tensor is copied there (``exmy gemm --device cuda`` of a CUDA build runs the emulation
    kernel, with the same bits).

    ``accum``: the accumulation model by name: "exact" (one rounding, MPFR), "fp32-seq",
    "pairwise", the presets "sm80", "sm90", "sm100", "cublas-sm90" (cuBLASLt's measured model on
    an H100), or a parameterised "hw:k=K,frac=N,...", "fp32-seq:chunk=P,..." (SEMANTICS 15.2;
    ``exmy gemm --help`` lists the grammar). ``compat``: a profile naming the model instead
    ("torch-cuda": cublas-sm90); give one of the two. ``out_format``: "fp32", "bf16" or "fp16".

    ``scale_a``, ``scale_b``: per-tensor scales (alpha = scale_a scale_b on the fp32
    accumulator); ``scale_a_rows`` (M) / ``scale_b_rows`` (N): per-row float32 scales applied in
    ``scale_order`` ("a-first", "b-first", "product"); ``block_scale_a``/``block_scale_b``: uint8
    block-scale codes (rows x K / block) of ``block_scale_format`` ("e8m0fnu": MX, 32 k a block;
    "e4m3fn": NVFP4's UE4M3, 16 k), ``block`` overriding the block.

    A library model on a shape outside its verified set warns (UnverifiedShapeWarning, naming
    the rule applied); ``strict=True`` raises ValueError instead.

    Returns float32 values for fp32 output; for bf16/fp16 the uint16 codes (``out="codes"``),
    or ``out="ml_dtypes"`` (bfloat16 / float16 arrays), ``out="torch"`` (a CPU tensor).

    >>> import numpy as np, exmy
    >>> a = exmy.cast(np.float32([[1, 2, 3, 4]]), "bf16")
    >>> b = exmy.cast(np.float32([[1, 1, 1, 1], [0.5, 0.5, 0.5, 0.5]]), "bf16")
    >>> exmy.gemm(a, b, "bf16", "bf16", "fp32", "fp32-seq")
    array([[10.,  5.]], dtype=float32)
    """
    A, fa = _operand(a, a_format, "a")
    B, fb = _operand(b, b_format, "b")
    fo = format_name(out_format, "out_format")
    if accum is not None:
        as_str(accum, "accum")
        accum = {"fp32_seq": "fp32-seq", "cublas_sm90": "cublas-sm90"}.get(accum, accum)
    as_str(compat, "compat")
    as_str(scale_order, "scale_order")
    sa = as_float(scale_a, "scale_a")
    sb = as_float(scale_b, "scale_b")
    ra = _optional_array(scale_a_rows, np.float32, "scale_a_rows")
    rb = _optional_array(scale_b_rows, np.float32, "scale_b_rows")
    ba = _optional_array(block_scale_a, np.uint8, "block_scale_a")
    bb = _optional_array(block_scale_b, np.uint8, "block_scale_b")
    bf = format_name(block_scale_format, "block_scale_format")
    blk = 0 if block is None else as_int(block, "block", 1)
    with library_errors():
        c, note = _exmy.gemm(A, B, fa, fb, fo, accum or "", compat, sa, sb, ra, rb,
                             scale_order, ba, bb, bf, blk, as_bool(strict, "strict"))
    if note:
        warnings.warn(note, UnverifiedShapeWarning, stacklevel=2)
    if fo == "fp32":
        if out not in (None, "codes", "ml_dtypes", "torch"):
            raise ValueError(f"out: expected 'codes', 'ml_dtypes' or 'torch', got {out!r}")
        if out == "torch":
            import torch

            return torch.from_numpy(c)
        return c
    return typed_output(c, fo, out)
