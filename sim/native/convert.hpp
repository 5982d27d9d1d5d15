// The native engine: exact bit-level conversion between any two FloatFormats, in every rounding
// mode, with one rounding routine for all formats (as ml_dtypes' float8.h and SoftFloat's
// roundPack do). No floating-point arithmetic is used, so the result cannot depend on the host's
// FPU state, on contraction, or on the compiler. __host__ __device__ ready; no MPFR inside.
//
// The semantics implemented here are specified in docs/SEMANTICS.md, sections 2-4.
#pragma once

#include <cstdint>

#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/round_step.hpp"
#include "sim/native/rounding.hpp"
#include "sim/native/specialize/platform.hpp"

namespace exmy::native {

// A decoded value: (-1)^negative * sig * 2^(exp - 63), sig normalised (bit 63 set) for finite
// nonzero values. `sticky` marks nonzero bits below sig (inputs wider than 64 bits).
struct Unpacked {
  ValueClass cls = ValueClass::zero;  // subnormal inputs are reported as normal once unpacked
  bool negative = false;
  int exp = 0;
  std::uint64_t sig = 0;
  bool sticky = false;
};

EXMY_HD Unpacked unpack(const FloatFormat& f, std::uint64_t code) {
  Unpacked u;
  u.negative = f.is_negative(code);
  u.cls = f.classify(code);
  if (u.cls != ValueClass::normal && u.cls != ValueClass::subnormal) return u;
  const std::uint64_t mag = code & f.magnitude_mask();
  const int e = static_cast<int>(mag >> f.man_bits);
  const std::uint64_t m = mag & f.man_mask();
  if (u.cls == ValueClass::normal) {
    u.exp = e - f.bias;
    u.sig = ((std::uint64_t{1} << f.man_bits) | m) << (63 - f.man_bits);
  } else {
    const int lz = clz64(m);
    u.sig = m << lz;
    u.exp = f.emin() - f.man_bits + (63 - lz);
  }
  u.cls = ValueClass::normal;
  return u;
}

// Overflow: the rounded magnitude exceeds the largest finite. Which way it goes (docs 4.2).
EXMY_HD Encoded overflow_result(const FloatFormat& f, const Rounding& r, bool neg) {
  bool to_inf;
  switch (r.overflow) {
    case Overflow::none:
      switch (r.mode) {
        case RoundMode::rtz:
        case RoundMode::rto:
          to_inf = false;
          break;
        case RoundMode::rup:
          to_inf = !neg;
          break;
        case RoundMode::rdn:
          to_inf = neg;
          break;
        default:
          to_inf = true;
          break;
      }
      break;
    default:
      to_inf = false;
      break;
  }
  const std::uint64_t s = neg ? f.sign_bit() : 0;
  const std::uint32_t fl = flag::overflow | flag::inexact;
  if (to_inf && f.has_inf) return {f.inf_code(neg), fl};
  if (to_inf && f.has_nan()) return {f.nan_code(neg), fl};
  return {s | f.max_code(), fl};
}

// The one rounding routine: round (-1)^neg * sig * 2^(exp-63) (+ sticky) into format f.
// `rand` carries the R random bits of stochastic rounding in its low bits.
EXMY_HD Encoded round_pack(const FloatFormat& f, const Rounding& r, bool neg, int exp,
                           std::uint64_t sig, bool sticky, std::uint32_t rand) {
  const int M = f.man_bits;
  const int emin = f.emin();
  const bool tiny = exp < emin;
  // Quantum (weight of the last kept bit). Below the normal range a format with subnormals keeps
  // the subnormal quantum; one without keeps only 0 and 2^emin, so its quantum is 2^emin.
  int q = !tiny ? exp - M : (f.subnormals ? emin - M : emin);
  const int s = 63 + q - exp;  // bits of sig below the quantum; >= 11 since M <= 52
  const QuantumSplit split = split_at_quantum(sig, s, sticky);
  const bool inexact = split_inexact(split);
  std::uint64_t t = round_quantum(split, neg, r, rand, code_parity_odd(f, split.t, q));
  if ((t >> (M + 1)) != 0) {  // carry out of the significand: next binade
    t >>= 1;
    ++q;
  }
  std::uint32_t flags = inexact ? flag::inexact : 0;
  if (tiny && inexact) flags |= flag::underflow;
  const std::uint64_t sign = neg ? f.sign_bit() : 0;
  if (t == 0) {
    if (f.has_zero()) return {f.has_neg_zero() ? sign : 0, flags};
    // No zero (e8m0fnu): a nonzero value never becomes zero; it is held at the smallest value.
    return {sign | 0, flags | flag::underflow};
  }
  if (!f.subnormals && tiny) {  // rounded up to 2^emin: the smallest normal
    t = std::uint64_t{1} << M;
    q = emin - M;
  }
  if (t < (std::uint64_t{1} << M)) return {sign | t, flags};  // subnormal (exponent field 0)
  const int e = q + M;
  if (e > f.emax() || (e == f.emax() && t > f.max_significand())) return overflow_result(f, r, neg);
  const std::uint64_t efield = static_cast<std::uint64_t>(e + f.bias);
  return {sign | (efield << M) | (t & f.man_mask()), flags};
}

// Encode an unpacked value, handling the special classes first (docs 4.1, 4.3).
EXMY_HD Encoded encode(const FloatFormat& f, const Rounding& r, const Unpacked& u,
                       std::uint32_t rand = 0) {
  const bool neg = u.negative;
  const auto invalid_nan = [&]() -> Encoded {
    if (f.has_nan()) return {f.nan_code(neg), flag::invalid};
    return {0, flag::invalid};  // NaN where there is none: +0 and the invalid flag
  };
  switch (u.cls) {
    case ValueClass::nan:
      if (f.has_nan()) return {f.nan_code(neg), 0};
      return {0, flag::invalid};
    case ValueClass::inf:
      if (!f.is_signed && neg) return invalid_nan();
      if (r.overflow == Overflow::satfinite) {
        return {(neg ? f.sign_bit() : 0) | f.max_code(), flag::overflow | flag::inexact};
      }
      if (f.has_inf) return {f.inf_code(neg), 0};
      if (f.has_nan()) return {f.nan_code(neg), flag::invalid};
      return {(neg ? f.sign_bit() : 0) | f.max_code(), flag::overflow | flag::inexact};
    case ValueClass::zero:
      if (!f.has_zero()) return invalid_nan();
      return {(neg && f.has_neg_zero()) ? f.sign_bit() : 0, 0};
    default:
      break;
  }
  if (!f.is_signed && neg) return invalid_nan();
  return round_pack(f, r, neg, u.exp, u.sig, u.sticky, rand);
}

// Convert a code of format `from` into format `to`: unpack, then round once.
EXMY_HD Encoded convert(const FloatFormat& from, const FloatFormat& to, const Rounding& r,
                        std::uint64_t code, std::uint32_t rand = 0) {
  return encode(to, r, unpack(from, code), rand);
}

// Bit casts between the host/device float types and their codes.
EXMY_HD std::uint32_t bits_of(float x) {
  return f32_bits(x);
}
EXMY_HD float float_of(std::uint32_t u) {
  return f32_from_bits(u);
}
EXMY_HD std::uint64_t bits_of(double x) {
  return f64_bits(x);
}
EXMY_HD double double_of(std::uint64_t u) {
  return f64_from_bits(u);
}

// Exact decode to fp64 (every preset with <= 52 mantissa bits and exponents within fp64's range
// decodes exactly; rounding is rne otherwise).
// (Local constexpr copies: device code may not refer to a host namespace-scope object.)
EXMY_HD double to_double(const FloatFormat& f, std::uint64_t code) {
  constexpr FloatFormat kFp64 = formats::fp64;
  return double_of(convert(f, kFp64, Rounding{}, code).code);
}
EXMY_HD float to_float(const FloatFormat& f, std::uint64_t code) {
  constexpr FloatFormat kFp32 = formats::fp32;
  return float_of(static_cast<std::uint32_t>(convert(f, kFp32, Rounding{}, code).code));
}

}  // namespace exmy::native
