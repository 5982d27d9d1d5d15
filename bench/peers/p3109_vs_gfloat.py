#!/usr/bin/env python3
"""exmy's IEEE P3109 formats (`exmy cast binary<K>p<P><s|u><e|f>`, docs/SEMANTICS.md 1.2) against
three references:

  - report: a reference written here from the P3109 interim report v4.0 (§4.7.2-§4.7.6) in exact
    rational arithmetic (fractions.Fraction), sharing nothing with exmy's integer code;
  - gfloat: Graphcore's gfloat (format_info_p3109, decode_ndarray, round_ndarray+encode_ndarray);
    run once per installed gfloat (--gfloat-python, e.g. the PyPI release and a git checkout);
  - tables: the report's value tables (P3109/Public "Value Tables/Hexadecimal", --tables DIR).

Decode: every code of every format with K <= --decode-k (default 11). Encode: for every format with
K <= 8, every value, both neighbours, every midpoint and its neighbours, quarter points, overflow
points, specials and --random fp32 patterns, under rne rna rup rdn rtz rto and sr-a/b/c with
N = 2 (every word) and N = 8 (words 0, 1, 127, 128, 255) x satnone satfinite satpropagate ovfinf.
gfloat has sat=False|True only: True is compared with satfinite; False with satnone except where
gfloat departs from the report (each such class is counted and named, never silently skipped).

  python3 bench/peers/p3109_vs_gfloat.py --exmy build-host/cli/exmy \\
      --gfloat-python /tmp/venv/bin/python --tables '/path/P3109-Public/Value Tables/Hexadecimal' \\
      --out bench/results/2026-12-01-cpu-p3109-gfloat.md
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from fractions import Fraction

import numpy as np

ROUNDS = ["rne", "rna", "rup", "rdn", "rtz", "rto"]
SATS = ["satnone", "satfinite", "satpropagate", "ovfinf"]
SR = [(v, n, w) for v in "abc" for n, ws in ((2, range(4)), (8, (0, 255))) for w in ws]


# ---- the report, §3.1 and §4.7 -----------------------------------------------------------------
class Fmt:
    def __init__(self, k, p, signed, ext):
        self.k, self.p, self.signed, self.ext = k, p, signed, ext
        self.bias = 2 ** (k - p - 1) if signed else 2 ** (k - p)
        self.name = f"binary{k}p{p}{'s' if signed else 'u'}{'e' if ext else 'f'}"
        n = 2 ** k
        self.nan = n // 2 if signed else n - 1
        self.pinf = n // 2 - 1 if signed else n - 2
        self.ninf = n - 1
        top = n // 2 - 1 if signed else n - 2
        self.maxc = top - 1 if ext else top

    def decode(self, x):  # §4.7.2 ωDecodeAux: a Fraction, or "nan", "inf", "-inf"
        k, p = self.k, self.p
        if x == self.nan:
            return "nan"
        if self.ext and x == self.pinf:
            return "inf"
        if self.ext and self.signed and x == self.ninf:
            return "-inf"
        if self.signed and x > 2 ** (k - 1):
            v = self.decode(x - 2 ** (k - 1))
            return -v
        t, e = x % 2 ** (p - 1), x // 2 ** (p - 1)
        frac = Fraction(t, 2 ** (p - 1))
        return (frac if e == 0 else 1 + frac) * Fraction(2) ** ((1 if e == 0 else e) - self.bias)

    def encode(self, X):  # §4.7.6 (X in the datum set)
        if X == "nan":
            return self.nan
        if X == "inf":
            return self.pinf
        if X == "-inf":
            return self.ninf
        if X < 0:
            return self.encode(-X) + 2 ** (self.k - 1)
        if X == 0:
            return 0
        p, B = self.p, self.bias
        E = max(floor_log2(X), 1 - B)
        S = X / Fraction(2) ** E * 2 ** (p - 1)
        assert S.denominator == 1
        S = int(S)
        T = S % 2 ** (p - 1)
        return T if S < 2 ** (p - 1) else T + (E + B) * 2 ** (p - 1)


def floor_log2(x):  # x > 0 Fraction
    e = x.numerator.bit_length() - x.denominator.bit_length()
    while Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    return e


def rnite(x):
    f = math.floor(x)
    return f if (x < f + Fraction(1, 2) or (x == f + Fraction(1, 2) and f % 2 == 0)) else f + 1


def round_to_precision(f, X, mode, n=0, r=0):  # §4.7.4
    if X in ("nan", "inf", "-inf") or X == 0:
        return X
    Q = max(floor_log2(abs(X)), 1 - f.bias) - f.p + 1
    St = abs(X) / Fraction(2) ** Q
    fl = math.floor(St)
    nu = St - fl
    even = (fl % 2 == 0) if f.p > 1 else (fl == 0 or (Q + f.bias) % 2 == 0)
    away = {
        "rtz": False,
        "rup": nu > 0 and X > 0,
        "rdn": nu > 0 and X < 0,
        "rna": nu >= Fraction(1, 2),
        "rne": nu > Fraction(1, 2) or (nu == Fraction(1, 2) and not even),
        "rto": nu > 0 and even,
        "sr-a": math.floor(nu * 2 ** n) + r >= 2 ** n,
        "sr-b": math.floor(nu * 2 ** (n + 1)) + 2 * r + 1 >= 2 ** (n + 1),
        "sr-c": rnite(nu * 2 ** n) + r >= 2 ** n,
    }[mode]
    S = fl + 1 if away else fl
    return (1 if X > 0 else -1) * S * Fraction(2) ** Q


def saturate(f, sat, mode, X):  # §4.7.5 (v4.0) and v3.2.1 §4.9.4 for ovfinf
    lo = Fraction(0) if not f.signed else f.decode(f.maxc + 2 ** (f.k - 1))
    hi = f.decode(f.maxc)
    if X == "nan":
        return "nan"
    if X not in ("inf", "-inf") and lo <= X <= hi:
        return X
    U, E = not f.signed, f.ext
    pinf, minf = X == "inf", X == "-inf"
    over = pinf or (not minf and X > hi)
    if sat == "satfinite":
        return hi if over else lo
    if sat == "satpropagate":
        if pinf:
            return "inf" if E else hi
        if minf:
            return "-inf" if (not U and E) else lo
        return hi if over else lo
    if sat == "satnone":
        if pinf:
            return "inf" if E else hi
        if minf:
            return "-inf" if (not U and E) else ("nan" if U else lo)
        if over and mode == "rto" and U and E:
            return hi
        if over and mode in ("rtz", "rdn"):
            return hi
        if not over and mode in ("rtz", "rup"):
            return lo
        if not over:
            return "-inf" if (not U and E) else ("nan" if U else lo)
        return "inf" if E else hi
    # ovfinf (v3.2.1)
    if pinf:
        return "inf" if E else hi
    if minf:
        return "-inf" if (not U and E) else lo
    if over:
        return hi if mode in ("rtz", "rdn") else ("inf" if E else hi)
    if mode in ("rtz", "rup"):
        return lo
    return "-inf" if (not U and E) else lo


def project(f, x, mode, sat, n=0, r=0):  # §4.7.3 on a binary64 input (§4.8.1 ωDecodeExternal)
    if math.isnan(x):
        X = "nan"
    elif math.isinf(x):
        X = "inf" if x > 0 else "-inf"
    else:
        X = Fraction(x)
    if X == "nan":
        return f.nan
    R = round_to_precision(f, X, mode, n, r)
    return f.encode(saturate(f, sat, mode, R))


# ---- inputs ------------------------------------------------------------------------------------
def formats(kmax):
    out = []
    for k in range(3, kmax + 1):
        for signed in (True, False):
            for p in range(1, k if signed else k + 1):
                for ext in (True, False):
                    out.append(Fmt(k, p, signed, ext))
    return out


def inputs(f, rng, nrandom):
    codes = range(2 ** f.k) if f.k <= 10 else sorted(
        set(range(64)) | set(range(f.maxc - 63, f.maxc + 1)) |
        {rng.randrange(f.maxc) for _ in range(512)})
    vals = sorted({float(v) for c in codes if not isinstance(v := f.decode(c), str) and v >= 0})
    xs = set()
    for i, v in enumerate(vals):
        xs.update((v, np.nextafter(v, math.inf), np.nextafter(v, -math.inf)))
        if i + 1 < len(vals):
            w = vals[i + 1]
            m = (v + w) / 2
            xs.update((m, np.nextafter(m, math.inf), np.nextafter(m, -math.inf), (3 * v + w) / 4,
                       (v + 3 * w) / 4))
    top = vals[-1]
    ulp = top - vals[-2] if len(vals) > 1 else top
    xs.update((top + ulp / 2, top + ulp, top + 1.5 * ulp, top + 2 * ulp, 2 * top, 1e300,
               vals[1] / 2 if len(vals) > 1 else 0.0, vals[1] / 4 if len(vals) > 1 else 0.0,
               5e-324, math.inf))
    for _ in range(nrandom):
        b = rng.getrandbits(32)
        x = float(np.array([b], dtype=np.uint32).view(np.float32)[0])
        if math.isfinite(x):
            xs.add(abs(x))
    pos = sorted(x for x in xs if x >= 0 and not math.isnan(x))
    return np.array(pos + [-x for x in pos] + [math.nan], dtype=np.float64)


# ---- runners -----------------------------------------------------------------------------------
def run_exmy(exmy, f, x, mode, sat, tmp, n=0, w=None):
    xi, yo = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(xi, x)
    rnd = mode if n == 0 else f"{mode}:{n}"
    cmd = [exmy, "cast", f.name, "--round", rnd, "--overflow", sat, "--in", xi, "--out", yo]
    if w is not None:
        cmd += ["--rand", str(w)]
    subprocess.run(cmd, check=True)
    return np.load(yo).astype(np.int64)


GFLOAT_SNIPPET = r"""
import json, sys, numpy as np, gfloat
from gfloat import RoundMode, Signedness, Domain
from gfloat.formats import format_info_p3109
req = json.load(open(sys.argv[1]))
import importlib.metadata as md
out = {"version": md.version("gfloat"), "results": [],
       "has_to_odd": "ToOdd" in {m.name for m in RoundMode}}
names = {m.name for m in RoundMode}
for job in req:
    fi = format_info_p3109(job["k"], job["p"], Signedness.Signed if job["s"] else Signedness.Unsigned,
                           Domain.Extended if job["e"] else Domain.Finite)
    if job["kind"] == "decode":
        v = gfloat.decode_ndarray(fi, np.arange(2 ** job["k"]))
        out["results"].append([None if np.isnan(a) else float(a) for a in v]); continue
    x = np.load(job["x"])
    if job["mode"] not in names:
        out["results"].append(None); continue
    kw = {}
    if job["n"]:
        kw = dict(srbits=np.full(x.shape, job["w"], dtype=np.int64), srnumbits=job["n"])
    with np.errstate(all="ignore"):
        try:
            r = gfloat.round_ndarray(fi, x, RoundMode[job["mode"]], job["sat"], **kw)
            c = gfloat.encode_ndarray(fi, r)
            out["results"].append([int(a) for a in c])
        except Exception as e:  # noqa: BLE001
            out["results"].append(repr(e))
json.dump(out, open(sys.argv[2], "w"))
"""

GF_MODE = {"rne": "TiesToEven", "rna": "TiesToAway", "rup": "TowardPositive",
           "rdn": "TowardNegative", "rtz": "TowardZero", "rto": "ToOdd",
           "sr-a": "StochasticFastest", "sr-b": "StochasticFast", "sr-c": "Stochastic"}


def gfloat_class(f, x, sat, mode, ref_code, gf_code, old_sr):
    """Why gfloat may differ from the report for this cell (None: it should agree)."""
    if not f.signed and x < 0:
        return "unsigned format, negative input (gfloat keeps the sign of the input)"
    maxes = (f.maxc, f.maxc + 2 ** (f.k - 1)) if f.signed else (f.maxc,)
    if not sat and not f.ext and ref_code in maxes and gf_code == f.nan:
        return "finite format, SatNone overflow (gfloat: NaN; report: ±M_hi)"
    if not sat and mode == "rto" and not f.signed and f.ext and ref_code == f.maxc:
        return "unsigned extended, ToOdd SatNone overflow (report: M_hi; gfloat: inf)"
    if old_sr and mode.startswith("sr-"):
        return "stochastic rounding of a gfloat without the report's v3.1 StochasticA/B/C (#55)"
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exmy", default="build-host/cli/exmy")
    ap.add_argument("--gfloat-python", action="append", default=[],
                    help="a python with gfloat installed (repeatable)")
    ap.add_argument("--tables", help="P3109/Public 'Value Tables/Hexadecimal' directory")
    ap.add_argument("--decode-k", type=int, default=11)
    ap.add_argument("--encode-k", type=int, default=8)
    ap.add_argument("--also", default="",
                    help="comma-separated formats encoded besides K <= --encode-k (e.g. K > 8)")
    ap.add_argument("--random", type=int, default=256)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    lines = [f"# exmy P3109 vs the interim report v4.0, gfloat and the value tables",
             "", f"- seed {a.seed}; exmy `{a.exmy}`", ""]
    tmp = tempfile.mkdtemp(prefix="p3109-")
    totals = {}

    def add(key, n, d):
        t = totals.setdefault(key, [0, 0])
        t[0] += n
        t[1] += d

    # decode ------------------------------------------------------------------------------------
    dec = {}
    for f in formats(a.decode_k):
        codes = np.arange(2 ** f.k, dtype=np.uint8 if f.k <= 8 else np.uint16)
        ci, vo = os.path.join(tmp, "c.npy"), os.path.join(tmp, "v.npy")
        np.save(ci, codes)
        subprocess.run([a.exmy, "cast", f.name, "--decode", "--in", ci, "--out", vo], check=True)
        got = np.load(vo)
        dec[f.name] = got
        d = 0
        for c in range(2 ** f.k):
            v = f.decode(c)
            want = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(v) if isinstance(
                v, str) else float(v)
            g = float(got[c])
            if not ((math.isnan(want) and math.isnan(g)) or g == want):
                d += 1
        add("decode vs report", 2 ** f.k, d)
        if a.tables:
            sub = "signed" if f.signed else "unsigned"
            path = os.path.join(a.tables, f"K{f.k}", f"P{f.p}", sub, "B" + f.name[1:] + ".csv")
            if os.path.exists(path):
                rows = open(path).read().split("\n")[1:]
                d = n = 0
                for row in rows:
                    if not row.strip():
                        continue
                    c, v = row.split(",")[:2]
                    c = int(c, 16)
                    want = {"NaN": math.nan, "Inf": math.inf, "-Inf": -math.inf}.get(v)
                    want = float.fromhex(v) if want is None else want
                    g = float(got[c])
                    n += 1
                    if not ((math.isnan(want) and math.isnan(g)) or g == want):
                        d += 1
                add("decode vs value tables", n, d)
                if n != 2 ** f.k:
                    add("value tables: rows missing", 2 ** f.k - n, 2 ** f.k - n)
            else:
                add("value tables: file missing", 1, 1)

    # encode ------------------------------------------------------------------------------------
    jobs, cells = [], []
    extra = [Fmt(int(n[6:n.index("p")]), int(n[n.index("p") + 1:-2]), n[-2] == "s", n[-1] == "e")
             for n in a.also.split(",") if n]
    for f in formats(a.encode_k) + extra:
        x = inputs(f, rng, a.random)
        xp = os.path.join(tmp, f"{f.name}.npy")
        np.save(xp, x)
        for mode, n, w in [(m, 0, None) for m in ROUNDS] + [(f"sr-{v}", n, w) for v, n, w in SR]:
            for sat in SATS:
                got = run_exmy(a.exmy, f, x, mode, sat, tmp, n, w)
                ref = [project(f, float(v), mode, sat, n, w or 0) for v in x]
                d = sum(int(g) != r for g, r in zip(got, ref))
                add(f"encode vs report ({sat})", len(x), d)
                if d and "first" not in totals:
                    i = next(i for i, (g, r) in enumerate(zip(got, ref)) if g != r)
                    totals["first"] = f"{f.name} {mode}{':' + str(n) if n else ''} w={w} {sat} " \
                                      f"x={x[i].hex()}: exmy {int(got[i]):#x} report {ref[i]:#x}"
                if sat in ("satnone", "satfinite"):
                    jobs.append(dict(kind="encode", k=f.k, p=f.p, s=f.signed, e=f.ext, x=xp,
                                     mode=GF_MODE[mode], sat=sat == "satfinite", n=n, w=w or 0))
                    cells.append((f, x, mode, sat, n, w, got, ref))
    for f in formats(a.decode_k):
        jobs.append(dict(kind="decode", k=f.k, p=f.p, s=f.signed, e=f.ext))
    jp, op = os.path.join(tmp, "jobs.json"), os.path.join(tmp, "gf.json")
    json.dump(jobs, open(jp, "w"))
    sp = os.path.join(tmp, "gf.py")
    open(sp, "w").write(GFLOAT_SNIPPET)
    gf_versions = []
    examples = {}
    for py in a.gfloat_python:
        subprocess.run([py, sp, jp, op], check=True)
        res = json.load(open(op))
        ver = res["version"] + ("" if res["has_to_odd"] else " (no ToOdd)")
        old_sr = not res["has_to_odd"]
        label = f"gfloat {ver}"
        gf_versions.append(f"{label}: {py}")
        ne = len(cells)
        for (f, x, mode, sat, n, w, got, ref), r in zip(cells, res["results"][:ne]):
            key = f"encode vs {label} ({sat})"
            if r is None:
                add(key + ": mode missing in this gfloat", len(x), 0)
                continue
            if isinstance(r, str):
                add(key + ": gfloat raised " + r[:60], len(x), len(x))
                continue
            for v, g, e, rf in zip(x, got, r, ref):
                cls = gfloat_class(f, float(v), sat == "satfinite", mode, rf, e, old_sr)
                if cls is not None:
                    add(f"gfloat {ver} departs from the report: {cls}", 1, int(e != rf))
                    continue
                add(key, 1, int(int(g) != e))
                if int(g) != e and key not in examples:
                    examples[key] = (f"{f.name} {mode}{':' + str(n) if n else ''} w={w} {sat} "
                                     f"x={float(v).hex()}: exmy {int(g):#x} gfloat {e:#x}")
        decs = res["results"][ne:]
        for f, r in zip(formats(a.decode_k), decs):
            got = dec[f.name]
            d = sum(not ((rv is None and math.isnan(g)) or rv == g) for rv, g in zip(r, got))
            add(f"decode vs {label}", len(r), d)
    lines += ["| comparison | compared | differences |", "|---|---|---|"]
    for k, (n, d) in totals.items():
        if k != "first":
            lines.append(f"| {k} | {n} | {d} |")
    for k, v in examples.items():
        lines.append(f"- first difference, {k}: {v}")
    if "first" in totals:
        lines += ["", f"first difference from the report: {totals['first']}"]
    lines += ["", "gfloat runs: " + (", ".join(gf_versions) or "none (--gfloat-python not given)"),
              f"formats decoded: K = 3..{a.decode_k}, every P, s/u, e/f ({len(formats(a.decode_k))});"
              f" encoded: K = 3..{a.encode_k} ({len(formats(a.encode_k))}) and {a.also or 'no others'} x {len(ROUNDS)} modes + "
              f"{len(SR)} stochastic (mode, N, word) x {len(SATS)} saturations", ""]
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.out:
        open(a.out, "w").write(text)
    bad = sum(d for k, (n, d) in totals.items() if k != "first" and "departs" not in k
              and "mode missing" not in k)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
