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
// fmax is elem's largest finite value (format_max32); plans pass theirs (see mx_scale_code).
EXMY_HD float mx_torchao_descale(float amax, float fmax) {
  return cuda_nan_result(rn_mul(amax, rn_div(1.0f, fmax)));
}

// The E8M0 code of a block with absmax `amax` (fp32 from absmax_combine with propagate).
EXMY_HD std::uint8_t mx_torchao_scale_code(float amax, const FloatFormat& elem, MxScaleMode mode,
                                           float fmax) {
  if (is_nan32(amax)) return kE8m0Nan;
  if (mode == MxScaleMode::rceil) {
    // descale = amax / max_pos, on CUDA a multiply by RN32(1 / max_pos) (a Python-float divisor);
    // exponent = 255 for NaN, 254 for inf, else clamp(ceil(log2(descale)), -127, 127) + 127
    // (log2(0) = -inf gives 0). ceil(log2) is taken exactly (SEMANTICS 7.6 names where CUDA's
    // log2f may round it down).
    const float d = mx_torchao_descale(amax, fmax);
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

EXMY_HD std::uint8_t mx_torchao_scale_code(float amax, const FloatFormat& elem, MxScaleMode mode) {
  return mx_torchao_scale_code(amax, elem, mode, format_max32(elem));
}

// What the elements of a block with scale code `code` are multiplied by.
//   rceil: rcp = descale (NaN) for code 255, 2^-127 for 254, 1.0 for 0, else exp2(127 - code),
//     exact (torchao multiplies by it);
//   floor / ceil / even: torchao divides by scale_fp32 = (code << 23) viewed as fp32 (code 0: +0,
//     code 255: +inf) clamped below to 2^-126. That S is a power of two in [2^-126, 2^127] or
//     +inf, so 1/S is exact (2^-127 is an fp32 subnormal; 1/inf = 0) and RN32(x * (1/S)) =
//     RN32(x / S) for every x: the exact values are equal and are rounded once; inf * 0 and
//     inf / inf are both NaN. The kernels take this factor once per block.
EXMY_HD float mx_torchao_factor(std::uint8_t code, MxScaleMode mode) {
  if (mode == MxScaleMode::rceil) {
    const int k = 127 - static_cast<int>(code);
    return code == kE8m0Nan ? float_of(kCudaNan)
           : code == 0      ? 1.0f
           : k >= -126      ? float_of(static_cast<std::uint32_t>(k + 127) << 23)
                            : float_of(std::uint32_t{1} << (k + 149));
  }
  if (code == kE8m0Nan) return 0.0f;            // 1 / +inf
  if (code <= 1) return float_of(0x7E800000u);  // 1 / 2^-126 (code 0 is clamped up to it)
  const int k = 127 - static_cast<int>(code);   // 1 / 2^(code - 127) = 2^k, k in [-127, 125]
  return k >= -126 ? float_of(static_cast<std::uint32_t>(k + 127) << 23)
                   : float_of(std::uint32_t{1} << (k + 149));
}

// Whether torchao clamps the scaled elements to [-fmax, fmax] before the cast: every element
// under rceil; fp8 elements only under floor / ceil / even (fp6 / fp4 saturate in their cast).
EXMY_HD bool mx_torchao_clamps(const FloatFormat& elem, MxScaleMode mode) {
  return mode == MxScaleMode::rceil || elem.total_bits() == 8;
}

// One element given its block's factor: y = RN32(x * factor) (CUDA's NaN), the clamp, the cast.
EXMY_HD Encoded mx_torchao_scaled(const FloatFormat& elem, float x, float factor, bool clamp) {
  float y = cuda_nan_result(rn_mul(x, factor));
  if (clamp) y = torch_clamp(y, format_max32(elem));
  return {torchao_element_cast(elem, bits_of(y)), 0};
}

// One element x of a block with scale code `code`.
EXMY_HD Encoded mx_torchao_element(const FloatFormat& elem, float x, std::uint8_t code,
                                   MxScaleMode mode) {
  return mx_torchao_scaled(elem, x, mx_torchao_factor(code, mode), mx_torchao_clamps(elem, mode));
}

}  // namespace exmy::native
