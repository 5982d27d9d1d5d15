// fp32 arithmetic with the rounding named in the spec (RN32: round to nearest, ties to even), the
// same on host and device. Host code is compiled with -ffp-contract=off and no fast-math, so a
// plain float operator rounds once to nearest even; device code uses the _rn intrinsics so that
// nvcc can neither contract into FMA nor pick an approximate division. Subnormals are kept on both
// sides (no FTZ): kernels that call these must not be built with --ftz=true.
#pragma once

#include <cstdint>

#include "sim/native/fp32_ops.hpp"
#include "sim/native/hd.hpp"

namespace exmy::native {

// A NaN result is the canonical +NaN 0x7FC00000 on both sides: the hardware NaNs differ (x86
// keeps a NaN operand's sign and payload and makes 0*inf the negative 0xFFC00000; NVIDIA GPUs give
// 0x7FFFFFFF), and codes cast from them keep the sign, so CPU and GPU would disagree otherwise.
EXMY_HD float rn32_canonical(float r) {
  if (r != r) return canonical_nan32();  // 0x7FC00000
  return r;
}

// The quantizers' RN32 operations: the shared correctly rounded ones (fp32_ops.hpp) with the
// NaN result made canonical.
EXMY_HD float rn32_mul(float a, float b) {
  return rn32_canonical(rn_mul(a, b));
}
EXMY_HD float rn32_div(float a, float b) {
  return rn32_canonical(rn_div(a, b));
}
EXMY_HD float rn32_add(float a, float b) {
  return rn32_canonical(rn_add(a, b));
}
EXMY_HD float rn32_sub(float a, float b) {
  return rn32_canonical(rn_sub(a, b));
}
// int32 -> fp32, round to nearest even (exact for |v| <= 2^24).
EXMY_HD float rn32_from_i32(std::int32_t v) {
  return rn_f32_from_i32(v);
}

EXMY_HD bool is_nan32(float x) {
  return f32_is_nan(x);
}
EXMY_HD float abs32(float x) {
  return f32_abs(x);
}  // clears the sign bit; NaN stays NaN
EXMY_HD bool is_finite32(float x) {
  return f32_is_finite(x);
}

}  // namespace exmy::native
