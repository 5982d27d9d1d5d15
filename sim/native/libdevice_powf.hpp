// CUDA's fp32 powf as compiled from libdevice (CUDA 13.0, `-prec-div=true`, no fast math), the
// function torch's fused Adam/AdamW kernels call for their bias corrections (docs/SEMANTICS.md
// 9.2, 17.4). Transcribed instruction by instruction from its sm_90 SASS (nvcc 13.0 -O3: the same
// sequence is inlined in torch 2.11's FusedAdamMathFunctor): a log2 by an atanh-style series
// around a reciprocal (MUFU.RCP, sim/native/sfu_sm90.hpp), y·log2|x| as a double-float, 2^f by a
// degree-6 polynomial, and the scale 2^i applied as two factors. Not correctly rounded: for
// beta = 0.999 about 6% of the steps t <= 10^5 differ from the correctly rounded beta^t by one
// ulp, and this transcription reproduces all of them (bench/results/2026-11-26-h200-bnb-cuda.md).
#pragma once

#include <cstdint>

#include "sim/native/fp32_ops.hpp"
#include "sim/native/sfu_sm90.hpp"

namespace exmy::native {

// Exact integer-valued operations on fp32 values (SASS FRND, FRND.TRUNC, FRND.FLOOR, F2I).
EXMY_HD float f32_trunc(float x) {
  const float a = f32_abs(x);
  if (!(a < 8388608.0f)) return x;  // |x| >= 2^23 (already an integer), inf, NaN
  return static_cast<float>(static_cast<std::int32_t>(x));
}
EXMY_HD float f32_rint(float x) {  // nearest, ties to even
  const float t = f32_trunc(x);
  if (t == x) return x;
  const float r = rn_sub(x, t);  // exact, |r| < 1
  const float ar = f32_abs(r);
  const bool odd = (static_cast<std::int64_t>(t) & 1) != 0;
  if (ar > 0.5f || (ar == 0.5f && odd)) return rn_add(t, r > 0.0f ? 1.0f : -1.0f);
  return t;
}
EXMY_HD float f32_floor(float x) {
  const float t = f32_trunc(x);
  return x < t ? rn_sub(t, 1.0f) : t;
}
// F2I.S32 (nearest even, saturating; NaN gives 0).
EXMY_HD std::int32_t f32_to_i32_rn(float x) {
  if (f32_is_nan(x)) return 0;
  if (x >= 2147483648.0f) return 2147483647;
  if (x < -2147483648.0f) return -2147483647 - 1;
  return static_cast<std::int32_t>(f32_rint(x));
}

EXMY_HD float cuda_powf(const SfuTables& t, float x, float y) {
  const float ax = f32_abs(x);
  // log2|x|: subnormals scaled by 2^24; m = |x|·2^-e in [√½, √2).
  const bool normal = ax >= f32_from_bits(0x00800000u);
  float m = normal ? ax : rn_mul(ax, 16777216.0f);
  float e = normal ? 0.0f : -24.0f;
  const std::uint32_t eb = (f32_bits(m) - 0x3f3504f3u) & 0xff800000u;
  m = f32_from_bits(f32_bits(m) - eb);
  e = rn_fma(static_cast<float>(static_cast<std::int32_t>(eb)), 1.1920928955078125e-07f, e);
  const float r = sfu_rcp_f(t, rn_add(m, 1.0f));
  const float mm1 = rn_sub(m, 1.0f);
  const float s = rn_mul(r, rn_add(mm1, mm1));  // 2(m − 1)/(m + 1)
  const float s2 = rn_mul(s, s);
  const float hi = rn_fma(s, 1.4426950216293334961f, e);
  float c = rn_fma(s2, f32_from_bits(0x3A2C32E4u), 0.0032181653659790754318f);
  float lo = rn_sub(e, hi);
  float u = rn_sub(mm1, s);
  u = rn_add(u, u);
  u = rn_fma(mm1, -s, u);
  c = rn_fma(s2, c, 0.018033718690276145935f);
  lo = rn_fma(s, 1.4426950216293334961f, lo);
  u = rn_mul(r, u);
  c = rn_fma(s2, c, 0.12022458761930465698f);
  lo = rn_fma(u, 1.4426950216293334961f, lo);
  c = rn_mul(s2, c);
  lo = rn_fma(s, 1.9251366722983220825e-08f, lo);
  lo = rn_fma(u, rn_mul(c, 3.0f), lo);
  lo = rn_fma(s, c, lo);
  const float l = rn_add(hi, lo);                 // log2|x|, high part
  const float l_lo = rn_sub(lo, rn_add(-hi, l));  // and its low part
  // y·log2|x| = p + q; 2^(p+q) = 2^i · 2^f, i = rint(p).
  const float p = rn_mul(y, l);
  const float i = f32_rint(p);
  float q = rn_fma(y, l, -p);
  q = rn_fma(y, l_lo, q);
  const float f = rn_add(q, rn_sub(p, i));
  const std::uint32_t bias = i > 0.0f ? 0u : 0x83000000u;
  float poly = rn_fma(f, f32_from_bits(0x391fcb8eu), 0.0013391353422775864601f);
  poly = rn_fma(f, poly, 0.0096188392490148544312f);
  poly = rn_fma(f, poly, 0.055503588169813156128f);
  poly = rn_fma(f, poly, 0.24022644758224487305f);
  poly = rn_fma(f, poly, 0.69314718246459960938f);
  poly = rn_fma(f, poly, 1.0f);
  const std::uint32_t ii = static_cast<std::uint32_t>(f32_to_i32_rn(p));
  float res =
      rn_mul(rn_mul(poly, f32_from_bits(bias + 0x7f000000u)), f32_from_bits((ii << 23) - bias));
  if (f32_abs(p) > 152.0f) res = p >= 0.0f ? f32_from_bits(0x7F800000u) : 0.0f;
  // Special operands, in the SASS's order.
  if (x == 1.0f || y == 0.0f) return 1.0f;
  if (f32_is_nan(x) || f32_is_nan(y)) return f32_from_bits(kSfuNaN);
  const float half_even = rn_add(f32_trunc(rn_mul(y, 0.5f)), f32_trunc(rn_mul(y, 0.5f)));
  const bool odd = f32_abs(rn_sub(y, half_even)) == 1.0f;  // y an odd integer
  if (x == 0.0f || f32_abs(x) == f32_from_bits(0x7F800000u)) {
    std::uint32_t b = f32_bits(rn_add(x, x));
    if (!(y >= 0.0f)) b ^= 0x7F800000u;
    if (!odd) b &= 0x7FFFFFFFu;
    return f32_from_bits(b);
  }
  if (f32_abs(y) == f32_from_bits(0x7F800000u) && x == -1.0f) return 1.0f;
  if (x >= 0.0f) return res;
  const float signed_res = odd ? -res : res;
  return f32_floor(y) != y ? f32_from_bits(kSfuNaN) : signed_res;
}

}  // namespace exmy::native
