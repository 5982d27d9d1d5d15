// Internal to gpu/cast/cast*.cu: the per-vector code arithmetic of the span kernels
// (cast_span_paths.cu). The hw path's codes under rne (hw_vector_rne) and sr:R (hw_codes_sr, as
// HwSrCodes for sr_span_kernel), and the lean path's sr:8 codes of 8-bit formats read as integers
// (lean_codes_sr, as LeanSrCodes).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gpu/cast/detail_cast_args.cuh"
#include "gpu/cast/detail_cast_elements.cuh"
#include "gpu/cast/fast_cast.hpp"
#include "gpu/cast/hw_cvt.hpp"

namespace exmy::gpu::cast_detail {
namespace {

// Stores the codes of one input vector: G bytes, packed four to a word in res.
template <int G, std::size_t N>
__device__ __forceinline__ void store_codes(std::uint8_t* dst, const std::uint32_t (&res)[N]) {
  if constexpr (G == 4) {
    *reinterpret_cast<std::uint32_t*>(dst) = res[0];
  } else {
    *reinterpret_cast<uint2*>(dst) = make_uint2(res[0], res[G / 4 - 1]);
  }
}

// prmt.b32 (default mode): byte k of the result is byte sel[4k+2:4k] of {b, a}; where bit 4k+3
// of sel is set, that byte's top bit is replicated over all eight bits.
__device__ __forceinline__ std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t sel) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// Packed 16-bit arithmetic on two halves of a word (sm_80+): the larger of each pair of bf16 or of
// fp16 values (no NaN operands here), and the bf16 product, rounded to nearest (a fused
// multiply-add of -0: exact where the product is, which is where it is used).
__device__ __forceinline__ std::uint32_t hmax2_bf16(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ std::uint32_t hmax2_fp16(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ std::uint32_t hmul2_bf16(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
  return d;
}

// The hw path's codes of one 16-byte input vector under rne (4 fp32 or 8 bf16 / fp16 elements,
// as 32-bit words w), one byte each, little-endian in res. The instruction gives the rne +
// satfinite code; s = |x| + ovf_add has its top bit (bit 31, or bit 15 of each 16-bit lane) set
// where the policy overflows, which prmt turns into a 0xFF byte, so the code gains one exactly
// there (no byte carries: the codes that gain one are +-max, 0x7E / 0xFE or 0x7B / 0xFB). rare
// collects |x| + (top - inf - 1), whose top bit is set for NaN inputs (redone by the rare path:
// the instruction drops their sign), and with InfRare also for inf inputs (fake quantization:
// under overflow `sat` an inf input gives the inf code, which fast_decode_fp32_lean does not
// decode).
template <CastInput In, HwFp8 F, bool InfRare>
__device__ __forceinline__ void hw_vector_rne(
    const std::uint32_t (&w)[4], std::uint32_t ovf_add,
    std::uint32_t (&res)[4 / sizeof(typename InputTraits<In>::T)], std::uint32_t& rare) {
  if constexpr (In == CastInput::fp32) {
    std::uint32_t s[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const std::uint32_t a = w[k] & 0x7FFFFFFFu;
      s[k] = a + ovf_add;
      rare |= a + (0x80000000u - (InfRare ? 0x7F800000u : 0x7F800001u));
    }
    const std::uint32_t c = cvt_f32x4<F>(__uint_as_float(w[0]), __uint_as_float(w[1]),
                                         __uint_as_float(w[2]), __uint_as_float(w[3]));
    // Bytes 3 and 7 of each pair, sign-replicated: the four flags as 0x00 / 0xFF bytes.
    const std::uint32_t f = prmt(prmt(s[0], s[1], 0xFBu), prmt(s[2], s[3], 0xFBu), 0x5410u);
    res[0] = c + (f & 0x01010101u);
  } else {
    constexpr std::uint32_t kInf = In == CastInput::bf16 ? 0x7F80u : 0x7C00u;
    constexpr std::uint32_t kNanAdd = (0x8000u - kInf - (InfRare ? 0u : 1u)) * 0x00010001u;
    std::uint32_t s[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const std::uint32_t a = w[k] & 0x7FFF7FFFu;  // lane sums stay below 2^16: no carry across
      s[k] = a + ovf_add;
      rare |= a + kNanAdd;
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const std::uint32_t p0 = w[2 * j], p1 = w[2 * j + 1];
      std::uint32_t c;
      if constexpr (In == CastInput::fp16) {
        c = cvt_f16x4<F>(p0, p1);
      } else {
        c = cvt_f32x4<F>(__uint_as_float(p0 << 16), __uint_as_float(p0 & 0xFFFF0000u),
                         __uint_as_float(p1 << 16), __uint_as_float(p1 & 0xFFFF0000u));
      }
      // Bytes 1, 3, 5, 7 of the two words (bits 15 and 31 of each), sign-replicated.
      const std::uint32_t f = prmt(s[2 * j], s[2 * j + 1], 0xFDB9u);
      res[j] = c + (f & 0x01010101u);
    }
  }
}

// The constants of the hw path's sr:R rounding (hw_codes_sr), uniform over the launch.
struct HwSr {
  std::uint32_t norm_min;  // fp32 bits of 2^emin, f's smallest normal magnitude
  float scale;             // 2^(23 - M - R)
  // 16-bit inputs (hw_sr_magic): 2^emin in both halves as bf16 and as fp16 (e4m3 and e5m2 have
  // emin >= -14, fp16's smallest normal exponent), 2^(23 - M - R) in both halves as bf16, and
  // the fp32 bits of 2^(23 - M - R - 15): added to an fp16 exponent field moved to bit 23, they
  // give mg.
  std::uint32_t norm_min2_bf16, norm_min2_fp16, scale2_bf16, mg_bias_fp16;
  std::uint32_t rand_mul;  // 2^R: the R-bit word is the high word of word * 2^R
  std::uint32_t keep;      // ~(2^R - 1)
  // Overflow none: added to the high halves of two rounded magnitudes, it sets bit 15 of a half
  // exactly where the magnitude is past f's max (0: sat, satfinite, the instruction's +-max).
  std::uint32_t ovf_add2;
};

__device__ __forceinline__ HwSr hw_sr_consts(const CastArgs& a) {
  const int R = a.r.sr_bits;
  HwSr c;
  c.norm_min = a.plan.norm_min;
  const int s = a.plan.normal_shift - R;  // 23 - M - R
  c.scale = __uint_as_float(static_cast<std::uint32_t>(127 + s) << 23);
  c.norm_min2_bf16 = (c.norm_min >> 16) * 0x00010001u;
  c.norm_min2_fp16 = (((c.norm_min >> 23) - 112u) << 10) * 0x00010001u;
  c.scale2_bf16 = (__float_as_uint(c.scale) >> 16) * 0x00010001u;
  c.mg_bias_fp16 = static_cast<std::uint32_t>(112 + s) << 23;
  c.rand_mul = 1u << R;
  c.keep = ~(c.rand_mul - 1u);
  // hw_plan's ovf_add puts f's max at 2^31 - ovf_add - 1; its low 16 bits are zero (M <= 3).
  const std::uint32_t max_hi = (0x80000000u - a.hw_ovf_add - 1u) >> 16;
  c.ovf_add2 = a.hw_ovf_add != 0 ? (0x8000u - (max_hi + 1u)) * 0x00010001u : 0u;
  return c;
}

// The fp32 bits x of elements 4j .. 4j + 3 of a 16-byte input vector and their magic numbers
// mg = 2^(max(exponent of |x|, emin) + 23 - M - R) (hw_codes_sr). fp32: e's bits by a mask and a
// max, mg by one multiplication (exact, or inf past fp32's range). 16-bit inputs take the
// exponent fields of two elements with one mask and one packed max (their exponent fields are
// exact 16-bit powers of two, or inf for inf and NaN), then
//   bf16: one packed bf16 multiplication by 2^(23 - M - R) (bf16 has fp32's exponent range: the
//         same power of two, or inf), and each half moved into an fp32 word;
//   fp16: the fp16 exponent field E moved to fp32's (bit 23) plus the bits of 2^(23 - M - R - 15)
//         (an fp32 power of two; for E = 31, inf and NaN, a finite one: t is then inf or NaN and
//         so is y, as in the fp32 case), one multiply-add for the low half (the shift drops the
//         high half) and a conversion and a multiplication for the high one.
// Against one mask, one max and one fp32 multiplication per element: two instructions less per
// two bf16 elements, one per two fp16 elements (H100 bf16 / fp16 -> e4m3fn sr:8 317 / 314 -> 312 /
// 309 us, bench/results/2026-11-26-h100-cast-sr16-magic.md). An fp32 vector is one block (j = 0).
template <CastInput In>
__device__ __forceinline__ void hw_sr_magic(const uint4& v, int j, const HwSr& c,
                                            std::uint32_t (&x)[4], float (&mg)[4]) {
  if constexpr (In == CastInput::fp32) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      x[k] = InputTraits<In>::widen_lean_at(v, k);
      const std::uint32_t e = max(x[k] & 0x7F800000u, c.norm_min);
      mg[k] = __fmul_rn(__uint_as_float(e), c.scale);
    }
  } else {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::uint32_t w = word_of(v, 2 * j + h);
      x[2 * h] = InputTraits<In>::widen_lean_at(v, 4 * j + 2 * h);
      x[2 * h + 1] = InputTraits<In>::widen_lean_at(v, 4 * j + 2 * h + 1);
      if constexpr (In == CastInput::bf16) {
        const std::uint32_t ep = hmax2_bf16(w & 0x7F807F80u, c.norm_min2_bf16);
        const std::uint32_t mgp = hmul2_bf16(ep, c.scale2_bf16);
        mg[2 * h] = __uint_as_float(mgp << 16);
        mg[2 * h + 1] = __uint_as_float(mgp & 0xFFFF0000u);
      } else {
        const std::uint32_t ep = hmax2_fp16(w & 0x7C007C00u, c.norm_min2_fp16);
        mg[2 * h] = __uint_as_float((ep << 13) + c.mg_bias_fp16);
        mg[2 * h + 1] = __fmul_rn(
            __half2float(__ushort_as_half(static_cast<unsigned short>(ep >> 16))), c.scale);
      }
    }
  }
}

// The hw path's codes of four elements (fp32 bits x, x[0] in the low byte) under sr:R
// (SEMANTICS 3.1), word[k] the 32-bit Philox word of element k. The rounding happens on the fp32
// value and gives y, which the format holds exactly, so the instruction only encodes it. One
// formula for f's normal range and below it: with e = max(exponent of |x|, emin), |x| < 2^(e+1),
// f's grid step there is g = 2^(e - M), and
//   mg = 2^(e + 23 - M - R)      (hw_sr_magic: by one multiplication of e's bits, or for 16-bit
//                                inputs on two elements at once);
//   t  = rz(mg + |x|)            lies in [mg, 2 mg) (R <= 21 - M puts 2^(e+1) below mg), where
//                                the ulp is u = g 2^-R: its bits are mg's plus floor(|x| / u),
//                                the residual truncated to R bits (section 3.1);
//   t' = t + (word >> (32 - R))  as integers (one LEA.HI for sr:8), inside mg's binade
//                                (floor(|x|/u) < 2^(M+R+1), + 2^R < 2^23); the carry out of the
//                                low R bits is the rounding up;
//   y  = (t' with the low R bits cleared) - mg, exactly T g.
// Inputs whose mg is not a finite fp32 number (|x| >= 2^(105 + M + R), inf, NaN) give y = NaN or
// inf (or a y with the sign bit set): top, the largest y seen, reaches 0x7F800000 and the caller
// redoes the vector on the rare path. A finite y past f's max saturates in the instruction, which
// is the policy's code under sat and satfinite; under overflow none the code gains one, flagged as
// in hw_vector_rne, here on the high halves of y (y's low 16 bits are zero, M <= 3): two per word.
// The instruction encodes |y|; the signs join the four codes at the end, `signs` holding each
// element's sign at bit 7 of its byte (sign_bytes: one PRMT per four 16-bit inputs, where one
// LOP3 per element put the sign on y before).
template <HwFp8 F, int RC>
__device__ __forceinline__ std::uint32_t hw_codes_sr(const std::uint32_t (&x)[4],
                                                     const float (&mg)[4],
                                                     const std::uint32_t (&word)[4],
                                                     std::uint32_t signs, const HwSr& c,
                                                     std::uint32_t& top) {
  float y[4];          // |y|
  std::uint32_t m[4];  // its bits
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float t = __fadd_rz(fabsf(__uint_as_float(x[k])), mg[k]);
    const std::uint32_t t1 =
        __float_as_uint(t) + (RC != 0 ? word[k] >> (32 - RC) : __umulhi(word[k], c.rand_mul));
    // R compiled in: the mask is an immediate (read from c, ptxas rebuilt it in every span).
    const std::uint32_t keep = RC != 0 ? ~((1u << RC) - 1u) : c.keep;
    const float ya = __fsub_rn(__uint_as_float(t1 & keep), mg[k]);
    m[k] = __float_as_uint(ya);
    top = max(top, m[k]);
    y[k] = ya;
  }
  const std::uint32_t c4 = cvt_f32x4<F>(y[0], y[1], y[2], y[3]);
  // The high halves of |y0|, |y1| and of |y2|, |y3| (below 0x7F80 unless top sends the vector to
  // the rare path: no carry across halves), plus ovf_add2; bits 15 and 31, sign-replicated.
  const std::uint32_t s01 = prmt(m[0], m[1], 0x7632u) + c.ovf_add2;
  const std::uint32_t s23 = prmt(m[2], m[3], 0x7632u) + c.ovf_add2;
  return (c4 + (prmt(s01, s23, 0xFDB9u) & 0x01010101u)) | (signs & 0x80808080u);
}

// The signs of elements 4j .. 4j + 3 of a 16-byte input vector at bit 7 of bytes 0..3 (the other
// bits are not cleared): the top byte of each fp32 lane, or the high byte of each 16-bit half.
template <CastInput In>
__device__ __forceinline__ std::uint32_t sign_bytes(const uint4& v, int j) {
  if constexpr (In == CastInput::fp32) {
    return prmt(prmt(v.x, v.y, 0x0073u), prmt(v.z, v.w, 0x0073u), 0x5410u);
  } else {
    return j == 0 ? prmt(v.x, v.y, 0x7531u) : prmt(v.z, v.w, 0x7531u);
  }
}

// sr_span_kernel's arithmetic on the hw path: hw_codes_sr, a vector rare where a rounded
// magnitude reached inf's bits (NaN, inf, |x| too large for the constants).
template <HwFp8 F, int RC>
struct HwSrCodes {
  using Consts = HwSr;
  static __device__ __forceinline__ Consts consts(const CastArgs& a) { return hw_sr_consts(a); }
  template <CastInput In>
  static __device__ __forceinline__ std::uint32_t codes(const CastArgs&, const uint4& v, int j,
                                                        const std::uint32_t (&word)[4],
                                                        const Consts& c, std::uint32_t& top) {
    std::uint32_t x[4];
    float mg[4];
    hw_sr_magic<In>(v, j, c, x, mg);
    return hw_codes_sr<F, RC>(x, mg, word, sign_bytes<In>(v, j), c, top);
  }
  static __device__ __forceinline__ bool rare(std::uint32_t top, const Consts&) {
    return top >= 0x7F800000u;
  }
};

// The constants of the lean path's sr:R span rounding (lean_codes_sr), uniform over the launch.
struct LeanSr {
  std::uint32_t norm_min;  // fp32 bits of 2^max(emin, -126) (FastCastPlan::norm_min)
  float scale;             // 2^(23 - M - R)
  int field_shift;         // 23 - M - R: (e - norm_min) >> it is f's exponent-field step, times 2^R
  std::uint32_t lean_lo;   // the lean domain's lowest |x| bits (0, or 2^-126 for e8m0fnu)
  std::uint32_t rare_hi;   // the largest |x| - lean_lo rounded here (the rest: rare_one)
};

__device__ __forceinline__ LeanSr lean_sr_consts(const CastArgs& a) {
  const int R = a.r.sr_bits;
  const int M = 23 - a.plan.normal_shift;
  LeanSr c;
  c.norm_min = a.plan.norm_min;
  c.field_shift = a.plan.normal_shift - R;
  c.scale = __uint_as_float(static_cast<std::uint32_t>(127 + c.field_shift) << 23);
  // mg = 2^(e + 23 - M - R) is a finite fp32 number for |x| < 2^(105 + M + R); the lean domain
  // is |x| - lean_lo <= lean_span.
  const std::uint32_t mg_finite = (static_cast<std::uint32_t>(127 + 105 + M + R) << 23) - 1u;
  c.lean_lo = a.plan.lean_lo;
  c.rare_hi = min(a.plan.lean_span, mg_finite - c.lean_lo);
  return c;
}

// The lean path's codes of four elements under sr:RC (x[0] in the low byte), for 8-bit formats
// with subnormals and a zero whose normal range starts inside fp32's (lean_sr_span_ok): the
// rounding of hw_codes_sr, which leaves in t' the sum of mg's bits and floor(|x| / u) plus the
// R-bit word (u = g 2^-R, g = 2^(e - M) the grid step at e = max(exponent of |x|, emin)), read
// as an integer instead of decoded: (t' - mg) >> R is T = floor(|x| / g) + carry, |x|'s rounded
// magnitude in steps of g, and f's magnitude code is T + (e - emin) 2^M, one formula for the
// normal range (T in [2^M, 2^(M+1)], the carry into the next binade included) and below it
// (e = emin, T in [0, 2^M]: the subnormal codes and the smallest normal). The (e - emin) 2^M
// term joins before the shift as (e's bits - norm_min) >> (23 - M - R). Overflow and the sign
// then follow native::fast_lean_finish. Where |x| - lean_lo > rare_hi the vector is redone by
// rare_one. Lo: the lean domain starts above 0 (e8m0fnu, whose normal range covers fp32's:
// norm_min is then 2^-126's bits and the term (e - 2^-126) 2^M is the code's, f's bias being
// fp32's; zero and fp32 subnormals go to rare_one, which flags them for the native engine).
template <bool Signed, bool NegZero, int RC, bool Lo>
__device__ __forceinline__ std::uint32_t lean_codes_sr(const CastArgs& a,
                                                       const std::uint32_t (&x)[4],
                                                       const std::uint32_t (&word)[4],
                                                       const LeanSr& c, std::uint32_t& top) {
  static_assert(RC > 0, "R compiled in");
  std::uint32_t codes = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::uint32_t ax = x[k] & 0x7FFFFFFFu;
    top = max(top, Lo ? ax - c.lean_lo : ax);
    const std::uint32_t e = max(x[k] & 0x7F800000u, c.norm_min);
    const float mg = __fmul_rn(__uint_as_float(e), c.scale);
    const std::uint32_t t =
        __float_as_uint(__fadd_rz(__uint_as_float(ax), mg)) + (word[k] >> (32 - RC));
    const std::uint32_t mag = (t - __float_as_uint(mg) + ((e - c.norm_min) >> c.field_shift)) >> RC;
    codes |= native::fast_lean_finish<Signed, NegZero>(a.plan, x[k], mag) << (8 * k);
  }
  return codes;
}

template <bool Signed, bool NegZero, int RC, bool Lo = false>
struct LeanSrCodes {
  using Consts = LeanSr;
  static __device__ __forceinline__ Consts consts(const CastArgs& a) { return lean_sr_consts(a); }
  template <CastInput In>
  static __device__ __forceinline__ std::uint32_t codes(const CastArgs& a, const uint4& v, int j,
                                                        const std::uint32_t (&word)[4],
                                                        const Consts& c, std::uint32_t& top) {
    std::uint32_t x[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) x[k] = InputTraits<In>::widen_lean_at(v, 4 * j + k);
    return lean_codes_sr<Signed, NegZero, RC, Lo>(a, x, word, c, top);
  }
  static __device__ __forceinline__ bool rare(std::uint32_t top, const Consts& c) {
    return top > c.rare_hi;
  }
};

}  // namespace
}  // namespace exmy::gpu::cast_detail
