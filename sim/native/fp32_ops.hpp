// Correctly rounded fp32/fp64 arithmetic, identical on host and device: the optimizer steps spell
// every operation through these so that nvcc can neither contract a multiply-add into an FMA nor
// pick an approximate division or square root. Host code is built with -ffp-contract=off and no
// fast-math, so a plain operator rounds once to nearest-even (SSE arithmetic, sqrtss/sqrtsd are
// IEEE correctly rounded); device code uses the _rn intrinsics. rn_fma is used only where the spec
// (docs/SEMANTICS.md section 9) names a fused multiply-add, because the reference it reproduces
// (PyTorch's vectorised CPU kernels) uses one.
#pragma once

#include <cmath>
#include <cstdint>

#include "sim/native/hd.hpp"

namespace exmy::native {

EXMY_HD float rn_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
EXMY_HD float rn_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
EXMY_HD float rn_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
EXMY_HD float rn_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
EXMY_HD float rn_sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
// a*b + c rounded once.
EXMY_HD float rn_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

EXMY_HD double rn_add64(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
EXMY_HD double rn_sub64(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
EXMY_HD double rn_mul64(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
EXMY_HD double rn_div64(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
EXMY_HD double rn_sqrt64(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
// fp64 -> fp32, round to nearest even (overflow to inf, NaN stays NaN).
EXMY_HD float rn_f32(double a) {
#if defined(__CUDA_ARCH__)
  return __double2float_rn(a);
#else
  return static_cast<float>(a);
#endif
}

EXMY_HD std::uint32_t f32_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  __builtin_memcpy(&u, &x, sizeof u);
  return u;
#endif
}
EXMY_HD float f32_from_bits(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  __builtin_memcpy(&x, &u, sizeof x);
  return x;
#endif
}
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
