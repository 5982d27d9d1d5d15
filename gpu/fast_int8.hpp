// Device-only fast path of native::round_to_int8 for the four directed/nearest modes: the
// hardware's exactly rounded float -> int32 conversions (cvt.rni / rzi / rpi / rmi, named by the
// __float2int_r* intrinsics) give the same integer as the native routine's bit-level rounding for
// every |y| < 2^8, and the specials and the saturation are handled first, as there. Checked over
// all 2^32 fp32 y by verify_int8_rounding_exhaustive (gpu/verify.hpp) in tests/gpu.
#pragma once

#include <cstdint>

#include "sim/native/quant_int8.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::gpu {

__device__ __forceinline__ bool int8_fast_mode(RoundMode m) {
  return m == RoundMode::rne || m == RoundMode::rtz || m == RoundMode::rup || m == RoundMode::rdn;
}

// The code of native::round_to_int8(y, {m}) for int8_fast_mode(m).
__device__ __forceinline__ std::int8_t fast_round_to_int8(float y, RoundMode m) {
  const std::uint32_t b = __float_as_uint(y);
  const std::uint32_t mag = b & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return 0;                                                  // NaN
  if (mag >= 0x43800000u) return (b >> 31) ? -native::kInt8Max : native::kInt8Max;  // >= 2^8
  int v;
  switch (m) {
    case RoundMode::rne:
      v = __float2int_rn(y);
      break;
    case RoundMode::rtz:
      v = __float2int_rz(y);
      break;
    case RoundMode::rup:
      v = __float2int_ru(y);
      break;
    default:
      v = __float2int_rd(y);
      break;
  }
  v = v > native::kInt8Max ? native::kInt8Max : v;
  v = v < -native::kInt8Max ? -native::kInt8Max : v;
  return static_cast<std::int8_t>(v);
}

}  // namespace exmy::gpu
