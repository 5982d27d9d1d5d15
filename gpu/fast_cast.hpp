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
#include "sim/native/rounding.hpp"

// Rare paths (special inputs, overflow, non-normal decodes) are out-of-line calls in device code:
// inlined into a kernel's 16 unrolled elements they made it ~150 KB of code and the instruction
// cache, not memory, bounded the throughput.
#if defined(__CUDACC__)
#define EXMY_GPU_COLD __host__ __device__ __noinline__
#else
#define EXMY_GPU_COLD inline
#endif

namespace exmy::gpu {

// native::convert of an fp32 code, out of line.
EXMY_GPU_COLD std::uint32_t cold_convert_fp32(FloatFormat to, Rounding r, std::uint32_t u,
                                              std::uint32_t rand) {
  constexpr FloatFormat kFp32 = formats::fp32;
  return static_cast<std::uint32_t>(native::convert(kFp32, to, r, u, rand).code);
}
EXMY_GPU_COLD std::uint32_t cold_overflow(FloatFormat to, Rounding r, bool neg) {
  return static_cast<std::uint32_t>(native::overflow_result(to, r, neg).code);
}
EXMY_GPU_COLD float cold_to_float(FloatFormat f, std::uint32_t c) {
  return native::to_float(f, c);
}

// The format-dependent constants of the fast path, derived once on the host.
struct FastCastPlan {
  FloatFormat f;
  int normal_shift = 0;        // d in the normal range: 23 - M
  std::uint32_t e0 = 0;        // smallest fp32 biased exponent in f's normal range: emin + 127
  std::uint32_t rebias = 0;    // (127 - bias) << 23
  std::uint32_t max_code = 0;  // largest finite magnitude code
  std::uint32_t sign_bit = 0;  // f's sign bit
  bool neg_zero = false;       // f has a negative zero
};

// Signed, subnormals, 1 <= M <= 22 (at most 16 bits in all), emin >= -126 (so every fp32
// subnormal lies in f's subnormal range and e0 >= 1) and emax <= 127 (codes decode into fp32).
EXMY_HD constexpr bool fast_cast_supported(const FloatFormat& f) {
  return f.is_signed && f.subnormals && f.man_bits >= 1 && f.total_bits() <= 16 &&
         f.emin() >= -126 && f.emax() <= 127;
}

constexpr FastCastPlan make_fast_cast_plan(const FloatFormat& f) {
  FastCastPlan p;
  p.f = f;
  p.normal_shift = 23 - f.man_bits;
  p.e0 = static_cast<std::uint32_t>(f.emin() + 127);
  p.rebias = static_cast<std::uint32_t>(127 - f.bias) << 23;
  p.max_code = static_cast<std::uint32_t>(f.max_code());
  p.sign_bit = static_cast<std::uint32_t>(f.sign_bit());
  p.neg_zero = f.has_neg_zero();
  return p;
}

// The code of fp32 `u` in p.f; `rand` holds the R random bits of sr:R in its low bits.
EXMY_HD std::uint32_t fast_cast_fp32(const FastCastPlan& p, const Rounding& r, std::uint32_t u,
                                     std::uint32_t rand) {
  const std::uint32_t a = u & 0x7FFFFFFFu;
  if (a == 0 || a >= 0x7F800000u) {  // zero, inf, NaN: the engine's own special-value rules
    return cold_convert_fp32(p.f, r, u, rand);
  }
  const bool neg = (u >> 31) != 0;
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
  const bool inexact = rem != 0;
  bool up = false;
  switch (r.mode) {
    case RoundMode::rne:
      up = (rem >> 63) != 0 && ((rem << 1) != 0 || (t & 1u) != 0);
      break;
    case RoundMode::rna:
      up = (rem >> 63) != 0;
      break;
    case RoundMode::rtz:
      break;
    case RoundMode::rup:
      up = !neg && inexact;
      break;
    case RoundMode::rdn:
      up = neg && inexact;
      break;
    case RoundMode::rto:
      if (inexact) t |= 1u;
      break;
    case RoundMode::sr: {
      const int R = r.sr_bits;
      const std::uint64_t frac = rem >> (64 - R);
      up = frac + (rand & low_mask(R)) >= (std::uint64_t{1} << R);
      break;
    }
  }
  t += up ? 1u : 0u;
  const std::uint32_t sign = neg ? p.sign_bit : 0u;
  if (t == 0) return p.neg_zero ? sign : 0u;
  if (t > p.max_code) return cold_overflow(p.f, r, neg);
  return sign | t;
}

// The fp32 value of code c of p.f, equal to native::to_float(p.f, c): normal codes are rebuilt
// by moving the fields (exact, since f's range lies inside fp32's); the other classes go through
// the engine.
EXMY_HD float fast_decode_fp32(const FastCastPlan& p, std::uint32_t c) {
  const FloatFormat& f = p.f;
  if (f.classify(c) != ValueClass::normal) return cold_to_float(f, c);
  const std::uint32_t mag = c & static_cast<std::uint32_t>(f.magnitude_mask());
  const std::uint32_t sign = (c & p.sign_bit) != 0 ? 0x80000000u : 0u;
  return native::float_of(sign | ((mag << p.normal_shift) + p.rebias));
}

}  // namespace exmy::gpu
