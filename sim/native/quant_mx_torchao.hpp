// MX block scaling as torchao's to_mx computes it (torchao 0.18,
// prototype/mx_formats/mx_tensor.py; `--scheme mx --variant torchao`), docs/SEMANTICS.md 7.6.
// The scale code agrees with the exact OCP rule of quant_mx.hpp except where the fp32
// arithmetic below says otherwise; the element path differs in four named places:
//   1. inf amax: the exponent field 255 is read as 2^128 (code 128 - emax_elem + 127), not NaN;
//   2. floor / ceil / even: the elements are divided by the fp32 scale clamped below to 2^-126
//      (torch.clamp(scale_fp32, min=F32_MIN_NORMAL)), so a code-0 block is scaled by 2^126;
//      a NaN scale (code 255) is the fp32 +inf, so the block's finite elements become +-0 and
//      only NaN elements stay NaN;
//   3. rceil: descale = RN32(amax * RN32(1 / fmax)), code = ceil(log2 descale) + 127 clamped
//      (inf -> 254, NaN -> 255), the elements are multiplied by 2^(127 - code), except code 0,
//      which multiplies by 1.0, and code 255, which multiplies by NaN;
//   4. the element cast is torch's / torchao's (torch_casts.hpp) of the fp32 quotient, after a
//      clamp to [-fmax, fmax] (fp8 elements under floor/ceil/even; every element under rceil).
// Dequantization is torchao's to_dtype: RN32(value(code) * 2^(scale - 127)), NaN for 0xFF, which
// is mx_dequant (the plan calls it for both rules).
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"
#include "sim/native/quant_mx.hpp"
#include "sim/native/quant_scaled_cast.hpp"
#include "sim/native/torch_casts.hpp"

namespace exmy::native {

// RCEIL's descale = RN32(amax * RN32(1 / max_pos)) (torch's CUDA division by a Python float).
EXMY_HD float mx_torchao_descale(float amax, const FloatFormat& elem) {
  return cuda_nan_result(rn_mul(amax, rn_div(1.0f, format_max32(elem))));
}

// The E8M0 code of a block with absmax `amax` (fp32 from absmax_combine with propagate).
EXMY_HD std::uint8_t mx_torchao_scale_code(float amax, const FloatFormat& elem, MxScaleMode mode) {
  if (is_nan32(amax)) return kE8m0Nan;
  if (mode == MxScaleMode::rceil) {
    // descale = amax / max_pos, on CUDA a multiply by RN32(1 / max_pos) (a Python-float divisor);
    // exponent = 255 for NaN, 254 for inf, else clamp(ceil(log2(descale)), -127, 127) + 127
    // (log2(0) = -inf gives 0). ceil(log2) is taken exactly (SEMANTICS 7.6 names where CUDA's
    // log2f may round it down).
    const float d = mx_torchao_descale(amax, elem);
    if (!is_finite32(d)) return is_nan32(d) ? kE8m0Nan : 254;
    if (d == 0.0f) return 0;
    const Fp32Norm n = fp32_norm(d);
    return static_cast<std::uint8_t>(mx_clamp_exp(n.lg + (n.sig == 0x800000u ? 0 : 1)) + 127);
  }
  std::uint32_t b = bits_of(amax);
  if (mode == MxScaleMode::even) {
    // max_abs = (bits + (1 << (23 - mbits - 1))) & 0xFF800000: rounds the significand to mbits
    // fraction bits (ties up), carrying into the exponent field.
    b = (b + (std::uint32_t{1} << (22 - elem.man_bits))) & 0xFF800000u;
  }
  // extracted_pow2 = ((bits >> 23) & 0xFF) - 127, read from the field (an fp32 subnormal reads
  // -127; 0 reads -127, inf reads 128).
  int e = static_cast<int>((b >> 23) & 0xFFu) - 127;
  if (mode == MxScaleMode::ceil && (b & 0x7FFFFFu) != 0) e += 1;
  int x = e - mx_emax_elem(elem);
  // clamp(min = -127, max = 128): 128 + 127 = 255 is reachable only by NaN (handled above)
  // since emax_elem >= 2 for every MX element format.
  x = x < -127 ? -127 : (x > 128 ? 128 : x);
  return static_cast<std::uint8_t>(x + 127);
}

// One element x of a block with scale code `code`.
EXMY_HD Encoded mx_torchao_element(const FloatFormat& elem, float x, std::uint8_t code,
                                   MxScaleMode mode) {
  const float fmax = format_max32(elem);
  float y;
  bool clamp;
  if (mode == MxScaleMode::rceil) {
    // rcp = descale (NaN) for code 255, 2^-127 for 254, 1.0 for 0, else exp2(127 - code), exact.
    const int k = 127 - static_cast<int>(code);
    const float d = code == kE8m0Nan ? float_of(kCudaNan)
                    : code == 0      ? 1.0f
                    : k >= -126      ? float_of(static_cast<std::uint32_t>(k + 127) << 23)
                                     : float_of(std::uint32_t{1} << (k + 149));
    y = rn_mul(x, d);
    clamp = true;
  } else {
    // scale_fp32 = (code << 23) viewed as fp32 (code 0: +0, code 255: +inf), clamped below to
    // 2^-126; data_lp = data_hp / scale_fp32.
    float s = float_of(static_cast<std::uint32_t>(code) << 23);
    if (s < float_of(0x00800000u)) s = float_of(0x00800000u);
    y = rn_div(x, s);
    clamp = elem.total_bits() == 8;  // fp8 only: fp6 / fp4 saturate in their own cast
  }
  y = cuda_nan_result(y);
  if (clamp) y = torch_clamp(y, fmax);
  return {torchao_element_cast(elem, bits_of(y)), 0};
}


}  // namespace exmy::native
