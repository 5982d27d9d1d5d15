// Seed 003's FP8 simulation by masking ("To FP8 and back again", section 3.2, figure 5): a value
// stays in its wide container (fp32 or bf16) and is forced onto an ExMy grid with IEEE-style
// limits by bit operations. docs/SEMANTICS.md section 2.1 is the specification. Host and device.
#pragma once

#include <cstdint>

#include "sim/native/hd.hpp"

namespace exmy {

enum class MaskOuter : std::uint8_t {
  clamp,  // |x| > max (inf included) -> +-max
  keep,   // leave them (mantissa still truncated; inf stays inf)
};
enum class MaskInner : std::uint8_t {
  min,   // 0 < |x| < min_normal -> +-min_normal
  zero,  // -> +-0 (sign kept)
  keep,  // leave them, mantissa truncated
};

namespace native {

// fp32 bit patterns of the ExMy limits, E in 2..8, M in 0..23:
//   max        = (2 - 2^-M) * 2^(2^(E-1) - 1): exponent field 2^(E-1) - 1 + 127, top M mantissa
//   bits min_normal = 2^(2 - 2^(E-1)):              exponent field 2 - 2^(E-1) + 127 (>= 1 for E <=
//   8)
EXMY_HD constexpr std::uint32_t mask_max_bits(int E, int M) {
  const std::uint32_t e = static_cast<std::uint32_t>((1 << (E - 1)) - 1 + 127);
  const std::uint32_t m = ((std::uint32_t{1} << M) - 1) << (23 - M);
  return (e << 23) | m;
}
EXMY_HD constexpr std::uint32_t mask_min_normal_bits(int E) {
  return static_cast<std::uint32_t>(2 - (1 << (E - 1)) + 127) << 23;
}

}  // namespace native

// mask(x; E, M, outer, inner) on an fp32 bit pattern. Order: NaN is returned unchanged (a mask
// could otherwise clear a payload into inf); a magnitude 0 < |x| < min_normal takes the inner rule
// on its value as given (min: +-min_normal; zero: +-0; keep: its mantissa truncated); any other
// magnitude has its low 23 - M mantissa bits cleared (rtz at M bits, the "mantissa bitmask") and
// then the outer rule. The inner test must come before truncation: an fp32 subnormal can truncate
// to 0 (2^-140 at M = 2), and 0 is not in 0 < |x| < min_normal (regression test in
// tests/format/test_mask.cpp). For |x| >= min_normal the order does not matter: truncation never
// moves a value across max or min_normal, both of which have at most M mantissa bits.
EXMY_HD std::uint32_t mask_fp32(std::uint32_t bits, int E, int M, MaskOuter outer,
                                MaskInner inner) {
  const std::uint32_t sign = bits & 0x80000000u;
  const std::uint32_t mag = bits & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return bits;  // NaN
  const std::uint32_t keep_mask = ~((std::uint32_t{1} << (23 - M)) - 1);
  std::uint32_t t = mag & keep_mask;
  const std::uint32_t max_bits = native::mask_max_bits(E, M);
  const std::uint32_t min_bits = native::mask_min_normal_bits(E);
  // Magnitudes of non-negative fp32 order like their bit patterns.
  if (mag != 0 && mag < min_bits) {
    if (inner == MaskInner::min) t = min_bits;
    if (inner == MaskInner::zero) t = 0;
  } else if (outer == MaskOuter::clamp && t > max_bits) {
    t = max_bits;
  }
  return sign | t;
}

// The same on a bf16 bit pattern (M <= 7): bf16 is the top half of fp32, and every step above
// only clears bits or substitutes a limit with at most M <= 7 mantissa bits, so the low half
// stays zero.
EXMY_HD std::uint16_t mask_bf16(std::uint16_t bits, int E, int M, MaskOuter outer,
                                MaskInner inner) {
  return static_cast<std::uint16_t>(
      mask_fp32(static_cast<std::uint32_t>(bits) << 16, E, M, outer, inner) >> 16);
}

}  // namespace exmy
