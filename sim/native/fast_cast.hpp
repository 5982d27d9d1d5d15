// A 32-bit specialisation of native::round_pack for fp32 inputs (bf16 and fp16 widen to fp32
// exactly first) into signed formats with subnormals whose range lies inside fp32's. It computes
// the same function as native::convert(fp32, f, r, code, rand) (docs/SEMANTICS.md 2-4) with fewer
// and narrower operations; special inputs and overflow results are delegated to the native engine
// itself. What checks it: on the GPU, all 2^32 fp32 inputs for every <= 8-bit preset under rne,
// rtz and sr:8 (`exmy verify-cuda --depth full`, gpu/verify/verify.hpp; bench/results), and random
// words for every preset and mode (properties/gpu); on the host, against the MPFR oracle for every
// fp32 top half x 3 low halves, <= 8-bit presets, deterministic modes (`exmy verify --campaign
// fp32-top16`), and against the native engine in tests/native/test_gpu_fast_cast_on_host.cpp.
// 16-bit targets and the other modes have no all-2^32 sweep.
//
// Why it is the same function: for an fp32 input with biased exponent e32 and target quantum q
// (section 2 step 1), the bits below q are the low d bits of an integer x, where
//   - in the target's normal range (e32 >= emin + 127) x = |code| - ((127 - bias) << 23) is the
//     target's biased exponent field followed by the 23 fp32 mantissa bits, d = 23 - M: shifting
//     x right by d gives the target code (exponent field and M mantissa bits), and an increment
//     that carries out of the mantissa moves into the exponent field, which is step 4;
//   - below it, x is the fp32 significand (implicit bit included) and d = 23 - M + (emin + 127 -
//     max(e32, 1)); the kept part is the subnormal mantissa, and a carry into bit M yields the
//     code of the smallest normal, again step 4.
// The lowest kept bit of the packed code equals the lowest bit of T for M >= 1 (that is why
// M = 0 formats are excluded: there T = 1 is always odd but the packed exponent field is not).
// Codes compare as magnitudes, so "T * 2^q exceeds the largest finite" is "code > max_code".
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/round_step.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::native {

// The constants of the fast path for one format and rounding, derived once on the host. The
// results of special inputs and of overflow depend only on the sign (and the rounding), so they
// are taken from the native engine here, on the host, instead of being recomputed per element:
// that keeps the device hot path to a few integer operations with no calls.
struct FastCastPlan {
  FloatFormat f;
  int normal_shift = 0;        // d in the normal range: 23 - M
  std::uint32_t e0 = 0;        // smallest fp32 biased exponent in f's normal range: emin + 127
  std::uint32_t rebias = 0;    // (127 - bias) << 23
  std::uint32_t max_code = 0;  // largest finite magnitude code
  std::uint32_t sign_bit = 0;  // f's sign bit
  bool neg_zero = false;       // f has a negative zero
  int sub_shift = 0;           // emin - M + 149: a subnormal code's fp32 subnormal shift
  std::uint32_t norm_min = 0;  // e0 << 23: the smallest fp32 magnitude in f's normal range
  // Decoding (fast_decode_fp32_finite): magnitudes at or above special_mag are inf or NaN codes
  // (f's NaN/inf encoding); fnuz formats have their NaN at the negative-zero code instead.
  std::uint32_t special_mag = 0;
  std::uint32_t sub_magic = 0;  // fp32 bits of 2^(emin - M + 23): its ulp is f's quantum
  std::uint32_t half_m1 = 0;    // 2^(d - 1) - 1 for the normal-range d = 23 - M
  int sign_shift = 0;           // 32 - total bits: moves the fp32 sign onto f's sign bit
  // native::convert(fp32 -> f, r) of +-0, +-inf, +-NaN, and native::overflow_result(f, r, +-):
  // index 0 positive, 1 negative.
  std::uint32_t zero[2] = {0, 0}, inf[2] = {0, 0}, nan[2] = {0, 0}, overflow[2] = {0, 0};
  // The mode-fixed path (fast_cast_fp32_fixed) on every format of fast_fixed_supported:
  Rounding r;               // the rounding the plan was made for (the out-of-line inputs)
  std::uint32_t cbias = 0;  // (bias - 127) << M mod 2^32: fp32's exponent field -> f's
  // rne's tie parity (native::code_parity_odd): par_or = 1 when M = 0 without a zero (T = 1 is
  // odd); par_xor = cbias's last bit when M = 0 with a zero (the code's parity: the fp32 exponent
  // field xor the rebias); both 0 for M >= 1 (T's last bit is the code's).
  std::uint32_t par_or = 0;
  std::uint32_t par_xor = 0;
  bool below_round = false;      // inputs below norm_min round to f's subnormals (else code 0)
  std::uint32_t below_mask = 0;  // ~0 where below_round, else 0 (the lean path's select)
  // The lean domain (fast_cast_fp32_lean): |u| in [lean_lo, lean_lo + lean_span] is finite, no
  // larger than f's largest finite value (so no rounding overflows) and needs no engine.
  std::uint32_t lean_lo = 0;
  std::uint32_t lean_span = 0;
  std::uint32_t slow_lo = 0;  // |u| in [slow_lo, slow_lo + slow_span) takes the native engine
  std::uint32_t slow_span = 0;
  bool neg_special = false;  // unsigned f: every negative nonzero input gives neg_code
  std::uint32_t neg_code = 0;
  bool decode_fast = false;  // every value of f is an fp32 value (fast_decode_fp32_finite)
  // fast_decode_fp32_lean: the non-finite codes the lean path can return (overflow[0],
  // overflow[1], neg_code) and their fp32 bits (native::to_float).
  std::uint32_t spec_code[3] = {0, 0, 0}, spec_bits[3] = {0, 0, 0};
  // sr:R below the normal range on the lean path: the fp32 bits of C_R = 2^(emin - M + 23 - R)
  // (where the plan's rounding is sr:R with R <= 23 - M and f's subnormals lie inside fp32's
  // normal range; else 0, unused).
  std::uint32_t sr_magic = 0;
};

// Signed, subnormals, 1 <= M <= 22 (at most 16 bits in all), emin >= -126 (so every fp32
// subnormal lies in f's subnormal range and e0 >= 1) and emax <= 127 (codes decode into fp32).
EXMY_HD constexpr bool fast_cast_supported(const FloatFormat& f) {
  return f.is_signed && f.subnormals && f.man_bits >= 1 && f.total_bits() <= 16 &&
         f.emin() >= -126 && f.emax() <= 127;
}

// The formats of the mode-fixed path (fast_cast_fp32_fixed): every float format of at most 16
// bits except signed formats without subnormals (no such preset or name exists; their smallest
// values carry a sign but no zero, which the sign handling below does not model). The range may
// exceed fp32's on either side: fp32 subnormal inputs into formats with emin < -126 take the
// native engine, and results past fp32's range cannot arise from fp32 inputs.
EXMY_HD constexpr bool fast_fixed_supported(const FloatFormat& f) {
  return f.total_bits() <= 16 && (f.subnormals || !f.is_signed);
}

// The roundings with a specialised fast path; `any` dispatches on the Rounding at run time.
enum class FastMode { rne, rtz, sr, any };

// The FastMode that runs rounding r on format f: sr:R needs R <= 23 - M (the discarded fraction
// of every fp32 input has at least R bits, so the random word lines up inside 32 bits).
inline FastMode fast_mode_for(const FloatFormat& f, const Rounding& r) {
  switch (r.mode) {
    case RoundMode::rne:
      return FastMode::rne;
    case RoundMode::rtz:
      return FastMode::rtz;
    case RoundMode::sr:
      return r.sr_bits >= 1 && r.sr_bits <= 23 - f.man_bits ? FastMode::sr : FastMode::any;
    default:
      return FastMode::any;
  }
}

// The plan of format f under rounding r (the rounding the plan is then used with).
inline FastCastPlan make_fast_cast_plan(const FloatFormat& f, const Rounding& r) {
  FastCastPlan p;
  p.f = f;
  p.normal_shift = 23 - f.man_bits;
  // Clamped at 1 for formats reaching below fp32's normal range (only the mode-fixed path takes
  // those; the fields derived from e0 are then used for fp32 subnormal inputs, which it sends to
  // the native engine).
  p.e0 = static_cast<std::uint32_t>(f.emin() + 127 >= 1 ? f.emin() + 127 : 1);
  p.rebias = static_cast<std::uint32_t>(127 - f.bias) << 23;
  p.max_code = static_cast<std::uint32_t>(f.max_code());
  p.sign_bit = static_cast<std::uint32_t>(f.sign_bit());
  p.neg_zero = f.has_neg_zero();
  p.sub_shift = f.emin() - f.man_bits + 149;
  p.norm_min = p.e0 << 23;
  // The smallest magnitude code that does not decode to a finite value (past max_code when
  // the format has neither inf nor NaN magnitudes).
  p.special_mag = p.max_code + 1;
  p.sub_magic = static_cast<std::uint32_t>(f.emin() - f.man_bits + 23 + 127) << 23;
  p.half_m1 = (1u << (p.normal_shift - 1)) - 1u;
  p.sign_shift = 32 - f.total_bits();
  for (int s = 0; s < 2; ++s) {
    const std::uint32_t sign = s ? 0x80000000u : 0u;
    const auto conv = [&](std::uint32_t u) {
      return static_cast<std::uint32_t>(native::convert(formats::fp32, f, r, u).code);
    };
    p.zero[s] = conv(sign);
    p.inf[s] = conv(sign | 0x7F800000u);
    p.nan[s] = conv(sign | 0x7FC00000u);
    p.overflow[s] = static_cast<std::uint32_t>(native::overflow_result(f, r, s != 0).code);
  }
  p.r = r;
  p.cbias = static_cast<std::uint32_t>(f.bias - 127) << f.man_bits;
  p.par_or = f.man_bits == 0 && !f.subnormals ? 1u : 0u;
  p.par_xor = f.man_bits == 0 && f.subnormals ? (p.cbias & 1u) : 0u;
  const int e0 = f.emin() + 127;  // fp32 biased exponent of 2^emin (p.e0 is max(e0, 1))
  // With e0 >= 1 the fp32 inputs below 2^emin round to f's subnormals (the quantum's magic
  // 2^(emin - M + 23) is then an fp32 normal); without subnormals they all give code 0 (section 2
  // step 5: 2^emin either way). With e0 <= 0 every fp32 normal is in f's normal range and the fp32
  // subnormals (rare) take the native engine.
  p.below_round = e0 >= 1 && f.subnormals;
  const bool has_zero = f.has_zero();
  if (e0 <= 0) {
    p.slow_lo = has_zero ? 1u : 0u;  // zero itself stays inline where f has a zero
    p.slow_span = 0x00800000u - p.slow_lo;
  } else if (!has_zero) {
    p.slow_lo = 0;  // zero into a format without zero: NaN (section 4.1), from the engine
    p.slow_span = 1;
  }
  p.below_mask = p.below_round ? 0xFFFFFFFFu : 0u;
  // The largest fp32 magnitude not above f's largest finite value (fp32's own largest finite
  // where f reaches further): found by the engine, as the bits of the decoded max_code rounded
  // toward zero into fp32 when that value is not an fp32 value.
  std::uint32_t hi = 0x7F7FFFFFu;
  {
    const Rounding down{RoundMode::rtz, 0, Overflow::satfinite};
    const auto max_fp32 = native::convert(f, formats::fp32, down, f.max_code()).code;
    if (static_cast<std::uint32_t>(max_fp32) < hi) hi = static_cast<std::uint32_t>(max_fp32);
  }
  // Overflow stays on the lean path where the negative overflow code is the positive one with
  // the sign bit or'ed in (every fixed mode: rne and sr give +-inf or the NaN, rtz and the
  // saturating policies +-max; a fnuz NaN already carries the sign bit), else it leaves the domain.
  const bool ovf_symmetric = !f.is_signed || (p.overflow[0] | p.sign_bit) == p.overflow[1];
  if (ovf_symmetric) hi = 0x7F7FFFFFu;
  p.lean_lo = e0 <= 0 ? 0x00800000u : (has_zero ? 0u : 1u);
  p.lean_span = hi - p.lean_lo;
  p.neg_special = !f.is_signed;
  p.neg_code = static_cast<std::uint32_t>(native::convert(formats::fp32, f, r, 0xBF800000u).code);
  p.decode_fast = fast_cast_supported(f);
  if (fast_mode_for(f, r) == FastMode::sr && e0 >= 1) {
    p.sr_magic = static_cast<std::uint32_t>(e0 - f.man_bits + 23 - r.sr_bits) << 23;
  }
  const std::uint32_t specials[3] = {p.overflow[0], p.overflow[1], p.neg_code};
  for (int i = 0; i < 3; ++i) {
    p.spec_code[i] = specials[i];
    p.spec_bits[i] = native::bits_of(native::to_float(f, specials[i]));
  }
  return p;
}

// The code of fp32 `u` in p.f under r (the plan's rounding); `rand` holds the R random bits of
// sr:R in its low bits.
EXMY_HD std::uint32_t fast_cast_fp32(const FastCastPlan& p, const Rounding& r, std::uint32_t u,
                                     std::uint32_t rand) {
  const std::uint32_t a = u & 0x7FFFFFFFu;
  const bool neg = (u >> 31) != 0;
  if (a == 0) return p.zero[neg];
  if (a >= 0x7F800000u) return a == 0x7F800000u ? p.inf[neg] : p.nan[neg];
  const std::uint32_t e32 = a >> 23;
  std::uint32_t x;
  int d;
  if (e32 >= p.e0) {
    x = a - p.rebias;
    d = p.normal_shift;
  } else {
    x = (a & 0x007FFFFFu) | (e32 != 0 ? 0x00800000u : 0u);
    d = p.normal_shift + static_cast<int>(p.e0 - (e32 != 0 ? e32 : 1u));
    // x < 2^24 here, so for d >= 56 the fraction is below 2^-32: every mode (sr:32 included)
    // decides exactly as at d = 56, which keeps the shifts below 64.
    if (d > 56) d = 56;
  }
  std::uint32_t t = static_cast<std::uint32_t>(static_cast<std::uint64_t>(x) >> d);
  // The discarded fraction of one quantum as 0.64 fixed point, as in round_pack (d >= 9 here:
  // at most 16 bits in all leaves M <= 14).
  const std::uint64_t rem = static_cast<std::uint64_t>(x) << (64 - d);
  t = static_cast<std::uint32_t>(native::round_quantum({t, rem, false}, neg, r, rand));
  const std::uint32_t sign = neg ? p.sign_bit : 0u;
  if (t == 0) return p.neg_zero ? sign : 0u;
  if (t > p.max_code) return p.overflow[neg];
  return sign | t;
}

// The fp32 value of code c of p.f, equal to native::to_float(p.f, c) (checked for every code of
// every fast preset in tests/gpu). Every value of f is an fp32 value (range inside fp32's), so
// decoding is moving fields: normal codes rebias the exponent; subnormal m * 2^(emin - M) is
// normalised by its top bit, or becomes the fp32 subnormal m << (emin - M + 149); NaN gives the
// fp32 canonical NaN with the code's sign, as native::convert does.
EXMY_HD float fast_decode_fp32(const FastCastPlan& p, std::uint32_t c) {
  const FloatFormat& f = p.f;
  const std::uint32_t sign = (c & p.sign_bit) != 0 ? 0x80000000u : 0u;
  const std::uint32_t mag = c & static_cast<std::uint32_t>(f.magnitude_mask());
  switch (f.classify(c)) {
    case ValueClass::normal:
      return native::float_of(sign | ((mag << p.normal_shift) + p.rebias));
    case ValueClass::zero:
      return native::float_of(sign);
    case ValueClass::inf:
      return native::float_of(sign | 0x7F800000u);
    case ValueClass::nan:
      return native::float_of(sign | 0x7FC00000u);
    default:
      break;
  }
  const int top = 63 - native::clz64(mag);  // subnormal: mag is the mantissa m, top < M
  const int e = top + static_cast<int>(p.e0) - f.man_bits;  // fp32 biased exponent of m*2^(emin-M)
  if (e >= 1) {
    return native::float_of(sign | (static_cast<std::uint32_t>(e) << 23) |
                            ((mag << (23 - top)) & 0x007FFFFFu));
  }
  return native::float_of(sign | (mag << p.sub_shift));
}

// The same for the format and rounding of plan p.
inline FastMode fast_mode_for(const FastCastPlan& p, const Rounding& r) {
  return fast_mode_for(p.f, r);
}

// native::convert from fp32, as one out-of-line function: the special-input branch of every
// e8m0 kernel calls it instead of inlining the whole engine (which multiplies compile time).
// A template so that the header may define it in every translation unit.
#if defined(__CUDACC__)
#define EXMY_OUT_OF_LINE __host__ __device__ __noinline__
#else
#define EXMY_OUT_OF_LINE __attribute__((noinline))
#endif
template <int>
EXMY_OUT_OF_LINE std::uint32_t convert_fp32_out_of_line(const FloatFormat& f, const Rounding& r,
                                                        std::uint32_t u, std::uint32_t rand) {
  constexpr FloatFormat kFp32 = formats::fp32;  // a value: device code cannot bind the global
  return static_cast<std::uint32_t>(native::convert(kFp32, f, r, u, rand).code);
}

// The rne / rtz rounding of a magnitude below f's normal range, |v| < 2^emin, to a multiple
// of f's quantum q = 2^(emin - M), by fp32 hardware: C = 2^(emin - M + 23) exceeds |v| and the
// ulp of [C, 2C) is q, so the fp32 sum C + |v| rounded in the mode is C + (|v| rounded to a
// multiple of q) (no sum reaches 2C), and its code minus C's code is that multiple T (a carry
// to T = 2^M is the smallest normal's code, as step 4 wants). Ties go to the even multiple of
// q, which is T even. On the host, rtz comes from the rne sum: the sum minus C is exact (both
// lie in [C, 2C]), and where it exceeds |v| the sum was rounded up by one ulp.
template <FastMode Mode>
EXMY_HD std::uint32_t round_below_normal(const FastCastPlan& p, std::uint32_t a) {
  const float v = native::float_of(a);
  const float c = native::float_of(p.sub_magic);
  const float sum = Mode == FastMode::rne ? rn_add(v, c) : rz_add_in_binade(v, c);
  return native::bits_of(sum) - p.sub_magic;
}

// fast_cast_fp32 for one of rne, rtz, sr:R (R <= 23 - M) with only 32-bit operations and no
// branches in the common case, for hot loops (the GPU cast kernels, the host fast path), on every
// format of fast_fixed_supported; equal to native::convert for every fp32 input, checked as the
// top of this file lists (all 2^32 inputs on the GPU for the <= 8-bit presets and the generic
// formats of `exmy verify-cuda --formats`).
//
// In f's normal range the fp32 magnitude bits a = |u| are rounded by a right shift by d = 23 - M
// (see the top of this file), and the exponent is rebiased in the code: cbias = (bias - 127) << M
// is the shifted image of fp32's rebias, whose low d bits are zero, so shifting commutes with it:
//   rtz  (a >> d) + cbias;
//   rne  ((a + 2^(d-1) - 1 + ((a >> d) & 1)) >> d) + cbias: the half-minus-one plus the kept
//        parity carries exactly when the fraction exceeds one half, or equals it with T odd; for
//        M = 0 the kept significand is T = 1 whatever the exponent: formats without a zero take
//        that 1 (par_or), formats with a zero the code's parity (a >> d) + cbias (par_xor,
//        native::code_parity_odd);
//   sr:R (((a >> (d - R)) + rand) >> R) + cbias: the top R fraction bits plus the R-bit word
//        carry exactly when frac_R + rand >= 2^R (section 3).
// a + 2^(d-1) < 2^31 + 2^22, so no sum wraps; a carry out of the mantissa moves into the
// exponent field (section 2 step 4). Below the normal range (a < norm_min), with subnormals, rne
// and rtz take round_below_normal, and sr:R the fp32 sum C_R + |v| rounded toward zero (C_R =
// 2^(emin - M + 23 - R), ulp q 2^-R), whose difference from C_R is floor(|v| 2^R / q), plus the
// word, shifted by R; without subnormals they give code 0 (2^emin, step 5). fast_round_magnitude
// is that rounding, shared by the mode-fixed and the lean functions.
// Unsigned formats map every negative nonzero input to neg_code (section 4.1); the inputs of
// [slow_lo, slow_lo + slow_span) (fp32 subnormals below a format reaching past fp32's range, zero
// into a format without zero) go to the native engine out of line.
//
// fast_cast_fp32_fixed_inline is that function without the out-of-line inputs (its result for
// them is unspecified): hot loops test fast_needs_engine per element and redo the few flagged
// ones outside the unrolled code, since a call inside it costs every element register spills.
EXMY_HD bool fast_needs_engine(const FastCastPlan& p, std::uint32_t u) {
  return (u & 0x7FFFFFFFu) - p.slow_lo < p.slow_span;
}

// The rounded magnitude code T of a = |u| under Mode, before overflow, sign and special inputs:
// the rounding rules above, one definition for the mode-fixed and lean functions. rand < 2^R.
template <FastMode Mode>
EXMY_HD std::uint32_t fast_round_magnitude(const FastCastPlan& p, std::uint32_t a,
                                           std::uint32_t rand, int R) {
  const bool sub = a < p.norm_min;
  std::uint32_t t;
  if constexpr (Mode == FastMode::rtz) {
    const std::uint32_t tn = (a >> p.normal_shift) + p.cbias;
    t = sub ? round_below_normal<Mode>(p, a) & p.below_mask : tn;
  } else if constexpr (Mode == FastMode::rne) {
    const std::uint32_t par = (((a >> p.normal_shift) ^ p.par_xor) | p.par_or) & 1u;
    const std::uint32_t tn = ((a + p.half_m1 + par) >> p.normal_shift) + p.cbias;
    t = sub ? round_below_normal<Mode>(p, a) & p.below_mask : tn;
  } else {
    // rand < 2^R. In f's normal range the top R discarded bits plus the word carry into the kept
    // ones; below it, on the fixed grid q = 2^(emin - M),
    // floor(|v| 2^R / q) is the fp32 sum C_R + |v| rounded toward zero minus C_R (C_R = 2^(emin
    // - M + 23 - R) exceeds |v| and its ulp is q 2^-R: the round_below_normal argument), and the
    // word carries as before. One add and shift each way instead of a per-element shift count.
    const std::uint32_t tn = (((a >> (p.normal_shift - R)) + rand) >> R) + p.cbias;
    const float c = native::float_of(p.sr_magic);
    const std::uint32_t ts =
        (native::bits_of(rz_add_in_binade(native::float_of(a), c)) - p.sr_magic + rand) >> R;
    t = sub ? ts & p.below_mask : tn;
  }
  return t;
}

template <FastMode Mode>
EXMY_HD std::uint32_t fast_cast_fp32_fixed_inline(const FastCastPlan& p, std::uint32_t u,
                                                  std::uint32_t rand, int R) {
  static_assert(Mode != FastMode::any, "use fast_cast_fp32 for the other roundings");
  const std::uint32_t a = u & 0x7FFFFFFFu;
  const std::uint32_t t =
      fast_round_magnitude<Mode>(p, a, rand & static_cast<std::uint32_t>(low_mask(R)), R);
  const bool neg = static_cast<std::int32_t>(u) < 0;
  std::uint32_t res = t | ((u >> p.sign_shift) & p.sign_bit);
  if (t == 0 && !p.neg_zero) res = 0;
  if (t > p.max_code) res = neg ? p.overflow[1] : p.overflow[0];
  if (p.neg_special && neg && a != 0) res = p.neg_code;
  if (a >= 0x7F800000u) {
    res = a == 0x7F800000u ? (neg ? p.inf[1] : p.inf[0]) : (neg ? p.nan[1] : p.nan[0]);
  }
  return res;
}

// The lean form of fast_cast_fp32_fixed_inline for the kernels' hot loops: exact where
// fast_lean_domain(p, u) holds (finite inputs that need no engine; overflow is in the domain
// where its codes are sign-symmetric, which make_fast_cast_plan checks), with the sign handling
// fixed at compile time: Signed formats with a negative zero (NegZero) keep the sign on every
// result, fnuz formats clear it on a zero result, unsigned formats give neg_code for every negative
// nonzero input. Callers redo the elements outside the domain with fast_cast_fp32_fixed (rare:
// overflow, inf, NaN, engine inputs).
EXMY_HD bool fast_lean_domain(const FastCastPlan& p, std::uint32_t u) {
  return (u & 0x7FFFFFFFu) - p.lean_lo <= p.lean_span;
}

// The lean path's code of fp32 u from its rounded magnitude code t (before overflow): overflow,
// then the sign as the format takes it. Shared by fast_cast_fp32_lean and the GPU's sr:8 span
// kernel, which rounds the magnitude by another formula (gpu/cast/cast.cu, lean_codes_sr).
template <bool Signed, bool NegZero>
EXMY_HD std::uint32_t fast_lean_finish(const FastCastPlan& p, std::uint32_t u, std::uint32_t t) {
  t = t > p.max_code ? p.overflow[0] : t;
  if constexpr (!Signed) {
    return static_cast<std::int32_t>(u) < 0 && (u & 0x7FFFFFFFu) != 0 ? p.neg_code : t;
  } else {
    const std::uint32_t sign = (u >> p.sign_shift) & p.sign_bit;
    if constexpr (NegZero) {
      return t | sign;
    } else {
      return t == 0 ? 0u : t | sign;
    }
  }
}

template <FastMode Mode, bool Signed, bool NegZero>
EXMY_HD std::uint32_t fast_cast_fp32_lean(const FastCastPlan& p, std::uint32_t u,
                                          std::uint32_t rand, int R) {
  static_assert(Mode != FastMode::any, "use fast_cast_fp32 for the other roundings");
  return fast_lean_finish<Signed, NegZero>(p, u,
                                           fast_round_magnitude<Mode>(p, u & 0x7FFFFFFFu, rand, R));
}

template <FastMode Mode>
EXMY_HD std::uint32_t fast_cast_fp32_fixed(const FastCastPlan& p, std::uint32_t u,
                                           std::uint32_t rand, int R) {
  if (fast_needs_engine(p, u)) return convert_fp32_out_of_line<0>(p.f, p.r, u, rand);
  return fast_cast_fp32_fixed_inline<Mode>(p, u, rand, R);
}

// The code of fp32 u under rounding r through the specialised path Mode (any: fast_cast_fp32).
template <FastMode Mode>
EXMY_HD std::uint32_t fast_cast_fp32_as(const FastCastPlan& p, const Rounding& r, std::uint32_t u,
                                        std::uint32_t rand) {
  if constexpr (Mode == FastMode::any) {
    return fast_cast_fp32(p, r, u, rand);
  } else {
    return fast_cast_fp32_fixed<Mode>(p, u, rand, r.sr_bits);
  }
}

// The code of fp32 u under r through the mode-fixed path where r has one, chosen at run time:
// for host loops and checks (kernels choose Mode at compile time instead).
inline std::uint32_t fast_cast_fp32_dispatch(const FastCastPlan& p, const Rounding& r,
                                             std::uint32_t u, std::uint32_t rand) {
  switch (fast_mode_for(p, r)) {
    case FastMode::rne:
      return fast_cast_fp32_as<FastMode::rne>(p, r, u, rand);
    case FastMode::rtz:
      return fast_cast_fp32_as<FastMode::rtz>(p, r, u, rand);
    case FastMode::sr:
      return fast_cast_fp32_as<FastMode::sr>(p, r, u, rand);
    case FastMode::any:
      break;
  }
  return fast_cast_fp32(p, r, u, rand);
}

// fast_decode_fp32 with the finite codes decoded by field moves and one exact fp32 subtraction,
// the rest (inf, NaN) delegated: a subnormal magnitude m (< 2^M) is m * q with q = 2^(emin - M),
// and the fp32 number whose bits are sub_magic + m is 2^(emin - M + 23) + m * q (m < 2^23 stays
// inside that binade, whose ulp is q), so subtracting 2^(emin - M + 23) leaves m * q exactly.
EXMY_HD float fast_decode_fp32_finite(const FastCastPlan& p, std::uint32_t c) {
  const std::uint32_t mag = c & static_cast<std::uint32_t>(p.f.magnitude_mask());
  const bool fnuz_nan = !p.neg_zero && c == p.sign_bit;
  if (mag >= p.special_mag || fnuz_nan) return fast_decode_fp32(p, c);
  const std::uint32_t sign = (c & p.sign_bit) != 0 ? 0x80000000u : 0u;
  const std::uint32_t min_normal = 1u << p.f.man_bits;
  float v;
  if (mag >= min_normal) {
    v = native::float_of((mag << p.normal_shift) + p.rebias);
  } else {
    const float magic = native::float_of(p.sub_magic);
    v = native::float_of(p.sub_magic + mag) - magic;
  }
  return native::float_of(native::bits_of(v) | sign);
}

// fast_decode_fp32_finite for the codes of the lean path (fast_cast_fp32_lean) on formats with
// decode_fast: finite codes by the same field moves, and the three non-finite codes it can return
// (overflow of either sign, an unsigned format's neg_code) by selects from the plan's decodes
// instead of the general special-code branch.
EXMY_HD float fast_decode_fp32_lean(const FastCastPlan& p, std::uint32_t c) {
  const std::uint32_t mag = c & static_cast<std::uint32_t>(p.f.magnitude_mask());
  const std::uint32_t min_normal = 1u << p.f.man_bits;
  std::uint32_t v;
  if (mag >= min_normal) {
    v = (mag << p.normal_shift) + p.rebias;
  } else {
    v = native::bits_of(native::float_of(p.sub_magic + mag) - native::float_of(p.sub_magic));
  }
  v |= (c & p.sign_bit) != 0 ? 0x80000000u : 0u;
  v = c == p.spec_code[0] ? p.spec_bits[0] : v;
  v = c == p.spec_code[1] ? p.spec_bits[1] : v;
  v = c == p.spec_code[2] ? p.spec_bits[2] : v;
  return native::float_of(v);
}

// e8m0fnu (and any format with its fields: 8 exponent bits, no mantissa, bias 127, unsigned,
// no subnormals): its biased exponent is fp32's, so a positive normal fp32 input 1.m * 2^e
// rounds between the codes e32 and e32 + 1 by its mantissa alone: the kept significand is
// T = 1 (odd), so rne goes up at m >= 2^22 (a tie goes to the even T = 2), rtz never, sr:R when
// the top R mantissa bits plus the word carry. A carry past the largest finite code is
// overflow. Every other input (signs, zeros, fp32 subnormals, inf, NaN) takes the native engine.
EXMY_HD constexpr bool fast_e8m0_supported(const FloatFormat& f) {
  return f.exp_bits == 8 && f.man_bits == 0 && f.bias == 127 && !f.is_signed && !f.subnormals;
}

template <FastMode Mode>
EXMY_HD std::uint32_t fast_cast_fp32_e8m0(const FastCastPlan& p, const Rounding& r, std::uint32_t u,
                                          std::uint32_t rand) {
  static_assert(Mode != FastMode::any, "use native::convert for the other roundings");
  if (u - 0x00800000u >= 0x7F000000u) {  // outside [2^-126, inf) with the sign clear
    return convert_fp32_out_of_line<0>(p.f, r, u, rand);
  }
  const std::uint32_t m = u & 0x007FFFFFu;
  std::uint32_t up = 0;
  if constexpr (Mode == FastMode::rne) {
    up = m >= 0x00400000u ? 1u : 0u;
  } else if constexpr (Mode == FastMode::sr) {
    const int R = r.sr_bits;
    up = ((m >> (23 - R)) + (rand & static_cast<std::uint32_t>(low_mask(R)))) >> R;
  }
  const std::uint32_t code = (u >> 23) + up;
  return code > p.max_code ? p.overflow[0] : code;
}

// The FastMode of the e8m0 path for rounding r (any: the generic path).
inline FastMode fast_e8m0_mode_for(const Rounding& r) {
  if (r.mode == RoundMode::rne) return FastMode::rne;
  if (r.mode == RoundMode::rtz) return FastMode::rtz;
  if (r.mode == RoundMode::sr && r.sr_bits >= 1 && r.sr_bits <= 23) return FastMode::sr;
  return FastMode::any;
}

}  // namespace exmy::native
