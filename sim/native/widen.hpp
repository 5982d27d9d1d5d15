// Exact widening of bf16 and fp16 codes to fp32 codes, as integer operations (no hardware cvt, so
// NaN signs and payloads are kept and nothing depends on denormal flushing). Host and device: the
// CUDA kernels and the host's array casts (sim/fast) widen with these. Checked against
// native::convert over all 2^16 codes of each (tests/native, and tests/gpu on the device).
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/hd.hpp"

namespace exmy::native {

EXMY_HD std::uint32_t widen_bf16(std::uint32_t h) {
  return h << 16;
}

// fp16 e5m10 bias 15 -> fp32 e8m23 bias 127, branch-free: with the magnitude's fields moved up
// by 23 - 10 = 13 bits, a normal needs its exponent rebiased by 127 - 15 = 112, and inf/NaN
// (exponent 31 -> 255) by 255 - 31 = 224, which keeps NaN payloads. A subnormal m * 2^-24 is
// taken from fp32 arithmetic: the fp32 number with bits (113 << 23) + (m << 13) is
// 2^-14 * (1 + m / 2^10), and subtracting 2^-14 leaves m * 2^-24 exactly (a difference of two
// fp32 numbers of one binade is exact), so no normalisation loop or count-leading-zeros.
EXMY_HD std::uint32_t widen_fp16(std::uint32_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t mag = h & 0x7FFFu;
  const std::uint32_t moved = mag << 13;
  std::uint32_t r;
  if (mag >= 0x7C00u) {
    r = moved + (224u << 23);
  } else if (mag >= 0x0400u) {
    r = moved + (112u << 23);
  } else {
    const float two_m14 = float_of(113u << 23);
    r = bits_of(float_of(moved + (113u << 23)) - two_m14);
  }
  return sign | r;
}

}  // namespace exmy::native
