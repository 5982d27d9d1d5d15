// docs/SEMANTICS.md 7.4: scaled casts to a float format of at most 8 bits (SwitchBack's absmax
// float8 cast, TransformerEngine's delayed and current scaling, torchao.float8), with their
// dequantization.
#include <cfloat>

#include "sim/oracle/steps/quant_detail.hpp"

namespace exmy::oracle::steps::quant::detail {
namespace {

// s with its mantissa field cleared (`--pow2-scale`: 2^⌊log2 s⌋ read from the exponent field).
Real pow2_field(const Real& s) {
  return f32(s.f32_bits() & 0xFF800000u);
}

}  // namespace

Real cast_state(const Spec& s, const Real& a) {
  const Real fmax = fmax_of(*s.format);
  if (s.given_scale && s.variant != Variant::absmax) return *s.given_scale;
  switch (s.variant) {
    case Variant::absmax:
    case Variant::ocp:
      return a;
    case Variant::te:
      // RN32(RN32(fmax / a) / 2^margin); the previous scale when a ≤ 0 or not finite.
      if (!a.is_finite() || !gt(a, Real())) return s.prev_scale;
      return div32(div32(fmax, a), exp2(s.margin));
    case Variant::te_current: {
      const Real ap = lt(a, s.amax_epsilon) ? s.amax_epsilon : a;  // NaN stays NaN
      if (ap.is_nan() || ap.is_inf() || ap.is_zero()) return R(1.0);
      Real sc = div32(fmax, ap);
      if (sc.is_inf()) sc = R(FLT_MAX);
      if (s.pow2_scale) sc = pow2_field(sc);
      return sc;
    }
    case Variant::torchao: {
      if (a.is_nan()) return Real::nan();
      // RN32(RN64(fmax / max(a, 1e-12))), a upcast to fp64 (exact), EPS the fp64 1e-12.
      const Real eps = R(1e-12);
      Real sc = round(F32, div(F64, fmax, gt(a, eps) ? a : eps));
      if (s.fp16_clamp && gt(sc, R(65504.0))) sc = R(65504.0);
      if (s.pow2_scale) sc = pow2_field(sc);
      return sc;
    }
  }
  return a;
}

std::uint64_t cast_code(const Spec& s, const Real& x, const Real& state, std::uint64_t i) {
  const FloatFormat& f = *s.format;
  const Real fmax = fmax_of(f);
  Real y;
  switch (s.variant) {
    case Variant::absmax:
    case Variant::ocp:
      y = state.is_zero() ? x : scaled_value(s.order, x, state, fmax);  // a = 0: y = x
      break;
    case Variant::te:
    case Variant::te_current:
      y = mul32(x, state);
      break;
    case Variant::torchao:
      y = clamp(mul32(x, state), neg(fmax), fmax);
      break;
  }
  return cast(f, y, s.rounding, Overflow::satfinite, sr_word(s.rounding, s.seed, kStreamCast, i));
}

Real cast_dequant(const Spec& s, std::uint64_t code, const Real& state) {
  const FloatFormat& f = *s.format;
  const Real v = value(f, code);
  switch (s.variant) {
    case Variant::absmax:
    case Variant::ocp:
      return mul32(mul32(state, v), div32(R(1.0), fmax_of(f)));
    case Variant::te:
    case Variant::te_current:
      return mul32(v, div32(R(1.0), state));
    case Variant::torchao:
      return div32(v, state);
  }
  return v;
}

}  // namespace exmy::oracle::steps::quant::detail
