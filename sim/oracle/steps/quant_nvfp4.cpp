// docs/SEMANTICS.md 7.11: NVFP4 (e2m1fn elements in blocks of 16 along the last dimension, E4M3
// block scales, an optional fp32 per-tensor level) as torchao's nvfp4_quantize and
// TransformerEngine's quantization reference compute it on CUDA, with the dequantization.
#include <cfloat>

#include "sim/oracle/steps/quant_detail.hpp"

namespace exmy::oracle::steps::quant::detail {
namespace {

const FloatFormat& e4m3fn() {
  return formats::e4m3fn;
}
const FloatFormat& e2m1fn() {
  return formats::e2m1fn;
}
// torch's .to(float8_e4m3fn) of a value within ±448: RNE; the CUDA NaN gives 0x7F.
std::uint8_t e4m3_cast(const Real& v) {
  if (v.is_nan()) return 0x7F;
  return static_cast<std::uint8_t>(cast(e4m3fn(), v, Rounding{}, Overflow::satfinite, 0));
}
// CUDA's division by a Python float c: RN32(t ⊗ RN32(1/c)).
Real div_const(const Real& t, double c) {
  return cuda(mul32(t, div32(R(1.0), R(c))));
}
const Real& flt_max() {
  static const Real r = R(FLT_MAX);
  return r;
}

}  // namespace

Nvfp4Level nvfp4_level(const Spec& s, const Real& tensor_absmax) {
  Nvfp4Level t;
  t.two_level = s.two_level || s.variant == Variant::te;
  if (!t.two_level) return t;
  const Real G = s.tensor_amax ? *s.tensor_amax : tensor_absmax;
  if (s.variant == Variant::te) {
    Real ges = min_nan(cuda(div32(R(2688.0), G)), flt_max());
    if (ges.is_zero()) ges = R(1.0);  // G = inf
    t.ges = ges;
    t.gds = cuda(div32(R(1.0), ges));
    t.mult = cuda(mul32(ges, div32(R(1.0), R(6.0))));
    return t;
  }
  t.pts = s.tensor_scale ? *s.tensor_scale : div_const(G, 2688.0);  // per_tensor_amax_to_scale
  return t;
}

Nvfp4Level nvfp4_level_from_stored(const Spec& s, const Real& stored) {
  Nvfp4Level t;
  t.two_level = s.two_level || s.variant == Variant::te;
  if (s.variant == Variant::te) {
    t.gds = stored;
  } else {
    t.pts = stored;
  }
  return t;
}

Real nvfp4_stored(const Spec& s, const Nvfp4Level& t) {
  if (!t.two_level) return R(1.0);
  return s.variant == Variant::te ? t.gds : t.pts;
}

std::uint8_t nvfp4_scale(const Spec& s, const Nvfp4Level& t, const Real& a) {
  const Real lo = exp2(-6), hi = R(448.0);
  if (s.variant == Variant::te) {
    const Real v = min_nan(cuda(mul32(a, t.mult)), flt_max());
    return e4m3_cast(clamp(v, neg(hi), hi));  // no lower clamp: 0 and subnormal scales occur
  }
  const Real bs = div_const(a, 6.0);  // a / 6
  if (!t.two_level) return e4m3_cast(clamp(bs, lo, hi));
  return e4m3_cast(clamp(cuda(div32(bs, t.pts)), lo, hi));
}

std::uint64_t nvfp4_code(const Spec& s, const Nvfp4Level& t, const Real& x, std::uint8_t scale) {
  const Real S = value(e4m3fn(), scale), six = R(6.0);
  if (s.variant == Variant::te) {
    // es = min(RN32(1 / RN32(S · gds)), FLT_MAX); TE's cast_to_fp4x2 sends −0 and NaN to 0.
    const Real es = min_nan(cuda(div32(R(1.0), cuda(mul32(S, t.gds)))), flt_max());
    const Real y = clamp(cuda(mul32(x, es)), neg(six), six);
    if (y.is_nan() || y.is_zero()) return 0;
    return cast(e2m1fn(), y, Rounding{}, Overflow::satfinite, 0);
  }
  const Real r = t.two_level ? cuda(div32(cuda(div32(R(1.0), t.pts)), S)) : cuda(div32(R(1.0), S));
  const Real y = clamp(cuda(mul32(x, r)), neg(six), six);
  if (y.is_nan()) return 0x4;  // torchao's _f32_to_floatx_unpacked of 0x7FFFFFFF
  return cast(e2m1fn(), y, Rounding{}, Overflow::satfinite, 0);  // −0 → 0x8
}

Real nvfp4_dequant(const Spec& s, const Nvfp4Level& t, std::uint64_t code, std::uint8_t scale) {
  const Real S = value(e4m3fn(), scale), v = value(e2m1fn(), code);
  if (s.variant == Variant::te) return mul32(mul32(v, S), t.gds);
  return mul32(v, t.two_level ? mul32(t.pts, S) : S);
}

}  // namespace exmy::oracle::steps::quant::detail
