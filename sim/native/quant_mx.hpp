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

// The E8M0 scale code of a block with absmax `amax` (fp32, from absmax_combine with propagate):
// NaN or inf amax -> 0xFF (NaN scale: the whole block dequantizes to NaN); amax == 0 -> the
// code 0 (2^-127; every element is then +-0); else the biased exponent
// floor(log2(amax)) - emax_elem + 127, clamped to [0, 254].
EXMY_HD std::uint8_t mx_scale_code(float amax, const FloatFormat& elem) {
  if (!is_finite32(amax)) return kE8m0Nan;
  if (amax == 0.0f) return 0;
  const std::uint32_t b = bits_of(amax);
  const int efield = static_cast<int>(b >> 23);
  // floor(log2(amax)): the unbiased exponent, for subnormals from the leading mantissa bit.
  const int lg = efield != 0 ? efield - 127 : -86 - clz64(std::uint64_t{b & 0x7FFFFFu});
  int e = lg - mx_emax_elem(elem) + 127;
  if (e < 0) e = 0;
  if (e > 254) e = 254;
  return static_cast<std::uint8_t>(e);
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
