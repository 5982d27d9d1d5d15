// NVFP4: e2m1fn elements in blocks of 16 along the last dimension, one e4m3fn block scale per
// block, optionally an fp32 per-tensor scale (two-level). Two peer variants, each as its source
// computes it (docs/SEMANTICS.md 7.11):
//   torchao  (torchao 0.18 prototype/mx_formats/nvfp4_tensor.py, nvfp4_quantize)
//   te       (TransformerEngine's NVFP4 reference quantizer, quantization_ref_nvfp4.py)
// Host and device.
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"
#include "sim/native/torch_casts.hpp"

namespace exmy::native {

inline constexpr int kNvfp4Block = 16;
inline constexpr float kE2m1Max = 6.0f;    // F4_E2M1_MAX
inline constexpr float kE4m3Max = 448.0f;  // F8E4M3_MAX
// torch.finfo(torch.float8_e4m3fn).tiny = 2^-6, the smallest normal e4m3fn (E4M3_EPS).
inline constexpr float kE4m3Tiny = 0.015625f;
inline constexpr float kFltMax = 3.40282346638528859812e+38f;

// The per-tensor level of a plan. Without two_level the block scales stand alone.
struct Nvfp4Tensor {
  bool two_level = false;
  // torchao: per_tensor_scale = RN32(amax / 2688) (per_tensor_amax_to_scale) or given.
  float per_tensor_scale = 1.0f;
  // te: global_encode_scale = min(RN32(2688 / amax), FLT_MAX), 1 when that is 0;
  // global_decode_scale = RN32(1 / global_encode_scale).
  float global_encode = 1.0f;
  float global_decode = 1.0f;
};

EXMY_HD float e4m3_value(std::uint8_t code) {
  constexpr FloatFormat kE4m3 = formats::e4m3fn;  // local copy, usable in device code
  return to_float(kE4m3, code);
}

// torch's .to(float8_e4m3fn) of an fp32 value in [-448, 448] or NaN.
EXMY_HD std::uint8_t e4m3_from_clamped(float v) {
  constexpr FloatFormat kE4m3 = formats::e4m3fn;
  return torch_fp8_from_fp32(kE4m3, bits_of(v));
}

// torch's CUDA division of a tensor by a Python float c: RN32(t * RN32(1 / c)).
EXMY_HD float cuda_div_const(float t, float c) {
  return cuda_nan_result(rn_mul(t, rn_div(1.0f, c)));
}
// RN32(1 / 6) = 0x3E2AAAAB, the divisor of `amax / 6` as a constant (a device division by a
// constant is not folded); tests/quant/test_nvfp4.cpp checks it against rn_div(1, 6).
inline constexpr float kRcpE2m1Max = 0x1.555556p-3f;
EXMY_HD float cuda_div_by_6(float t) {
  return cuda_nan_result(rn_mul(t, kRcpE2m1Max));
}

// ---- torchao ------------------------------------------------------------------------------------
// per_tensor_amax_to_scale: amax.to(float32) / (F8E4M3_MAX * F4_E2M1_MAX), 2688 a Python float.
EXMY_HD float nvfp4_torchao_tensor_scale(float tensor_amax) {
  return cuda_div_const(tensor_amax, 2688.0f);
}

// block_scale = amax / 6 (a Python float: RN32(amax * RN32(1/6))); single level:
// clamp(block_scale, E4M3_EPS, 448) -> e4m3fn; two-level: clamp(RN32(block_scale /
// per_tensor_scale), E4M3_EPS, 448) -> e4m3fn (a true division: the scale is a tensor).
// The scale code is the e4m3fn cast of the clamped value (in [2^-6, 448], or CUDA's NaN); the
// kernels may cast it with the fp8 instruction (SEMANTICS 7.9), so the value is its own function.
EXMY_HD float nvfp4_torchao_scale_value(float amax, const Nvfp4Tensor& t) {
  float s = cuda_div_by_6(amax);  // = cuda_div_const(amax, 6)
  if (t.two_level) s = cuda_nan_result(rn_div(s, t.per_tensor_scale));
  if (!is_nan32(s)) s = s < kE4m3Tiny ? kE4m3Tiny : (s > kE4m3Max ? kE4m3Max : s);
  return s;
}
EXMY_HD std::uint8_t nvfp4_torchao_scale_code(float amax, const Nvfp4Tensor& t) {
  return e4m3_from_clamped(nvfp4_torchao_scale_value(amax, t));
}

// The factor elements are multiplied by: RN32(1 / S) single level; RN32(RN32(1 / pts) / S)
// two-level, S the decoded block scale (a NaN S gives CUDA's NaN whatever its bits).
EXMY_HD float nvfp4_torchao_factor(float s, const Nvfp4Tensor& t) {
  const float num = t.two_level ? rn_div(1.0f, t.per_tensor_scale) : 1.0f;
  return cuda_nan_result(rn_div(num, s));
}
EXMY_HD float nvfp4_torchao_element_scale(std::uint8_t code, const Nvfp4Tensor& t) {
  return nvfp4_torchao_factor(e4m3_value(code), t);
}

// data_scaled = x * r; clamp to [-6, 6]; f32_to_f4_unpacked. r is the group's element scale.
EXMY_HD Encoded nvfp4_torchao_scaled(float x, float r) {
  // = torchao_f32_to_fx_unpacked(torch_clamp(cuda_nan_result(RN32(x * r)), 6), 2, 1)
  return {e2m1_code_clamp6(rn_mul(x, r)), 0};
}

// Dequantization (NVFP4Tensor.dequantize): value(code) * S, with S = RN32(pts * S) when
// two-level.
EXMY_HD float nvfp4_torchao_dequant(std::uint32_t code, std::uint8_t scale, const Nvfp4Tensor& t) {
  constexpr FloatFormat kE2m1 = formats::e2m1fn;
  float s = e4m3_value(scale);
  if (t.two_level) s = rn_mul(t.per_tensor_scale, s);
  return rn32_mul(to_float(kE2m1, code), s);
}

// ---- TransformerEngine reference ----------------------------------------------------------------
// Every operand is an fp32 CUDA tensor, so divisions are true IEEE divisions.
// global_encode_scale = min(RN32(2688 / amax), FLT_MAX), replaced by 1 where it is 0 (amax
// inf); global_decode_scale = RN32(1 / global_encode_scale). amax = 0 gives FLT_MAX.
EXMY_HD Nvfp4Tensor nvfp4_te_tensor(float tensor_amax) {
  Nvfp4Tensor t;
  t.two_level = true;
  float enc = cuda_nan_result(rn_div(2688.0f, tensor_amax));
  if (enc > kFltMax) enc = kFltMax;  // torch.min(., FLT_MAX); NaN stays
  if (enc == 0.0f) enc = 1.0f;
  t.global_encode = enc;
  t.global_decode = cuda_nan_result(rn_div(1.0f, enc));
  return t;
}

// decode_scale = clamp(min(RN32(vec_max * RN32(global_encode * RN32(1/6))), FLT_MAX), -448, 448)
// -> e4m3fn (no lower clamp: it can be subnormal or 0).
EXMY_HD float nvfp4_te_scale_value(float amax, const Nvfp4Tensor& t) {
  const float mult = cuda_div_by_6(t.global_encode);  // RN32(ges * RN32(1/6))
  float d = cuda_nan_result(rn_mul(amax, mult));
  if (!is_nan32(d)) d = d > kE4m3Max ? kE4m3Max : (d < -kE4m3Max ? -kE4m3Max : d);
  return d;
}
EXMY_HD std::uint8_t nvfp4_te_scale_code(float amax, const Nvfp4Tensor& t) {
  return e4m3_from_clamped(nvfp4_te_scale_value(amax, t));
}

// encode_scale = min(RN32(1 / RN32(decode_scale_fp32 * global_decode)), FLT_MAX), s the decoded
// block scale (a NaN s gives CUDA's NaN whatever its bits).
EXMY_HD float nvfp4_te_factor(float s, const Nvfp4Tensor& t) {
  float enc = cuda_nan_result(rn_div(1.0f, cuda_nan_result(rn_mul(s, t.global_decode))));
  if (enc > kFltMax) enc = kFltMax;
  return enc;
}
EXMY_HD float nvfp4_te_element_scale(std::uint8_t code, const Nvfp4Tensor& t) {
  return nvfp4_te_factor(e4m3_value(code), t);
}

// cast_to_fp4x2: comparisons against the e2m1 midpoints, ties to the even code, saturating; every
// comparison is false for NaN and -0.0 >= 0.0 holds, so NaN and -0 give code 0; a negative value
// that rounds to zero gives 8 (-0). For every other fp32 that is torchao's encoder (RNE,
// saturating, sign kept), which is integer arithmetic (tests/quant/test_nvfp4.cpp checks the two
// against TE's comparison table).
EXMY_HD std::uint8_t te_cast_to_fp4(float y) {
  if (is_nan32(y) || y == 0.0f) return 0;
  return torchao_f32_to_fx_unpacked(bits_of(y), 2, 1);
}
// te_cast_to_fp4(torch_clamp(p, 6)) of a product p, without branches: NaN and ±0 give 0, every
// other value torchao's encoder of the clamped value (e2m1_code_clamp6).
EXMY_HD std::uint8_t te_cast_to_fp4_clamp6(float p) {
  const std::uint32_t mag = bits_of(p) & 0x7FFFFFFFu;
  const std::uint8_t c = e2m1_code_clamp6(p);
  return mag == 0 || mag > 0x7F800000u ? std::uint8_t{0} : c;
}

// q = clamp(RN32(x * encode_scale), -6, 6), then cast_to_fp4x2. es is the group's encode scale.
EXMY_HD Encoded nvfp4_te_scaled(float x, float es) {
  // = te_cast_to_fp4(torch_clamp(cuda_nan_result(RN32(x * es)), 6))
  return {te_cast_to_fp4_clamp6(rn_mul(x, es)), 0};
}

// exmy's dequantization for the te variant: RN32(RN32(value(code) * S) * global_decode) (the
// reference itself only decodes inside its GEMM).
EXMY_HD float nvfp4_te_dequant(std::uint32_t code, std::uint8_t scale, const Nvfp4Tensor& t) {
  constexpr FloatFormat kE2m1 = formats::e2m1fn;
  return rn32_mul(rn32_mul(to_float(kE2m1, code), e4m3_value(scale)), t.global_decode);
}

}  // namespace exmy::native
