"""Hypothesis strategies of a format's hard inputs, for your own property tests.

``import exmy.strategies`` needs Hypothesis (``pip install hypothesis``); ``import exmy`` does
not import it. The inputs are the engine's designed classes of ``exmy verify --depth ci``
(docs/SEMANTICS.md 13.5.1: every value and its fp32 neighbours, every tie, the ties below the
smallest normal, the subnormal/normal boundary, quarter points, fp32 binade edges, the overflow
edge, zeros, infinities, fp32 subnormals, NaN payloads), ordered simplest first so that
Hypothesis shrinks toward simple inputs, mixed with inputs a few ulps off a tie and uniform fp32
patterns.

>>> import numpy as np, exmy
>>> from hypothesis import given
>>> from exmy.strategies import floats_for
>>> @given(floats_for("float8_e4m3fn"))
... def test_my_cast(v):
...     x = np.float32([v])
...     assert exmy.cast(x, "e4m3fn")[0] == exmy.cast(x, "e4m3fn")[0]
>>> test_my_cast()
"""

from __future__ import annotations

import functools

import numpy as np

try:
    from hypothesis import strategies as st
except ImportError as e:  # pragma: no cover - exercised where Hypothesis is absent
    raise ImportError("exmy.strategies needs Hypothesis (pip install hypothesis); the rest of "
                      "exmy works without it") from e

from . import _exmy
from ._fuzz import _simplicity
from ._names import as_str, format_name, library_errors

__all__ = ["boundary_inputs", "input_classes", "float_bits_for", "floats_for", "arrays_for"]


@functools.lru_cache(maxsize=32)
def _designed(fmt: str, round: str):
    with library_errors():
        d = _exmy.designed_inputs(fmt, round, 0, 0, 1 << 16 if round.startswith("sr") else 0)
    bits = d["x"]
    labels = d["input_class"]
    # one copy of each pattern (sr places copies at several words), simplest first
    bits, first = np.unique(bits, return_index=True)
    labels = labels[first]
    order = np.argsort(_simplicity(bits), kind="stable")
    return bits[order], labels[order], tuple(d["input_classes"])


def boundary_inputs(format, round: str = "rne", classes=None) -> np.ndarray:
    """The designed fp32 inputs of ``format`` under ``round`` (float32, one of each, simplest
    first); ``classes`` (names from ``input_classes``) keeps only those classes."""
    f = format_name(format, "format")
    bits, labels, names = _designed(f, as_str(round, "round"))
    if classes is not None:
        if isinstance(classes, str):
            classes = [classes]
        unknown = [c for c in classes if c not in names]
        if unknown:
            raise ValueError(f"classes: {unknown!r} not among {list(names)!r}")
        keep = np.isin(labels, [names.index(c) for c in classes])
        bits = bits[keep]
    return bits.view(np.float32)


def input_classes(format, round: str = "rne") -> list:
    """The names of the designed input classes of ``format`` ("tie (normal)", ...)."""
    return list(_designed(format_name(format, "format"), as_str(round, "round"))[2])


def _offset(t) -> int:
    """Pattern t[0] moved t[1] fp32 ulps in magnitude, keeping its sign (NaNs as they are)."""
    bits, k = t
    mag = bits & 0x7FFFFFFF
    if mag > 0x7F800000:
        return bits
    return (bits & 0x80000000) | min(max(mag + k, 0), 0x7F800000)


def float_bits_for(format, round: str = "rne", classes=None):
    """A strategy of fp32 bit patterns (ints): the designed inputs (3 in 4 draws), a tie or
    value of the format moved 1..16 fp32 ulps, or a uniform pattern."""
    b = boundary_inputs(format, round, classes).view(np.uint32)
    if b.size == 0:
        raise ValueError("classes: no designed input of those classes")
    designed = st.sampled_from([int(v) for v in b])
    off = st.tuples(designed, st.integers(-16, 16)).map(_offset)
    if classes is not None:
        return st.one_of(designed, off)
    return st.one_of(designed, designed, designed, off, st.integers(0, 2**32 - 1))


def floats_for(format, round: str = "rne", classes=None):
    """A strategy of numpy.float32 scalars aimed at ``format``'s boundaries, ties and
    subnormals (see the module docstring); NaNs keep their payloads."""
    return float_bits_for(format, round, classes).map(
        lambda v: np.array([v], np.uint32).view(np.float32)[0])


def arrays_for(format, round: str = "rne", classes=None, min_size: int = 1,
               max_size: int = 64):
    """A strategy of 1-d float32 arrays of ``floats_for`` elements (bit patterns kept)."""
    return st.lists(float_bits_for(format, round, classes), min_size=min_size,
                    max_size=max_size).map(lambda v: np.array(v, np.uint32).view(np.float32))
