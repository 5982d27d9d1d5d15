// The hardware specialisation seam (the idea of Berkeley SoftFloat's specialize/ folders): every
// primitive whose implementation differs between the platforms lives here, and nowhere else in
// the engine branches on the platform. The two implementations stand side by side below, one
// block per platform; each primitive has one meaning, stated once, that both blocks implement
// bit for bit (docs/SEMANTICS.md, "Where platform behaviour lives"):
//   - correctly rounded fp32/fp64 arithmetic (nearest-even; fma rounded once): host operators
//     (built with -ffp-contract=off and no fast-math, SSE arithmetic and sqrtss/sqrtsd are IEEE
//     correctly rounded) against the CUDA _rn intrinsics (which nvcc can neither contract nor
//     approximate);
//   - conversions: fp64 -> fp32 and int32 -> fp32 (nearest-even), fp32 <-> fp16 by the
//     hardware where it has one (the caller keeps a portable path for the host and for NaNs);
//   - bit casts between float/double and their codes; the canonical quiet NaN 0x7FC00000;
//   - count leading zeros; the high word of a 32 x 32-bit product; the fp32 sum rounded toward
//     zero where the device has the mode;
//   - loop unrolling hints (EXMY_UNROLL; no effect on results).
// A compatibility profile of a hardware quirk (a platform that flushes subnormals, returns a
// different NaN, rounds a conversion differently) is a third block here, not a branch in the
// engine's headers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

#include "sim/native/hd.hpp"

#if defined(__CUDA_ARCH__)
#define EXMY_UNROLL _Pragma("unroll")
#else
#define EXMY_UNROLL
#endif

namespace exmy::native {

#if defined(__CUDA_ARCH__)
// ---- CUDA device code ---------------------------------------------------------------------------

// Both halves of a * b by one mul.wide.u32 (one IMAD.WIDE.U32). From __umulhi and a * b, ptxas
// split some of Philox's products into IMAD.HI + IMAD when registers were short (the sr cast
// kernels under launch bounds): one more issue slot per multiplication; from a C++ 64-bit product
// it added a zero register to every high word (one VIADD per multiplication).
EXMY_HD void mul_wide_u32(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  asm("{\n\t.reg .b64 p;\n\tmul.wide.u32 p, %2, %3;\n\tmov.b64 {%1, %0}, p;\n\t}"
      : "=r"(hi), "=r"(lo)
      : "r"(a), "r"(b));
}

EXMY_HD int clz64(std::uint64_t x) {  // x nonzero
  return __clzll(static_cast<long long>(x));
}

EXMY_HD std::uint32_t f32_bits(float x) {
  return __float_as_uint(x);
}
EXMY_HD float f32_from_bits(std::uint32_t u) {
  return __uint_as_float(u);
}
EXMY_HD std::uint64_t f64_bits(double x) {
  return static_cast<std::uint64_t>(__double_as_longlong(x));
}
EXMY_HD double f64_from_bits(std::uint64_t u) {
  return __longlong_as_double(static_cast<long long>(u));
}
EXMY_HD float canonical_nan32() {  // 0x7FC00000
  return __uint_as_float(0x7FC00000u);
}
// x, the result of an fp32 arithmetic instruction, as CUDA's arithmetic returns it: every NaN
// is 0x7FFFFFFF (sign 0; docs/SEMANTICS.md 9.1). The device's FADD/FMUL/FFMA already do that,
// so here it is x itself, no instruction.
EXMY_HD float f32_nan_as_cuda(float x) {
  return x;
}

EXMY_HD float rn_add(float a, float b) {
  return __fadd_rn(a, b);
}
EXMY_HD float rn_sub(float a, float b) {
  return __fsub_rn(a, b);
}
EXMY_HD float rn_mul(float a, float b) {
  return __fmul_rn(a, b);
}
EXMY_HD float rn_div(float a, float b) {
  return __fdiv_rn(a, b);
}
EXMY_HD float rn_sqrt(float a) {
  return __fsqrt_rn(a);
}
EXMY_HD float rn_fma(float a, float b, float c) {  // a*b + c rounded once
  return __fmaf_rn(a, b, c);
}
// max(a, b) as the device's FMNMX computes fmaxf: a NaN operand, quiet or signalling, is skipped
// (both NaN: a NaN), and +0 is above -0 (fp32_ops.hpp's f32_fmax with the zeros ordered; the
// device spells it fmaxf so that it stays one instruction). Host libm's fmaxf would turn a
// signalling NaN into a NaN.
EXMY_HD float f32_fmax_hw(float a, float b) {
  return fmaxf(a, b);
}
// The sign bit of RN(a - b), a NaN difference read as +NaN: 1 exactly when b > a (ordered), since
// rounding keeps the sign of a nonzero difference, a - a is +0 and inf - inf, like any NaN
// operand, is NaN. The device's FADD returns the canonical NaN 0x7FFFFFFF, sign 0, for every NaN
// (docs/SEMANTICS.md 17); one FADD, whose sign bit an LEA.HI adds, where a comparison and a select
// would be two instructions.
EXMY_HD std::uint32_t f32_sub_signbit(float a, float b) {
  return f32_bits(__fsub_rn(a, b)) >> 31;
}
// a*b + c rounded once, then clamped to [0, 1] with a NaN result read as +0 (fma.rn.sat.f32, no
// FTZ: subnormals kept). A -0 result may come back as -0 here and +0 on the host: callers only
// add it to a larger number.
EXMY_HD float rn_fma_sat(float a, float b, float c) {
  float r;
  asm("fma.rn.sat.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
  return r;
}
EXMY_HD double rn_add64(double a, double b) {
  return __dadd_rn(a, b);
}
EXMY_HD double rn_sub64(double a, double b) {
  return __dsub_rn(a, b);
}
EXMY_HD double rn_mul64(double a, double b) {
  return __dmul_rn(a, b);
}
EXMY_HD double rn_div64(double a, double b) {
  return __ddiv_rn(a, b);
}
EXMY_HD double rn_sqrt64(double a) {
  return __dsqrt_rn(a);
}
EXMY_HD float rn_f32(double a) {  // fp64 -> fp32 (overflow to inf, NaN stays NaN)
  return __double2float_rn(a);
}
EXMY_HD float rn_f32_from_i32(std::int32_t v) {  // exact for |v| <= 2^24
  return __int2float_rn(v);
}

// fp32 arithmetic with flush-to-zero (nvcc --ftz=true, `--use_fast_math`): subnormal inputs are
// read as zeros of their sign, a result whose exponent-unbounded rounding lies below 2^-126 is
// written as a zero of its sign (measured on sm_90: (1 - 2^-23)(1 + 2^-23)·2^-126 gives 2^-126,
// (1 - 2^-24)·2^-126 gives 0; docs/SEMANTICS.md 17). The device has the instructions.
EXMY_HD float ftz_add(float a, float b) {
  float r;
  asm("add.rn.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
EXMY_HD float ftz_mul(float a, float b) {
  float r;
  asm("mul.rn.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
EXMY_HD float ftz_fma(float a, float b, float c) {
  float r;
  asm("fma.rn.ftz.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(a), "f"(b), "f"(c));
  return r;
}

// c + v rounded toward zero, for 0 <= v and c + v in [c, 2c] (one binade): the device has the
// rounding mode.
EXMY_HD float rz_add_in_binade(float v, float c) {
  return __fadd_rz(v, c);
}

// fp32 -> fp16 / fp16 -> fp32 by the hardware conversion (cvt.rn.f16.f32, IEEE nearest-even,
// overflow to inf, gradual underflow; the widening is exact). True when the platform has it and
// `out` was written; callers still send NaNs through the portable path (its NaN pattern).
EXMY_HD bool hw_f16_from_f32(float x, std::uint16_t& out) {
  out = __half_as_ushort(__float2half_rn(x));
  return true;
}
EXMY_HD bool hw_f32_from_f16(std::uint16_t h, float& out) {
  out = __half2float(__ushort_as_half(h));
  return true;
}

#else
// ---- host ---------------------------------------------------------------------------------------

EXMY_HD void mul_wide_u32(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}

EXMY_HD int clz64(std::uint64_t x) {  // x nonzero
  return __builtin_clzll(x);
}

EXMY_HD std::uint32_t f32_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
EXMY_HD float f32_from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
EXMY_HD std::uint64_t f64_bits(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
EXMY_HD double f64_from_bits(std::uint64_t u) {
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
EXMY_HD float canonical_nan32() {
  return __builtin_nanf("");  // 0x7FC00000
}
// The same meaning on the host, whose NaN of 0·inf or inf − inf is x86's 0xFFC00000 (sign 1) and
// which keeps an operand NaN's payload and sign.
EXMY_HD float f32_nan_as_cuda(float x) {
  return x != x ? f32_from_bits(0x7FFFFFFFu) : x;
}

EXMY_HD float rn_add(float a, float b) {
  return a + b;
}
EXMY_HD float rn_sub(float a, float b) {
  return a - b;
}
EXMY_HD float rn_mul(float a, float b) {
  return a * b;
}
EXMY_HD float rn_div(float a, float b) {
  return a / b;
}
EXMY_HD float rn_sqrt(float a) {
  return std::sqrt(a);
}
EXMY_HD float rn_fma(float a, float b, float c) {
  return std::fma(a, b, c);
}
EXMY_HD float f32_fmax_hw(float a, float b) {
  if (b != b) return a;
  if (a != a) return b;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
EXMY_HD std::uint32_t f32_sub_signbit(float a, float b) {
  const float d = a - b;
  return d != d ? 0u : f32_bits(d) >> 31;
}
EXMY_HD float rn_fma_sat(float a, float b, float c) {
  const float r = std::fma(a, b, c);
  if (!(r > 0.0f)) return 0.0f;  // NaN, negative, zero
  return r < 1.0f ? r : 1.0f;
}
EXMY_HD double rn_add64(double a, double b) {
  return a + b;
}
EXMY_HD double rn_sub64(double a, double b) {
  return a - b;
}
EXMY_HD double rn_mul64(double a, double b) {
  return a * b;
}
EXMY_HD double rn_div64(double a, double b) {
  return a / b;
}
EXMY_HD double rn_sqrt64(double a) {
  return std::sqrt(a);
}
EXMY_HD float rn_f32(double a) {
  return static_cast<float>(a);
}
EXMY_HD float rn_f32_from_i32(std::int32_t v) {
  return static_cast<float>(v);  // IEEE conversion in the default (nearest-even) mode
}

// FTZ arithmetic (see the device versions above). The host rounds subnormal results on the
// subnormal grid, so a result within a factor 4 of 2^-126 is recomputed with the operands scaled
// by 2^64 (exact: such a result needs |a| < 2^50 and, for fma, |c| < 2^-76, so nothing
// overflows), where the rounding is the exponent-unbounded one, and flushed if it lies below
// 2^-62 (= 2^-126·2^64).
EXMY_HD float ftz_in(float x) {
  const std::uint32_t u = f32_bits(x);
  return (u & 0x7F800000u) == 0 ? f32_from_bits(u & 0x80000000u) : x;
}
EXMY_HD bool ftz_near_tiny(float r) {
  const std::uint32_t a = f32_bits(r) & 0x7FFFFFFFu;
  return a != 0 && a < 0x01800000u;  // 0 < |r| < 2^-124
}
EXMY_HD float ftz_unscale(float r2) {
  return std::fabs(r2) < 0x1p-62f ? f32_from_bits(f32_bits(r2) & 0x80000000u) : r2 * 0x1p-64f;
}
EXMY_HD float ftz_add(float a, float b) {
  // A sum below 2^-126 is exact, so the bounded rounding already is the unbounded one.
  const float r = ftz_in(a) + ftz_in(b);
  return (f32_bits(r) & 0x7F800000u) == 0 ? f32_from_bits(f32_bits(r) & 0x80000000u) : r;
}
EXMY_HD float ftz_mul(float a, float b) {
  a = ftz_in(a);
  b = ftz_in(b);
  const float r = a * b;
  return ftz_near_tiny(r) ? ftz_unscale((a * 0x1p64f) * b) : r;
}
EXMY_HD float ftz_fma(float a, float b, float c) {
  a = ftz_in(a);
  b = ftz_in(b);
  c = ftz_in(c);
  const float r = std::fma(a, b, c);
  return ftz_near_tiny(r) ? ftz_unscale(std::fma(a * 0x1p64f, b, c * 0x1p64f)) : r;
}

// No rounding-mode control without fesetround: the rne sum s lies in [c, 2c] with c, so s - c is
// exact, and where it exceeds v the sum was rounded up by one ulp; one ulp down (code - 1, s > 0)
// is then the sum rounded toward zero.
EXMY_HD float rz_add_in_binade(float v, float c) {
  const float s = v + c;
  return s - c > v ? f32_from_bits(f32_bits(s) - 1u) : s;
}

EXMY_HD bool hw_f16_from_f32(float, std::uint16_t&) {
  return false;
}
EXMY_HD bool hw_f32_from_f16(std::uint16_t, float&) {
  return false;
}

#endif

}  // namespace exmy::native
