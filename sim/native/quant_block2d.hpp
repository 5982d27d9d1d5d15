// 2-D block (tile) scaling with the arithmetic of the libraries that train with it
// (docs/SEMANTICS.md 7.15). One fp32 scale per R×C tile; the three named rules:
//
//   deepgemm  DeepGEMM deep_gemm/utils/math.py per_token_cast_to_fp8 (1×128) and
//             per_block_cast_to_fp8 (128×128) as torch runs them on CUDA:
//               a  = max(amax, RN32(1e-4))                       (torch.clamp; NaN stays NaN)
//               sf = RN32(a · RN32(1/448))   (x_amax / 448.0: ATen's CUDA division by a CPU scalar
//                                             multiplies by the scalar's fp32 reciprocal)
//               ue8m0: sf = 2^(e + [m ≠ 0]) with e, m the biased exponent and mantissa of sf,
//                      the exponent clamped to [1, 254] (ceil_to_ue8m0 at DeepGEMM's head)
//               code = torch e4m3fn(RN32(x · RN32(1/sf)))   (1.0 / sf is Tensor.__rtruediv__ =
//                                             reciprocal(sf) · 1.0); stored scale sf.
//   te        TransformerEngine TransformerEngine/tests/pytorch/references: quantize_scale_calc.py
//             scale_from_amax_tensor inside blockwise_quantizer_reference.py:
//               a = max(amax, RN32(eps)) (NaN propagates); s = RN32(fmax / a); s = +inf → the
//               source dtype's largest finite value; pow2: s = 2^(frexp(s).exp − 1) (frexp of NaN
//               and 0 gives exponent 0), then s = 0 where a = +inf; s = 1 where a = 0;
//               code = torch fp8(clamp(RN32(x · s), −fmax, fmax)); stored scale RN32(1/s).
//   torchao   torchao 0.18 prototype/blockwise_fp8_training/kernels.py (Triton):
//               a = maxnum(amax, eps) with eps = RN32(1e-12) for every source dtype (tl.clamp
//               turns its Python-float bounds into fp32 tensors before the promotion, so an fp16
//               amax is widened to fp32: Triton core.clamp (language core module), then
//               semantic.py computation_type_impl rule 2); NaN elements never reach the max
//               (max.f32 ignores NaN); s = RN32(RN64(448 / a)) = RN32(448 / a);
//               y = RN32(x · s); clip = min.xorsign.abs(y, 448) (a NaN y gives +448: GPU NaNs are
//               positive); code = cvt.rn.satfinite e4m3; stored scale RN32(1/s).
//
// The state word of a tile is what its element function needs: deepgemm's sf, the others' s.
// The state file holds each library's dequantization scale (block2d_stored_scale); dequantization
// is RN32(v · stored) for all three.
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"
#include "sim/native/rounding.hpp"
#include "sim/native/torch_casts.hpp"

namespace exmy::native {

// The form of a tile scale (--scale-format): any fp32 value, a power of two (TE's pow_2_scales,
// rounding the quantization scale down) or UE8M0 (DeepGEMM's ceil_to_ue8m0, rounding the
// dequantization scale up).
enum class BlockScaleFormat : std::uint8_t { fp32, pow2, ue8m0 };

// RN32(1e-4), the constant torch.clamp(min=1e-4) compares with (0x38D1B717).
inline constexpr std::uint32_t kDeepgemmEpsBits = 0x38D1B717u;
// RN32(1/448) as ATen computes the reciprocal of the CPU scalar 448.0 in fp32 (0x3B124925).
inline constexpr std::uint32_t kRecip448Bits = 0x3B124925u;
// RN32(1e-12), torchao's EPS as a Triton fp32 constant (0x2B8CBCCC).
inline constexpr std::uint32_t kTorchaoEpsBits = 0x2B8CBCCCu;

// DeepGEMM's ceil_to_ue8m0 on fp32 bits (x >= 0 or NaN): the exponent field, plus one when the
// mantissa is not zero, clamped to [1, 254].
EXMY_HD float deepgemm_ceil_ue8m0(float x) {
  const std::uint32_t b = bits_of(x) & 0x7FFFFFFFu;
  int e = static_cast<int>(b >> 23) + ((b & 0x7FFFFFu) != 0 ? 1 : 0);
  e = e < 1 ? 1 : (e > 254 ? 254 : e);
  return float_of(static_cast<std::uint32_t>(e) << 23);
}

// DeepGEMM's sf of a tile with absmax `amax` (NaN when the tile holds a NaN).
EXMY_HD float deepgemm_sf(float amax, bool ue8m0) {
  const float eps = float_of(kDeepgemmEpsBits);
  const float a = is_nan32(amax) ? amax : (amax < eps ? eps : amax);
  const float sf = rn32_mul(a, float_of(kRecip448Bits));
  return ue8m0 ? deepgemm_ceil_ue8m0(sf) : sf;
}

// torch's fp32 -> float8_e4m3fn without a clamp before it (c10 fp8e4m3fn_from_fp32_value):
// |y| >= 480 (inf and NaN included) gives 0x7F | sign, the rest rounds to nearest even.
EXMY_HD std::uint8_t torch_e4m3fn_unclamped(float y) {
  const std::uint32_t b = bits_of(y);
  if ((b & 0x7FFFFFFFu) >= 0x43F00000u)
    return static_cast<std::uint8_t>(0x7Fu | ((b >> 24) & 0x80u));
  constexpr FloatFormat kE4m3 = formats::e4m3fn;
  return torch_fp8_from_fp32(kE4m3, b);
}

EXMY_HD std::uint8_t deepgemm_element(float x, float sf) {
  return torch_e4m3fn_unclamped(rn32_mul(x, rn32_div(1.0f, sf)));
}

// The exponent torch.frexp gives for a finite s > 0 (mantissa in [0.5, 1)); 0 for 0, inf, NaN.
EXMY_HD int frexp_exponent(float s) {
  const std::uint32_t b = bits_of(s) & 0x7FFFFFFFu;
  if (b == 0 || b >= 0x7F800000u) return 0;
  if ((b >> 23) == 0) return -126 - static_cast<int>(clz64(std::uint64_t{b}) - 41);  // subnormal
  return static_cast<int>(b >> 23) - 126;
}

// TransformerEngine's reference scale of a tile. `eps` the amax floor (RN32 of amax_epsilon),
// `source_max` the largest finite value of the input's dtype.
EXMY_HD float te_block_scale(float amax, float fmax, float eps, float source_max, bool pow2) {
  const float a = is_nan32(amax) ? amax : (amax < eps ? eps : amax);
  float s = rn32_div(fmax, a);
  if (bits_of(s) == 0x7F800000u) s = source_max;
  if (pow2) {
    const int e = frexp_exponent(s) - 1;
    // ldexp(1, e): e in [-127, 127] here (s normal or one of the zero-exponent cases).
    s = e >= -126 ? float_of(static_cast<std::uint32_t>(e + 127) << 23) : float_of(0x00400000u);
    if (bits_of(a) == 0x7F800000u) s = 0.0f;
  }
  if (a == 0.0f) s = 1.0f;
  return s;
}

EXMY_HD Encoded te_block_element(const FloatFormat& f, float fmax, float x, float s) {
  float y = rn32_mul(x, s);
  if (!is_nan32(y)) y = y < -fmax ? -fmax : (y > fmax ? fmax : y);
  return {torch_fp8_from_fp32(f, bits_of(y)), 0};
}

// torchao's eps: RN32(1e-12) whatever the source dtype. (Until issue 32 this returned 0 for fp16
// sources, reading tl.clamp as if the scalar 1e-12 took the fp16 tensor's type; Triton's
// core.clamp makes min/max fp32 tensors first, so the clamp runs in fp32 — the H200 run of
// 2026-12-01 showed all-zero fp16 tiles coding as ±0 with a finite scale, not +448.)
EXMY_HD float torchao_block_eps() {
  return float_of(kTorchaoEpsBits);
}

// torchao's scale: 448 / a in fp64 rounded to fp32 (the same as one RN32 division: a quotient of
// two fp32 values is never within 2^-53 relative of an fp32 midpoint unless on it).
EXMY_HD float torchao_block_scale(float amax, float fmax, float eps) {
  const float a = is_nan32(amax) || amax < eps ? eps : amax;
  return rn32_div(fmax, a);
}

EXMY_HD Encoded torchao_block_element(const FloatFormat& f, float fmax, float x, float s) {
  const float y = rn32_mul(x, s);
  // min.xorsign.abs(y, fmax): min(|y|, fmax) with y's sign; a NaN |y| loses to fmax (a GPU NaN
  // is positive).
  const std::uint32_t b = bits_of(y);
  float m = is_nan32(y) ? fmax : abs32(y);
  if (m > fmax) m = fmax;
  const std::uint32_t sign = is_nan32(y) ? 0u : (b & 0x80000000u);
  return {torch_fp8_from_fp32(f, bits_of(m) | sign), 0};
}

}  // namespace exmy::native
