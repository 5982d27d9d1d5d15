// A 32-bit specialisation of native::round_pack for fp32 inputs (bf16 and fp16 widen to fp32
// exactly first) into signed formats with subnormals whose range lies inside fp32's. It computes
// the same function as native::convert(fp32, f, r, code, rand) (docs/SEMANTICS.md 2-4) with fewer
// and narrower operations; special inputs and overflow results are delegated to the native engine
// itself. Equality with the native engine is checked exhaustively over all 2^32 fp32 inputs
// (gpu/verify.hpp) and on random words by properties/gpu.
//
// Why it is the same function: for an fp32 input with biased exponent e32 and target quantum q
// (section 2 step 1), the bits below q are the low d bits of an integer x, where
//   - in the target's normal range (e32 >= emin + 127) x = |code| - ((127 - bias) << 23) is the
//     target's biased exponent field followed by the 23 fp32 mantissa bits, d = 23 - M: shifting
//     x right by d gives the target code (exponent field and M mantissa bits), and an increment
//     that carries out of the mantissa moves into the exponent field, which is step 4;
//   - below it, x is the fp32 significand (implicit bit included) and d = 23 - M + (emin + 127 -
//     max(e32, 1)); the kept part is the subnormal mantissa, and a carry into bit M yields the
//     code of the smallest normal, again step 4.
// The lowest kept bit of the packed code equals the lowest bit of T for M >= 1 (that is why
// M = 0 formats are excluded: there T = 1 is always odd but the packed exponent field is not).
// Codes compare as magnitudes, so "T * 2^q exceeds the largest finite" is "code > max_code".
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/round_step.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::gpu {

// The constants of the fast path for one format and rounding, derived once on the host. The
// results of special inputs and of overflow depend only on the sign (and the rounding), so they
// are taken from the native engine here, on the host, instead of being recomputed per element:
// that keeps the device hot path to a few integer operations with no calls.
struct FastCastPlan {
  FloatFormat f;
  int normal_shift = 0;        // d in the normal range: 23 - M
  std::uint32_t e0 = 0;        // smallest fp32 biased exponent in f's normal range: emin + 127
  std::uint32_t rebias = 0;    // (127 - bias) << 23
  std::uint32_t max_code = 0;  // largest finite magnitude code
  std::uint32_t sign_bit = 0;  // f's sign bit
  bool neg_zero = false;       // f has a negative zero
  int sub_shift = 0;           // emin - M + 149: a subnormal code's fp32 subnormal shift
  // native::convert(fp32 -> f, r) of +-0, +-inf, +-NaN, and native::overflow_result(f, r, +-):
  // index 0 positive, 1 negative.
  std::uint32_t zero[2] = {0, 0}, inf[2] = {0, 0}, nan[2] = {0, 0}, overflow[2] = {0, 0};
};

// Signed, subnormals, 1 <= M <= 22 (at most 16 bits in all), emin >= -126 (so every fp32
// subnormal lies in f's subnormal range and e0 >= 1) and emax <= 127 (codes decode into fp32).
EXMY_HD constexpr bool fast_cast_supported(const FloatFormat& f) {
  return f.is_signed && f.subnormals && f.man_bits >= 1 && f.total_bits() <= 16 &&
         f.emin() >= -126 && f.emax() <= 127;
}

// The plan of format f under rounding r (the rounding the plan is then used with).
inline FastCastPlan make_fast_cast_plan(const FloatFormat& f, const Rounding& r) {
  FastCastPlan p;
  p.f = f;
  p.normal_shift = 23 - f.man_bits;
  p.e0 = static_cast<std::uint32_t>(f.emin() + 127);
  p.rebias = static_cast<std::uint32_t>(127 - f.bias) << 23;
  p.max_code = static_cast<std::uint32_t>(f.max_code());
  p.sign_bit = static_cast<std::uint32_t>(f.sign_bit());
  p.neg_zero = f.has_neg_zero();
  p.sub_shift = f.emin() - f.man_bits + 149;
  for (int s = 0; s < 2; ++s) {
    const std::uint32_t sign = s ? 0x80000000u : 0u;
    const auto conv = [&](std::uint32_t u) {
      return static_cast<std::uint32_t>(native::convert(formats::fp32, f, r, u).code);
    };
    p.zero[s] = conv(sign);
    p.inf[s] = conv(sign | 0x7F800000u);
    p.nan[s] = conv(sign | 0x7FC00000u);
    p.overflow[s] = static_cast<std::uint32_t>(native::overflow_result(f, r, s != 0).code);
  }
  return p;
}

// The code of fp32 `u` in p.f under r (the plan's rounding); `rand` holds the R random bits of
// sr:R in its low bits.
EXMY_HD std::uint32_t fast_cast_fp32(const FastCastPlan& p, const Rounding& r, std::uint32_t u,
                                     std::uint32_t rand) {
  const std::uint32_t a = u & 0x7FFFFFFFu;
  const bool neg = (u >> 31) != 0;
  if (a == 0) return p.zero[neg];
  if (a >= 0x7F800000u) return a == 0x7F800000u ? p.inf[neg] : p.nan[neg];
  const std::uint32_t e32 = a >> 23;
  std::uint32_t x;
  int d;
  if (e32 >= p.e0) {
    x = a - p.rebias;
    d = p.normal_shift;
  } else {
    x = (a & 0x007FFFFFu) | (e32 != 0 ? 0x00800000u : 0u);
    d = p.normal_shift + static_cast<int>(p.e0 - (e32 != 0 ? e32 : 1u));
    // x < 2^24 here, so for d >= 56 the fraction is below 2^-32: every mode (sr:32 included)
    // decides exactly as at d = 56, which keeps the shifts below 64.
    if (d > 56) d = 56;
  }
  std::uint32_t t = static_cast<std::uint32_t>(static_cast<std::uint64_t>(x) >> d);
  // The discarded fraction of one quantum as 0.64 fixed point, as in round_pack (d >= 9 here:
  // at most 16 bits in all leaves M <= 14).
  const std::uint64_t rem = static_cast<std::uint64_t>(x) << (64 - d);
  t = static_cast<std::uint32_t>(native::round_quantum({t, rem, false}, neg, r, rand));
  const std::uint32_t sign = neg ? p.sign_bit : 0u;
  if (t == 0) return p.neg_zero ? sign : 0u;
  if (t > p.max_code) return p.overflow[neg];
  return sign | t;
}

// The fp32 value of code c of p.f, equal to native::to_float(p.f, c) (checked for every code of
// every fast preset in tests/gpu). Every value of f is an fp32 value (range inside fp32's), so
// decoding is moving fields: normal codes rebias the exponent; subnormal m * 2^(emin - M) is
// normalised by its top bit, or becomes the fp32 subnormal m << (emin - M + 149); NaN gives the
// fp32 canonical NaN with the code's sign, as native::convert does.
EXMY_HD float fast_decode_fp32(const FastCastPlan& p, std::uint32_t c) {
  const FloatFormat& f = p.f;
  const std::uint32_t sign = (c & p.sign_bit) != 0 ? 0x80000000u : 0u;
  const std::uint32_t mag = c & static_cast<std::uint32_t>(f.magnitude_mask());
  switch (f.classify(c)) {
    case ValueClass::normal:
      return native::float_of(sign | ((mag << p.normal_shift) + p.rebias));
    case ValueClass::zero:
      return native::float_of(sign);
    case ValueClass::inf:
      return native::float_of(sign | 0x7F800000u);
    case ValueClass::nan:
      return native::float_of(sign | 0x7FC00000u);
    default:
      break;
  }
  const int top = 63 - native::clz64(mag);  // subnormal: mag is the mantissa m, top < M
  const int e = top + static_cast<int>(p.e0) - f.man_bits;  // fp32 biased exponent of m*2^(emin-M)
  if (e >= 1) {
    return native::float_of(sign | (static_cast<std::uint32_t>(e) << 23) |
                            ((mag << (23 - top)) & 0x007FFFFFu));
  }
  return native::float_of(sign | (mag << p.sub_shift));
}

}  // namespace exmy::gpu
