#!/usr/bin/env python3
"""Derives the polynomial coefficients of sim/native/portable_math.hpp (exp, log, erf in fp32).

Each fit is a least-squares fit at Chebyshev nodes (within a small factor of the minimax
polynomial) of a smooth function at 60 digits, rounding the coefficients to fp32 one at a time from the
lowest (fp32_fit). The script prints every coefficient as a C99
hex float and decimal, and the fit's maximum error (over a dense grid, fp32-rounded coefficients)
relative to the function that the header multiplies by them, so that the comments' error
budgets can be checked. The header's accuracy itself is measured, not inferred, by
tests/native/test_portable_math.cpp against MPFR.

Usage: python3 tools/fit_portable_math.py  (needs mpmath only; a few seconds)
"""
import struct

import mpmath as mp

mp.mp.dps = 60


def f32(v):
    """Nearest fp32 to the mpf v (ties to even), as an mpf."""
    return mp.mpf(struct.unpack("<f", struct.pack("<f", float(v)))[0]) if abs(v) > 1e-30 else \
        mp.mpf(float(v))  # tiny values: float() is exact enough here


def hexf(v):
    return float(v).hex()


def fp32_fit(fn, a, b, degree):
    """Coefficients c0..c_degree (lowest first), each an fp32: coefficient k is rounded after a
    least-squares fit of fn minus the already rounded c0..c(k-1) at Chebyshev nodes of [a, b]
    in the basis t^k..t^degree (Chebyshev-node least squares is within a small factor of
    minimax), so that later coefficients absorb earlier roundings (the idea of
    Sollya's fpminimax, greedily)."""
    fixed = []
    for k in range(degree + 1):
        m = degree - k + 1
        n = 4 * m + 8
        nodes = [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (2 * i + 1) / (2 * n)) for i in range(n)]
        A = mp.matrix(n, m)
        y = mp.matrix(n, 1)
        for i, t in enumerate(nodes):
            y[i] = fn(t) - sum(c * t**j for j, c in enumerate(fixed))
            for j in range(m):
                A[i, j] = t ** (k + j)
        sol = mp.qr_solve(A, y)[0]
        fixed.append(f32(sol[0]))
    return fixed


def fit(name, fn, a, b, degree, weight, var):
    """Fits fn on [a, b] with a polynomial of `degree`; reports max |weight(t)·(p(t) − fn(t))|."""
    coeffs = fp32_fit(fn, a, b, degree)
    worst = mp.mpf(0)
    n = 4000
    for i in range(n + 1):
        t = a + (b - a) * i / n
        p = sum(c * t**j for j, c in enumerate(coeffs))
        worst = max(worst, abs(weight(t) * (p - fn(t))))
    print(f"{name}: degree {degree} in {var} on [{mp.nstr(a, 6)}, {mp.nstr(b, 6)}], "
          f"max weighted error {mp.nstr(worst, 3)} = 2^{mp.nstr(mp.log(worst, 2), 4)}")
    for k, c in enumerate(coeffs):
        print(f"  c{k} = {hexf(c):>16}f  // {mp.nstr(c, 12)}")
    return coeffs


# exp: exp(r) = 1 + r + r^2 q(r); |r| <= ln2/2 + 2^-20 (k is the nearest integer to RN(x / ln2),
# so r can exceed ln2/2 by a rounding of x / ln2). Weight: r^2 / exp(r), the relative error that
# q's error makes in exp(r).
L = mp.log(2) / 2 + mp.mpf(2) ** -20
fit("exp q", lambda r: (mp.exp(r) - 1 - r) / r**2 if abs(r) > 1e-15 else 0.5 + r / 6, -L, L, 5,
    lambda r: r**2 / mp.exp(r), "r")

# erf, small |x| < 1: erf(x) = x + x q(x^2); weight x / erf(x).
T1 = mp.mpf(1)
fit("erf q", lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 1 if z != 0 else 2 / mp.sqrt(mp.pi) - 1,
    0, T1**2, 8, lambda z: mp.sqrt(z) / mp.erf(mp.sqrt(z)) if z != 0 else 1, "z = x^2")

# erf, 1 <= x < 2 and 2 <= x < 3.92: erf(x) = 1 − exp(−x^2) g(x), g(x) = erfc(x) exp(x^2),
# fitted in s = x − c. Weight: exp(−x^2) / erf(x), the error q's error makes in erf relative to
# erf (so in units of erf's ulp, about 2^-24 relative).
g = lambda x: mp.erfc(x) * mp.exp(x**2)  # noqa: E731
for lo, hi, c, deg in ((mp.mpf(1), mp.mpf(2), mp.mpf(1.5), 7),
                       (mp.mpf(2), mp.mpf(3.92), mp.mpf(3), 7)):
    fit(f"erfc g [{lo}, {hi})", lambda s: g(s + c), lo - c, hi - c, deg,
        lambda s: mp.exp(-(s + c) ** 2) / mp.erf(s + c), f"s = x - {c}")

# The constants the header takes as given, recomputed.
print("ln2 hi (16 bits):", hexf(mp.floor(mp.log(2) * 2**16) / 2**16))
print("ln2 lo          :", hexf(f32(mp.log(2) - mp.floor(mp.log(2) * 2**16) / 2**16)))
print("1/ln2           :", hexf(f32(1 / mp.log(2))))
print("2/sqrt(pi) - 1  :", hexf(f32(2 / mp.sqrt(mp.pi) - 1)))
# The smallest fp32 x with RN(erf(x)) = 1: erfc(x) <= 2^-25 (a tie goes to the even 1).
x1 = mp.findroot(lambda x: mp.erfc(x) - mp.mpf(2) ** -25, 3.8)
print("erf(x) rounds to 1 from x =", mp.nstr(x1, 12))
