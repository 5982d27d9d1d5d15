// OCP Microscaling (MX v1.0, section 6.3) shared power-of-two scales: one E8M0 scale per block of
// 32 elements, X = 2^(floor(log2(amax)) - emax_elem), elements P_i = V_i / X cast to the element
// format with saturation to its max normal. docs/SEMANTICS.md 7.6.
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::native {

inline constexpr int kMxBlock = 32;
inline constexpr std::uint8_t kE8m0Nan = 0xFF;

// emax_elem: the unbiased exponent of the element format's largest normal (e4m3fn 8, e5m2 15,
// e3m2fn 4, e2m3fn 2, e2m1fn 2).
EXMY_HD int mx_emax_elem(const FloatFormat& elem) {
  return elem.emax();
}

// How the block's power-of-two scale is chosen from its absmax (torchao's ScaleCalculationMode;
// SEMANTICS 7.6). X is the unbiased scale exponent, code X + 127.
enum class MxScaleMode : std::uint8_t {
  floor,  // X = floor(log2 amax) - emax_elem (OCP MX v1.0; the default)
  ceil,   // X = ceil(log2 amax) - emax_elem
  even,   // amax rounded to the element's mantissa width (ties up) first, then floor
  rceil,  // X = ceil(log2(amax / fmax)) (cuBLAS / TransformerEngine)
};

// The exponent field range of E8M0: X in [-127, 127], code X + 127 in [0, 254] (0xFF is NaN).
EXMY_HD int mx_clamp_exp(int x) {
  return x < -127 ? -127 : (x > 127 ? 127 : x);
}

// A positive finite nonzero fp32 v as sig * 2^(lg - 23) with sig in [2^23, 2^24) (subnormals
// normalised): lg = floor(log2 v) exactly.
struct Fp32Norm {
  int lg;
  std::uint32_t sig;
};
EXMY_HD Fp32Norm fp32_norm(float v) {
  const std::uint32_t b = bits_of(v) & 0x7FFFFFFFu;
  const int efield = static_cast<int>(b >> 23);
  if (efield != 0) return {efield - 127, (b & 0x7FFFFFu) | 0x800000u};
  const int lz = static_cast<int>(clz64(std::uint64_t{b})) - 40;  // leading zeros in 24 bits
  return {-126 - lz, b << lz};
}

// The E8M0 scale code of a block with absmax `amax` (fp32, from absmax_combine), exact
// arithmetic (OCP MX v1.0 section 6.3 for floor): NaN or inf amax -> 0xFF (NaN scale: the whole
// block dequantizes to NaN); amax == 0 -> 0 (2^-127; every element is then +-0); else X by the
// mode from the exact value of amax, clamped to [-127, 127].
// fmax is elem's largest finite value as fp32 (to_float of its max code), which only rceil
// reads: plans pass theirs, so that a kernel does not decode it per block.
EXMY_HD std::uint8_t mx_scale_code(float amax, const FloatFormat& elem, MxScaleMode mode,
                                   float fmax) {
  if (!is_finite32(amax)) return kE8m0Nan;
  if (amax == 0.0f) return 0;
  const Fp32Norm a = fp32_norm(amax);
  const bool pow2 = a.sig == 0x800000u;
  int x = 0;
  switch (mode) {
    case MxScaleMode::floor:
      x = a.lg - mx_emax_elem(elem);
      break;
    case MxScaleMode::ceil:
      x = a.lg + (pow2 ? 0 : 1) - mx_emax_elem(elem);
      break;
    case MxScaleMode::even: {
      // Round the significand to M fraction bits, ties up: it reaches 2 iff its top M + 1
      // fraction bits are all ones.
      const int drop = 23 - elem.man_bits;
      const std::uint32_t up = (a.sig + (std::uint32_t{1} << (drop - 1))) >> 24;
      x = a.lg + static_cast<int>(up) - mx_emax_elem(elem);
      break;
    }
    case MxScaleMode::rceil: {
      // amax / fmax = (sa / sf) * 2^(la - lf) with both significands in [2^23, 2^24): the
      // quotient's ceil(log2) is la - lf, plus one when sa > sf.
      const Fp32Norm f = fp32_norm(fmax);
      x = a.lg - f.lg + (a.sig > f.sig ? 1 : 0);
      break;
    }
  }
  return static_cast<std::uint8_t>(mx_clamp_exp(x) + 127);
}

EXMY_HD std::uint8_t mx_scale_code(float amax, const FloatFormat& elem,
                                   MxScaleMode mode = MxScaleMode::floor) {
  return mx_scale_code(amax, elem, mode, to_float(elem, elem.max_code()));
}

// Unbiased scale exponent of a (non-NaN) scale code.
EXMY_HD int mx_scale_exp(std::uint8_t code) {
  return static_cast<int>(code) - 127;
}

// One element: round x * 2^-scale_exp (exact scaling, one rounding, no fp32 intermediate) into
// elem with mode r.mode and overflow satfinite. A NaN scale gives the element's NaN code where the
// format has one, else +0. x NaN/inf follow SEMANTICS 4.1 under satfinite (NaN -> NaN or +0).
EXMY_HD Encoded mx_element(const FloatFormat& elem, float x, std::uint8_t scale_code,
                           RoundMode mode, int sr_bits, std::uint32_t rand) {
  const Rounding r{mode, sr_bits, Overflow::satfinite};
  if (scale_code == kE8m0Nan) {
    return elem.has_nan() ? Encoded{elem.nan_code(false), 0} : Encoded{0, flag::invalid};
  }
  constexpr FloatFormat kFp32 = formats::fp32;  // local copy, usable in device code
  Unpacked u = unpack(kFp32, bits_of(x));
  if (u.cls == ValueClass::normal) u.exp -= mx_scale_exp(scale_code);
  return encode(elem, r, u, rand);
}

// Dequantization: RN32(value(code) * 2^scale_exp), the product rounded once (it overflows to inf
// or underflows by the fp32 rules); a NaN scale gives NaN.
EXMY_HD float mx_dequant(const FloatFormat& elem, std::uint64_t code, std::uint8_t scale_code) {
  if (scale_code == kE8m0Nan) return float_of(0x7FC00000u);
  Unpacked u = unpack(elem, code);
  if (u.cls == ValueClass::normal) u.exp += mx_scale_exp(scale_code);
  constexpr FloatFormat kFp32 = formats::fp32;  // local copy, usable in device code
  return float_of(static_cast<std::uint32_t>(encode(kFp32, Rounding{}, u).code));
}

}  // namespace exmy::native
