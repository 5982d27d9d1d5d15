// Internal to gpu/quant/*.cu: the fast element paths (the file comment of gpu/quant/quantize.cu
// lists them): per-group operands hoisted out of the element loop (group_operands), then the
// codes of a run of kRun elements for int8 (one cvt, gpu/quant/fast_int8.hpp), float targets
// (gpu/cast/fast_cast.hpp), codebooks (gpu/quant/codebook_table.hpp), MX / NVFP4 (exponent shifts,
// the fp8 instructions of gpu/cast/hw_cvt.hpp); generic_run is the same run on quant_one.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cast/fast_cast.hpp"
#include "gpu/cast/hw_cvt.hpp"
#include "gpu/quant/codebook_table.hpp"
#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/detail_element.cuh"
#include "gpu/quant/detail_input_words.cuh"
#include "gpu/quant/fast_int8.hpp"
#include "sim/native/codebook_lookup.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_codebook.hpp"
#include "sim/native/quant_mx.hpp"
#include "sim/native/quant_scaled_cast.hpp"

namespace exmy::gpu::quant_detail {
namespace {

// The div_mul order's code without a division per element: t = RN(x * R), R = RN(127 / st)
// (int8_div_estimate_factor), is within 2^-14 of the reference's y = RN(127 * RN(x / st))
// wherever |t| <= 200 (each of the four roundings is a relative error <= 2^-24 of the exact
// 127 x / st, so |t - y| <= 4 * 2^-24 * 200.01 + 2^-142 < 2^-14, the last term the absolute error
// of subnormal results). So when t lies at most 1/2 - 2^-13 from its nearest integer n, y lies
// less than 1/2 from n and cvt.rni(y) = n exactly, with no tie; the clamp then agrees. Any
// other t (near a half-integer: about 2^-12 of the elements, |t| > 200, NaN) takes the exact
// sequence, as does every element of a group whose R is not a normal number (NaN, subnormal or
// tiny st). n comes from the 1.5 * 2^23 rounding constant (RNE to an integer for |t| < 2^22: ties
// to even as cvt.rni), t - n is exact, and everything stays on the FMA pipe.
__device__ __forceinline__ float int8_div_estimate_factor(float st) {
  if (st == 0.0f) return 0.0f;  // t = 0 for finite x: code 0, as the reference's st == 0 rule
  const float r = native::rn32_div(kInt8Q, st);
  const std::uint32_t e = native::bits_of(r) & 0x7F800000u;
  const bool st_normal = (native::bits_of(st) & 0x7F800000u) != 0;
  return st_normal && e != 0 && e != 0x7F800000u ? r : native::float_of(0x7FC00000u);
}

// ---- fast element paths ----
// Per-group operands hoisted out of the element loop (group_operands; the state itself comes from
// native::group_state before, in cold_group_state): the state, and the reciprocal-like operand of
// the scaling order (RN32(1 / a) or RN32(Q / a)), exactly as native::absmax_scale and
// native::codebook_normalize compute them per element; for NVFP4 the element factor
// (native::nvfp4_element_scale).
struct GroupOperands {
  float st = 0.0f;
  float aux = 0.0f;
  int mx_exp = 0;  // mx: the scale's unbiased exponent X (scale code != 0xFF)
  std::uint8_t mxs = 0;
};

// t: the NVFP4 per-tensor level (a.p.tensor, or QArgs::tensor_dev's in the single pass).
template <Kind K>
__device__ __forceinline__ GroupOperands group_operands(const QArgs& a, float st, std::uint8_t mxs,
                                                        const native::Nvfp4Tensor& t) {
  GroupOperands g;
  g.st = st;
  g.mxs = mxs;
  if constexpr (K == Kind::int8 || K == Kind::flt) {
    const float Q = K == Kind::int8 ? kInt8Q : a.p.fmax;
    g.aux = K == Kind::int8 && a.p.order == native::ScaleOrder::div_mul
                ? int8_div_estimate_factor(st)
            : a.p.order == native::ScaleOrder::mul_recip ? native::rn32_div(Q, st)
            : a.p.order == native::ScaleOrder::fdividef_mul
                ? native::sfu_div_approx_ftz_f(a.p.sfu, Q, st)  // __fdividef(127, absmax)
                : native::rn32_div(1.0f, st);
  } else if constexpr (K == Kind::codebook) {
    g.aux = a.p.norm == native::NormOrder::bnb_cuda ? native::sfu_rcp_f(a.p.sfu, st)
                                                    : native::rn32_div(1.0f, st);
  } else if constexpr (K == Kind::mx) {
    if (nvfp4_rule(a)) {
      g.aux = nvfp4_factor(a, mxs, t);
    } else if (a.p.rule == native::ScaleRule::mx_torchao) {
      g.aux = native::mx_torchao_factor(mxs, a.p.mx_mode);
    } else {
      g.mx_exp = native::mx_scale_exp(mxs);
    }
  }
  return g;
}
template <Kind K>
__device__ __forceinline__ GroupOperands group_operands(const QArgs& a, float st,
                                                        std::uint8_t mxs) {
  return group_operands<K>(a, st, mxs, a.p.tensor);
}

// int8, rne: y as native::absmax_scale in the order O without the canonical-NaN steps (a NaN y
// gives code 0 either way), then one cvt.rni and the clamp.
template <native::ScaleOrder O>
__device__ __forceinline__ std::uint8_t fast_int8_exact(const GroupOperands& g, float x) {
  float y;
  if constexpr (O == native::ScaleOrder::div_mul) {
    y = native::rn_mul(kInt8Q, native::rn_div(x, g.st));
  } else if constexpr (O == native::ScaleOrder::div_full_mul) {
    y = native::rn_mul(kInt8Q, native::sfu_div_full_f(native::SfuTables{}, x, g.st));
  } else if constexpr (O == native::ScaleOrder::recip_mul) {
    y = native::rn_mul(kInt8Q, native::rn_mul(x, g.aux));
  } else if constexpr (O == native::ScaleOrder::fdividef_mul) {
    y = native::ftz_mul(x, g.aux);
  } else {
    y = native::rn_mul(x, g.aux);
  }
  const std::uint8_t c = static_cast<std::uint8_t>(fast_round_to_int8<RoundMode::rne>(y));
  return g.st == 0.0f ? std::uint8_t{0} : c;
}

// int8 under div_mul by int8_div_estimate_factor's estimate (see there why it is exact).
__device__ __forceinline__ std::uint8_t fast_int8_div_estimate(const GroupOperands& g, float x) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const float t = __fmul_rn(x, g.aux);
  const float m = __fadd_rn(t, kRound);
  const float d = fabsf(__fsub_rn(t, __fsub_rn(m, kRound)));
  if (fabsf(t) <= 200.0f && d <= 0.5f - 0x1p-13f) {
    int v = static_cast<int>(native::bits_of(m) - native::bits_of(kRound));
    v = v > native::kInt8Max ? native::kInt8Max : v;
    v = v < -native::kInt8Max ? -native::kInt8Max : v;
    return static_cast<std::uint8_t>(static_cast<std::int8_t>(v));
  }
  return fast_int8_exact<native::ScaleOrder::div_mul>(g, x);
}

template <native::ScaleOrder O>
__device__ __forceinline__ std::uint8_t fast_int8(const GroupOperands& g, float x) {
  if constexpr (O == native::ScaleOrder::div_mul) {
    return fast_int8_div_estimate(g, x);
  } else {
    return fast_int8_exact<O>(g, x);
  }
}
__device__ __forceinline__ std::uint8_t fast_int8(const QArgs& a, const GroupOperands& g, float x) {
  switch (a.p.order) {
    case native::ScaleOrder::div_mul:
      return fast_int8<native::ScaleOrder::div_mul>(g, x);
    case native::ScaleOrder::recip_mul:
      return fast_int8<native::ScaleOrder::recip_mul>(g, x);
    case native::ScaleOrder::div_full_mul:
      return fast_int8<native::ScaleOrder::div_full_mul>(g, x);
    case native::ScaleOrder::fdividef_mul:
      return fast_int8<native::ScaleOrder::fdividef_mul>(g, x);
    default:
      return fast_int8<native::ScaleOrder::mul_recip>(g, x);
  }
}

// Float targets, rne or sr:R (R <= 23 - M): quant_one's y, then the mode-specialised fast cast
// (gpu/cast/fast_cast.hpp) = fast_cast_fp32. y keeps quant_one's canonical NaN (the cast keeps
// a NaN's sign); an inner product or quotient feeding fmax * (.) needs no canonical step of its
// own: a NaN there makes the outer product NaN, which is then made canonical. The form of y is a
// per-group choice, taken once per run.
enum class YForm : std::uint8_t { div_mul, recip_mul, mul_recip, unscaled, scale_mul };

__device__ __forceinline__ YForm yform_of(const QArgs& a, const GroupOperands& g) {
  if (a.p.rule != native::ScaleRule::absmax) return YForm::scale_mul;
  if (g.st == 0.0f) return YForm::unscaled;  // absmax variant, all-zero group: y = x
  switch (a.p.order) {
    case native::ScaleOrder::div_mul:
      return YForm::div_mul;
    case native::ScaleOrder::recip_mul:
      return YForm::recip_mul;
    default:
      return YForm::mul_recip;
  }
}

// quant_one's y of fp32 input bits xb in the form Y.
template <YForm Y>
__device__ __forceinline__ float flt_y(const QArgs& a, const GroupOperands& g, std::uint32_t xb) {
  const float x = native::float_of(xb);
  if constexpr (Y == YForm::div_mul) {
    return native::rn32_mul(a.p.fmax, native::rn_div(x, g.st));
  } else if constexpr (Y == YForm::recip_mul) {
    return native::rn32_mul(a.p.fmax, native::rn_mul(x, g.aux));
  } else if constexpr (Y == YForm::mul_recip) {
    return native::rn32_mul(x, g.aux);
  } else if constexpr (Y == YForm::unscaled) {
    return x;
  } else {
    return native::rn32_mul(x, g.st);
  }
}

template <FastMode M, YForm Y>
__device__ __forceinline__ std::uint8_t fast_flt(const QArgs& a, const FastCastPlan& p,
                                                 const GroupOperands& g, std::uint32_t xb,
                                                 std::uint32_t word) {
  const std::uint32_t yb = native::bits_of(flt_y<Y>(a, g, xb));
  if constexpr (M == FastMode::sr) {
    return static_cast<std::uint8_t>(fast_cast_fp32_fixed_inline<FastMode::sr>(
        p, yb, native::sr_word(word, a.p.sr_bits), a.p.sr_bits));
  } else {
    return static_cast<std::uint8_t>(fast_cast_fp32_fixed_inline<FastMode::rne>(p, yb, 0u, 0));
  }
}

// The same with the form chosen per element (kernels whose elements have different groups).
template <FastMode M>
__device__ __forceinline__ std::uint8_t fast_flt(const QArgs& a, const FastCastPlan& p,
                                                 const GroupOperands& g, std::uint32_t xb,
                                                 std::uint32_t word) {
  switch (yform_of(a, g)) {
    case YForm::div_mul:
      return fast_flt<M, YForm::div_mul>(a, p, g, xb, word);
    case YForm::recip_mul:
      return fast_flt<M, YForm::recip_mul>(a, p, g, xb, word);
    case YForm::mul_recip:
      return fast_flt<M, YForm::mul_recip>(a, p, g, xb, word);
    case YForm::unscaled:
      return fast_flt<M, YForm::unscaled>(a, p, g, xb, word);
    default:
      return fast_flt<M, YForm::scale_mul>(a, p, g, xb, word);
  }
}

// Codebook: native::codebook_normalize without the canonical-NaN step (a NaN n is in the last,
// always slow, bucket and codebook_nearest gives it 0).
template <native::NormOrder O>
__device__ __forceinline__ float fast_normalize(const GroupOperands& g, float x) {
  if constexpr (O == native::NormOrder::bnb_cuda) return native::ftz_mul(x, g.aux);  // aux = rcp
  const float n = O == native::NormOrder::div ? native::rn_div(x, g.st) : native::rn_mul(x, g.aux);
  return g.st == 0.0f ? 0.0f : n;
}
__device__ __forceinline__ float fast_normalize(const QArgs& a, const GroupOperands& g, float x) {
  switch (a.p.norm) {
    case native::NormOrder::div:
      return fast_normalize<native::NormOrder::div>(g, x);
    case native::NormOrder::bnb_cuda:
      return fast_normalize<native::NormOrder::bnb_cuda>(g, x);
    default:
      return fast_normalize<native::NormOrder::recip_mul>(g, x);
  }
}

// MX element, rne, fast-cast format: x * 2^-X is an fp32 number when x is normal and the
// shifted exponent stays in [1, 254] (or x is +-0), and then the cast of that fp32 value is
// native::mx_element's encode of the same Unpacked value. Other elements take the native path.
__device__ __forceinline__ std::uint8_t fast_mx(const QArgs& a, const FastCastPlan& p,
                                                const GroupOperands& g, std::uint32_t xb) {
  const std::uint32_t mag = xb & 0x7FFFFFFFu;
  const int e = static_cast<int>(mag >> 23);
  const int es = e - g.mx_exp;
  if (g.mxs != native::kE8m0Nan && (mag == 0 || (e >= 1 && e <= 254 && es >= 1 && es <= 254))) {
    const std::uint32_t u = mag == 0 ? xb : xb - (static_cast<std::uint32_t>(g.mx_exp) << 23);
    return static_cast<std::uint8_t>(fast_cast_fp32_fixed_inline<FastMode::rne>(p, u, 0u, 0));
  }
  return cold_mx_element(a.p.fmt, native::float_of(xb), g.mxs, a.p.mode, a.p.sr_bits, 0u);
}

// MX under torchao's arithmetic (native::mx_torchao_scaled with the block's factor in g.aux): the
// fp8 cast of a clamped, non-NaN y is the mode-fixed fast cast (rne, satfinite), equal to
// native::convert there; NaN is torch's 0x7F | sign; fp6 / fp4 take torchao's integer encoder.
__device__ __forceinline__ std::uint8_t fast_mx_torchao(const QArgs& a, const FastCastPlan& p,
                                                        const GroupOperands& g, std::uint32_t xb) {
  float y = native::cuda_nan_result(native::rn_mul(native::float_of(xb), g.aux));
  if (native::mx_torchao_clamps(a.p.fmt, a.p.mx_mode)) y = native::torch_clamp(y, a.p.fmax);
  const std::uint32_t yb = native::bits_of(y);
  if (a.p.fmt.total_bits() != 8) {
    return native::torchao_f32_to_fx_unpacked(yb, a.p.fmt.exp_bits, a.p.fmt.man_bits);
  }
  if ((yb & 0x7FFFFFFFu) > 0x7F800000u)
    return static_cast<std::uint8_t>(0x7Fu | ((yb >> 24) & 0x80u));
  return static_cast<std::uint8_t>(fast_cast_fp32_fixed_inline<FastMode::rne>(p, yb, 0u, 0));
}

// The codes of a run from its kRun fp32 values y by the fp8 instruction (pairs), where every y
// is a non-NaN value whose software cast (fast_cast_fp32_fixed<rne>, satfinite) is the code.
template <HwFp8 T>
__device__ __forceinline__ void hw_fp8_run(const float* y, std::uint8_t* c) {
#pragma unroll
  for (int k = 0; k < kRun; k += 2) {
    const std::uint16_t pair = cvt_f32x2<T>(y[k], y[k + 1]);
    c[k] = static_cast<std::uint8_t>(pair);
    c[k + 1] = static_cast<std::uint8_t>(pair >> 8);
  }
}

// OCP MX elements of a run (fast_mx) with the cast by the instruction: the scaled values are
// exponent shifts, the elements fast_mx sends to the native path (a NaN scale; zero or
// out-of-range exponents) are recomputed there after the instruction ran on all of them.
template <CastInput In, HwFp8 T>
__device__ __forceinline__ void mx_hw_run(const QArgs& a, const GroupOperands& g,
                                          const std::uint32_t* w, std::uint8_t* c) {
  float y[kRun];
  std::uint32_t cold = g.mxs == native::kE8m0Nan ? 0xFFFFu : 0u;
  const std::uint32_t shift = static_cast<std::uint32_t>(g.mx_exp) << 23;
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    const std::uint32_t xb = exact_bits<In>(w, k);
    const std::uint32_t mag = xb & 0x7FFFFFFFu;
    const std::uint32_t e = mag >> 23;
    const std::uint32_t es = e - static_cast<std::uint32_t>(g.mx_exp);
    // fast_mx's condition: mag == 0, or e and e - X both in [1, 254].
    const bool ok = mag == 0 || (e - 1u < 254u && es - 1u < 254u);
    y[k] = native::float_of(mag == 0 ? xb : xb - shift);
    cold |= ok ? 0u : (1u << k);
  }
  hw_fp8_run<T>(y, c);
  if (cold != 0) {
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      if ((cold >> k) & 1u) {
        c[k] = cold_mx_element(a.p.fmt, native::float_of(exact_bits<In>(w, k)), g.mxs, a.p.mode,
                               a.p.sr_bits, 0u);
      }
    }
  }
}

// OCP MX elements of a run with the lean software cast (MxRun::ocp_sw: formats without the fp8
// instruction, e2m1fn and the fp6 formats): the exponent-shifted values of fast_mx's condition
// cast by fast_cast_fp32_lean (rne, signed with a negative zero, a lean domain holding every
// finite value: mx_run_of checks the format on the host, so the condition implies the domain).
// The elements the condition sends to the native path (a NaN scale; zero or out-of-range
// exponents) come back as bits of the returned mask, and mx_fixup recomputes them after the run's
// codes are stored: with the native fallback inside the unrolled loop (fast_mx per element) each
// of the kRun elements carried an inlined mx_element (H200: MX e2m1fn 966 us against 489 us for
// e4m3fn's instruction path, 2^28 fp32); a rolled loop over the mask holds one copy (653 us).
template <CastInput In>
__device__ __forceinline__ std::uint32_t mx_sw_run(const FastCastPlan& p, const GroupOperands& g,
                                                   const std::uint32_t* w, std::uint8_t* c) {
  std::uint32_t cold = g.mxs == native::kE8m0Nan ? 0xFFFFu : 0u;
  const std::uint32_t shift = static_cast<std::uint32_t>(g.mx_exp) << 23;
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    const std::uint32_t xb = exact_bits<In>(w, k);
    const std::uint32_t mag = xb & 0x7FFFFFFFu;
    const std::uint32_t e = mag >> 23;
    const std::uint32_t es = e - static_cast<std::uint32_t>(g.mx_exp);
    // fast_mx's condition: mag == 0, or e and e - X both in [1, 254].
    const bool ok = mag == 0 || (e - 1u < 254u && es - 1u < 254u);
    const std::uint32_t u = mag == 0 ? xb : xb - shift;
    c[k] = static_cast<std::uint8_t>(fast_cast_fp32_lean<FastMode::rne, true, true>(p, u, 0u, 0));
    cold |= ok ? 0u : (1u << k);
  }
  return cold;
}

// The native codes (native::mx_element, as fast_mx's fallback) of the elements base + k of the
// bits k of `cold`, over the codes already stored: the input is read again (indexing the run's
// registers by k would move them to local memory), one element per iteration.
template <CastInput In>
__device__ __forceinline__ void mx_fixup(const QArgs& a, const void* x, std::uint8_t* codes,
                                         std::uint64_t base, std::uint8_t mxs, std::uint32_t cold) {
  const auto* xs = static_cast<const InputElem<In>*>(x);
#pragma unroll 1
  for (; cold != 0; cold &= cold - 1) {
    const std::uint64_t i = base + static_cast<std::uint64_t>(__ffs(cold) - 1);
    if (i >= a.n) break;  // the bits ascend: the rest lie past the end too
    const std::uint8_t code = cold_mx_element(a.p.fmt, native::float_of(widen_input<In>(xs[i])),
                                              mxs, a.p.mode, a.p.sr_bits, 0u);
    if (a.packed4) {  // sim/native/pack4.hpp: element 2j in the low nibble of byte j
      const std::uint8_t b = codes[i / 2];
      codes[i / 2] = (i & 1) ? static_cast<std::uint8_t>((b & 0x0Fu) | (code << 4))
                             : static_cast<std::uint8_t>((b & 0xF0u) | (code & 0x0Fu));
    } else {
      codes[i] = code;
    }
  }
}

// MX under torchao's arithmetic, fp8 elements (fast_mx_torchao) with the cast by the instruction:
// y is non-NaN or CUDA's NaN 0x7FFFFFFF, whose code 0x7F | sign is 0x7F, the instruction's NaN.
template <CastInput In, HwFp8 T>
__device__ __forceinline__ void mx_torchao_hw_run(const QArgs& a, const GroupOperands& g,
                                                  const std::uint32_t* w, std::uint8_t* c) {
  float y[kRun];
  const bool clamps = native::mx_torchao_clamps(a.p.fmt, a.p.mx_mode);
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    y[k] = native::cuda_nan_result(native::rn_mul(native::float_of(exact_bits<In>(w, k)), g.aux));
    if (clamps) y[k] = native::torch_clamp(y[k], a.p.fmax);
  }
  hw_fp8_run<T>(y, c);
}

// NVFP4 elements of a run under one variant (the rule is per call; the factor per group).
template <CastInput In, native::ScaleRule R>
__device__ __forceinline__ void nvfp4_run(const GroupOperands& g, const std::uint32_t* w,
                                          std::uint8_t* c) {
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    const float x = native::float_of(exact_bits<In>(w, k));
    c[k] = static_cast<std::uint8_t>(R == native::ScaleRule::nvfp4_te
                                         ? native::nvfp4_te_scaled(x, g.aux).code
                                         : native::nvfp4_torchao_scaled(x, g.aux).code);
  }
}

// Codes of one run of kRun elements (words w) sharing group state g, on the fast path of K; the
// per-group choices (order, mode) are taken once per run.
template <CastInput In, native::ScaleOrder O>
__device__ __forceinline__ void fast_int8_run(const GroupOperands& g, const std::uint32_t* w,
                                              std::uint8_t* c) {
#pragma unroll
  for (int k = 0; k < kRun; ++k) c[k] = fast_int8<O>(g, value_nan_free<In>(w, k));
}

template <CastInput In, YForm Y>
__device__ __forceinline__ void flt_rne_run(const QArgs& a, const FastCastPlan& p,
                                            const GroupOperands& g, const std::uint32_t* w,
                                            std::uint8_t* c) {
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    c[k] = fast_flt<FastMode::rne, Y>(a, p, g, exact_bits<In>(w, k), 0u);
  }
}

// sr:R: the run's kRun Philox words, then the form of y fixed for the run as under rne.
template <CastInput In, YForm Y>
__device__ __forceinline__ void flt_sr_run(const QArgs& a, const FastCastPlan& p,
                                           const GroupOperands& g, const std::uint32_t* w,
                                           const std::uint32_t* rw, std::uint8_t* c) {
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    c[k] = fast_flt<FastMode::sr, Y>(a, p, g, exact_bits<In>(w, k), rw[k]);
  }
}

// flt_y without its canonical-NaN steps: equal to it wherever it is not NaN (flt_hw_run sends a
// run with a NaN y to the software path, which computes flt_y).
template <YForm Y>
__device__ __forceinline__ float flt_y_raw(const QArgs& a, const GroupOperands& g,
                                           std::uint32_t xb) {
  const float x = native::float_of(xb);
  if constexpr (Y == YForm::div_mul) {
    return native::rn_mul(a.p.fmax, native::rn_div(x, g.st));
  } else if constexpr (Y == YForm::recip_mul) {
    return native::rn_mul(a.p.fmax, native::rn_mul(x, g.aux));
  } else if constexpr (Y == YForm::mul_recip) {
    return native::rn_mul(x, g.aux);
  } else if constexpr (Y == YForm::unscaled) {
    return x;
  } else {
    return native::rn_mul(x, g.st);
  }
}

// prmt.b32 (default mode): byte k of the result is byte sel[4k+2:4k] of {b, a}.
__device__ __forceinline__ std::uint32_t prmt_b32(std::uint32_t a, std::uint32_t b,
                                                  std::uint32_t sel) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// Float targets by the fp8 instruction (FltHw, tensor_element_kernel): y as fast_flt computes it
// (flt_y_raw), then under rne the instruction's rne + satfinite code of y, which is the plan's
// (fast_cast_fp32_fixed<rne> under satfinite) for every non-NaN y, as on the cast kernels' hw
// path (gpu/cast/detail_span_codes.cuh, hw_vector_rne); under sr:R the rounding of
// hw_codes_sr on the fp32 value |y| (mg = 2^(max(e, emin) + 23 - M - R), t = rz(mg + |y|) plus the
// R-bit word as an integer, the low R bits cleared, minus mg: |y| rounded onto f's grid, held
// exactly by f), whose encoding by the instruction is the mode-fixed sr cast's code; the sign
// joins at bit 7 of each byte. A run with a NaN or inf y (or an |y| past the constants' range) is
// redone by the software path (flt_rne_run / flt_sr_run): its codes are the reference's.
// Measured (H200, 2^28 fp32, tensor-wise e4m3fn with its absmax pass, same call): rne 822 ->
// 578 us, sr:8 961 -> 786 us against the software cast; sr's code pass (~540 us) is still short
// of the cast kernels' sr span kernel (380 us): bench/results/2026-12-02-h200-quant-roofline-s7.md.
template <CastInput In, HwFp8 T, YForm Y, bool Sr>
__device__ __forceinline__ void flt_hw_run(const QArgs& a, const FastCastPlan& p,
                                           const GroupOperands& g, const std::uint32_t* w,
                                           const std::uint32_t* rw, std::uint8_t* c) {
  std::uint32_t top = 0;  // the largest |y| bits seen (sr: of the rounded |y|)
  std::uint32_t v[kRun / 4];
  const int R = a.p.sr_bits;
  // 2^(23 - M - R): mg = 2^(max(e, emin) + 23 - M - R) by one multiplication.
  const float scale = native::float_of(static_cast<std::uint32_t>(127 + p.normal_shift - R) << 23);
#pragma unroll
  for (int q = 0; q < kRun / 4; ++q) {
    float y[4];
    std::uint32_t yb[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      y[k] = flt_y_raw<Y>(a, g, exact_bits<In>(w, 4 * q + k));
      yb[k] = native::bits_of(y[k]);
      if constexpr (Sr) {
        const float mg = __fmul_rn(native::float_of(max(yb[k] & 0x7F800000u, p.norm_min)), scale);
        const float t = __fadd_rz(native::float_of(yb[k] & 0x7FFFFFFFu), mg);
        const std::uint32_t t1 = native::bits_of(t) + __umulhi(rw[4 * q + k], 1u << R);
        y[k] = __fsub_rn(native::float_of(t1 & ~((1u << R) - 1u)), mg);  // |y| rounded
        top = max(top, native::bits_of(y[k]));
      } else {
        top = max(top, yb[k] & 0x7FFFFFFFu);
      }
    }
    v[q] = cvt_f32x4<T>(y[0], y[1], y[2], y[3]);
    if constexpr (Sr) {  // the signs of y at bit 7 of each byte (the top bytes of yb)
      v[q] |= prmt_b32(prmt_b32(yb[0], yb[1], 0x0073u), prmt_b32(yb[2], yb[3], 0x0073u), 0x5410u) &
              0x80808080u;
    }
  }
  if (top >= 0x7F800000u) {
    if constexpr (Sr) {
      flt_sr_run<In, Y>(a, p, g, w, rw, c);
    } else {
      flt_rne_run<In, Y>(a, p, g, w, c);
    }
    return;
  }
#pragma unroll
  for (int q = 0; q < kRun / 4; ++q) {
#pragma unroll
    for (int k = 0; k < 4; ++k) c[4 * q + k] = static_cast<std::uint8_t>(v[q] >> (8 * k));
  }
}

template <CastInput In, native::NormOrder O>
__device__ __forceinline__ void codebook_run(const QArgs& a, const float* cb,
                                             const std::uint32_t* tab, const GroupOperands& g,
                                             const std::uint32_t* w, std::uint8_t* c) {
  std::uint32_t flags = 0;
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    const std::uint32_t nb = native::bits_of(fast_normalize<O>(g, value_nan_free<In>(w, k)));
    const std::uint32_t e = tab[codebook_table_index(nb)];
    flags |= e;
    c[k] = static_cast<std::uint8_t>(codebook_code_from_entry(e, nb));
  }
  if (flags & kCbSlow) {  // rare: a bucket the table does not resolve (inf, NaN, crowded)
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      const float n = fast_normalize<O>(g, value_nan_free<In>(w, k));
      if (tab[codebook_table_index(native::bits_of(n))] & kCbSlow) {
        c[k] = cold_codebook_nearest(cb, n, a.p.tie);
      }
    }
  }
}

// The sr and rne runs of a float target, the form of y fixed for the run; by the instruction
// (flt_hw_run) where H names one.
template <CastInput In, FltHw H, YForm Y>
__device__ __forceinline__ void flt_run(const QArgs& a, const FastCastPlan& p,
                                        const GroupOperands& g, const std::uint32_t* w,
                                        const std::uint32_t* rw, std::uint8_t* c) {
#if defined(EXMY_HW_FP8)
  if constexpr (H != FltHw::none) {
    constexpr HwFp8 T = flt_hw_e4m3(H) ? HwFp8::e4m3 : HwFp8::e5m2;
    flt_hw_run<In, T, Y, flt_hw_sr(H)>(a, p, g, w, rw, c);
    return;
  }
#endif
  if (a.p.mode == RoundMode::sr) {
    flt_sr_run<In, Y>(a, p, g, w, rw, c);
  } else {
    flt_rne_run<In, Y>(a, p, g, w, c);
  }
}

// The codes c of one run (words w) of elements base .. base + kRun - 1 sharing group state g on
// the fast path of K; the per-group choices (order, mode) are taken once per run. R: the
// block-scaled paths compiled in (MxRun); H: the float targets' instruction path (FltHw). Returns
// the mask of the elements whose codes mx_fixup must still write (MxRun::ocp_sw), else 0.
template <CastInput In, Kind K, MxRun R = MxRun::any, FltHw H = FltHw::none>
__device__ __forceinline__ std::uint32_t fast_run(const QArgs& a, const FastCastPlan& p,
                                                  const float* cb, const std::uint32_t* tab,
                                                  const GroupOperands& g, std::uint64_t base,
                                                  const std::uint32_t* w, std::uint8_t* c) {
  if constexpr (K == Kind::int8) {
    switch (a.p.order) {
      case native::ScaleOrder::div_mul:
        fast_int8_run<In, native::ScaleOrder::div_mul>(g, w, c);
        break;
      case native::ScaleOrder::recip_mul:
        fast_int8_run<In, native::ScaleOrder::recip_mul>(g, w, c);
        break;
      case native::ScaleOrder::div_full_mul:
        fast_int8_run<In, native::ScaleOrder::div_full_mul>(g, w, c);
        break;
      case native::ScaleOrder::fdividef_mul:
        fast_int8_run<In, native::ScaleOrder::fdividef_mul>(g, w, c);
        break;
      default:
        fast_int8_run<In, native::ScaleOrder::mul_recip>(g, w, c);
        break;
    }
  } else if constexpr (K == Kind::flt) {
    std::uint32_t rw[kRun];
    if (a.p.mode == RoundMode::sr) words_for_run(a, base, rw);
    switch (yform_of(a, g)) {
      case YForm::div_mul:
        flt_run<In, H, YForm::div_mul>(a, p, g, w, rw, c);
        break;
      case YForm::recip_mul:
        flt_run<In, H, YForm::recip_mul>(a, p, g, w, rw, c);
        break;
      case YForm::mul_recip:
        flt_run<In, H, YForm::mul_recip>(a, p, g, w, rw, c);
        break;
      case YForm::unscaled:
        flt_run<In, H, YForm::unscaled>(a, p, g, w, rw, c);
        break;
      default:
        flt_run<In, H, YForm::scale_mul>(a, p, g, w, rw, c);
        break;
    }
  } else if constexpr (K == Kind::mx) {
    if constexpr (R == MxRun::ocp_sw) {
      return mx_sw_run<In>(p, g, w, c);
    } else if constexpr (R == MxRun::ocp_hw) {
#if defined(EXMY_HW_FP8)
      if (a.hw_e4m3) {
        mx_hw_run<In, HwFp8::e4m3>(a, g, w, c);
      } else {
        mx_hw_run<In, HwFp8::e5m2>(a, g, w, c);
      }
      return 0;
#else
      return mx_sw_run<In>(p, g, w, c);  // no instruction below sm_89 (mx_run_of's formats)
#endif
    } else {
      if (nvfp4_rule(a)) {
        // NVFP4: the group's element factor once (GroupOperands::aux), then multiply, clamp,
        // encode.
        if (a.p.rule == native::ScaleRule::nvfp4_te) {
          nvfp4_run<In, native::ScaleRule::nvfp4_te>(g, w, c);
        } else {
          nvfp4_run<In, native::ScaleRule::nvfp4_torchao>(g, w, c);
        }
        return 0;
      }
      // MxRun::lean: torchao's arithmetic only (mx_run_of sends OCP MX elsewhere).
      constexpr bool kOcp = R == MxRun::any;
#if defined(EXMY_HW_FP8)
      if (a.hw_e4m3 || a.hw_e5m2) {
        const bool torchao = !kOcp || a.p.rule == native::ScaleRule::mx_torchao;
        if (a.hw_e4m3) {
          if (torchao) {
            mx_torchao_hw_run<In, HwFp8::e4m3>(a, g, w, c);
          } else if constexpr (kOcp) {
            mx_hw_run<In, HwFp8::e4m3>(a, g, w, c);
          }
        } else {
          if (torchao) {
            mx_torchao_hw_run<In, HwFp8::e5m2>(a, g, w, c);
          } else if constexpr (kOcp) {
            mx_hw_run<In, HwFp8::e5m2>(a, g, w, c);
          }
        }
        return 0;
      }
#endif
      if (!kOcp || a.p.rule == native::ScaleRule::mx_torchao) {
#pragma unroll
        for (int k = 0; k < kRun; ++k) c[k] = fast_mx_torchao(a, p, g, exact_bits<In>(w, k));
      } else if constexpr (kOcp) {
#pragma unroll
        for (int k = 0; k < kRun; ++k) c[k] = fast_mx(a, p, g, exact_bits<In>(w, k));
      }
    }
  } else {
    if (a.p.norm == native::NormOrder::div) {
      codebook_run<In, native::NormOrder::div>(a, cb, tab, g, w, c);
    } else if (a.p.norm == native::NormOrder::bnb_cuda) {
      codebook_run<In, native::NormOrder::bnb_cuda>(a, cb, tab, g, w, c);
    } else {
      codebook_run<In, native::NormOrder::recip_mul>(a, cb, tab, g, w, c);
    }
  }
  return 0;
}

// Codes of one run sharing state (st, mxs) on the generic path (quant_one).
template <CastInput In, Kind K>
__device__ __forceinline__ void generic_run(const QArgs& a, const float* cb, float st,
                                            std::uint8_t mxs, std::uint64_t base,
                                            const std::uint32_t* w, std::uint8_t* c) {
  std::uint32_t rw[kRun];
  if (a.p.mode == RoundMode::sr) words_for_run(a, base, rw);
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    c[k] = quant_one<K>(a, cb, native::float_of(exact_bits<In>(w, k)), st, mxs,
                        a.p.mode == RoundMode::sr ? rw[k] : 0u);
  }
}

}  // namespace
}  // namespace exmy::gpu::quant_detail
