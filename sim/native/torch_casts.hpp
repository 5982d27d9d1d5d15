// PyTorch's and torchao's own fp32 -> narrow-float conversions, as written in their sources, for
// the peer-compatible quantizers (docs/SEMANTICS.md 7.6, 7.11, 12). They differ from section 2's
// rounding only where named here:
//   - torch's fp32 -> float8_e4m3fn / float8_e5m2 (c10 fp8e4m3fn_from_fp32_value,
//     fp8e5m2_from_fp32_value) round to nearest even like exmy; a NaN becomes 0x7F | sign for
//     both (exmy's e5m2 NaN is the quiet 0x7E | sign). The callers clamp to [-fmax, fmax] first,
//     so torch's non-saturating overflow rule (e4m3fn: |x| >= 480 -> NaN) is never reached.
//   - torchao's _f32_to_floatx_unpacked (prototype/custom_fp_utils.py; f32_to_f4_unpacked,
//     f32_to_f6_e2m3_unpacked, f32_to_f6_e3m2_unpacked) is integer bit arithmetic with no
//     special-value branch: |x| >= max_normal (inf included) saturates, a NaN takes the normal
//     branch and produces whatever code its bits give. That code depends on the NaN's bits,
//     so the callers pass the NaN that the platform's arithmetic produced (kCudaNan on NVIDIA
//     GPUs).
// Host and device.
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"

namespace exmy::native {

// The NaN every NVIDIA GPU arithmetic instruction returns for NaN results (sign clear, all
// payload bits set); what torch's CUDA kernels hand to the next step when an operand is NaN.
inline constexpr std::uint32_t kCudaNan = 0x7FFFFFFFu;

// torch's fp32 -> fp8 conversion of a value already clamped to [-fmax, fmax] (or NaN).
EXMY_HD std::uint8_t torch_fp8_from_fp32(const FloatFormat& f, std::uint32_t y) {
  if ((y & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<std::uint8_t>(0x7Fu | ((y >> 24) & 0x80u));
  constexpr FloatFormat kFp32 = formats::fp32;  // local copy, usable in device code
  const Rounding r{RoundMode::rne, 0, Overflow::satfinite};
  return static_cast<std::uint8_t>(convert(kFp32, f, r, y, 0).code);
}

// torchao _f32_to_floatx_unpacked(x, ebits, mbits) on the fp32 bits x, line for line (ebits,
// mbits as of e2m1 / e2m3 / e3m2; exp_bias = 2^(ebits-1) - 1).
EXMY_HD std::uint8_t torchao_f32_to_fx_unpacked(std::uint32_t x, int ebits, int mbits) {
  const int exp_bias = (1 << (ebits - 1)) - 1;
  const std::uint32_t max_int = (std::uint32_t{1} << (ebits + mbits)) - 1;
  const std::uint32_t sign_mask = std::uint32_t{1} << (ebits + mbits);
  const std::int32_t magic_adder = (std::int32_t{1} << (23 - mbits - 1)) - 1;
  // max_normal = 2^(2^ebits - 1 - exp_bias) * (2^(mbits+1) - 1) / 2^mbits; min_normal =
  // 2^(1 - exp_bias): both exact fp32 values, built from their fields.
  const std::uint32_t max_normal_bits =
      (static_cast<std::uint32_t>((1 << ebits) - 1 - exp_bias + 127) << 23) |
      (((std::uint32_t{1} << mbits) - 1) << (23 - mbits));
  const std::uint32_t min_normal_bits = static_cast<std::uint32_t>(1 - exp_bias + 127) << 23;
  const std::int32_t denorm_exp = (127 - exp_bias) + (23 - mbits) + 1;
  const std::int32_t denorm_mask_int = denorm_exp << 23;

  const std::uint32_t sign = x & 0x80000000u;
  const std::uint32_t mag = x ^ sign;
  const float xf = float_of(mag);
  // torch compares as floats: a NaN is neither >= max_normal nor < min_normal.
  const bool saturate = xf >= float_of(max_normal_bits);
  const bool denormal = !saturate && xf < float_of(min_normal_bits);
  std::uint8_t r = static_cast<std::uint8_t>(max_int);
  if (denormal) {
    // denormal_x = (x + denorm_mask_float).view(int32) - denorm_mask_int, one RN32 addition.
    const std::int32_t d = static_cast<std::int32_t>(bits_of(
                               rn_add(xf, float_of(static_cast<std::uint32_t>(denorm_mask_int))))) -
                           denorm_mask_int;
    r = static_cast<std::uint8_t>(d);
  } else if (!saturate) {
    std::int32_t n = static_cast<std::int32_t>(mag);
    const std::int32_t mant_odd = (n >> (23 - mbits)) & 1;
    n += static_cast<std::int32_t>(static_cast<std::uint32_t>(exp_bias - 127) << 23) + magic_adder;
    n += mant_odd;
    n >>= (23 - mbits);
    r = static_cast<std::uint8_t>(n);  // int32 -> uint8 keeps the low byte
  }
  // sign_lp = (sign >> (23 + 8 - mbits - ebits)) & sign_mask on int32 (an arithmetic shift; the
  // mask keeps only the target's sign bit either way).
  const std::uint32_t sign_lp = (sign >> (31 - mbits - ebits)) & sign_mask;
  return static_cast<std::uint8_t>(r | sign_lp);
}

// torchao_f32_to_fx_unpacked(y, 2, 1) (e2m1) for |y| <= 6 and for NaN, without branches: the
// kernels' NVFP4 element path (each branch of the general encoder costs a divergence region; this
// is about a third of its instructions). Both of torchao's branches are computed and one is
// selected: the denormal branch for |y| < 1 (min_normal), else the normal branch, whose int32
// arithmetic wraps like torchao's and keeps the same low byte (bits 22..29 of n are the same for
// logical and arithmetic shifts). Its saturating branch (|y| >= max_normal = 6) gives 7, which the
// normal branch also gives at |y| = 6, so the precondition |y| <= 6 makes it redundant; NVFP4
// clamps to [-6, 6] first. tests/quant/test_nvfp4.cpp compares the two on every fp32 |y| <= 6.
EXMY_HD std::uint8_t e2m1_code_clamped(std::uint32_t y) {
  const std::uint32_t mag = y & 0x7FFFFFFFu;
  // Normal branch: n = mag + ((1 - 127) << 23) + (2^21 - 1) + mant_odd, then n >> 22.
  const std::uint32_t odd = (mag >> 22) & 1u;
  const std::uint32_t normal = (mag - 0x3F000000u + 0x1FFFFFu + odd) >> 22;
  // Denormal branch: bits(|y| + 2^22) - bits(2^22), one RN32 addition (2^22 = 149 << 23) whose
  // ulp is 0.5: 0 up to 0.25 (the tie goes to the even 2^22), 1 below 0.75, 2 from 0.75 (the
  // tie goes to 2^22 + 1) — two integer compares on the magnitude bits.
  const std::uint32_t denormal = static_cast<std::uint32_t>(mag > 0x3E800000u) +
                                 static_cast<std::uint32_t>(mag >= 0x3F400000u);
  const std::uint32_t r =
      mag < 0x3F800000u ? denormal : normal;  // |y| < 1; NaN: normal, as torchao
  return static_cast<std::uint8_t>((r & 0xFFu) | ((y >> 28) & 0x8u));
}

// NVFP4's element code from the product p = x * factor as CUDA computes it: torchao's encoder of
// torch.clamp(p, -6, 6), where a NaN p is CUDA's NaN (code e2m1_code_clamped(kCudaNan)); for a
// non-NaN p the clamp is min(|p|, 6) on the magnitude bits with the sign kept.
EXMY_HD std::uint8_t e2m1_code_clamp6(float p) {
  const std::uint32_t b = bits_of(p);
  const std::uint32_t mag = b & 0x7FFFFFFFu;
  const std::uint32_t m6 = mag < 0x40C00000u ? mag : 0x40C00000u;  // 6.0f
  const std::uint8_t c = e2m1_code_clamped(m6 | (b & 0x80000000u));
  return mag > 0x7F800000u ? e2m1_code_clamped(kCudaNan) : c;
}

// The torch / torchao element cast of an fp32 value y (bits) into the MX / NVFP4 element
// format f: fp8 formats through torch_fp8_from_fp32, fp6 / fp4 through torchao's unpacked
// conversion. y has been clamped to [-fmax, fmax] by the caller where torchao clamps.
EXMY_HD std::uint8_t torchao_element_cast(const FloatFormat& f, std::uint32_t y) {
  if (f.total_bits() == 8) return torch_fp8_from_fp32(f, y);
  return torchao_f32_to_fx_unpacked(y, f.exp_bits, f.man_bits);
}

// torch.clamp(y, -m, m) on fp32 (NaN stays, with its bits).
EXMY_HD float torch_clamp(float y, float m) {
  if (is_nan32(y)) return y;
  return y > m ? m : (y < -m ? -m : y);
}

// A NaN produced by a CUDA arithmetic instruction has the bits kCudaNan.
EXMY_HD float cuda_nan_result(float r) {
  return is_nan32(r) ? float_of(kCudaNan) : r;
}

}  // namespace exmy::native
