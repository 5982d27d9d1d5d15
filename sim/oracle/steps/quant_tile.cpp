// docs/SEMANTICS.md 7.15: 2-D block scaling under the three library rules (DeepGEMM's casts,
// TransformerEngine's blockwise reference quantizer, torchao 0.18's blockwise Triton kernels),
// written from the document's statements of each rule as exactly rounded operations on exact
// values. The tile grouping and the absmax are quant_common.cpp's (7.1, 7.2).
#include "sim/oracle/steps/quant_detail.hpp"

namespace exmy::oracle::steps::quant::detail {
namespace {

// The largest finite value of the input's dtype (TE's torch.finfo(x.dtype).max).
Real source_max(Source src) {
  switch (src) {
    case Source::bf16:
      return fmax_of(BF16);
    case Source::fp16:
      return fmax_of(F16);
    case Source::fp32:
      break;
  }
  return fmax_of(F32);
}

// c10's fp8e4m3fn_from_fp32_value (DeepGEMM's `.to(torch.float8_e4m3fn)` without a clamp): NaN,
// ±inf and |y| ≥ 480 give 0x7F with y's sign; otherwise round to nearest even on the e4m3 grid
// continued past 448 by one step (480, the code 0x7F): |y| in (464, 480) rounds up to that code,
// 464 itself ties to 448 (even).
std::uint64_t torch_e4m3fn_unclamped(const FloatFormat& f, const Real& y) {
  const std::uint64_t sign = y.signbit() && !y.is_nan() ? 0x80u : 0u;
  if (y.is_nan() || y.is_inf() || gt(abs(y), R(464.0))) return 0x7Fu | sign;
  return cast(f, y, Rounding{}, Overflow::satfinite, 0);
}

// The code of a value already within ±fmax or NaN (TE after its clamp, torchao after its clip):
// round to nearest even; a NaN is 0x7F with its sign (torch's fp8 conversions of NaN).
std::uint64_t fp8_code(const FloatFormat& f, const Real& y) {
  if (y.is_nan()) return 0x7Fu | (y.signbit() ? 0x80u : 0u);
  return cast(f, y, Rounding{}, Overflow::satfinite, 0);
}

// DeepGEMM's ceil_to_ue8m0 read as the document states it: 2^(E + [M ≠ 0]) with E, M the biased
// exponent and mantissa fields of the fp32 sf, E + [M ≠ 0] clamped to [1, 254].
Real ceil_ue8m0(const Real& sf) {
  long e;
  if (sf.is_nan()) {
    e = 255 + 1;
  } else if (sf.is_inf()) {
    e = 255;
  } else if (sf.is_zero()) {
    e = 0;
  } else {
    const long E = floor_log2(sf) + 127;  // the biased exponent of a normal sf
    if (E >= 1) {
      e = E + (is_pow2(sf) ? 0 : 1);
    } else {
      e = 1;  // a subnormal sf: E = 0 and M ≠ 0
    }
  }
  e = e < 1 ? 1 : (e > 254 ? 254 : e);
  return exp2(e - 127);
}

}  // namespace

NanRule tile_nan(const Spec& s) {
  return s.tile_rule == TileRule::torchao ? NanRule::ignore : NanRule::propagate;
}

Real tile_scale(const Spec& s, const Real& a) {
  const Real fmax = fmax_of(*s.format);
  switch (s.tile_rule) {
    case TileRule::deepgemm: {
      // a′ = max(a, RN32(1e-4)) (torch.clamp: NaN stays NaN); sf = RN32(a′ · RN32(1/448)).
      const Real eps = round(F32, R(1e-4));
      const Real ap = a.is_nan() ? a : (lt(a, eps) ? eps : a);
      const Real sf = mul32(ap, div32(R(1.0), R(448.0)));
      return s.tile_scale == TileScale::ue8m0 ? ceil_ue8m0(sf) : sf;
    }
    case TileRule::te: {
      const Real ap = a.is_nan() ? a : (lt(a, s.amax_epsilon) ? s.amax_epsilon : a);
      Real sc = div32(fmax, ap);
      if (sc.is_inf() && !sc.signbit()) sc = source_max(s.source);
      if (s.tile_scale == TileScale::pow2) {
        // torch.frexp: sc = m·2^e, m in [0.5, 1); e = 0 for 0 and NaN. sc = 2^(e − 1).
        const long e = (sc.is_nan() || sc.is_zero()) ? 0 : floor_log2(sc) + 1;
        sc = exp2(e - 1);
        if (ap.is_inf() && !ap.signbit()) sc = Real();
      }
      if (!ap.is_nan() && ap.is_zero()) sc = R(1.0);
      return sc;
    }
    case TileRule::torchao: {
      // a′ = maxnum(a, ε): ε = RN32(1e-12) for every source (tl.clamp widens an fp16 amax to
      // fp32: Triton core.clamp makes its float bounds fp32 tensors); a never NaN.
      const Real eps = round(F32, R(1e-12));
      const Real ap = lt(a, eps) ? eps : a;
      return round(F32, div(F64, fmax, ap));  // RN32(RN64(448 / a′))
    }
    case TileRule::none:
      break;
  }
  return a;
}

Real tile_stored(const Spec& s, const Real& scale) {
  // DeepGEMM stores sf itself; TE its scale_inv and torchao its reciprocal scale, RN32(1/s).
  return s.tile_rule == TileRule::deepgemm ? scale : div32(R(1.0), scale);
}

std::uint64_t tile_code(const Spec& s, const Real& x, const Real& scale) {
  const FloatFormat& f = *s.format;
  const Real fmax = fmax_of(f);
  switch (s.tile_rule) {
    case TileRule::deepgemm:
      // x · (1.0 / sf): the reciprocal RN32, then the product RN32.
      return torch_e4m3fn_unclamped(f, mul32(x, div32(R(1.0), scale)));
    case TileRule::te:
      return fp8_code(f, clamp(mul32(x, scale), neg(fmax), fmax));
    case TileRule::torchao: {
      // min.xorsign.abs(y, fmax): a NaN y gives +fmax; otherwise min(|y|, fmax) with y's sign.
      const Real y = mul32(x, scale);
      if (y.is_nan()) return fp8_code(f, fmax);
      const Real m = gt(abs(y), fmax) ? fmax : abs(y);
      return fp8_code(f, y.signbit() ? neg(m) : m);
    }
    case TileRule::none:
      break;
  }
  return 0;
}

Real tile_dequant(const Spec& s, std::uint64_t code, const Real& stored) {
  return mul32(value(*s.format, code), stored);
}

}  // namespace exmy::oracle::steps::quant::detail
