"""Names, dtypes and argument checks shared by the exmy package.

Formats are named as exmy names them (``e4m3fn``, ``bf16``, ``e2m1fn``, ...), as ml_dtypes and
torch spell them (``float8_e4m3fn``, ``bfloat16``, ``float4_e2m1fn``, ``torch.float8_e5m2``), or
by their dtype objects (``ml_dtypes.float8_e4m3fn``, ``torch.float8_e4m3fn``, ``numpy.float16``).
Errors raised here name the Python argument, never a command-line flag.
"""

from __future__ import annotations

import contextlib
import operator
import re

import numpy as np

# ml_dtypes / torch names -> exmy names, where the grammar alone does not give them.
_ALIASES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",  # torch.float
    "float64": "fp64",
    "double": "fp64",  # torch.double
    "tensorfloat32": "tf32",
    "float4_e2m1fn_x2": "e2m1fn",  # torch's packed FP4 (two codes a byte): the format's name
}

# exmy name -> (ml_dtypes attribute, torch attribute); None where that library has none.
_LIBRARY_DTYPES = {
    "e4m3fn": ("float8_e4m3fn", "float8_e4m3fn"),
    "e5m2": ("float8_e5m2", "float8_e5m2"),
    "e4m3fnuz": ("float8_e4m3fnuz", "float8_e4m3fnuz"),
    "e5m2fnuz": ("float8_e5m2fnuz", "float8_e5m2fnuz"),
    "e4m3b11fnuz": ("float8_e4m3b11fnuz", None),
    "e4m3": ("float8_e4m3", None),
    "e3m4": ("float8_e3m4", None),
    "e8m0fnu": ("float8_e8m0fnu", "float8_e8m0fnu"),
    "e2m3fn": ("float6_e2m3fn", None),
    "e3m2fn": ("float6_e3m2fn", None),
    "e2m1fn": ("float4_e2m1fn", None),
    "bf16": ("bfloat16", "bfloat16"),
    "fp16": ("float16", "float16"),
}

_FLOATN = re.compile(r"^float(\d+)_(e\d+m\d+[a-z0-9]*)$")

# Command-line flags in the library's messages -> the Python argument that sets the same thing.
_FLAG_NAMES = {
    "beta1": "betas[0]",
    "beta2": "betas[1]",
    "beta3": "betas[2]",
    "wd": "weight_decay",
    "in": "x",
    "a-format": "a_format",
    "b-format": "b_format",
    "out-format": "out_format",
    "from": "to",
}
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")


def python_message(msg: str) -> str:
    """The library's message with each ``--flag`` replaced by the Python argument's name."""

    def sub(m):
        flag = m.group(1)
        return _FLAG_NAMES.get(flag, flag.replace("-", "_"))

    msg = msg.replace("exmy step --optimizer", "exmy.step optimizer")
    return _FLAG.sub(sub, msg)


@contextlib.contextmanager
def library_errors():
    """Re-raises the extension's ValueError with Python argument names in its message."""
    try:
        yield
    except ValueError as e:
        raise ValueError(python_message(str(e))) from None


def format_name(fmt, arg: str = "fmt") -> str:
    """The exmy name of a format given as a name or a dtype object (see the module docstring)."""
    if isinstance(fmt, str):
        name = fmt
    elif type(fmt).__module__.startswith("torch") and type(fmt).__name__ == "dtype":
        name = str(fmt)  # "torch.float8_e4m3fn"
    else:
        try:
            name = np.dtype(fmt).name  # numpy / ml_dtypes dtypes and scalar types
        except TypeError:
            raise TypeError(f"{arg}: expected a format name (e.g. 'e4m3fn', 'float8_e4m3fn', "
                            f"'bf16') or a dtype (ml_dtypes.float8_e4m3fn, "
                            f"torch.float8_e4m3fn), got {fmt!r}") from None
    if name.startswith("torch."):
        name = name[len("torch."):]
    if name in _ALIASES:
        return _ALIASES[name]
    m = _FLOATN.match(name)
    if m:
        return m.group(2)
    return name


def library_dtype(fmt: str, library: str, arg: str = "out"):
    """The ml_dtypes / numpy / torch dtype whose elements are the codes of exmy format ``fmt``."""
    names = _LIBRARY_DTYPES.get(fmt)
    if library == "ml_dtypes":
        if fmt == "fp16":
            return np.dtype(np.float16)
        try:
            import ml_dtypes
        except ImportError:
            raise ImportError(f"{arg}='ml_dtypes': ml_dtypes is not installed (pip install "
                              f"ml_dtypes); {arg}='codes' returns the codes") from None
        if names is None or not hasattr(ml_dtypes, names[0]):
            raise ValueError(f"{arg}='ml_dtypes': ml_dtypes {ml_dtypes.__version__} has no "
                             f"dtype for {fmt}; {arg}='codes' returns its codes")
        return np.dtype(getattr(ml_dtypes, names[0]))
    import torch

    if names is None or names[1] is None or not hasattr(torch, names[1]):
        raise ValueError(f"{arg}='torch': torch {torch.__version__} has no dtype for {fmt}; "
                         f"{arg}='codes' returns its codes")
    return getattr(torch, names[1])


def typed_output(codes: np.ndarray, fmt: str, out, arg: str = "out"):
    """``codes`` as the caller asked: "codes" (the array itself), "ml_dtypes" or "torch"."""
    if out is None or out == "codes":
        return codes
    if out == "ml_dtypes":
        return codes.view(library_dtype(fmt, "ml_dtypes", arg))
    if out == "torch":
        try:
            import torch
        except ImportError:
            raise ImportError(f"{arg}='torch': torch is not installed") from None
        dt = library_dtype(fmt, "torch", arg)
        t = torch.from_numpy(codes.view(np.int16) if codes.dtype == np.uint16 else codes)
        return t.view(dt)
    raise ValueError(f"{arg}: expected 'codes', 'ml_dtypes' or 'torch', got {out!r}")


def is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def torch_to_numpy(x) -> np.ndarray:
    """A torch tensor's elements on the host as numpy: float32/float16 as themselves, every other
    floating dtype as its bit patterns (uint8 / uint16). A CUDA tensor is copied to the host."""
    import torch

    t = x.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if t.dtype in (torch.float32, torch.float16, torch.float64):
        return t.numpy()
    if t.is_floating_point() or "float8" in str(t.dtype) or "float4" in str(t.dtype):
        bits = t.view(torch.int16 if t.element_size() == 2 else torch.uint8).numpy()
        return bits.view(np.uint16) if bits.dtype == np.int16 else bits
    return t.numpy()


def torch_format(x) -> str | None:
    """The exmy format of a torch tensor's dtype when it is a narrow float (codes), else None."""
    name = str(x.dtype)
    if name in ("torch.float32", "torch.float16", "torch.float64"):
        return None
    if any(k in name for k in ("bfloat16", "float8", "float6", "float4")):
        return format_name(name)
    return None


def numpy_format(a: np.ndarray) -> str | None:
    """The exmy format of an ml_dtypes array (bfloat16, float8_*, float4_e2m1fn, ...), else None."""
    if a.dtype.kind not in "Vf" or a.dtype.name in ("float16", "float32", "float64",
                                                      "float128", "longdouble"):
        return None  # ml_dtypes' types are numpy kind 'V' (float8_e5m2: 'f' in ml_dtypes 0.7)
    f = format_name(a.dtype.name)
    return f if f in _LIBRARY_DTYPES else None


def codes_like(got, want: np.ndarray, arg: str = "got") -> np.ndarray:
    """A kernel's output as codes shaped like ``want``: codes, ml_dtypes arrays, torch float8/
    bfloat16 tensors (their bits)."""
    g = torch_to_numpy(got) if is_torch(got) else np.ascontiguousarray(got)
    if g.dtype.itemsize != want.dtype.itemsize or g.size != want.size:
        raise TypeError(f"{arg}: {g.size} elements of {g.dtype}, expected {want.size} "
                        f"{want.dtype.itemsize}-byte codes (or a typed array of the format)")
    return g.view(want.dtype).reshape(want.shape)


def as_str(v, arg: str) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{arg}: expected a str, got {v!r}")
    return v


def as_int(v, arg: str, lo: int | None = None) -> int:
    if isinstance(v, bool):
        raise TypeError(f"{arg}: expected an int, got {v!r}")
    try:
        i = operator.index(v)
    except TypeError:
        raise TypeError(f"{arg}: expected an int, got {v!r}") from None
    if lo is not None and i < lo:
        raise ValueError(f"{arg}: expected an int >= {lo}, got {i}")
    return i


def as_seed(v, arg: str = "seed") -> int:
    i = as_int(v, arg, 0)
    if i >= 1 << 64:
        raise ValueError(f"{arg}: expected an int in [0, 2**64), got {i}")
    return i


def as_float(v, arg: str) -> float:
    if isinstance(v, (bool, str)) or v is None:
        raise TypeError(f"{arg}: expected a number, got {v!r}")
    try:
        return float(v)
    except (TypeError, ValueError):
        raise TypeError(f"{arg}: expected a number, got {v!r}") from None


def as_bool(v, arg: str) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)) and v in (0, 1):
        return bool(v)
    raise TypeError(f"{arg}: expected a bool, got {v!r}")
