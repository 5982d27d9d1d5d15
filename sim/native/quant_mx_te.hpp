// MX block scaling as TransformerEngine's MXFP8 quantizer computes it (`--scheme mx --variant te`,
// docs/SEMANTICS.md 7.6; the MXFP8BlockScaling recipe, 16.1). Written from NVIDIA/
// TransformerEngine d0067d0 (August 2026): transformer_engine/common/cast/mxfp8/quantize_mxfp8.cuh
// (quantize_mxfp8_kernel), common/util/ptx_arch_spec.cuh float_to_e8m0 (the non-Blackwell branch;
// Blackwell's cvt.rp.satfinite.ue8m0x2.f32 is the same function of its input), common/util/ptx.cuh
// exp2f_rcp<float> and mul_cvt_2x, common/utils.cuh Quantized_Limits::max_norm_rcp; the C++ test
// reference TransformerEngine/tests/cpp/test_common.h (float_to_e8m0, exp2f_rcp) and
// TransformerEngine/tests/cpp/operator/test_cast_mxfp8.cu (compute_ref) compute the same:
//   amax   fmaxf / __hmax over |x| from 0: a NaN element is skipped (plan nan = ignore);
//   v      = RN32(amax * max_norm_rcp), max_norm_rcp = (float)(1.0 / fmax) (fmax 448 or 57344);
//   code   NaN v -> 0xFF, inf v -> 0xFE, v = 0 -> 0, else the exponent field E of v, plus one when
//          the mantissa field M is nonzero, except E = 0xFE (satfinite) and E = 0 with
//          M <= 0x400000 (v <= 2^-127 stays 2^-127);
//   factor exp2f_rcp(code): 0xFF -> NaN, 0xFE -> 2^-127 (0x00400000), else 2^(127 - code) (code 0
//          multiplies by 2^127, where torchao's rceil multiplies by 1.0);
//   y      = RN32(x * factor) (mul.f32x2 / the float multiply), code = cvt.rn.satfinite of y into
//          e4m3 / e5m2: finite overflow and +-inf saturate to +-fmax, NaN -> 0x7F (the PTX
//          canonical NaN, positive, for both formats).
// Dequantization: value(code) * 2^(code - 127) (mx_dequant).
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"
#include "sim/native/quant_mx.hpp"
#include "sim/native/quant_scaled_cast.hpp"

namespace exmy::native {

// Quantized_Limits<OType>::max_norm_rcp: 1.0 / max_norm in double, stored as a float constant.
EXMY_HD float mx_te_max_norm_rcp(float fmax) {
  return static_cast<float>(1.0 / static_cast<double>(fmax));
}

// float_to_e8m0 of v = RN32(amax * max_norm_rcp).
EXMY_HD std::uint8_t mx_te_scale_code(float amax, float fmax) {
  const float v = rn_mul(amax, mx_te_max_norm_rcp(fmax));
  if (is_nan32(v)) return kE8m0Nan;
  if (!is_finite32(v)) return 0xFE;
  if (v == 0.0f) return 0;
  const std::uint32_t b = bits_of(v);
  std::uint32_t e = (b >> 23) & 0xFFu;
  const std::uint32_t m = b & 0x7FFFFFu;
  if (m > 0 && e != 0xFEu && !(e == 0 && m <= 0x400000u)) ++e;
  return static_cast<std::uint8_t>(e);
}

// exp2f_rcp<float>(code): what the block's elements are multiplied by.
EXMY_HD float mx_te_factor(std::uint8_t code) {
  if (code == kE8m0Nan) return float_of(0x7FFFFFFFu);
  if (code == 0xFE) return float_of(0x00400000u);
  return float_of(static_cast<std::uint32_t>(254 - code) << 23);
}

// One element given its block's factor: RN32(x * factor), then cvt.rn.satfinite.
EXMY_HD Encoded mx_te_scaled(const FloatFormat& elem, float x, float factor) {
  const float y = rn_mul(x, factor);
  if (is_nan32(y)) return {0x7F, 0};
  const Rounding sat{RoundMode::rne, 0, Overflow::satfinite};
  return {static_cast<std::uint8_t>(cast_fp32(elem, y, sat, 0).code), 0};
}

EXMY_HD Encoded mx_te_element(const FloatFormat& elem, float x, std::uint8_t code) {
  return mx_te_scaled(elem, x, mx_te_factor(code));
}

}  // namespace exmy::native
