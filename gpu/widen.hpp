// Exact widening of bf16 and fp16 codes to fp32 codes, as integer operations (no hardware cvt, so
// NaN signs and payloads are kept and nothing depends on denormal flushing). Checked against
// native::convert over all 2^16 codes of each by tests/gpu.
#pragma once

#include <cstdint>

#include "sim/native/hd.hpp"

namespace exmy::gpu {

EXMY_HD std::uint32_t widen_bf16(std::uint32_t h) {
  return h << 16;
}

// fp16 e5m10 bias 15 -> fp32 e8m23 bias 127: the exponent moves by 127 - 15 = 112 and the
// mantissa by 23 - 10 = 13 bits; a subnormal m * 2^-24 with top bit p becomes
// 1.f * 2^(p - 24), biased exponent p + 103.
EXMY_HD std::uint32_t widen_fp16(std::uint32_t h) {
  const std::uint32_t s = (h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu;
  const std::uint32_t m = h & 0x3FFu;
  if (e == 0x1F) return s | 0x7F800000u | (m << 13);
  if (e != 0) return s | ((e + 112) << 23) | (m << 13);
  if (m == 0) return s;
  const int p = 63 - native::clz64(m);  // position of the top set bit, 0..9
  return s | (static_cast<std::uint32_t>(p + 103) << 23) | ((m << (23 - p)) & 0x007FFFFFu);
}

}  // namespace exmy::gpu
