// Triton's fp32 `libdevice.pow` (tl.extra.cuda.libdevice.pow → __nv_powf from the
// libdevice.10.bc that Triton 3.6 ships, not CUDA 13.0's), as the torchao CUDA step's Inductor
// kernel runs it for its bias corrections beta**step (docs/SEMANTICS.md 9.2.7). Written from
// that bitcode's __nv_powf (llvm-dis of triton/backends/nvidia/lib/libdevice.10.bc, Triton 3.6.0)
// with __nvvm_reflect("__CUDA_FTZ") = 1 (Triton's default: the .ftz intrinsics), and from the PTX
// and sm_90 SASS of the captured kernel (bench/results/2026-12-02-h200-torchao-optim/
// call3-fp32-8bit-sass/code.tar.gz, triton_poi_fused_add_copy__div_lerp_mul_pow_rsub_sqrt_sub_0):
// LLVM's NVPTX backend contracts the plain fmul u = 2(m − 1)·r into the three adds that read it
// (fma(r, 2(m − 1), ·)), ptxas folds the constant base's operations (the MUFU.RCP of m + 1
// included: its folded value is the instruction's, 0x3f06bca2 for 1.9), and nothing else is
// contracted. The algorithm: |a| = m·2^e with m in (√½, √2], ln m as a double-float by the atanh
// series u + u³/12 + u⁵/80 + u⁷/448 around u = 2(m − 1)/(m + 1), plus e·ln2 (hi/lo); b·ln|a|
// as a double-float (hi p, lo q); exp by j = trunc(p·log2e) clamped to ±126, f = p − j·ln2
// (two FMAs), 2^(f·log2e) by MUFU.EX2, the scale 2^j, and the low part by t + t·q. It is not
// nvcc's powf (sim/native/libdevice_powf.hpp: log2 based, a different result for 0.999^1).
#pragma once

#include <cstdint>

#include "sim/native/fp32_ops.hpp"
#include "sim/native/libdevice_powf.hpp"
#include "sim/native/sfu_sm90.hpp"

namespace exmy::native {

EXMY_HD float triton_powf(const SfuTables& t, float a, float b) {
  // The oddness of b: |b − 2·trunc(b/2)| == 1.
  const float half = f32_trunc(rn_mul(0.5f, b));
  const bool b_odd = f32_abs(rn_sub(b, rn_mul(2.0f, half))) == 1.0f;
  // |a| = m·2^e (fabs.ftz: a subnormal |a| reads as 0).
  float aa = f32_abs(a);
  if (aa < f32_from_bits(0x00800000u)) aa = 0.0f;
  const std::uint32_t ab = f32_bits(aa);
  float m = f32_from_bits((ab & 0x007FFFFFu) | 0x3F800000u);
  float e = rn_add(-127.0f, static_cast<float>(ab >> 23));
  if (m > f32_from_bits(0x3FB504F3u)) {  // > √2
    m = rn_mul(m, 0.5f);
    e = rn_add(e, 1.0f);
  }
  // ln m = h + l.
  const float m1 = rn_sub(m, 1.0f);
  const float r = sfu_rcp_f(t, rn_add(m, 1.0f));
  const float t2 = rn_mul(2.0f, m1);
  const float u = rn_mul(t2, r);
  const float u2 = rn_mul(u, u);
  float c = ftz_fma(f32_from_bits(0x3B18F0FEu), u2, f32_from_bits(0x3C4CAF63u));
  c = ftz_fma(c, u2, f32_from_bits(0x3DAAAABDu));
  c = ftz_mul(c, u2);
  const float c3 = ftz_mul(c, u);                             // u³·(1/12 + u²/80 + u⁴/448)
  const float d = rn_fma(r, -t2, m1);                         // (m − 1) − u, u unrounded
  const float w = ftz_mul(r, ftz_fma(-u, m1, rn_add(d, d)));  // the low part of u
  const float s1 = rn_fma(r, t2, c3);                         // u + c3, u unrounded
  float k = rn_add(c3, rn_fma(r, t2, -s1));                   // (u − s1) + c3
  k = rn_add(k, w);
  const float h = rn_add(s1, k);
  const float l = rn_add(k, rn_sub(s1, h));
  // + e·ln2, hi 0x3F317200 and lo 0x35BFBE8E.
  const float eh = ftz_mul(e, f32_from_bits(0x3F317200u));
  const float el = ftz_mul(e, f32_from_bits(0x35BFBE8Eu));
  const float hh = rn_add(eh, h);
  float tt = rn_add(rn_sub(eh, hh), h);
  tt = rn_add(rn_add(tt, l), el);
  const float lh = rn_add(hh, tt);
  const float ll = rn_add(tt, rn_sub(hh, lh));
  // b·ln|a| = p + q (b scaled by 2^-13 above 1e34; b's low part is 0).
  const float bb = f32_abs(b) > f32_from_bits(0x77F684DFu) ? rn_mul(b, 0x1p-13f) : b;
  const float p0 = ftz_mul(bb, lh);
  float q0 = ftz_fma(bb, lh, -p0);
  q0 = ftz_fma(bb, ll, q0);
  q0 = ftz_fma(0.0f, lh, q0);
  float p = ftz_add(p0, q0);
  float q = ftz_add(ftz_add(p0, -p), q0);
  if (f32_bits(p) == 0x42B17218u) {  // RN32(ln FLT_MAX rounded up): step one ulp down
    p = f32_from_bits(0x42B17217u);
    q = rn_add(q, 0x1p-17f);
  }
  // exp(p + q).
  float j = f32_trunc(ftz_mul(p, f32_from_bits(0x3FB8AA3Bu)));
  if (f32_abs(j) > 126.0f) j = f32_signbit(j) ? -126.0f : 126.0f;
  float f = ftz_fma(j, f32_from_bits(0xBF317218u), p);
  f = ftz_fma(j, f32_from_bits(0x3102E308u), f);
  const float ex = sfu_ex2_f(t, rn_mul(f, f32_from_bits(0x3FB8AA3Bu)));
  const float scale = f32_from_bits(f32_bits(rn_add(j, 12583039.0f)) << 23);
  float res = rn_mul(ex, scale);
  if (res != f32_from_bits(0x7F800000u)) res = ftz_fma(res, q, res);
  // __internal_powf_corner_cases and the special operands, in the bitcode's order.
  if (a < 0.0f && b_odd) res = -res;
  if (a == 0.0f) {
    std::uint32_t bits = b_odd ? f32_bits(rn_add(a, a)) : 0u;
    if (b < 0.0f) bits |= 0x7F800000u;
    res = f32_from_bits(bits);
  } else if (a < 0.0f && b != f32_trunc(b)) {
    res = f32_from_bits(0x7FFFFFFFu);
  }
  float fa = f32_abs(a), fb = f32_abs(b);
  if (fa < f32_from_bits(0x00800000u)) fa = 0.0f;
  if (fb < f32_from_bits(0x00800000u)) fb = 0.0f;
  if (static_cast<std::int32_t>(f32_bits(rn_add(fa, fb))) >= 0x7F800000) {
    if (f32_is_nan(a) || f32_is_nan(b)) {
      res = rn_add(a, b);
    } else if (fb == f32_from_bits(0x7F800000u)) {
      std::uint32_t bits = fa > 1.0f ? 0x7F800000u : 0u;
      if (b < 0.0f) bits ^= 0x7F800000u;
      if (a == -1.0f) bits = 0x3F800000u;
      res = f32_from_bits(bits);
    } else if (fa == f32_from_bits(0x7F800000u)) {
      std::uint32_t bits = b >= 0.0f ? 0x7F800000u : 0u;
      if (a < 0.0f && b_odd) bits ^= 0x80000000u;
      res = f32_from_bits(bits);
    }
  }
  if (a == 1.0f || b == 0.0f) res = 1.0f;
  return res;
}

}  // namespace exmy::native
