// Portable fp32 exp, log and erf (docs/SEMANTICS.md 14.10): every step is an IEEE basic operation
// with round-to-nearest-even (the platform seam's rn_add, rn_sub, rn_mul, rn_div), an exact
// integer operation or a bit manipulation, so host and device compute the same bits by
// construction. glibc's expf/logf/erff and CUDA's are different functions (both faithful, neither
// correctly rounded, and not the same one), so a model that calls either cannot be reproduced on
// the other; the small decoder LM (reports/lm/lm_model.cpp) calls these instead.
//
// Measured against MPFR on all 2^32 inputs (tests/native/test_portable_math.cpp, hidden case
// [portable_math_all]): maximum errors 0.773 (exp), 0.858 (log) and 1.283 (erf) ulps of the exact
// result; the CI case asserts the bounds 1, 1 and 2 ulps on a strided subset plus boundaries. No
// std:: math, no fp64, no table: the coefficients come from tools/fit_portable_math.py
// (least-squares fits at Chebyshev nodes in 60-digit arithmetic, each coefficient rounded to fp32
// from the lowest degree up so later ones absorb earlier roundings, the idea of Sollya's
// fpminimax). Scalar code only: there is no vectorised variant whose operation order could differ
// (the SSE2 and AVX2 host paths of sim/fast are not involved).
#pragma once

#include <cstdint>

#include "sim/native/hd.hpp"
#include "sim/native/specialize/platform.hpp"

namespace exmy::native {

namespace portable_math_detail {

// ln 2 = kLn2Hi + kLn2Lo + O(2^-45): kLn2Hi is ln 2 truncated to 16 significant bits
// (0x3F317200), so k·kLn2Hi is exact for |k| < 2^8; kLn2Lo = RN32(ln 2 − kLn2Hi) (0x35BFBE8E).
// fdlibm's e_expf.c and e_logf.c use the same split.
constexpr float kLn2Hi = 0x1.62e4p-1f;
constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
constexpr float kInvLn2 = 0x1.715476p+0f;  // RN32(1 / ln 2)
// 1.5·2^23: for |v| < 2^22, RN(v + kShifter) lies in [2^23, 2^24), where the fp32 spacing is 1,
// so it is v rounded to the nearest integer (ties to even) plus kShifter, and that integer is the
// low bits of its code.
constexpr float kShifter = 0x1.8p+23f;
constexpr std::uint32_t kShifterBits = 0x4B400000u;
constexpr std::uint32_t kPosInf = 0x7F800000u;

// 2^e for e in [-126, 127], from its bits.
EXMY_HD float pow2i(std::int32_t e) {
  return f32_from_bits(static_cast<std::uint32_t>(e + 127) << 23);
}

}  // namespace portable_math_detail

// exp(x). Cody and Waite's reduction x = k·ln 2 + r, k = rint(RN(x·(1/ln 2))), |r| <= ln 2 / 2 +
// 2^-20: hi = x − k·kLn2Hi is exact (k·kLn2Hi has at most 24 bits, and x lies within a factor 2
// of it, Sterbenz's lemma; k = 0 gives hi = x) and r = hi − lo with lo = RN(k·kLn2Lo) carries the
// rest. exp(r) = (1 + hi) + (r²·q(r) − lo) with q of degree 5 (tools/fit_portable_math.py: q's
// error is 2^-31.6 relative to exp(r)), hi entering exactly. 2^k is applied as two factors
// 2^floor(k/2)·2^(k − floor(k/2)), both normal: the first product is exact, the second rounds
// once, so results in the subnormal range and the overflow to +inf are rounded once.
// Special values: NaN → the canonical NaN 0x7FC00000; x > 89 (exp(x) > 2^128) and +inf → +inf;
// x < −104 (exp(x) < 2^-150, half the least subnormal) and −inf → +0; ±0 → 1.
EXMY_HD float portable_expf(float x) {
  using namespace portable_math_detail;
  // The special inputs (NaN, ±inf, |x| > 89) are tested only where k leaves [-125, 127] (below):
  // for them k is out of that range too (a NaN or inf t, or |t| beyond 2^23 + 127, gives a code
  // far from kShifterBits), and the element loops of the model pay one branch, not four.
  const float t = rn_add(rn_mul(x, kInvLn2), kShifter);
  const std::int32_t k = static_cast<std::int32_t>(f32_bits(t) - kShifterBits);  // if finite
  const float kf = rn_sub(t, kShifter);                                          // k, exactly
  const float hi = rn_sub(x, rn_mul(kf, kLn2Hi));                                // exact
  const float lo = rn_mul(kf, kLn2Lo);
  const float r = rn_sub(hi, lo);
  // q(r) = (exp(r) − 1 − r) / r² by Estrin's scheme (pairs of terms, then powers of r²): a
  // dependency chain of 6 operations instead of Horner's 10, which bounds the throughput of the
  // model's element loops.
  const float r2 = rn_mul(r, r);
  const float q01 = rn_add(0.5f, rn_mul(0x1.555556p-3f, r));
  const float q23 = rn_add(0x1.555502p-5f, rn_mul(0x1.110fc8p-7f, r));
  const float q45 = rn_add(0x1.6d2e04p-10f, rn_mul(0x1.a2cb5ep-13f, r));
  const float q = rn_add(q01, rn_mul(r2, rn_add(q23, rn_mul(r2, q45))));
  // 1 + hi as w + w_err exactly (Fast2Sum: |hi| < 1), so that only the last addition rounds
  // a quantity of p's size.
  const float w = rn_add(1.0f, hi);
  const float w_err = rn_add(rn_sub(1.0f, w), hi);
  const float p = rn_add(w, rn_add(w_err, rn_sub(rn_mul(r2, q), lo)));
  // p·2^k is normal for k in [-125, 127] (p in [0.7, 1.42]): k added to the exponent field is
  // that product exactly; else two factors.
  if (static_cast<std::uint32_t>(k + 125) <= 252u) {  // k in [-125, 127]
    return f32_from_bits(f32_bits(p) + (static_cast<std::uint32_t>(k) << 23));
  }
  if (!(x == x)) return canonical_nan32();
  if (x > 89.0f) return f32_from_bits(kPosInf);
  if (x < -104.0f) return 0.0f;
  const std::int32_t k1 = k >> 1;  // floor(k / 2) (arithmetic shift): k1, k − k1 in [-75, 64]
  return rn_mul(rn_mul(p, pow2i(k1)), pow2i(k - k1));
}

// log(x). x = 2^k·m with m in [RN32(√½), 2·RN32(√½)) (the bits of x minus those of RN32(√½),
// whose exponent field is k; subnormal x is first scaled by 2^23, exactly); f = m − 1 is exact
// (Sterbenz). log m = 2 atanh(s), s = f / (2 + f), |s| <= 0.1716, written as fdlibm's e_logf.c
// does so that f enters exactly: log m = f − hfsq + s·(hfsq + R(s²)) with hfsq = f²/2 and
// R(z) = (2/3)z + (2/5)z² + (2/7)z³ + (2/9)z⁴, the atanh Taylor series (2s^(2n+1)/(2n+1)) cut
// after s⁹ (the next term is below 2^-29 of log m); then log x = k·kLn2Hi (exact) − ((hfsq −
// (s·(hfsq + R) + k·kLn2Lo)) − f). Special values: NaN and x < 0 (−inf included) → the canonical
// NaN 0x7FC00000; ±0 → −inf; +inf → +inf; 1 → +0.
EXMY_HD float portable_logf(float x) {
  using namespace portable_math_detail;
  if (!(x == x) || x < 0.0f) return canonical_nan32();
  if (x == 0.0f) return f32_from_bits(kPosInf | 0x80000000u);
  std::uint32_t u = f32_bits(x);
  if (u == kPosInf) return x;
  std::int32_t k = 0;
  if (u < 0x00800000u) {  // subnormal: scale by 2^23 (exact)
    u = f32_bits(rn_mul(x, 0x1p23f));
    k = -23;
  }
  const std::int32_t e = static_cast<std::int32_t>(u - 0x3F3504F3u) >> 23;  // arithmetic shift
  const float m = f32_from_bits(u - (static_cast<std::uint32_t>(e) << 23));
  k += e;
  const float f = rn_sub(m, 1.0f);
  const float s = rn_div(f, rn_add(2.0f, f));
  const float z = rn_mul(s, s);
  float R = 0x1.c71c72p-3f;                  // 2/9
  R = rn_add(rn_mul(R, z), 0x1.24924ap-2f);  // 2/7
  R = rn_add(rn_mul(R, z), 0x1.99999ap-2f);  // 2/5
  R = rn_add(rn_mul(R, z), 0x1.555556p-1f);  // 2/3
  R = rn_mul(R, z);
  const float hfsq = rn_mul(rn_mul(0.5f, f), f);
  const float kf = rn_f32_from_i32(k);  // |k| <= 149: exact
  const float tail = rn_add(rn_mul(s, rn_add(hfsq, R)), rn_mul(kf, kLn2Lo));
  return rn_sub(rn_mul(kf, kLn2Hi), rn_sub(rn_sub(hfsq, tail), f));
}

// erf(x), odd: computed on a = |x|, the sign put back (erf(±0) = ±0).
//   a < 2^-14: erf(x) = x + x·(2/√π − 1) (the x³ term is below 2^-29 relative), computed at
//     2^24 times the scale and scaled back by one rounding so that subnormal results round once.
//   a < 1: erf(a) = a + a·q(a²), q of degree 8 (error 2^-29.9 relative to erf).
//   a < 3.92: erf(a) = 1 − exp(−a²)·g(a), g(a) = erfc(a)·exp(a²) of degree 7 in a − 1.5 on
//     [1, 2) and in a − 3 on [2, 3.92) (errors 2^-27.9 and 2^-30.3 relative to erf; the shifts
//     are exact by Sterbenz). a² = hi + lo exactly (Dekker's product) and exp(−hi − lo) =
//     exp(−hi)·(1 − lo) to 2^-40 since |lo| <= 2^-20; exp is portable_expf above.
//   a >= 3.92 (+inf included): ±1, since erfc(a) <= 2^-25 from a = 3.9192 on and RN32(1 −
//     erfc(a)) = 1 there (a tie goes to the even 1).
// NaN → the canonical NaN 0x7FC00000.
EXMY_HD float portable_erff(float x) {
  using namespace portable_math_detail;
  if (!(x == x)) return canonical_nan32();
  const std::uint32_t sign = f32_bits(x) & 0x80000000u;
  const float a = f32_from_bits(f32_bits(x) & 0x7FFFFFFFu);
  constexpr float kTwoOverSqrtPiM1 = 0x1.06eba8p-3f;  // RN32(2/√π − 1)
  if (a < 0x1p-14f) {
    const float xs = rn_mul(x, 0x1p24f);  // exact
    return rn_mul(rn_add(xs, rn_mul(xs, kTwoOverSqrtPiM1)), 0x1p-24f);
  }
  float y;
  if (a < 1.0f) {
    // q(z), z = a², by Estrin's scheme (as exp's q).
    const float z = rn_mul(a, a);
    const float z2 = rn_mul(z, z);
    const float z4 = rn_mul(z2, z2);
    const float q01 = rn_add(kTwoOverSqrtPiM1, rn_mul(-0x1.812744p-2f, z));
    const float q23 = rn_add(0x1.ce2e96p-4f, rn_mul(-0x1.b81fc4p-6f, z));
    const float q45 = rn_add(0x1.55b16ep-8f, rn_mul(-0x1.b63f2cp-11f, z));
    const float q67 = rn_add(0x1.a40e3cp-14f, rn_mul(-0x1.8fd92cp-19f, z));
    const float q =
        rn_add(rn_add(q01, rn_mul(z2, q23)),
               rn_mul(z4, rn_add(rn_add(q45, rn_mul(z2, q67)), rn_mul(z4, -0x1.8dc66ep-20f))));
    y = rn_add(a, rn_mul(a, q));
  } else if (a < 3.92f) {
    // a² = hi + lo exactly by Dekker's product: ah = a with 12 significant bits (its low 12
    // fraction bits cleared), al = a − ah (exact, at most 12 bits); every product below is exact
    // and so is each sum (Dekker 1971, "A floating-point technique for extending the available
    // precision"; it equals fma(a, a, −hi) for every fp32 a in [1, 3.92]). No fma: on a host
    // without the instruction in its baseline ISA, fmaf is a library call.
    const float hi = rn_mul(a, a);
    const float ah = f32_from_bits(f32_bits(a) & 0xFFFFF000u);
    const float al = rn_sub(a, ah);
    const float m = rn_mul(ah, al);
    const float lo = rn_add(rn_add(rn_sub(rn_mul(ah, ah), hi), rn_add(m, m)), rn_mul(al, al));
    float g;
    if (a < 2.0f) {
      const float s = rn_sub(a, 1.5f);
      g = -0x1.72657ep-11f;
      g = rn_add(rn_mul(g, s), 0x1.05d332p-9f);
      g = rn_add(rn_mul(g, s), -0x1.50a680p-8f);
      g = rn_add(rn_mul(g, s), 0x1.b5cfb2p-7f);
      g = rn_add(rn_mul(g, s), -0x1.0dc69cp-5f);
      g = rn_add(rn_mul(g, s), 0x1.37eadep-4f);
      g = rn_add(rn_mul(g, s), -0x1.4f1986p-3f);
      g = rn_add(rn_mul(g, s), 0x1.494db0p-2f);
    } else {
      const float s = rn_sub(a, 3.0f);
      g = -0x1.b09806p-16f;
      g = rn_add(rn_mul(g, s), 0x1.88726ap-14f);
      g = rn_add(rn_mul(g, s), -0x1.4ee020p-12f);
      g = rn_add(rn_mul(g, s), 0x1.3f161cp-10f);
      g = rn_add(rn_mul(g, s), -0x1.25ab02p-8f);
      g = rn_add(rn_mul(g, s), 0x1.04445cp-6f);
      g = rn_add(rn_mul(g, s), -0x1.bd6a9cp-5f);
      g = rn_add(rn_mul(g, s), 0x1.6e9824p-3f);
    }
    const float erfc = rn_mul(portable_expf(-hi), rn_sub(g, rn_mul(g, lo)));
    y = rn_sub(1.0f, erfc);
  } else {
    y = 1.0f;
  }
  return f32_from_bits(f32_bits(y) | sign);
}

}  // namespace exmy::native
