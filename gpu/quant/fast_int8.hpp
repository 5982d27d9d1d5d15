// Device-only fast path of native::round_to_int8 for the four directed/nearest modes: the
// hardware's exactly rounded float -> int32 conversions (cvt.rni / rzi / rpi / rmi .s32.f32, named
// by the __float2int_r* intrinsics) give the same integer as the native routine's bit-level
// rounding for every |y| < 2^8. The specials need no test of their own: cvt saturates to the int32
// range (|y| >= 2^31 and +-inf give INT32_MAX / INT32_MIN) and converts NaN to 0 (PTX ISA, cvt:
// "NaN inputs convert to 0" for float-to-integer), so clamping the integer to [-127, 127] gives
// native::round_to_int8's saturation (+-127 for |y| >= 2^8 and +-inf) and its NaN code 0; -0 and
// values rounding to 0 give the integer 0. Checked over all 2^32 fp32 y per mode by
// verify_int8_rounding_exhaustive (gpu/verify/verify.hpp) in tests/gpu.
#pragma once

#include <cstdint>

#include "sim/native/quant_int8.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::gpu {

__device__ __forceinline__ bool int8_fast_mode(RoundMode m) {
  return m == RoundMode::rne || m == RoundMode::rtz || m == RoundMode::rup || m == RoundMode::rdn;
}

// The code of native::round_to_int8(y, {M}) for a fast mode M known at compile time: one cvt and
// two integer clamps.
template <RoundMode M>
__device__ __forceinline__ std::int8_t fast_round_to_int8(float y) {
  static_assert(
      M == RoundMode::rne || M == RoundMode::rtz || M == RoundMode::rup || M == RoundMode::rdn,
      "fast_round_to_int8: rne, rtz, rup or rdn");
  int v;
  if constexpr (M == RoundMode::rne) {
    v = __float2int_rn(y);
  } else if constexpr (M == RoundMode::rtz) {
    v = __float2int_rz(y);
  } else if constexpr (M == RoundMode::rup) {
    v = __float2int_ru(y);
  } else {
    v = __float2int_rd(y);
  }
  v = v > native::kInt8Max ? native::kInt8Max : v;
  v = v < -native::kInt8Max ? -native::kInt8Max : v;
  return static_cast<std::int8_t>(v);
}

// The same for a mode known only at run time (int8_fast_mode(m)).
__device__ __forceinline__ std::int8_t fast_round_to_int8(float y, RoundMode m) {
  switch (m) {
    case RoundMode::rne:
      return fast_round_to_int8<RoundMode::rne>(y);
    case RoundMode::rtz:
      return fast_round_to_int8<RoundMode::rtz>(y);
    case RoundMode::rup:
      return fast_round_to_int8<RoundMode::rup>(y);
    default:
      return fast_round_to_int8<RoundMode::rdn>(y);
  }
}

}  // namespace exmy::gpu
