// Tensor quantization kernels (gpu/quantize.hpp). The per-element work is the body of the CPU
// reference's loop (sim/quant/quantize.cpp) on the same native:: functions; what differs is only
// how groups are reduced and how elements are assigned to threads:
//   - single pass: contiguous groups of 16 * 2^k <= 4096 elements (row-wise with such rows,
//     block-wise, MX): a thread holds 16 consecutive elements in registers, the group's absmax is
//     a shuffle / shared-memory max over the group's 2^k threads, then codes are written;
//   - otherwise: absmax kernel (atomicMax on |x| bit patterns), a per-group state kernel, then an
//     element kernel (uniform state for tensor-wise, a 2-d kernel for column-wise, the general
//     one otherwise) or the tiled transpose kernel.
// absmax as the max of |x| bit patterns: for non-negative fp32 values the unsigned order of the
// codes is the numeric order, +0 and -0 both map to 0, and a NaN maps to 0x7FC00000 (propagate:
// above +inf 0x7F800000, and every NaN maps to the same code) or to 0 (ignore, the identity).
// So the max over any order or tree equals the fold of native::absmax_combine, bit for bit.
// bf16 / fp16 magnitudes are maxed as 16-bit patterns before widening: the exact widening is
// strictly increasing on non-NaN magnitudes (and maps 0 to 0), so it commutes with max.
//
// Fast paths (chosen on the host per call; every other case runs the generic element function
// quant_one, the reference loop body): int8 and float targets under rne (integer rounding by one
// cvt, gpu/fast_int8.hpp; float casts by gpu/cast/fast_cast.hpp, the mode fixed at compile time),
// codebooks under the midpoint tie rules (one table read, gpu/quantize_codebook_table.hpp), MX
// elements under rne for fast-cast formats (the exact 2^-X scaling is an exponent-field shift).
// Where a fast path skips the canonical-NaN step of the reference (native::rn32_*), the element's
// code does not depend on a NaN's bits: int8 rounding and codebook lookup send every NaN to 0.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "gpu/cast/fast_cast.hpp"
#include "gpu/cast/hw_cvt.hpp"
#include "gpu/cast/widen.hpp"
#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/fast_int8.hpp"
#include "gpu/quantize.hpp"
#include "gpu/quantize_codebook_table.hpp"
#include "sim/common/error.hpp"
#include "sim/native/codebook_lookup.hpp"
#include "sim/native/pack4.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_codebook.hpp"
#include "sim/native/quant_int8.hpp"
#include "sim/native/quant_mx.hpp"
#include "sim/native/quant_scaled_cast.hpp"

namespace exmy::gpu {
namespace {

static_assert(native::kAbsmaxInit == 0.0f, "absmax identity must be +0 (bit pattern 0)");

constexpr int kRun = 16;                // consecutive elements per thread
constexpr int kTile = kThreads * kRun;  // 4096 elements per block per step
constexpr std::uint32_t kNanAbsBits = 0x7FC00000u;
constexpr int kColRun = 8;  // columns per thread in the 2-d column-wise kernels
// The int8 absmax target Q (y = Q x / a): the largest int8 code, as fp32 (exact).
constexpr float kInt8Q = static_cast<float>(native::kInt8Max);

enum class Kind : std::uint8_t { int8, flt, codebook, mx };

// The plan (sim/native/quant_plan.hpp) and what the launch needs beside it.
struct QArgs {
  native::QuantPlan p;
  Kind kind;
  bool col;  // column-wise groups (g = c); otherwise contiguous groups of G
  bool transpose;
  std::uint64_t rows, cols, n, G, groups;
  int G_shift = 0;    // log2(G) where G is a power of two (every single-pass geometry), else 0
  FastCastPlan plan;  // for flt / mx targets where fast_cast_supported(fmt)
  bool fast;
  // MX elements whose fp8 cast may be the hardware instruction (gpu/cast/hw_cvt.hpp): e4m3fn or
  // e5m2 under rne, on sm_89+ (the device code checks the architecture at compile time).
  bool hw_e4m3 = false, hw_e5m2 = false;
  // The fused kernel writes 4-bit codes two per byte (sim/native/pack4.hpp's layout).
  bool packed4 = false;
};

// ---- input runs: kRun consecutive elements as 32-bit words (fp32: one element per word;
// bf16 / fp16: two, the lower index in the low half) ----
template <CastInput In>
struct InT {
  using T = std::uint16_t;
  static constexpr int kWords = kRun / 2;
};
template <>
struct InT<CastInput::fp32> {
  using T = std::uint32_t;
  static constexpr int kWords = kRun;
};

template <CastInput In>
__device__ __forceinline__ void load_words(const void* x_, std::uint64_t base, std::uint64_t n,
                                           bool vec, std::uint32_t* w) {
  using T = typename InT<In>::T;
  const T* x = static_cast<const T*>(x_);
  if (vec && base + kRun <= n) {
    const uint4* q = reinterpret_cast<const uint4*>(x + base);
#pragma unroll
    for (int k = 0; k < InT<In>::kWords / 4; ++k) {
      const uint4 r = q[k];
      w[4 * k] = r.x;
      w[4 * k + 1] = r.y;
      w[4 * k + 2] = r.z;
      w[4 * k + 3] = r.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      const std::uint32_t e = base + k < n ? static_cast<std::uint32_t>(x[base + k]) : 0u;
      if constexpr (sizeof(T) == 4) {
        w[k] = e;
      } else if (k & 1) {
        w[k >> 1] |= e << 16;
      } else {
        w[k >> 1] = e;
      }
    }
  }
}

template <CastInput In>
__device__ __forceinline__ std::uint32_t half_at(const std::uint32_t* w, int k) {
  return (k & 1) ? w[k >> 1] >> 16 : w[k >> 1] & 0xFFFFu;
}

// Element k as fp32 bits, widened exactly (NaN sign and payload kept).
template <CastInput In>
__device__ __forceinline__ std::uint32_t exact_bits(const std::uint32_t* w, int k) {
  if constexpr (In == CastInput::fp32) {
    return w[k];
  } else if constexpr (In == CastInput::bf16) {
    return widen_bf16(half_at<In>(w, k));
  } else {
    return widen_fp16(half_at<In>(w, k));
  }
}

// Element k as an fp32 value whose NaN bits may differ from the exact widening (only for targets
// whose code ignores a NaN's bits): fp16 goes through the hardware cvt.f32.f16, exact for every
// non-NaN fp16 (subnormals included; no flush without .ftz).
template <CastInput In>
__device__ __forceinline__ float value_nan_free(const std::uint32_t* w, int k) {
  if constexpr (In == CastInput::fp16) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(half_at<In>(w, k))));
  } else {
    return native::float_of(exact_bits<In>(w, k));
  }
}

// ---- absmax of words, in the input's own bit domain ----
// fp32: the max of |x| bits (NaN above +inf: canonicalized by absmax_finish); bf16 / fp16: two
// 16-bit magnitude maxima per word. Ignore drops NaN magnitudes (above the format's inf).
template <CastInput In, bool Ignore>
__device__ __forceinline__ std::uint32_t absmax_word(std::uint32_t acc, std::uint32_t w) {
  if constexpr (In == CastInput::fp32) {
    std::uint32_t b = w & 0x7FFFFFFFu;
    if (Ignore) b = b > 0x7F800000u ? 0u : b;
    return max(acc, b);
  } else {
    constexpr std::uint32_t kInf2 = In == CastInput::bf16 ? 0x7F807F80u : 0x7C007C00u;
    std::uint32_t p = w & 0x7FFF7FFFu;
    if (Ignore) p &= ~__vcmpgtu2(p, kInf2);
    return __vmaxu2(acc, p);
  }
}

// A magnitude of the input format (fp32 bits, or a 16-bit pattern) -> absmax bits of fp32.
template <CastInput In>
__device__ __forceinline__ std::uint32_t absmax_finish(std::uint32_t m) {
  if constexpr (In == CastInput::fp32) {
    return m > 0x7F800000u ? kNanAbsBits : m;
  } else if constexpr (In == CastInput::bf16) {
    return m > 0x7F80u ? kNanAbsBits : widen_bf16(m);
  } else {
    return m > 0x7C00u ? kNanAbsBits : widen_fp16(m);
  }
}

// Absmax bits of one run under the NaN policy.
template <CastInput In, bool Ignore>
__device__ __forceinline__ std::uint32_t run_absmax_as(const std::uint32_t* w) {
  std::uint32_t acc = 0;
#pragma unroll
  for (int k = 0; k < InT<In>::kWords; ++k) acc = absmax_word<In, Ignore>(acc, w[k]);
  if constexpr (In != CastInput::fp32) acc = max(acc & 0xFFFFu, acc >> 16);
  return absmax_finish<In>(acc);
}
template <CastInput In>
__device__ __forceinline__ std::uint32_t run_absmax(const std::uint32_t* w, native::NanPolicy p) {
  // ignore_ftz reduces as ignore; the flush of a subnormal maximum is native::group_state's.
  return p != native::NanPolicy::propagate ? run_absmax_as<In, true>(w)
                                           : run_absmax_as<In, false>(w);
}

__device__ __forceinline__ std::uint32_t abs_bits(float x, native::NanPolicy p) {
  const std::uint32_t b = native::bits_of(x) & 0x7FFFFFFFu;
  if (b > 0x7F800000u) return p == native::NanPolicy::propagate ? kNanAbsBits : 0u;
  return b;
}

template <CastInput In>
struct In_;
template <>
struct In_<CastInput::fp32> {
  using T = std::uint32_t;
  static __device__ __forceinline__ float get(std::uint32_t x) { return native::float_of(x); }
};
template <>
struct In_<CastInput::bf16> {
  using T = std::uint16_t;
  static __device__ __forceinline__ float get(std::uint32_t x) {
    return native::float_of(widen_bf16(x));
  }
};
template <>
struct In_<CastInput::fp16> {
  using T = std::uint16_t;
  static __device__ __forceinline__ float get(std::uint32_t x) {
    return native::float_of(widen_fp16(x));
  }
};

// The per-group state (native::group_state): fp32 for int8 / flt / codebook, a byte code for the
// block-scaled rules (Kind::mx: MX and NVFP4).
// The plan's functions out of line: every kernel instantiation calls the same one body (the
// generic paths are the cold ones; inlining the whole dispatch into each template instance
// multiplied the compile time and the register pressure of the fast paths).
__device__ __noinline__ std::uint32_t cold_group_state(const native::QuantPlan& p, float amax) {
  return native::group_state(p, amax);
}
// `cb` is the codebook in shared memory (kernels with codebook targets copy it there): reading
// the plan's own copy in parameter space with divergent indices would serialize.
__device__ __noinline__ std::uint8_t cold_quant_element(const native::QuantPlan& p, const float* cb,
                                                        float x, std::uint32_t state,
                                                        std::uint32_t word) {
  return static_cast<std::uint8_t>(native::quant_element(p, cb, x, state, word).code);
}
__device__ __noinline__ float cold_dequant_element(const native::QuantPlan& p, const float* cb,
                                                   std::uint32_t code, std::uint32_t state) {
  return native::dequant_element(p, cb, code, state);
}
__device__ __forceinline__ float state_of(const QArgs& a, float amax) {
  return native::float_of(cold_group_state(a.p, amax));
}
__host__ __device__ __forceinline__ bool nvfp4_rule(const QArgs& a) {
  return a.p.rule == native::ScaleRule::nvfp4_torchao || a.p.rule == native::ScaleRule::nvfp4_te;
}

// NVFP4 block scales with the fp8 instructions (gpu/cast/hw_cvt.hpp), sm_89+: the code is the
// instruction's e4m3 cast of the native scale value (a non-NaN value in [-448, 448] casts as
// e4m3_from_clamped does; the value's only NaN is CUDA's 0x7FFFFFFF, whose torch code 0x7F is the
// instruction's), and the element factor is the native factor of the instruction's decode of the
// code (exact for every non-NaN code; a NaN scale gives CUDA's NaN factor whatever the NaN's bits).
__device__ __forceinline__ std::uint8_t nvfp4_scale_code(const QArgs& a, float amax) {
#if defined(EXMY_HW_FP8)
  const float v = a.p.rule == native::ScaleRule::nvfp4_te
                      ? native::nvfp4_te_scale_value(amax, a.p.tensor)
                      : native::nvfp4_torchao_scale_value(amax, a.p.tensor);
  return static_cast<std::uint8_t>(cvt_f32x2<HwFp8::e4m3>(v, 0.0f));
#else
  return static_cast<std::uint8_t>(cold_group_state(a.p, amax));
#endif
}
__device__ __forceinline__ float nvfp4_factor(const QArgs& a, std::uint8_t code) {
#if defined(EXMY_HW_FP8)
  const std::uint16_t h = static_cast<std::uint16_t>(cvt_to_f16x2<HwFp8::e4m3>(code));
  const float s = __half2float(__ushort_as_half(h));
  return a.p.rule == native::ScaleRule::nvfp4_te ? native::nvfp4_te_factor(s, a.p.tensor)
                                                 : native::nvfp4_torchao_factor(s, a.p.tensor);
#else
  return native::nvfp4_element_scale(a.p, code);
#endif
}

__device__ __forceinline__ std::uint8_t scale_code_of(const QArgs& a, float amax) {
  if (nvfp4_rule(a)) return nvfp4_scale_code(a, amax);
  return static_cast<std::uint8_t>(cold_group_state(a.p, amax));
}

// The heavy native paths, by name (mx elements, generic casts).
__device__ __forceinline__ std::uint8_t cold_mx_element(FloatFormat f, float x, std::uint8_t scale,
                                                        RoundMode mode, int sr_bits,
                                                        std::uint32_t rand) {
  return static_cast<std::uint8_t>(native::mx_element(f, x, scale, mode, sr_bits, rand).code);
}
__device__ __noinline__ std::uint8_t cold_codebook_nearest(const float* cb, float n, TieRule tie) {
  return codebook_nearest(cb, n, tie);
}

__device__ __forceinline__ std::uint32_t stream_of(const QArgs& a) {
  return a.p.stream();
}

// The code of element i (flat input index) given its group's state; `word` is the element's
// 32-bit Philox word of stream_of(a) (unused unless a.p.mode is sr). quant::quantize's loop body,
// for the target kind K.
template <Kind K>
__device__ __forceinline__ std::uint8_t quant_one(const QArgs& a, const float* cb, float x,
                                                  float st, std::uint8_t mxs, std::uint32_t word) {
  if constexpr (K == Kind::int8) {
    // The integer rounding of native::round_to_int8 by one cvt (gpu/fast_int8.hpp).
    if (st == 0.0f) return 0;
    if (int8_fast_mode(a.p.mode)) {
      return static_cast<std::uint8_t>(
          fast_round_to_int8(native::absmax_scale(x, st, kInt8Q, a.p.order, a.p.sfu), a.p.mode));
    }
  }
  const std::uint32_t state = K == Kind::mx ? std::uint32_t{mxs} : native::bits_of(st);
  return cold_quant_element(a.p, cb, x, state, word);
}

// The 32-bit Philox words of stream_of(a) for elements base .. base + kRun - 1.
__device__ __forceinline__ void words_for_run(const QArgs& a, std::uint64_t base,
                                              std::uint32_t w[kRun]) {
  const std::uint32_t s = stream_of(a);
  if ((base & 3u) == 0) {
#pragma unroll
    for (int q = 0; q < kRun / 4; ++q) {
      const native::Philox4 b = native::philox_block(a.p.seed, s, (base >> 2) + q);
#pragma unroll
      for (int k = 0; k < 4; ++k) w[4 * q + k] = b.w[k];
    }
  } else {
#pragma unroll
    for (int k = 0; k < kRun; ++k) w[k] = native::philox_word(a.p.seed, s, base + k);
  }
}

// ---- fast element paths ----
// Per-group values hoisted out of the element loop: the state, and the reciprocal-like operand of
// the scaling order (RN32(1 / a) or RN32(Q / a)), exactly as native::absmax_scale and
// native::codebook_normalize compute them per element; for NVFP4 the element factor
// (native::nvfp4_element_scale).
struct GroupState {
  float st = 0.0f;
  float aux = 0.0f;
  int mx_exp = 0;  // mx: the scale's unbiased exponent X (scale code != 0xFF)
  std::uint8_t mxs = 0;
};

template <Kind K>
__device__ __forceinline__ GroupState group_state(const QArgs& a, float st, std::uint8_t mxs) {
  GroupState g;
  g.st = st;
  g.mxs = mxs;
  if constexpr (K == Kind::int8 || K == Kind::flt) {
    const float Q = K == Kind::int8 ? kInt8Q : a.p.fmax;
    g.aux = a.p.order == native::ScaleOrder::mul_recip ? native::rn32_div(Q, st)
            : a.p.order == native::ScaleOrder::fdividef_mul
                ? native::sfu_div_approx_ftz_f(a.p.sfu, Q, st)  // __fdividef(127, absmax)
                : native::rn32_div(1.0f, st);
  } else if constexpr (K == Kind::codebook) {
    g.aux = a.p.norm == native::NormOrder::bnb_cuda ? native::sfu_rcp_f(a.p.sfu, st)
                                                    : native::rn32_div(1.0f, st);
  } else if constexpr (K == Kind::mx) {
    if (nvfp4_rule(a)) {
      g.aux = nvfp4_factor(a, mxs);
    } else if (a.p.rule == native::ScaleRule::mx_torchao) {
      g.aux = native::mx_torchao_factor(mxs, a.p.mx_mode);
    } else {
      g.mx_exp = native::mx_scale_exp(mxs);
    }
  }
  return g;
}

// int8, rne: y as native::absmax_scale in the order O without the canonical-NaN steps (a NaN y
// gives code 0 either way), then one cvt.rni and the clamp.
template <native::ScaleOrder O>
__device__ __forceinline__ std::uint8_t fast_int8(const GroupState& g, float x) {
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
__device__ __forceinline__ std::uint8_t fast_int8(const QArgs& a, const GroupState& g, float x) {
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

__device__ __forceinline__ YForm yform_of(const QArgs& a, const GroupState& g) {
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

template <FastMode M, YForm Y>
__device__ __forceinline__ std::uint8_t fast_flt(const QArgs& a, const FastCastPlan& p,
                                                 const GroupState& g, std::uint32_t xb,
                                                 std::uint32_t word) {
  const float x = native::float_of(xb);
  float y;
  if constexpr (Y == YForm::div_mul) {
    y = native::rn32_mul(a.p.fmax, native::rn_div(x, g.st));
  } else if constexpr (Y == YForm::recip_mul) {
    y = native::rn32_mul(a.p.fmax, native::rn_mul(x, g.aux));
  } else if constexpr (Y == YForm::mul_recip) {
    y = native::rn32_mul(x, g.aux);
  } else if constexpr (Y == YForm::unscaled) {
    y = x;
  } else {
    y = native::rn32_mul(x, g.st);
  }
  const std::uint32_t yb = native::bits_of(y);
  if constexpr (M == FastMode::sr) {
    return static_cast<std::uint8_t>(
        fast_cast_fp32_fixed_inline<FastMode::sr>(p, yb, native::sr_word(word, a.p.sr_bits), a.p.sr_bits));
  } else {
    return static_cast<std::uint8_t>(fast_cast_fp32_fixed_inline<FastMode::rne>(p, yb, 0u, 0));
  }
}

// The same with the form chosen per element (kernels whose elements have different groups).
template <FastMode M>
__device__ __forceinline__ std::uint8_t fast_flt(const QArgs& a, const FastCastPlan& p,
                                                 const GroupState& g, std::uint32_t xb,
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
__device__ __forceinline__ float fast_normalize(const GroupState& g, float x) {
  if constexpr (O == native::NormOrder::bnb_cuda) return native::ftz_mul(x, g.aux);  // aux = rcp
  const float n = O == native::NormOrder::div ? native::rn_div(x, g.st) : native::rn_mul(x, g.aux);
  return g.st == 0.0f ? 0.0f : n;
}
__device__ __forceinline__ float fast_normalize(const QArgs& a, const GroupState& g, float x) {
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
                                                const GroupState& g, std::uint32_t xb) {
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
                                                        const GroupState& g, std::uint32_t xb) {
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
__device__ __forceinline__ void mx_hw_run(const QArgs& a, const GroupState& g,
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

// MX under torchao's arithmetic, fp8 elements (fast_mx_torchao) with the cast by the instruction:
// y is non-NaN or CUDA's NaN 0x7FFFFFFF, whose code 0x7F | sign is 0x7F, the instruction's NaN.
template <CastInput In, HwFp8 T>
__device__ __forceinline__ void mx_torchao_hw_run(const QArgs& a, const GroupState& g,
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
__device__ __forceinline__ void nvfp4_run(const GroupState& g, const std::uint32_t* w,
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
__device__ __forceinline__ void fast_int8_run(const GroupState& g, const std::uint32_t* w,
                                              std::uint8_t* c) {
#pragma unroll
  for (int k = 0; k < kRun; ++k) c[k] = fast_int8<O>(g, value_nan_free<In>(w, k));
}

template <CastInput In, YForm Y>
__device__ __forceinline__ void flt_rne_run(const QArgs& a, const FastCastPlan& p,
                                            const GroupState& g, const std::uint32_t* w,
                                            std::uint8_t* c) {
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    c[k] = fast_flt<FastMode::rne, Y>(a, p, g, exact_bits<In>(w, k), 0u);
  }
}

template <CastInput In, native::NormOrder O>
__device__ __forceinline__ void codebook_run(const QArgs& a, const float* cb,
                                             const std::uint32_t* tab, const GroupState& g,
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

template <CastInput In, Kind K>
__device__ __forceinline__ void fast_run(const QArgs& a, const FastCastPlan& p, const float* cb,
                                         const std::uint32_t* tab, const GroupState& g,
                                         std::uint64_t base, const std::uint32_t* w,
                                         std::uint8_t* c) {
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
    if (a.p.mode == RoundMode::sr) {
      std::uint32_t rw[kRun];
      words_for_run(a, base, rw);
#pragma unroll
      for (int k = 0; k < kRun; ++k)
        c[k] = fast_flt<FastMode::sr>(a, p, g, exact_bits<In>(w, k), rw[k]);
    } else {
      switch (yform_of(a, g)) {
        case YForm::div_mul:
          flt_rne_run<In, YForm::div_mul>(a, p, g, w, c);
          break;
        case YForm::recip_mul:
          flt_rne_run<In, YForm::recip_mul>(a, p, g, w, c);
          break;
        case YForm::mul_recip:
          flt_rne_run<In, YForm::mul_recip>(a, p, g, w, c);
          break;
        case YForm::unscaled:
          flt_rne_run<In, YForm::unscaled>(a, p, g, w, c);
          break;
        default:
          flt_rne_run<In, YForm::scale_mul>(a, p, g, w, c);
          break;
      }
    }
  } else if constexpr (K == Kind::mx) {
    if (nvfp4_rule(a)) {
      // NVFP4: the group's element factor once (GroupState::aux), then multiply, clamp, encode.
      if (a.p.rule == native::ScaleRule::nvfp4_te) {
        nvfp4_run<In, native::ScaleRule::nvfp4_te>(g, w, c);
      } else {
        nvfp4_run<In, native::ScaleRule::nvfp4_torchao>(g, w, c);
      }
      return;
    }
#if defined(EXMY_HW_FP8)
    if (a.hw_e4m3 || a.hw_e5m2) {
      const bool torchao = a.p.rule == native::ScaleRule::mx_torchao;
      if (a.hw_e4m3) {
        torchao ? mx_torchao_hw_run<In, HwFp8::e4m3>(a, g, w, c)
                : mx_hw_run<In, HwFp8::e4m3>(a, g, w, c);
      } else {
        torchao ? mx_torchao_hw_run<In, HwFp8::e5m2>(a, g, w, c)
                : mx_hw_run<In, HwFp8::e5m2>(a, g, w, c);
      }
      return;
    }
#endif
    if (a.p.rule == native::ScaleRule::mx_torchao) {
#pragma unroll
      for (int k = 0; k < kRun; ++k) c[k] = fast_mx_torchao(a, p, g, exact_bits<In>(w, k));
    } else {
#pragma unroll
      for (int k = 0; k < kRun; ++k) c[k] = fast_mx(a, p, g, exact_bits<In>(w, k));
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

// Packed 4-bit codes of a run at element base (even): 8 bytes, element 2i in the low nibble.
__device__ __forceinline__ void store_run_packed4(std::uint8_t* out, std::uint64_t base,
                                                  std::uint64_t n, bool vec,
                                                  const std::uint8_t c[kRun]) {
  if (vec && base + kRun <= n) {
    uint2 v;
    v.x = 0;
    v.y = 0;
#pragma unroll
    for (int k = 0; k < kRun / 2; ++k) v.x |= static_cast<std::uint32_t>(c[k] & 0xFu) << (4 * k);
#pragma unroll
    for (int k = 0; k < kRun / 2; ++k) {
      v.y |= static_cast<std::uint32_t>(c[kRun / 2 + k] & 0xFu) << (4 * k);
    }
    *reinterpret_cast<uint2*>(out + base / 2) = v;
  } else {
    for (int k = 0; k < kRun; k += 2) {
      if (base + k < n) {
        out[(base + k) / 2] = native::pack4_pair(c[k], base + k + 1 < n ? c[k + 1] : 0);
      }
    }
  }
}

__device__ __forceinline__ void store_run(std::uint8_t* out, std::uint64_t base, std::uint64_t n,
                                          bool vec, const std::uint8_t c[kRun]) {
  if (vec && base + kRun <= n) {
    uint4 v;
    v.x = c[0] | (c[1] << 8) | (c[2] << 16) | (static_cast<std::uint32_t>(c[3]) << 24);
    v.y = c[4] | (c[5] << 8) | (c[6] << 16) | (static_cast<std::uint32_t>(c[7]) << 24);
    v.z = c[8] | (c[9] << 8) | (c[10] << 16) | (static_cast<std::uint32_t>(c[11]) << 24);
    v.w = c[12] | (c[13] << 8) | (c[14] << 16) | (static_cast<std::uint32_t>(c[15]) << 24);
    *reinterpret_cast<uint4*>(out + base) = v;
  } else {
    for (int k = 0; k < kRun; ++k) {
      if (base + k < n) out[base + k] = c[k];
    }
  }
}

// Shared-memory tables: the codebook values (generic path and the table's slow buckets) and, for
// the fast codebook path, the bucket table built by cb_table_kernel.
template <Kind K, bool Fast>
struct SharedTables {
  static constexpr int kTab = K == Kind::codebook && Fast ? kCbEntries : 1;
  float cb[K == Kind::codebook ? 256 : 1];
  std::uint32_t tab[kTab];
};

template <Kind K, bool Fast>
__device__ __forceinline__ void load_tables(const QArgs& a, const std::uint32_t* tab_g,
                                            SharedTables<K, Fast>& t) {
  if constexpr (K == Kind::codebook) {
    for (int k = threadIdx.x; k < 256; k += blockDim.x) t.cb[k] = a.p.codebook[k];
    if constexpr (Fast) {
      const uint4* src = reinterpret_cast<const uint4*>(tab_g);
      uint4* dst = reinterpret_cast<uint4*>(t.tab);
      for (int k = threadIdx.x; k < kCbEntries / 4; k += blockDim.x) dst[k] = src[k];
    }
    __syncthreads();
  }
}

// The codebook's bucket table (gpu/quantize_codebook_table.hpp), one entry per thread.
__global__ void __launch_bounds__(kThreads)
    cb_table_kernel(std::uint32_t* __restrict__ table, const __grid_constant__ QArgs a) {
  __shared__ float cb[256];
  __shared__ float mids[255];
  for (int k = threadIdx.x; k < 256; k += blockDim.x) cb[k] = a.p.codebook[k];
  __syncthreads();
  for (int k = threadIdx.x; k < 255; k += blockDim.x) mids[k] = native::codebook_midpoint(cb, k);
  __syncthreads();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kCbEntries) table[i] = codebook_table_entry(mids, a.p.tie, i);
}

// ---- single pass: contiguous groups of G = 16 * S elements, S = 2^k <= 256 threads ----
// Lean: NVFP4 and MX under torchao's arithmetic, whose blocks are held to 64 registers (4 resident
// blocks per SM instead of 3 at 78): their element work is short and a block waits on its loads,
// so occupancy hides the latency (H200, same call: NVFP4 477 -> 448 us, MX torchao 496 -> 448 us).
// The others keep the compiler's choice: held to 64, OCP MX ran 483 -> 522 us (its inlined
// native fallback; out of line it ran 600 us) and the codebook path spilled (516 -> 1151 us).
template <CastInput In, Kind K, bool Fast, bool Pipe, bool Lean = false>
__global__ void __launch_bounds__(kThreads, Lean ? 4 : 1)
    fused_group_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                       float* __restrict__ state, std::uint8_t* __restrict__ mx_scales,
                       const std::uint32_t* __restrict__ tab_g, bool vec,
                       const __grid_constant__ QArgs a) {
  __shared__ SharedTables<K, Fast> t;
  __shared__ std::uint32_t warp_max[2][kThreads / 32];
  int parity = 0;
  load_tables<K, Fast>(a, tab_g, t);
  const FastCastPlan& p = a.plan;
  const int S = static_cast<int>(a.G / kRun);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * kTile;
  const std::uint64_t mine = static_cast<std::uint64_t>(threadIdx.x) * kRun;
  // Pipe: the next tile's words are loaded before this tile is reduced and quantized, so a block
  // keeps a load in flight while it computes (one-wave grid, several tiles per block).
  std::uint32_t next[InT<In>::kWords];
  std::uint64_t tile = static_cast<std::uint64_t>(blockIdx.x) * kTile;
  if (Pipe && tile < a.n) load_words<In>(x, tile + mine, a.n, vec, next);
  for (; tile < a.n; tile += stride) {
    const std::uint64_t base = tile + mine;
    std::uint32_t w[InT<In>::kWords];
    if constexpr (Pipe) {
#pragma unroll
      for (int k = 0; k < InT<In>::kWords; ++k) w[k] = next[k];
      if (tile + stride < a.n) load_words<In>(x, base + stride, a.n, vec, next);
    } else {
      load_words<In>(x, base, a.n, vec, w);
    }
    std::uint32_t acc = run_absmax<In>(w, a.p.nan);
    for (int off = 1; off < S && off < 32; off <<= 1) {
      acc = max(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, off));
    }
    if (S > 32) {  // the group spans S / 32 whole warps of this block
      // Two slots alternate by tile, so one barrier per tile suffices: a warp rewrites a slot
      // only after the next barrier, which every warp reaches after reading it.
      std::uint32_t* slot = warp_max[parity];
      parity ^= 1;
      if (lane == 0) slot[warp] = acc;
      __syncthreads();
      const int w0 = warp & ~(S / 32 - 1);
      for (int v = w0; v < w0 + S / 32; ++v) acc = max(acc, slot[v]);
    }
    const float amax = native::float_of(acc);
    float st = 0.0f;
    std::uint8_t mxs = 0;
    if constexpr (K == Kind::mx) {
      mxs = scale_code_of(a, amax);
    } else if constexpr (K == Kind::flt) {
      st = state_of(a, amax);
    } else {
      st = amax;
    }
    if (base < a.n && (threadIdx.x & (S - 1)) == 0) {
      const std::uint64_t g = base >> a.G_shift;  // single pass: G = 16 * 2^k
      if constexpr (K == Kind::mx) {
        mx_scales[g] = mxs;
      } else {
        state[g] = st;
      }
    }
    if (base < a.n) {
      std::uint8_t c[kRun];
      if constexpr (Fast) {
        fast_run<In, K>(a, p, t.cb, t.tab, group_state<K>(a, st, mxs), base, w, c);
      } else {
        generic_run<In, K>(a, t.cb, st, mxs, base, w, c);
      }
      // Packed codes are 4-bit element formats: MX / NVFP4 (K == mx) or float targets.
      if ((K == Kind::mx || K == Kind::flt) && a.packed4) {
        store_run_packed4(codes, base, a.n, vec, c);
      } else {
        store_run(codes, base, a.n, vec, c);
      }
    }
  }
}

// ---- two-pass path ----
// Tensor-wise absmax: runs of kRun elements with 16-byte loads, a max in the input's bit domain,
// a warp reduction and one atomicMax per block.
template <CastInput In, bool Ignore>
__global__ void __launch_bounds__(kThreads)
    amax_tensor_kernel(const void* __restrict__ x, std::uint32_t* __restrict__ amax,
                       std::uint64_t n, bool vec) {
  __shared__ std::uint32_t red[kThreads / 32];
  std::uint32_t acc = 0;
  for (std::uint64_t base =
           (static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x) * kRun;
       base < n; base += static_cast<std::uint64_t>(gridDim.x) * kTile) {
    std::uint32_t w[InT<In>::kWords];
    load_words<In>(x, base, n, vec, w);
#pragma unroll
    for (int k = 0; k < InT<In>::kWords; ++k) acc = absmax_word<In, Ignore>(acc, w[k]);
  }
  if constexpr (In != CastInput::fp32) acc = max(acc & 0xFFFFu, acc >> 16);
  acc = __reduce_max_sync(0xFFFFFFFFu, absmax_finish<In>(acc));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int v = 1; v < kThreads / 32; ++v) acc = max(acc, red[v]);
    if (acc != 0) atomicMax(amax, acc);
  }
}

// absmax of contiguous groups of G: each block owns a contiguous span of whole tiles; a thread
// carries (group, max) along its runs and flushes with atomicMax when the group changes.
template <CastInput In>
__global__ void __launch_bounds__(kThreads)
    amax_contig_kernel(const void* __restrict__ x_, std::uint32_t* __restrict__ amax, bool vec,
                       std::uint64_t tiles_per_block, const __grid_constant__ QArgs a) {
  std::uint64_t cur = ~std::uint64_t{0};
  std::uint32_t acc = 0;
  const std::uint64_t t0 = static_cast<std::uint64_t>(blockIdx.x) * tiles_per_block;
  for (std::uint64_t t = t0; t < t0 + tiles_per_block; ++t) {
    const std::uint64_t base = t * kTile + static_cast<std::uint64_t>(threadIdx.x) * kRun;
    if (base >= a.n) break;
    std::uint32_t w[InT<In>::kWords];
    load_words<In>(x_, base, a.n, vec, w);
    std::uint64_t g = base / a.G, r = base - g * a.G;
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      if (base + k < a.n) {
        if (g != cur) {
          if (acc != 0) atomicMax(amax + cur, acc);
          cur = g;
          acc = 0;
        }
        acc = max(acc, abs_bits(native::float_of(exact_bits<In>(w, k)), a.p.nan));
      }
      if (++r == a.G) {
        r = 0;
        ++g;
      }
    }
  }
  if (acc != 0) atomicMax(amax + cur, acc);
}

// absmax per column, scalar: thread = column, each block a strip of rows.
template <CastInput In>
__global__ void __launch_bounds__(kThreads)
    amax_col_kernel(const void* __restrict__ x_, std::uint32_t* __restrict__ amax,
                    std::uint64_t rows_per_block, const __grid_constant__ QArgs a) {
  const auto* x = static_cast<const typename In_<In>::T*>(x_);
  const std::uint64_t c = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= a.cols) return;
  const std::uint64_t r0 = static_cast<std::uint64_t>(blockIdx.y) * rows_per_block;
  const std::uint64_t r1 = r0 + rows_per_block < a.rows ? r0 + rows_per_block : a.rows;
  std::uint32_t acc = 0;
  for (std::uint64_t r = r0; r < r1; ++r) {
    acc = max(acc, abs_bits(In_<In>::get(x[r * a.cols + c]), a.p.nan));
  }
  if (acc != 0) atomicMax(amax + c, acc);
}

// ---- 2-d column-wise kernels: a thread owns kColRun consecutive columns (one or two 16-byte
// loads per row) over a strip of rows; needs cols % kColRun == 0 and 16-byte aligned rows ----
template <CastInput In>
struct ColT {
  static constexpr int kWords = kColRun * sizeof(typename InT<In>::T) / 4;
};

template <CastInput In>
__device__ __forceinline__ void load_col_words(const void* x_, std::uint64_t off,
                                               std::uint32_t* w) {
  using T = typename InT<In>::T;
  const uint4* q = reinterpret_cast<const uint4*>(static_cast<const T*>(x_) + off);
#pragma unroll
  for (int k = 0; k < ColT<In>::kWords / 4; ++k) {
    const uint4 r = q[k];
    w[4 * k] = r.x;
    w[4 * k + 1] = r.y;
    w[4 * k + 2] = r.z;
    w[4 * k + 3] = r.w;
  }
}

template <CastInput In, bool Ignore>
__global__ void __launch_bounds__(kThreads)
    amax_col_vec_kernel(const void* __restrict__ x, std::uint32_t* __restrict__ amax,
                        std::uint64_t rows, std::uint64_t cols, std::uint64_t rows_per_block) {
  const std::uint64_t c0 =
      (static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x) * kColRun;
  if (c0 >= cols) return;
  const std::uint64_t r0 = static_cast<std::uint64_t>(blockIdx.y) * rows_per_block;
  const std::uint64_t r1 = r0 + rows_per_block < rows ? r0 + rows_per_block : rows;
  std::uint32_t acc[ColT<In>::kWords] = {};
  for (std::uint64_t r = r0; r < r1; ++r) {
    std::uint32_t w[ColT<In>::kWords];
    load_col_words<In>(x, r * cols + c0, w);
#pragma unroll
    for (int k = 0; k < ColT<In>::kWords; ++k) acc[k] = absmax_word<In, Ignore>(acc[k], w[k]);
  }
#pragma unroll
  for (int k = 0; k < kColRun; ++k) {
    const std::uint32_t m = In == CastInput::fp32 ? acc[k] : half_at<In>(acc, k);
    const std::uint32_t b = absmax_finish<In>(m);
    if (b != 0) atomicMax(amax + c0 + k, b);
  }
}

// amax (as bits, in place) -> state / MX scale code.
__global__ void state_kernel(std::uint32_t* amax_bits, float* state, std::uint8_t* mx_scales,
                             const __grid_constant__ QArgs a) {
  const std::uint64_t g = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= a.groups) return;
  const float amax = native::float_of(amax_bits[g]);
  if (a.kind == Kind::mx) {
    mx_scales[g] = scale_code_of(a, amax);
  } else {
    state[g] = state_of(a, amax);
  }
}

// Tensor-wise codes: one state for every element.
template <CastInput In, Kind K, bool Fast>
__global__ void __launch_bounds__(kThreads)
    tensor_element_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                          const float* __restrict__ state, const std::uint32_t* __restrict__ tab_g,
                          bool vec, const __grid_constant__ QArgs a) {
  __shared__ SharedTables<K, Fast> t;
  load_tables<K, Fast>(a, tab_g, t);
  const FastCastPlan& p = a.plan;
  const GroupState g = group_state<K>(a, state[0], 0);
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * kTile;
  std::uint64_t base = (static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x) * kRun;
  std::uint32_t next[InT<In>::kWords];  // the next run, loaded while this one is quantized
  if (base < a.n) load_words<In>(x, base, a.n, vec, next);
  for (; base < a.n; base += stride) {
    std::uint32_t w[InT<In>::kWords];
#pragma unroll
    for (int k = 0; k < InT<In>::kWords; ++k) w[k] = next[k];
    if (base + stride < a.n) load_words<In>(x, base + stride, a.n, vec, next);
    std::uint8_t c[kRun];
    if constexpr (Fast) {
      fast_run<In, K>(a, p, t.cb, t.tab, g, base, w, c);
    } else {
      generic_run<In, K>(a, t.cb, g.st, g.mxs, base, w, c);
    }
    store_run(codes, base, a.n, vec, c);
  }
}

// Codes of kColRun consecutive elements starting at flat index i0 (a multiple of kColRun), fast
// path, each with its own group state gs[k], packed little-endian into 8 bytes.
template <CastInput In, Kind K>
__device__ __forceinline__ uint2 fast_codes8(const QArgs& a, const FastCastPlan& p,
                                             const SharedTables<K, true>& t, const GroupState* gs,
                                             std::uint64_t i0, const std::uint32_t* w) {
  std::uint32_t rw[kColRun] = {};
  if (K == Kind::flt && a.p.mode == RoundMode::sr) {
    // i0 is a multiple of kColRun = 8: two whole Philox blocks.
#pragma unroll
    for (int q = 0; q < kColRun / 4; ++q) {
      const native::Philox4 b =
          native::philox_block(a.p.seed, quant::kStreamQuantCast, (i0 >> 2) + q);
#pragma unroll
      for (int k = 0; k < 4; ++k) rw[4 * q + k] = b.w[k];
    }
  }
  std::uint32_t lo = 0, hi = 0;
#pragma unroll
  for (int k = 0; k < kColRun; ++k) {
    std::uint32_t c;
    if constexpr (K == Kind::int8) {
      c = fast_int8(a, gs[k], value_nan_free<In>(w, k));
    } else if constexpr (K == Kind::flt) {
      c = a.p.mode == RoundMode::sr
              ? fast_flt<FastMode::sr>(a, p, gs[k], exact_bits<In>(w, k), rw[k])
              : fast_flt<FastMode::rne>(a, p, gs[k], exact_bits<In>(w, k), 0u);
    } else {
      const float n = fast_normalize(a, gs[k], value_nan_free<In>(w, k));
      const std::uint32_t e = t.tab[codebook_table_index(native::bits_of(n))];
      c = (e & kCbSlow) ? cold_codebook_nearest(t.cb, n, a.p.tie)
                        : codebook_code_from_entry(e, native::bits_of(n)) & 0xFFu;
    }
    if (k < 4) {
      lo |= c << (8 * k);
    } else {
      hi |= c << (8 * (k - 4));
    }
  }
  return make_uint2(lo, hi);
}

// Column-wise codes, fast path: the thread's kColRun column states stay in registers.
template <CastInput In, Kind K>
__global__ void __launch_bounds__(kThreads)
    col_element_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                       const float* __restrict__ state, const std::uint32_t* __restrict__ tab_g,
                       std::uint64_t rows_per_block, const __grid_constant__ QArgs a) {
  __shared__ SharedTables<K, true> t;
  load_tables<K, true>(a, tab_g, t);
  const std::uint64_t c0 =
      (static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x) * kColRun;
  if (c0 >= a.cols) return;
  const FastCastPlan& p = a.plan;
  GroupState gs[kColRun];
#pragma unroll
  for (int k = 0; k < kColRun; ++k) gs[k] = group_state<K>(a, state[c0 + k], 0);
  const std::uint64_t r0 = static_cast<std::uint64_t>(blockIdx.y) * rows_per_block;
  const std::uint64_t r1 = r0 + rows_per_block < a.rows ? r0 + rows_per_block : a.rows;
  for (std::uint64_t r = r0; r < r1; ++r) {
    std::uint32_t w[ColT<In>::kWords];
    load_col_words<In>(x, r * a.cols + c0, w);
    *reinterpret_cast<uint2*>(codes + r * a.cols + c0) =
        fast_codes8<In, K>(a, p, t, gs, r * a.cols + c0, w);
  }
}

// Fused quantize + transpose, fast path, for tensor-, row- and column-wise groups with
// cols % 8 == 0, rows % 16 == 0 and 16-byte aligned x and codes: 64 x 64 tiles; a thread
// quantizes 8 consecutive elements of a row (one or two 16-byte loads), the codes go into
// shared memory already transposed, and each output row segment of 16 codes leaves as one
// 16-byte store.
constexpr int kTT = 64;
constexpr int kTTStride = kTT / 4 + 1;  // words per transposed tile row (17: fewer bank conflicts)

template <CastInput In, Kind K>
__global__ void __launch_bounds__(kThreads)
    transpose_fast_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                          const float* __restrict__ state, const std::uint32_t* __restrict__ tab_g,
                          const __grid_constant__ QArgs a) {
  __shared__ SharedTables<K, true> t;
  __shared__ std::uint32_t tileT[kTT * kTTStride];  // tileT bytes [c][r] at c * 68 + r
  load_tables<K, true>(a, tab_g, t);
  const std::uint64_t r0 = static_cast<std::uint64_t>(blockIdx.y) * kTT;
  const std::uint64_t c0 = static_cast<std::uint64_t>(blockIdx.x) * kTT;
  const int cc = (threadIdx.x & 7) * kColRun;
  const std::uint64_t c = c0 + cc;
  auto* tb = reinterpret_cast<std::uint8_t*>(tileT);
  if (c < a.cols) {
    const FastCastPlan& p = a.plan;
    GroupState gs[kColRun];
    if (a.col) {
#pragma unroll
      for (int k = 0; k < kColRun; ++k) gs[k] = group_state<K>(a, state[c + k], 0);
    } else if (a.groups == 1) {
      const GroupState g = group_state<K>(a, state[0], 0);
#pragma unroll
      for (int k = 0; k < kColRun; ++k) gs[k] = g;
    }
#pragma unroll
    for (int pass = 0; pass < kTT / 32; ++pass) {
      const int rr = pass * 32 + (threadIdx.x >> 3);
      const std::uint64_t r = r0 + rr;
      if (r < a.rows) {
        if (!a.col && a.groups != 1) {  // row-wise: one state for the 8 elements
          const GroupState g = group_state<K>(a, state[r], 0);
#pragma unroll
          for (int k = 0; k < kColRun; ++k) gs[k] = g;
        }
        std::uint32_t w[ColT<In>::kWords];
        load_col_words<In>(x, r * a.cols + c, w);
        const uint2 v = fast_codes8<In, K>(a, p, t, gs, r * a.cols + c, w);
#pragma unroll
        for (int k = 0; k < kColRun; ++k) {
          tb[(cc + k) * (4 * kTTStride) + rr] =
              static_cast<std::uint8_t>((k < 4 ? v.x : v.y) >> (8 * (k & 3)));
        }
      }
    }
  }
  __syncthreads();
  const int j = threadIdx.x >> 2, seg = (threadIdx.x & 3) * 16;
  const std::uint64_t oc = c0 + j, orow = r0 + seg;
  if (oc < a.cols && orow < a.rows) {
    const std::uint32_t* src = tileT + j * kTTStride + seg / 4;
    *reinterpret_cast<uint4*>(codes + oc * a.rows + orow) =
        make_uint4(src[0], src[1], src[2], src[3]);
  }
}

// General codes: any contiguous G or column-wise groups, the state read per element. The group
// of the run's first element costs one division; later elements step (group, position).
template <CastInput In, Kind K>
__global__ void __launch_bounds__(kThreads)
    element_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                   const float* __restrict__ state, const std::uint8_t* __restrict__ mx_scales,
                   bool vec, const __grid_constant__ QArgs a) {
  __shared__ SharedTables<K, false> t;
  load_tables<K, false>(a, nullptr, t);
  const std::uint64_t P = a.col ? a.cols : a.G;  // the period of the group pattern
  for (std::uint64_t base =
           (static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x) * kRun;
       base < a.n; base += static_cast<std::uint64_t>(gridDim.x) * kTile) {
    std::uint32_t w[InT<In>::kWords];
    load_words<In>(x, base, a.n, vec, w);
    std::uint32_t rw[kRun];
    if (a.p.mode == RoundMode::sr) words_for_run(a, base, rw);
    std::uint64_t q = base / P, r = base - q * P;
    std::uint8_t c[kRun];
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      c[k] = 0;
      if (base + k < a.n) {
        const std::uint64_t g = a.col ? r : q;
        const float st = K == Kind::mx ? 0.0f : state[g];
        const std::uint8_t mxs = K == Kind::mx ? mx_scales[g] : 0;
        c[k] = quant_one<K>(a, t.cb, native::float_of(exact_bits<In>(w, k)), st, mxs,
                            a.p.mode == RoundMode::sr ? rw[k] : 0u);
      }
      if (++r == P) {
        r = 0;
        ++q;
      }
    }
    store_run(codes, base, a.n, vec, c);
  }
}

__device__ __forceinline__ std::uint64_t group_of_rc(const QArgs& a, std::uint64_t r,
                                                     std::uint64_t c, std::uint64_t i) {
  if (a.col) return c;
  if (a.groups == 1) return 0;
  if (a.G == a.cols) return r;
  return i / a.G;
}

// Fused quantize + transpose: 32 x 32 tiles through shared memory; codes are cols x rows.
template <CastInput In, Kind K>
__global__ void __launch_bounds__(kThreads)
    transpose_kernel(const void* __restrict__ x_, std::uint8_t* __restrict__ codes,
                     const float* __restrict__ state, const std::uint8_t* __restrict__ mx_scales,
                     const __grid_constant__ QArgs a) {
  __shared__ SharedTables<K, false> t;
  __shared__ std::uint8_t tile[32][33];
  load_tables<K, false>(a, nullptr, t);
  const auto* x = static_cast<const typename In_<In>::T*>(x_);
  const std::uint64_t r0 = static_cast<std::uint64_t>(blockIdx.y) * 32;
  const std::uint64_t c0 = static_cast<std::uint64_t>(blockIdx.x) * 32;
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;  // 32 x 8 threads
  for (int k = 0; k < 4; ++k) {
    const std::uint64_t r = r0 + ty + 8 * k, c = c0 + tx;
    std::uint8_t code = 0;
    if (r < a.rows && c < a.cols) {
      const std::uint64_t i = r * a.cols + c;
      const std::uint64_t g = group_of_rc(a, r, c, i);
      const std::uint32_t w =
          a.p.mode == RoundMode::sr ? native::philox_word(a.p.seed, stream_of(a), i) : 0u;
      code = quant_one<K>(a, t.cb, In_<In>::get(x[i]), K == Kind::mx ? 0.0f : state[g],
                          K == Kind::mx ? mx_scales[g] : 0, w);
    }
    tile[ty + 8 * k][tx] = code;
  }
  __syncthreads();
  for (int k = 0; k < 4; ++k) {
    const std::uint64_t c = c0 + ty + 8 * k, r = r0 + tx;
    if (r < a.rows && c < a.cols) codes[c * a.rows + r] = tile[tx][ty + 8 * k];
  }
}

__global__ void __launch_bounds__(kThreads)
    dequant_kernel(const std::uint8_t* __restrict__ codes, const float* __restrict__ state,
                   const std::uint8_t* __restrict__ mx_scales, float* __restrict__ out,
                   const __grid_constant__ QArgs a) {
  __shared__ float cb[256];
  if (a.kind == Kind::codebook) {
    for (int k = threadIdx.x; k < 256; k += blockDim.x) cb[k] = a.p.codebook[k];
    __syncthreads();
  }
  const std::uint64_t P = a.col ? a.cols : a.G;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < a.n;
       i += static_cast<std::uint64_t>(gridDim.x) * kThreads) {
    const std::uint64_t r = i / a.cols, c = i % a.cols;
    const std::uint8_t code = codes[a.transpose ? c * a.rows + r : i];
    const std::uint64_t g = a.col ? c : i / P;
    const float v = a.kind == Kind::mx
                        ? cold_dequant_element(a.p, cb, code, mx_scales[g])
                        : cold_dequant_element(a.p, cb, code, native::bits_of(state[g]));
    out[i] = v;
  }
}

// packed[j] = codes 2j (low nibble) and 2j + 1 (high), sim/native/pack4.hpp's layout.
__global__ void __launch_bounds__(kThreads)
    pack4_kernel(const std::uint8_t* __restrict__ codes, std::uint64_t n,
                 std::uint8_t* __restrict__ packed) {
  const std::uint64_t pairs = (n + 1) / 2;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t j = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
       j < pairs; j += stride) {
    packed[j] = native::pack4_pair(codes[2 * j], 2 * j + 1 < n ? codes[2 * j + 1] : 0);
  }
}

// ---- host side ----

void check_options(std::size_t rows, std::size_t cols, const quant::Options& opt) {
  using quant::Granularity;
  quant::validate_options(opt);  // the checks the CPU path makes, then the GPU path's own
  const auto k = opt.scheme.kind;
  if ((k == Granularity::block || k == Granularity::mx || k == Granularity::nvfp4) &&
      opt.scheme.block == 0) {
    throw InputError("scheme block: expected a block size B >= 1");
  }
  if (k == Granularity::nvfp4 && cols % opt.scheme.block != 0) {
    throw InputError("scheme nvfp4: expected a last dimension divisible by 16, got " +
                     std::to_string(cols));
  }
  (void)rows;
}

QArgs make_args(std::size_t rows, std::size_t cols, const quant::Options& opt,
                const native::Nvfp4Tensor& level = {}) {
  using quant::Granularity;
  QArgs a{};
  a.p = quant::make_plan(opt, level);
  const quant::Scheme& s = opt.scheme;
  a.kind = a.p.byte_scales()                                  ? Kind::mx
           : a.p.element == native::ElementKind::int8         ? Kind::int8
           : a.p.element == native::ElementKind::float_format ? Kind::flt
                                                              : Kind::codebook;
  a.col = s.kind == Granularity::col;
  a.transpose = opt.transpose;
  a.rows = rows;
  a.cols = cols;
  a.n = static_cast<std::uint64_t>(rows) * cols;
  a.G = s.kind == Granularity::tensor ? (a.n > 0 ? a.n : 1)
        : s.kind == Granularity::row  ? cols
        : s.kind == Granularity::col  ? 1
                                      : s.block;
  a.groups = quant::group_count(s, rows, cols);
  while (a.G_shift < 63 && (std::uint64_t{1} << (a.G_shift + 1)) <= a.G) ++a.G_shift;
  if ((std::uint64_t{1} << a.G_shift) != a.G) a.G_shift = 0;
  if (a.p.element == native::ElementKind::float_format) {
    a.fast = a.kind == Kind::flt && fast_cast_supported(a.p.fmt);
    if (fast_cast_supported(a.p.fmt)) {
      a.plan = make_fast_cast_plan(a.p.fmt, Rounding{opt.mode, opt.sr_bits, Overflow::satfinite});
    }
  }
  // The fp8 instruction where the MX fast paths cast with fast_cast_fp32_fixed<rne> under
  // satfinite into e4m3fn / e5m2 (kernels compiled for sm_89+ only; others keep the software cast).
  const bool mx_fp8_rne =
      a.kind == Kind::mx && a.p.mode == RoundMode::rne &&
      (a.p.rule == native::ScaleRule::mx || a.p.rule == native::ScaleRule::mx_torchao);
  a.hw_e4m3 = mx_fp8_rne && a.p.fmt == formats::e4m3fn;
  a.hw_e5m2 = mx_fp8_rne && a.p.fmt == formats::e5m2;
  return a;
}

// Whether the element work of K runs on its fast path (see the file comment).
bool fast_path(const QArgs& a) {
  switch (a.kind) {
    case Kind::int8:
      return a.p.mode == RoundMode::rne;
    case Kind::flt:
      return a.fast && (a.p.mode == RoundMode::rne ||
                        fast_mode_for(a.plan, Rounding{a.p.mode, a.p.sr_bits,
                                                       Overflow::satfinite}) == FastMode::sr);
    case Kind::codebook:
      return a.p.mode != RoundMode::sr && codebook_table_supports(a.p.tie);
    case Kind::mx:  // fast_mx: OCP (ScaleRule::mx); fast_mx_torchao; NVFP4 per group
      return nvfp4_rule(a) ||
             ((a.p.rule == native::ScaleRule::mx || a.p.rule == native::ScaleRule::mx_torchao) &&
              fast_cast_supported(a.p.fmt) && a.p.mode == RoundMode::rne);
  }
  return false;
}

bool single_pass(const QArgs& a, const quant::Options& opt) {
  using quant::Granularity;
  const auto k = opt.scheme.kind;
  if (a.transpose || a.n == 0) return false;
  if (k != Granularity::row && k != Granularity::block && k != Granularity::mx &&
      k != Granularity::nvfp4) {
    return false;
  }
  const std::uint64_t G = a.G;
  if (G < kRun || G > kTile || G % kRun != 0) return false;
  const std::uint64_t S = G / kRun;
  return (S & (S - 1)) == 0;
}

// The number of kTile-element tiles covering the tensor.
std::uint64_t tile_count(const QArgs& a) {
  return (a.n + kTile - 1) / kTile;
}

// A grid-stride grid of one wave: as many blocks of `kernel` as are resident at once (kernels
// whose blocks carry set-up work, or that reduce per block), at most one per tile.
template <class Kernel>
unsigned persistent_blocks(Kernel kernel, std::uint64_t tiles) {
  static int per_sm = 0;  // one cache per kernel instantiation
  if (per_sm == 0) {
    int v = 0;
    cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, kernel, kThreads, 0), "occupancy");
    per_sm = v > 0 ? v : 1;
  }
  const std::uint64_t cap = static_cast<std::uint64_t>(sm_count()) * per_sm;
  return static_cast<unsigned>(tiles == 0 ? 1 : (tiles < cap ? tiles : cap));
}

bool col_vec_ok(const QArgs& a, const void* x) {
  return a.col && a.cols % kColRun == 0 && aligned16(x) && (a.cols * (a.rows > 0 ? 1 : 0)) > 0;
}

// The tiled fast transpose: tensor-, row- or column-wise groups, whole 8-column chunks and
// 16-row output segments, 16-byte aligned input and codes.
bool transpose_fast_ok(const QArgs& a, const void* x, const void* codes) {
  const bool groups_ok = a.col || a.groups == 1 || a.G == a.cols;
  return groups_ok && a.cols % kColRun == 0 && a.rows % 16 == 0 && aligned16(x) && aligned16(codes);
}

// Blocks across the columns of the vectorized column kernels: one thread per kColRun columns.
std::uint64_t col_vec_blocks(const QArgs& a) {
  return (a.cols / kColRun + kThreads - 1) / kThreads;
}

std::uint64_t col_rows_per_block(const QArgs& a) {
  const std::uint64_t col_blocks = col_vec_blocks(a);
  // Enough blocks to fill the device several times over, each a strip of >= 16 rows.
  const std::uint64_t want = static_cast<std::uint64_t>(sm_count()) * 16;
  std::uint64_t strips = (want + col_blocks - 1) / col_blocks;
  std::uint64_t rpb = (a.rows + strips - 1) / (strips > 0 ? strips : 1);
  return rpb < 16 ? 16 : rpb;
}

// The grid of the vectorized column kernels: column blocks by strips of rpb rows.
dim3 col_vec_grid(const QArgs& a, std::uint64_t rpb) {
  return dim3(static_cast<unsigned>(col_vec_blocks(a)),
              static_cast<unsigned>((a.rows + rpb - 1) / rpb));
}

template <CastInput In>
void run_amax(const void* x, std::uint32_t* amax_bits, const QArgs& a, cudaStream_t s) {
  cuda_check(cudaMemsetAsync(amax_bits, 0, a.groups * 4, s), "cudaMemsetAsync");
  if (a.n == 0) return;
  const bool ignore = a.p.nan != native::NanPolicy::propagate;
  const std::uint64_t tiles = tile_count(a);
  if (a.col && col_vec_ok(a, x)) {
    const std::uint64_t rpb = col_rows_per_block(a);
    const dim3 grid = col_vec_grid(a, rpb);
    if (ignore) {
      amax_col_vec_kernel<In, true><<<grid, kThreads, 0, s>>>(x, amax_bits, a.rows, a.cols, rpb);
    } else {
      amax_col_vec_kernel<In, false><<<grid, kThreads, 0, s>>>(x, amax_bits, a.rows, a.cols, rpb);
    }
  } else if (a.col) {
    const std::uint64_t rows_per_block = 64;
    const dim3 grid(static_cast<unsigned>((a.cols + kThreads - 1) / kThreads),
                    static_cast<unsigned>((a.rows + rows_per_block - 1) / rows_per_block));
    amax_col_kernel<In><<<grid, kThreads, 0, s>>>(x, amax_bits, rows_per_block, a);
  } else if (a.groups == 1) {
    if (ignore) {
      amax_tensor_kernel<In, true>
          <<<persistent_blocks(amax_tensor_kernel<In, true>, tiles), kThreads, 0, s>>>(
              x, amax_bits, a.n, aligned16(x));
    } else {
      amax_tensor_kernel<In, false>
          <<<persistent_blocks(amax_tensor_kernel<In, false>, tiles), kThreads, 0, s>>>(
              x, amax_bits, a.n, aligned16(x));
    }
  } else {
    // About 8 tiles (32K elements) per block: few atomics for big groups, enough blocks to fill
    // the GPU.
    const std::uint64_t per = 8;
    const unsigned grid = static_cast<unsigned>((tiles + per - 1) / per);
    amax_contig_kernel<In><<<grid, kThreads, 0, s>>>(x, amax_bits, aligned16(x), per, a);
  }
  cuda_check_launch("absmax kernel launch");
}

// Builds the codebook bucket table into scratch (freed by the caller, stream-ordered).
std::uint32_t* build_cb_table(const QArgs& a, cudaStream_t s) {
  void* p = nullptr;
  cuda_check(cudaMallocAsync(&p, kCbEntries * sizeof(std::uint32_t), s), "cudaMallocAsync");
  auto* table = static_cast<std::uint32_t*>(p);
  cb_table_kernel<<<kCbEntries / kThreads, kThreads, 0, s>>>(table, a);
  cuda_check_launch("codebook table kernel launch");
  return table;
}

// The single-pass kernel: one block per tile (measured fastest on H200 for the int8 / float / MX
// targets), except the fast codebook path, whose blocks copy the 32 KiB bucket table first: one
// wave of blocks over several tiles each, the next tile's load overlapping the current one.
template <CastInput In, Kind K, bool Fast>
void run_fused(const void* x, const QArgs& a, const QuantizedOut& o, const std::uint32_t* tab,
               bool vec, cudaStream_t s) {
  const std::uint64_t tiles = tile_count(a);
  if constexpr (K == Kind::codebook && Fast) {
    fused_group_kernel<In, K, Fast, true>
        <<<persistent_blocks(fused_group_kernel<In, K, Fast, true>, tiles), kThreads, 0, s>>>(
            x, o.codes, o.state, o.scale_codes, tab, vec, a);
  } else if (K == Kind::mx && Fast &&
             (nvfp4_rule(a) || a.p.rule == native::ScaleRule::mx_torchao)) {
    fused_group_kernel<In, K, Fast, false, K == Kind::mx && Fast>
        <<<blocks_for(tiles, 1), kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, tab, vec, a);
  } else {
    fused_group_kernel<In, K, Fast, false>
        <<<blocks_for(tiles, 1), kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, tab, vec, a);
  }
}

// Tensor-wise codes: one wave of blocks, each run's successor loaded while it is quantized.
template <CastInput In, Kind K, bool Fast>
void run_tensor_codes(const void* x, const QArgs& a, const QuantizedOut& o,
                      const std::uint32_t* tab, bool vec, cudaStream_t s) {
  const std::uint64_t tiles = tile_count(a);
  tensor_element_kernel<In, K, Fast>
      <<<persistent_blocks(tensor_element_kernel<In, K, Fast>, tiles), kThreads, 0, s>>>(
          x, o.codes, o.state, tab, vec, a);
}

template <CastInput In, Kind K>
void run_quantize(const void* x, const QArgs& a, const quant::Options& opt, const QuantizedOut& o,
                  cudaStream_t s) {
  if (a.n == 0) return;
  const bool vec = aligned16(x) && aligned16(o.codes);
  const bool fast = fast_path(a);
  const std::uint64_t tiles = tile_count(a);
  std::uint32_t* tab = nullptr;
  if (K == Kind::codebook && fast) tab = build_cb_table(a, s);
  if (single_pass(a, opt)) {
    if (fast) {
      run_fused<In, K, true>(x, a, o, tab, vec, s);
    } else {
      run_fused<In, K, false>(x, a, o, tab, vec, s);
    }
    cuda_check_launch("quantize kernel launch");
    if (tab != nullptr) cuda_check(cudaFreeAsync(tab, s), "cudaFreeAsync");
    return;
  }
  // amax into the state array (as bits), or into scratch for mx.
  std::uint32_t* amax = reinterpret_cast<std::uint32_t*>(o.state);
  void* scratch = nullptr;
  if (a.kind == Kind::mx) {
    cuda_check(cudaMallocAsync(&scratch, a.groups * 4, s), "cudaMallocAsync");
    amax = static_cast<std::uint32_t*>(scratch);
  }
  run_amax<In>(x, amax, a, s);
  state_kernel<<<static_cast<unsigned>((a.groups + kThreads - 1) / kThreads), kThreads, 0, s>>>(
      amax, o.state, o.scale_codes, a);
  cuda_check_launch("state kernel launch");
  if (a.transpose) {
    if constexpr (K != Kind::mx) {
      if (fast && transpose_fast_ok(a, x, o.codes)) {
        const dim3 grid(static_cast<unsigned>((a.cols + kTT - 1) / kTT),
                        static_cast<unsigned>((a.rows + kTT - 1) / kTT));
        transpose_fast_kernel<In, K><<<grid, kThreads, 0, s>>>(x, o.codes, o.state, tab, a);
        cuda_check_launch("quantize kernel launch");
        if (tab != nullptr) cuda_check(cudaFreeAsync(tab, s), "cudaFreeAsync");
        return;
      }
    }
    const dim3 grid(static_cast<unsigned>((a.cols + 31) / 32),
                    static_cast<unsigned>((a.rows + 31) / 32));
    transpose_kernel<In, K><<<grid, kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, a);
  } else if constexpr (K != Kind::mx) {  // mx without transpose is always single pass
    if (a.groups == 1) {
      if (fast) {
        run_tensor_codes<In, K, true>(x, a, o, tab, vec, s);
      } else {
        run_tensor_codes<In, K, false>(x, a, o, tab, vec, s);
      }
    } else if (a.col && fast && col_vec_ok(a, x) &&
               (reinterpret_cast<std::uintptr_t>(o.codes) & 7u) == 0) {
      const std::uint64_t rpb = col_rows_per_block(a);
      const dim3 grid = col_vec_grid(a, rpb);
      col_element_kernel<In, K><<<grid, kThreads, 0, s>>>(x, o.codes, o.state, tab, rpb, a);
    } else {
      element_kernel<In, K>
          <<<blocks_for(tiles, 1), kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, vec, a);
    }
  }
  cuda_check_launch("quantize kernel launch");
  if (tab != nullptr) cuda_check(cudaFreeAsync(tab, s), "cudaFreeAsync");
  if (scratch != nullptr) cuda_check(cudaFreeAsync(scratch, s), "cudaFreeAsync");
}

template <CastInput In>
void run_kind(const void* x, const QArgs& a, const quant::Options& opt, const QuantizedOut& o,
              cudaStream_t s) {
  switch (a.kind) {
    case Kind::int8:
      run_quantize<In, Kind::int8>(x, a, opt, o, s);
      break;
    case Kind::flt:
      run_quantize<In, Kind::flt>(x, a, opt, o, s);
      break;
    case Kind::codebook:
      run_quantize<In, Kind::codebook>(x, a, opt, o, s);
      break;
    case Kind::mx:
      run_quantize<In, Kind::mx>(x, a, opt, o, s);
      break;
  }
}

}  // namespace

bool quantize_is_single_pass(std::size_t rows, std::size_t cols, const quant::Options& opt) {
  return single_pass(make_args(rows, cols, opt), opt);
}

void quantize(const void* x, CastInput in_type, std::size_t rows, std::size_t cols,
              const quant::Options& opt, const QuantizedOut& out, CUstream_st* stream) {
  check_options(rows, cols, opt);
  const bool bytes = quant::make_plan(opt).byte_scales();
  if (out.codes == nullptr || (bytes ? out.scale_codes == nullptr : out.state == nullptr) ||
      (opt.two_level && out.tensor_scale == nullptr)) {
    throw InputError(
        "quantize: output pointers for codes and state (scale codes, tensor scale) "
        "are required");
  }
  // NVFP4 two-level: the per-tensor level from the tensor's absmax, read back to the host (the
  // plan is built there), unless the options give it.
  native::Nvfp4Tensor level;
  if (opt.two_level) {
    float tensor_amax = native::kAbsmaxInit;
    if (opt.tensor_amax != opt.tensor_amax && opt.tensor_scale != opt.tensor_scale) {
      void* scratch = nullptr;
      cuda_check(cudaMallocAsync(&scratch, sizeof(float), stream), "cudaMallocAsync");
      group_absmax(x, in_type, rows, cols, quant::Scheme{quant::Granularity::tensor, 0}, opt.nan,
                   static_cast<float*>(scratch), stream);
      cuda_check(
          cudaMemcpyAsync(&tensor_amax, scratch, sizeof(float), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync");
      cuda_check(cudaFreeAsync(scratch, stream), "cudaFreeAsync");
      cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
    level = quant::nvfp4_tensor_level(opt, tensor_amax);
    const float stored = quant::nvfp4_stored_scale(opt, level);
    cuda_check(cudaMemcpy(out.tensor_scale, &stored, sizeof(float), cudaMemcpyHostToDevice),
               "cudaMemcpy");
  }
  QArgs a = make_args(rows, cols, opt, level);
  QuantizedOut o = out;
  void* scratch = nullptr;
  if (out.packed4) {
    if (a.p.element != native::ElementKind::float_format || a.p.fmt.total_bits() > 4) {
      throw InputError("quantize: packed codes need an element format of at most 4 bits, got '" +
                       opt.target.name + "'");
    }
    // The single-pass kernel packs as it stores; the other paths write bytes to scratch, which
    // one more kernel packs.
    a.packed4 = single_pass(a, opt);
    if (!a.packed4 && a.n > 0) {
      cuda_check(cudaMallocAsync(&scratch, a.n, stream), "cudaMallocAsync");
      o.codes = static_cast<std::uint8_t*>(scratch);
    }
  }
  switch (in_type) {
    case CastInput::fp32:
      run_kind<CastInput::fp32>(x, a, opt, o, stream);
      break;
    case CastInput::bf16:
      run_kind<CastInput::bf16>(x, a, opt, o, stream);
      break;
    case CastInput::fp16:
      run_kind<CastInput::fp16>(x, a, opt, o, stream);
      break;
  }
  if (scratch != nullptr) {
    const std::uint64_t pairs = (a.n + 1) / 2;
    pack4_kernel<<<grid_for(pairs, 1), kThreads, 0, stream>>>(o.codes, a.n, out.codes);
    cuda_check_launch("pack kernel launch");
    cuda_check(cudaFreeAsync(scratch, stream), "cudaFreeAsync");
  }
}

void dequantize(const std::uint8_t* codes, const float* state, const std::uint8_t* mx_scales,
                std::size_t rows, std::size_t cols, const quant::Options& opt, float* out,
                CUstream_st* stream, float tensor_scale) {
  check_options(rows, cols, opt);
  const QArgs a = make_args(rows, cols, opt, quant::nvfp4_tensor_from_scale(opt, tensor_scale));
  if (a.n == 0) return;
  const std::uint64_t blocks = (a.n + kThreads - 1) / kThreads;
  dequant_kernel<<<blocks_for(blocks, 1), kThreads, 0, stream>>>(codes, state, mx_scales, out, a);
  cuda_check_launch("dequantize kernel launch");
}

void group_absmax(const void* x, CastInput in_type, std::size_t rows, std::size_t cols,
                  const quant::Scheme& scheme, native::NanPolicy nan, float* amax,
                  CUstream_st* stream) {
  quant::Options opt;
  opt.scheme = scheme;
  opt.nan = nan;
  const QArgs a = make_args(rows, cols, opt);
  auto* bits = reinterpret_cast<std::uint32_t*>(amax);
  switch (in_type) {
    case CastInput::fp32:
      run_amax<CastInput::fp32>(x, bits, a, stream);
      break;
    case CastInput::bf16:
      run_amax<CastInput::bf16>(x, bits, a, stream);
      break;
    case CastInput::fp16:
      run_amax<CastInput::fp16>(x, bits, a, stream);
      break;
  }
}

}  // namespace exmy::gpu
