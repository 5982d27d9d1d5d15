"""exmy.fuzz: fuzz a Python cast (NumPy, torch or Triton kernel behind a callable) against exmy.

The inputs are those of ``exmy verify --depth ci`` (docs/SEMANTICS.md 13.5.1, the engine's
designed classes: every value of the format and its fp32 neighbours, every tie, the subnormal
ties, the subnormal/normal boundary, quarter points, fp32 binade edges, the overflow edge, zeros,
infinities, fp32 subnormals, NaN payloads), then weighted random inputs from ``seed``. A
mismatch is shrunk to a minimal counterexample: one element (the function is called on a single
input), moved toward the simplest failing fp32 pattern (positive, near 1, few significand bits).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _exmy
from ._names import as_bool, as_int, as_seed, as_str, codes_like, format_name, library_errors


class FuzzFailure(AssertionError):
    """Raised by ``exmy.fuzz(..., raise_on_failure=True)``; ``.result`` is the FuzzResult."""

    def __init__(self, result: "FuzzResult"):
        super().__init__(str(result))
        self.result = result


@dataclass
class FuzzResult:
    """What ``exmy.fuzz`` found. ``ok``: every input agreed. Otherwise ``x`` is the minimal
    counterexample (a float32 array; for a deterministic mode one element), ``expected`` exmy's
    codes and ``got`` the function's for it, ``index`` the differing element of ``x``,
    ``input_class`` the designed class of the input it was shrunk from (``original``), and
    ``seed`` the seed the function was called with (stochastic modes)."""

    ok: bool
    op: str
    format: str
    round: str
    overflow: str
    checks: int = 0
    failures: int = 0
    x: np.ndarray | None = None
    expected: np.ndarray | None = None
    got: np.ndarray | None = None
    index: int | None = None
    input_class: str | None = None
    original: np.ndarray | None = None
    seed: int = 0
    shrink_steps: int = 0
    by_class: dict = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        head = (f"exmy.fuzz {self.op} {self.format} round={self.round} overflow={self.overflow}: "
                f"{self.checks} inputs")
        if self.ok:
            return head + ", all agree"
        i = self.index
        xb = int(self.x.view(np.uint32)[i])
        ob = int(self.original.view(np.uint32)[0])
        w = 2 * self.expected.dtype.itemsize
        return (f"{head}, {self.failures} differ; minimal counterexample (shrunk in "
                f"{self.shrink_steps} steps from 0x{ob:08x}, class '{self.input_class}'):\n"
                f"  x[{i}]=0x{xb:08x} ({float(self.x[i])!r}) expected=0x"
                f"{int(self.expected[i]):0{w}x} got=0x{int(self.got[i]):0{w}x}"
                + (f" seed={self.seed}" if self.round.startswith("sr") else ""))


def _simplicity(bits: np.ndarray) -> np.ndarray:
    """A sort key of fp32 patterns: positive first, then the binade nearest 1, then the fewest
    significand bits, then the smaller significand (smaller is simpler)."""
    b = bits.astype(np.uint64)
    sign = b >> 31
    exp = (b >> 23) & 0xFF
    man = b & 0x7FFFFF
    pop = np.zeros_like(man)
    m = man.copy()
    for _ in range(23):
        pop += m & 1
        m >>= 1
    dist = np.abs(exp.astype(np.int64) - 127).astype(np.uint64)
    return (sign << 60) | (dist << 50) | (pop << 24) | man


def _moves(b: int):
    """Simpler fp32 patterns than ``b`` (each strictly smaller under _simplicity)."""
    sign, exp, man = b >> 31, (b >> 23) & 0xFF, b & 0x7FFFFF
    if sign:
        yield b & 0x7FFFFFFF
    if exp not in (0, 255):
        toward = exp - 1 if exp > 127 else exp + 1
        if exp != 127 and toward not in (0, 255):
            yield (sign << 31) | (toward << 23) | man
    if man:
        low = man & -man
        yield b & ~low  # the lowest set significand bit cleared
        high = 1 << (man.bit_length() - 1)
        if high != low:
            yield b & ~high  # the highest one cleared


def fuzz(fn, op: str = "cast", format="e4m3fn", round: str = "rne", overflow: str = "none",
         seed: int = 0, max_examples: int = 1 << 16, strict_nan: bool = False,
         raise_on_failure: bool = False, max_shrinks: int = 500) -> FuzzResult:
    """Fuzzes ``fn``, a cast of float32 to codes of ``format``, against exmy's cast.

    ``fn(x)`` receives a 1-d float32 NumPy array and returns its codes (uint8/uint16, an
    ml_dtypes array or a torch float8/bfloat16 tensor: its bits); wrap a torch or Triton kernel
    in a lambda (``lambda x: kernel(torch.from_numpy(x).cuda()).cpu()``). For a stochastic mode
    (``round="sr:R"``) it is called as ``fn(x, seed)`` and element i must take the Philox word
    (seed, stream 0, counter i) of SEMANTICS 3.2, as ``exmy.cast(x, format, round, seed=seed)``.

    The inputs: the designed classes of ``exmy verify --depth ci`` (SEMANTICS 13.5.1) for this
    format and mode (ties, subnormal ties, the subnormal/normal boundary, the overflow edge,
    NaN payloads, ...), then ``max_examples`` weighted random inputs drawn from ``seed``. Codes
    compare bit for bit, except that two NaN codes are equal unless ``strict_nan``.

    A mismatch is shrunk (at most ``max_shrinks`` calls of ``fn``) to a minimal counterexample:
    a single element for deterministic modes; for sr, the element at its index in an array of
    zeros. Returns a FuzzResult (``.ok``, ``.x``, ``.expected``, ``.got``, ``.input_class``,
    ``.by_class``); ``raise_on_failure=True`` raises FuzzFailure (an AssertionError) instead of
    returning a failed result. Exceptions raised by ``fn`` propagate.

    >>> import numpy as np, exmy
    >>> exmy.fuzz(lambda x: exmy.cast(x, "e4m3fn"), format="float8_e4m3fn").ok
    True
    >>> r = exmy.fuzz(lambda x: exmy.cast(x, "e4m3fn", round="rna"), format="e4m3fn")
    >>> r.ok, r.x, r.expected, r.got
    (False, array([1.0625], dtype=float32), array([56], dtype=uint8), array([57], dtype=uint8))
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a callable, got {fn!r}")
    as_str(op, "op")
    if op != "cast":
        raise ValueError(f"op: expected 'cast', got {op!r}")
    f = format_name(format, "format")
    as_str(round, "round")
    as_str(overflow, "overflow")
    s = as_seed(seed)
    n_random = as_int(max_examples, "max_examples", 0)
    strict = as_bool(strict_nan, "strict_nan")
    sr = round.startswith("sr")
    with library_errors():
        d = _exmy.designed_inputs(f, round, s, n_random, 1 << 16 if sr else 0)
        table = _exmy.table(f)
        # overflow is checked here, before fn runs
        _exmy.cast(np.zeros(1, np.float32), f, round, overflow, 0, "", 1, "")
    nan_code = np.isnan(table)
    classes = d["input_classes"]
    x_all = d["x"].view(np.float32)
    labels = d["input_class"]

    def expected(x, call_seed):
        return _exmy.cast(x, f, round, overflow, call_seed, "", 1, "")

    code_dtype = np.uint8 if table.size <= 256 else np.uint16

    def run(x, call_seed):
        got = fn(x, call_seed) if sr else fn(x)
        return codes_like(got, np.empty(x.shape, code_dtype), "fn(x)")

    def differ(want, got):
        bad = want != got
        if not strict:
            bad &= ~(nan_code[want] & nan_code[got])
        return bad

    res = FuzzResult(ok=True, op=op, format=f, round=round, overflow=overflow)
    by = {c: [0, 0] for c in classes}
    # Deterministic modes: the element index does not matter, so the calls are batches of
    # 2^20 inputs; sr: the engine's calls, each with its seed (the words are fixed by index).
    if sr:
        bounds = np.concatenate([[0], np.cumsum(d["call_lengths"])]).astype(np.int64)
        calls = [(int(bounds[k]), int(bounds[k + 1]), int(d["call_seeds"][k]))
                 for k in range(len(bounds) - 1)]
    else:
        n = x_all.size
        calls = [(i, min(n, i + (1 << 20)), 0) for i in range(0, n, 1 << 20)]
    first = None
    for lo, hi, call_seed in calls:
        x = np.ascontiguousarray(x_all[lo:hi])
        want = expected(x, call_seed)
        got = run(x, call_seed)
        bad = differ(want, got)
        lab = labels[lo:hi]
        counts = np.bincount(lab, minlength=len(classes))
        badc = np.bincount(lab[bad], minlength=len(classes))
        for k, c in enumerate(classes):
            by[c][0] += int(counts[k])
            by[c][1] += int(badc[k])
        res.checks += x.size
        res.failures += int(bad.sum())
        if first is None and bad.any():
            idx = np.flatnonzero(bad)
            pick = idx[np.argmin(_simplicity(x[idx].view(np.uint32)))] if not sr else idx[0]
            first = (x, int(pick), call_seed, classes[lab[pick]])
    res.by_class = {c: tuple(v) for c, v in by.items() if v[0]}
    if first is None:
        return res
    res.ok = False
    x, i, call_seed, cls = first
    res.input_class = cls
    res.original = x[i:i + 1].copy()
    res.seed = call_seed

    def context(bits: int):
        """The array that places the pattern at its element: alone (deterministic) or at index
        i of zeros (sr, where the index fixes the word)."""
        if sr:
            c = np.zeros(i + 1, np.float32)
            c.view(np.uint32)[i] = bits
            return c, i
        return np.array([bits], np.uint32).view(np.float32), 0

    def fails(bits: int):
        c, j = context(bits)
        want, got = expected(c, call_seed), run(c, call_seed)
        return bool(differ(want, got)[j]), c, j, want, got

    b = int(x.view(np.uint32)[i])
    ok_alone, c, j, want, got = fails(b)
    if not ok_alone:  # fn is not element-wise here: report the input as found, unshrunk
        res.x, res.index = x, i
        res.expected, res.got = expected(x, call_seed), run(x, call_seed)
    else:
        calls_left = as_int(max_shrinks, "max_shrinks", 0)
        best = (c, j, want, got)
        improved = True
        while improved and calls_left > 0:
            improved = False
            for cand in _moves(b):
                if cand == b or calls_left <= 0:
                    continue
                calls_left -= 1
                bad, c, j, want, got = fails(cand)
                if bad:
                    b, best = cand, (c, j, want, got)
                    res.shrink_steps += 1
                    improved = True
                    break
        res.x, res.index, res.expected, res.got = best
    if raise_on_failure:
        raise FuzzFailure(res)
    return res
