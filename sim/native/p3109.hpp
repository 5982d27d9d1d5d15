// IEEE P3109 formats Binary{K, P, Σ, Δ} and their projection (rounding + saturation), written
// from the IEEE SA P3109 Working Group's "Interim Report on Binary Floating-point Formats for
// Machine Learning", version 4.0 (26 June 2026): §3.1 formats, §4.7.2 ωDecode, §4.7.3 ωProject,
// §4.7.4 ωRoundToPrecision, §4.7.5 ωSaturate, §4.7.6 ωEncode (docs/SEMANTICS.md 1.2).
//
// The P3109 projection differs from exmy's generic one (section 2 and 4 of SEMANTICS) in places
// that matter, which is why it is its own routine and not a FloatFormat:
//   - rounding is to precision with the exponent unbounded above, then saturation: the mode
//     decides only between the two neighbours of X on that grid; ToOdd and NearestTiesToEven
//     use CodeIsEven, which for P = 1 is the parity of the code (Q + B), not of the significand;
//   - a negative X into an unsigned format is rounded first (it may round to 0) and only then
//     saturated: SatFinite/SatPropagate give 0 (M_lo), SatNone gives NaN;
//   - SatNone (IEEE 754-like overflow) into a finite format gives ±M_hi, never NaN;
//   - there is no negative zero: -0 and every negative value rounding to 0 encode as 0.
// Integer arithmetic only; __host__ __device__ ready.
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/round_step.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::native {

// K bits (3..16 here; the report allows any K > 2), precision P (signed 0 < P < K, unsigned
// 0 < P <= K), signedness, domain (extended: with infinities).
struct P3109Format {
  int k = 8;
  int p = 3;
  bool is_signed = true;
  bool extended = true;
  friend constexpr bool operator==(const P3109Format&, const P3109Format&) = default;

  EXMY_HD constexpr bool valid() const {
    return k >= 3 && k <= 16 && p >= 1 && (is_signed ? p < k : p <= k);
  }
  // §3.1: B = 2^(K-P-1) signed, 2^(K-P) unsigned.
  EXMY_HD constexpr int bias() const { return 1 << (is_signed ? k - p - 1 : k - p); }
  EXMY_HD constexpr int t_bits() const { return p - 1; }  // trailing significand bits
  EXMY_HD constexpr std::uint64_t code_count() const { return std::uint64_t{1} << k; }
  EXMY_HD constexpr std::uint64_t half() const { return std::uint64_t{1} << (k - 1); }
  // §4.7.6: NaN 2^(K-1) signed, 2^K - 1 unsigned; +inf 2^(K-1) - 1 signed, 2^K - 2 unsigned;
  // -inf 2^K - 1 (signed extended).
  EXMY_HD constexpr std::uint64_t nan_code() const { return is_signed ? half() : code_count() - 1; }
  EXMY_HD constexpr std::uint64_t pos_inf_code() const {
    return is_signed ? half() - 1 : code_count() - 2;
  }
  EXMY_HD constexpr std::uint64_t neg_inf_code() const { return code_count() - 1; }
  // The largest finite code (MaxFiniteOf): the code below +inf in extended formats, below NaN
  // (unsigned) or the top positive code (signed) in finite ones.
  EXMY_HD constexpr std::uint64_t max_code() const {
    const std::uint64_t top = is_signed ? half() - 1 : code_count() - 2;  // top non-NaN code
    return extended ? top - 1 : top;
  }
  // The positive magnitude codes 0 .. max_code() follow §4.7.2 ωDecodeAux's last line.
  EXMY_HD constexpr ValueClass classify(std::uint64_t code) const {
    if (code == nan_code()) return ValueClass::nan;
    if (extended && (code == pos_inf_code() || (is_signed && code == neg_inf_code())))
      return ValueClass::inf;
    const std::uint64_t mag = is_signed && code > half() ? code - half() : code;
    if (mag == 0) return ValueClass::zero;
    return (mag >> t_bits()) == 0 ? ValueClass::subnormal : ValueClass::normal;
  }
};

// §4.7.2 ωDecode into exmy's unpacked form (sig normalised at bit 63, value sig·2^(exp−63)).
EXMY_HD Unpacked p3109_unpack(const P3109Format& f, std::uint64_t code) {
  Unpacked u;
  u.cls = f.classify(code);
  u.negative = f.is_signed && code > f.half();
  if (u.cls == ValueClass::nan) u.negative = false;
  if (u.cls != ValueClass::normal && u.cls != ValueClass::subnormal) return u;
  const std::uint64_t mag = u.negative ? code - f.half() : code;
  const int t = f.t_bits();
  const std::uint64_t trailing = mag & low_mask(t);
  const int ebiased = static_cast<int>(mag >> t);
  // X = (0 or 1 + T·2^(1−P)) · 2^(max(Ebiased, 1) − B): integer S · 2^(max(Ebiased,1) − B − t).
  const std::uint64_t s = (ebiased == 0 ? 0 : (std::uint64_t{1} << t)) | trailing;
  const int e0 = (ebiased == 0 ? 1 : ebiased) - f.bias() - t;  // value = s · 2^e0
  const int lz = clz64(s);
  u.sig = s << lz;
  u.exp = e0 + (63 - lz);
  u.cls = ValueClass::normal;
  return u;
}

// Rounding modes of §4.2/§4.7.4. sr_a/b/c: StochasticA/B/C with N random bits.
enum class P3109Round : std::uint8_t {
  nearest_even,  // NearestTiesToEven
  nearest_away,  // NearestTiesToAway
  toward_positive,
  toward_negative,
  toward_zero,
  to_odd,
  sr_a,  // floor(ν·2^N) + R >= 2^N
  sr_b,  // floor(ν·2^(N+1)) + 2R + 1 >= 2^(N+1)
  sr_c,  // RNITE(ν·2^N) + R >= 2^N
};

// Saturation modes: v4.0's SatFinite, SatPropagate, SatNone, and v3.2.1's OvfInf (replaced by
// SatNone in v4.0; it differs for unsigned formats: X < 0 and −∞ give 0, not NaN, and it has no
// ToOdd rule for unsigned extended formats).
enum class P3109Sat : std::uint8_t { sat_none, sat_finite, sat_propagate, ovf_inf };

struct P3109Projection {
  P3109Round mode = P3109Round::nearest_even;
  int n = 0;  // random bits for sr_a/b/c, 1..32
  P3109Sat sat = P3109Sat::sat_none;
  friend constexpr bool operator==(const P3109Projection&, const P3109Projection&) = default;
};

EXMY_HD constexpr bool p3109_stochastic(P3109Round m) {
  return m == P3109Round::sr_a || m == P3109Round::sr_b || m == P3109Round::sr_c;
}

namespace p3109_detail {

// What ωRoundToPrecision returned, before saturation: zero, a finite sgn·S·2^Q (S may be 2^P),
// or ±∞.
struct Rounded {
  enum Kind : std::uint8_t { zero, finite, inf } kind = zero;
  bool negative = false;
  std::uint64_t s = 0;
  int q = 0;
};

// RoundAway(µ) of §4.7.4 for the fraction ν (0.64 fixed point in `rem`, plus sticky bits below).
EXMY_HD bool round_away(const P3109Projection& pr, bool negative, std::uint64_t floor_s, int q,
                        int p, int bias, std::uint64_t rem, bool sticky, std::uint32_t rand) {
  const bool nonzero = rem != 0 || sticky;
  // CodeIsEven: IsEven(⌊S̃⌋) for P > 1; ⌊S̃⌋ = 0 or IsEven(Q + B) for P = 1.
  const bool code_even = p > 1 ? (floor_s & 1) == 0 : (floor_s == 0 || ((q + bias) & 1) == 0);
  const int n = pr.n;
  const std::uint64_t r = rand & static_cast<std::uint32_t>(low_mask(n));
  switch (pr.mode) {
    case P3109Round::toward_zero:
      return false;
    case P3109Round::toward_positive:
      return nonzero && !negative;
    case P3109Round::toward_negative:
      return nonzero && negative;
    case P3109Round::nearest_away:
      return (rem >> 63) != 0;
    case P3109Round::nearest_even: {
      const bool half = (rem >> 63) != 0;
      const bool above = half && ((rem << 1) != 0 || sticky);
      const bool tie = half && !above;
      return above || (tie && !code_even);
    }
    case P3109Round::to_odd:
      return nonzero && code_even;
    case P3109Round::sr_a: {
      const std::uint64_t fl = rem >> (64 - n);  // ⌊ν·2^N⌋
      return fl + r >= (std::uint64_t{1} << n);
    }
    case P3109Round::sr_b: {
      const std::uint64_t fl = rem >> (63 - n);  // ⌊ν·2^(N+1)⌋ (N <= 32)
      return fl + 2 * r + 1 >= (std::uint64_t{1} << (n + 1));
    }
    case P3109Round::sr_c: {
      // RNITE(ν·2^N): ⌊ν·2^N⌋ plus one above the half, or on it with ⌊·⌋ odd.
      std::uint64_t fl = rem >> (64 - n);
      const std::uint64_t below = rem << n;  // the bits of ν·2^N below its integer part
      const bool half = (below >> 63) != 0;
      const bool above = half && ((below << 1) != 0 || sticky);
      if (above || (half && !above && (fl & 1) != 0)) ++fl;
      return fl + r >= (std::uint64_t{1} << n);
    }
  }
  return false;
}

// §4.7.4 on a finite nonzero unpacked X (sig·2^(exp−63)).
EXMY_HD Rounded round_to_precision(const P3109Format& f, const P3109Projection& pr,
                                   const Unpacked& x, std::uint32_t rand) {
  const int bias = f.bias();
  // Q = max(⌊log2|X|⌋, 1 − B) − P + 1; ⌊log2|X|⌋ = exp.
  const int q = (x.exp > 1 - bias ? x.exp : 1 - bias) - f.p + 1;
  // S̃ = |X|·2^−Q = sig·2^(exp − 63 − Q): split sig at s = 63 + Q − exp bits (s >= 64 − P >= 48).
  const QuantumSplit sp = split_at_quantum(x.sig, 63 + q - x.exp, x.sticky);
  Rounded out;
  out.negative = x.negative;
  out.q = q;
  out.s = sp.t + (round_away(pr, x.negative, sp.t, q, f.p, bias, sp.rem, sp.sticky, rand) ? 1 : 0);
  out.kind = out.s == 0 ? Rounded::zero : Rounded::finite;
  return out;
}

// Compare |sgn·S·2^Q| with M_hi = S_max·2^(e_max) (both normalised on the P-bit grid).
EXMY_HD bool above_max(const P3109Format& f, std::uint64_t s, int q) {
  const Unpacked m = p3109_unpack(f, f.max_code());
  // s·2^q vs m.sig·2^(m.exp − 63): compare by exponent of the leading bit, then the bits.
  const int lz = clz64(s);
  const int e = q + (63 - lz);
  if (e != m.exp) return e > m.exp;
  return (s << lz) > m.sig;
}

// ωEncode of a finite datum sgn·S·2^Q in range (S < 2^P after normalisation).
EXMY_HD std::uint64_t encode_finite(const P3109Format& f, bool negative, std::uint64_t s, int q) {
  if (s == 0) return 0;
  const int t = f.t_bits();
  // Normalise S to [2^(P−1), 2^P) unless subnormal (Q = 1 − B − t): ωEncode's E and S.
  while (s >= (std::uint64_t{1} << f.p)) {
    s >>= 1;  // only S = 2^P reaches here (the carry of RoundAway): exact
    ++q;
  }
  const int bias = f.bias();
  std::uint64_t mag;
  if (s < (std::uint64_t{1} << t)) {
    mag = s;  // subnormal: Ebiased = 0 (then Q = 1 − B − t)
  } else {
    const int ebiased = q + t + bias;  // E = Q + P − 1
    mag = (static_cast<std::uint64_t>(ebiased) << t) | (s & low_mask(t));
  }
  return negative ? mag + f.half() : mag;
}

}  // namespace p3109_detail

// §4.7.3 ωProject: NaN → NaN; else round to precision, saturate (§4.7.5), encode (§4.7.6).
// Flags: inexact when the datum differs from X, overflow when saturation replaced a finite X,
// invalid for NaN results of non-NaN inputs.
EXMY_HD Encoded p3109_project(const P3109Format& f, const P3109Projection& pr, const Unpacked& x,
                              std::uint32_t rand = 0) {
  using p3109_detail::Rounded;
  if (x.cls == ValueClass::nan) return {f.nan_code(), 0};
  Rounded r;
  bool inexact = false;
  if (x.cls == ValueClass::inf) {
    r.kind = Rounded::inf;
    r.negative = x.negative;
  } else if (x.cls != ValueClass::zero) {
    r = p3109_detail::round_to_precision(f, pr, x, rand);
    // Exact iff no bit of the significand lies below the quantum.
    const int s = 63 + r.q - x.exp;
    const QuantumSplit sp = split_at_quantum(x.sig, s, x.sticky);
    inexact = split_inexact(sp);
  }
  const std::uint32_t fl = inexact ? flag::inexact : 0;
  if (r.kind == Rounded::zero) return {0, fl};  // no −0 in P3109
  const bool neg = r.negative;
  const bool uns = !f.is_signed;
  const std::uint64_t hi = f.max_code();
  const std::uint64_t lo = uns ? 0 : f.half() + hi;  // M_lo: 0 (unsigned) or −M_hi
  const std::uint64_t nan = f.nan_code();
  const bool is_inf = r.kind == Rounded::inf;
  const bool below = neg && (uns || is_inf || p3109_detail::above_max(f, r.s, r.q));  // X < M_lo
  const bool over = !neg && (is_inf || p3109_detail::above_max(f, r.s, r.q));         // X > M_hi
  if (!below && !over) return {p3109_detail::encode_finite(f, neg, r.s, r.q), fl};
  const std::uint32_t ofl = is_inf ? 0 : (fl | flag::overflow);
  const std::uint64_t pinf = f.pos_inf_code(), ninf = f.neg_inf_code();
  const bool ext = f.extended;
  const P3109Round m = pr.mode;
  switch (pr.sat) {
    case P3109Sat::sat_finite:
      return {below ? lo : hi, ofl};
    case P3109Sat::sat_propagate:
      if (is_inf && !neg && ext) return {pinf, 0};
      if (is_inf && neg && ext && !uns) return {ninf, 0};
      return {below ? lo : hi, ofl};
    case P3109Sat::sat_none:
      if (is_inf) {
        if (!neg) return {ext ? pinf : hi, 0};
        if (!uns && ext) return {ninf, 0};
        if (uns) return {nan, flag::invalid};
        return {lo, 0};
      }
      if (over) {
        if (m == P3109Round::to_odd && uns && ext) return {hi, ofl};
        if (m == P3109Round::toward_zero || m == P3109Round::toward_negative) return {hi, ofl};
        return {ext ? pinf : hi, ofl};
      }
      // below M_lo
      if (m == P3109Round::toward_zero || m == P3109Round::toward_positive) return {lo, ofl};
      if (!uns && ext) return {ninf, ofl};
      if (uns) return {nan, fl | flag::invalid};
      return {lo, ofl};
    case P3109Sat::ovf_inf:
      // v3.2.1 §4.9.4: as SatNone but M_lo for unsigned and without the ToOdd rule.
      if (is_inf) {
        if (!neg) return {ext ? pinf : hi, 0};
        if (!uns && ext) return {ninf, 0};
        return {lo, 0};
      }
      if (over) {
        if (m == P3109Round::toward_zero || m == P3109Round::toward_negative) return {hi, ofl};
        return {ext ? pinf : hi, ofl};
      }
      if (m == P3109Round::toward_zero || m == P3109Round::toward_positive) return {lo, ofl};
      if (!uns && ext) return {ninf, ofl};
      return {lo, ofl};
  }
  return {nan, 0};
}

}  // namespace exmy::native
