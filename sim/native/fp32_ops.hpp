// Correctly rounded fp32/fp64 arithmetic, identical on host and device: the optimizer steps spell
// every operation through these so that nvcc can neither contract a multiply-add into an FMA nor
// pick an approximate division or square root. Host code is built with -ffp-contract=off and no
// fast-math, so a plain operator rounds once to nearest-even (SSE arithmetic, sqrtss/sqrtsd are
// IEEE correctly rounded); device code uses the _rn intrinsics. Both live in the platform seam,
// sim/native/specialize/platform.hpp. rn_fma is used only where the spec (docs/SEMANTICS.md
// section 9) names a fused multiply-add, because the reference it reproduces (PyTorch's
// vectorised CPU kernels) uses one.
#pragma once

#include <cstdint>

#include "sim/native/hd.hpp"
#include "sim/native/specialize/platform.hpp"

namespace exmy::native {

// rn_add, rn_sub, rn_mul, rn_div, rn_sqrt, rn_fma (a*b + c rounded once), their 64-bit
// versions rn_*64, rn_f32 (fp64 -> fp32), f32_bits and f32_from_bits are the platform primitives
// of sim/native/specialize/platform.hpp; what follows is built on them.
EXMY_HD bool f32_is_nan(float x) {
  return (f32_bits(x) & 0x7FFFFFFFu) > 0x7F800000u;
}
EXMY_HD bool f32_is_finite(float x) {
  return (f32_bits(x) & 0x7F800000u) != 0x7F800000u;
}
EXMY_HD bool f32_signbit(float x) {
  return (f32_bits(x) >> 31) != 0;
}
EXMY_HD float f32_abs(float x) {
  return f32_from_bits(f32_bits(x) & 0x7FFFFFFFu);
}
// CUDA fmaxf / C fmax: a NaN operand is ignored (the other is returned).
EXMY_HD float f32_fmax(float a, float b) {
  if (f32_is_nan(a)) return b;
  if (f32_is_nan(b)) return a;
  return a > b ? a : b;
}

}  // namespace exmy::native
