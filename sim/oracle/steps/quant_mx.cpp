// docs/SEMANTICS.md 7.6: MX shared power-of-two scales (OCP Microscaling v1.0 §6.3), the exact
// `ocp` arithmetic, torchao's `to_mx` (`torchao` variant) and TransformerEngine's MXFP8 quantizer
// (`te` variant), with the dequantization.
#include <algorithm>

#include "sim/oracle/steps/quant_detail.hpp"

namespace exmy::oracle::steps::quant::detail {
namespace {

constexpr std::uint8_t kNanScale = 0xFF;

long emax_elem(const FloatFormat& f) {  // exponent of the element format's largest normal
  return floor_log2(fmax_of(f));
}
// The significand of a finite nonzero value, in [1, 2).
Real significand(const Real& a) {
  return scale2(abs(a), -floor_log2(a));
}
std::uint8_t code_of(long X) {
  return static_cast<std::uint8_t>(std::clamp(X, -127L, 127L) + 127);
}

std::uint8_t ocp_scale(const Spec& s, const Real& a) {
  if (!a.is_finite()) return kNanScale;  // NaN or inf
  if (a.is_zero()) return 0x00;
  const FloatFormat& f = *s.format;
  const long e = floor_log2(a), em = emax_elem(f);
  switch (s.scale_mode) {
    case ScaleMode::floor:
      return code_of(e - em);
    case ScaleMode::ceil:
      return code_of(e + (is_pow2(a) ? 0 : 1) - em);
    case ScaleMode::even: {
      // ã: the significand rounded to M fraction bits, ties up; it reaches 2 or stays below.
      Real t = scale2(significand(a), f.man_bits), fl;
      mpfr_add_d(t.raw(), t.get(), 0.5, MPFR_RNDN);  // exact (t has few bits)
      mpfr_floor(fl.raw(), t.get());
      const bool carries = mpfr_cmp_ui_2exp(fl.get(), 1, f.man_bits + 1) >= 0;  // ã ≥ 2
      return code_of(e + (carries ? 1 : 0) - em);
    }
    case ScaleMode::rceil: {
      // ⌈log2(a / fmax)⌉ of the exact quotient.
      const Real fmax = fmax_of(f);
      const bool more = gt(significand(a), significand(fmax));
      return code_of(e - floor_log2(fmax) + (more ? 1 : 0));
    }
  }
  return 0;
}

std::uint8_t torchao_scale(const Spec& s, const Real& a) {
  if (a.is_nan()) return kNanScale;
  const FloatFormat& f = *s.format;
  if (s.scale_mode == ScaleMode::rceil) {
    const Real d = mul32(a, div32(R(1.0), fmax_of(f)));  // RN32(a · RN32(1/fmax))
    if (d.is_nan()) return kNanScale;
    if (d.is_inf()) return 254;
    if (d.is_zero()) return 0;
    return code_of(floor_log2(d) + (is_pow2(d) ? 0 : 1));  // ⌈log2 d⌉
  }
  std::uint32_t A = a.f32_bits();
  if (s.scale_mode == ScaleMode::even) {
    A = (A + (1u << (22 - f.man_bits))) & 0xFF800000u;
  }
  long p = static_cast<long>((A >> 23) & 0xFF) - 127;
  if (s.scale_mode == ScaleMode::ceil && (A & 0x7FFFFFu) != 0) ++p;
  const long X = std::clamp(p - emax_elem(f), -127L, 128L);
  return static_cast<std::uint8_t>(X + 127);
}

// te: v = RN32(a · RN32(1/fmax)); NaN → 0xFF, inf → 0xFE, 0 → 0, else ⌈log2 v⌉ + 127 clamped to
// [0, 254] (the exponent field plus one for a nonzero mantissa, satfinite at 0xFE, a subnormal v
// of at most 2^−127 staying at 0: the same ceiling of the exact value).
std::uint8_t te_scale(const Spec& s, const Real& a) {
  if (a.is_nan()) return kNanScale;
  const Real v = mul32(a, div32(R(1.0), fmax_of(*s.format)));
  if (v.is_nan()) return kNanScale;
  if (v.is_inf()) return 0xFE;
  if (v.is_zero()) return 0;
  return code_of(floor_log2(v) + (is_pow2(v) ? 0 : 1));
}

// torch's fp8 cast (RNE; NaN → 0x7F, CUDA's NaN being positive) and torchao's
// _f32_to_floatx_unpacked for fp6/fp4 (RNE, saturating, −0 kept; the CUDA NaN 0x7FFFFFFF
// takes the normal branch: fp4 0x4, fp6 0x10).
std::uint64_t torch_element(const FloatFormat& f, const Real& y) {
  if (y.is_nan()) return f.total_bits() == 8 ? 0x7F : f.total_bits() == 6 ? 0x10 : 0x4;
  return cast(f, y, Rounding{}, Overflow::satfinite, 0);
}

}  // namespace

std::uint8_t mx_scale(const Spec& s, const Real& a) {
  return s.variant == Variant::torchao ? torchao_scale(s, a)
         : s.variant == Variant::te    ? te_scale(s, a)
                                       : ocp_scale(s, a);
}

std::uint64_t mx_code(const Spec& s, const Real& x, std::uint8_t scale, std::uint64_t i) {
  const FloatFormat& f = *s.format;
  const Real fmax = fmax_of(f);
  if (s.variant == Variant::te) {
    // y = RN32(x · f), f = 2^(127 − code) (code 0: 2^127), 2^−127 for 0xFE, NaN for 0xFF; then
    // cvt.rn.satfinite: NaN → 0x7F, ±inf and overflow → ±fmax.
    const Real r = scale == kNanScale ? Real::nan()
                   : scale == 0xFE    ? exp2(-127)
                                      : exp2(127 - static_cast<long>(scale));
    const Real y = mul32(x, r);
    if (y.is_nan()) return 0x7F;
    return cast(f, y, Rounding{}, Overflow::satfinite, 0);
  }
  if (s.variant == Variant::torchao) {
    Real y;
    if (s.scale_mode == ScaleMode::rceil) {
      const Real r = scale == kNanScale ? Real::nan()
                     : scale == 254     ? exp2(-127)
                     : scale == 0       ? R(1.0)
                                        : exp2(127 - static_cast<long>(scale));
      y = clamp(cuda(mul32(x, r)), neg(fmax), fmax);
    } else {
      // S = fp32(code << 23), at least 2^−126 (code 0xFF: +inf); y = RN32(x / S).
      const Real S = scale == 0 ? exp2(-126) : f32(static_cast<std::uint32_t>(scale) << 23);
      y = cuda(div32(x, S));
      if (f.total_bits() == 8) y = clamp(y, neg(fmax), fmax);
    }
    return torch_element(f, y);
  }
  const Rounding& r = s.rounding;
  const std::uint32_t w = sr_word(r, s.seed, kStreamCast, i);
  if (scale == kNanScale) return cast(f, Real::nan(), r, Overflow::satfinite, w);
  // P = round(x · 2^−X), the shift exact, one rounding into the element format.
  const long X = static_cast<long>(scale) - 127;
  return cast(f, scale2(x, -X), r, Overflow::satfinite, w);
}

Real mx_dequant(const Spec& s, std::uint64_t code, std::uint8_t scale) {
  if (scale == kNanScale) return Real::nan();
  // RN32(value(P) · 2^X), one rounding.
  return round(F32, scale2(value(*s.format, code), static_cast<long>(scale) - 127));
}

}  // namespace exmy::oracle::steps::quant::detail
