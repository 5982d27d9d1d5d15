// ExactDot32 (sim/native/exact_dot.hpp): the exact inner products behind the variance report.
// Checked against MPFR at a precision where every sum is exact, then rounded once (RNDN).
#include <mpfr.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "sim/native/exact_dot.hpp"
#include "sim/native/philox.hpp"

using exmy::native::ExactDot32;

namespace {

float float_from_word(std::uint32_t w) {
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

// fp32 of any exponent (subnormals included), never inf/NaN.
float random_finite(std::uint64_t seed, std::uint64_t i) {
  std::uint32_t w = exmy::native::philox_word(seed, 7, i);
  if (((w >> 23) & 0xFF) == 0xFF) w &= ~(1u << 23);  // exponent 255 -> 254
  return float_from_word(w);
}

double mpfr_dot(const std::vector<float>& a, const std::vector<float>& b) {
  mpfr_t acc, x, y, p;
  mpfr_init2(acc, 1400);  // products span 2^-298 .. 2^256: 1400 bits hold any sum exactly
  mpfr_inits2(64, x, y, p, static_cast<mpfr_ptr>(nullptr));
  mpfr_set_zero(acc, 1);
  for (std::size_t i = 0; i < a.size(); ++i) {
    mpfr_set_flt(x, a[i], MPFR_RNDN);
    mpfr_set_flt(y, b[i], MPFR_RNDN);
    mpfr_mul(p, x, y, MPFR_RNDN);  // 48-bit product: exact at 64 bits
    mpfr_add(acc, acc, p, MPFR_RNDN);
  }
  const double r = mpfr_get_d(acc, MPFR_RNDN);
  mpfr_clears(acc, x, y, p, static_cast<mpfr_ptr>(nullptr));
  return r;
}

}  // namespace

TEST_CASE("ExactDot32 equals MPFR's exact sum rounded once, over all fp32 exponents", "[exact]") {
  const std::uint64_t seed = 20261121;
  INFO("seed " << seed);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + trial * 3;
    std::vector<float> a(n), b(n);
    for (int i = 0; i < n; ++i) {
      a[i] = random_finite(seed, 2 * (trial * 1000 + i));
      b[i] = random_finite(seed, 2 * (trial * 1000 + i) + 1);
      // Keep products finite in fp64 as well as the sum (the accumulator itself has no limit).
    }
    ExactDot32 acc;
    acc.clear();
    for (int i = 0; i < n; ++i) acc.add_product(a[i], b[i]);
    INFO("trial " << trial);
    REQUIRE(acc.to_double() == mpfr_dot(a, b));
  }
}

TEST_CASE("ExactDot32: cancellation that fp64 accumulation gets wrong", "[exact]") {
  ExactDot32 acc;
  acc.clear();
  const float big = std::ldexp(1.0f, 100), tiny = std::ldexp(1.0f, -100);
  acc.add_product(big, big);    // 2^200
  acc.add_product(tiny, tiny);  // 2^-200
  acc.add_product(big, -big);   // -2^200
  REQUIRE(acc.to_double() == std::ldexp(1.0, -200));
  // Smallest subnormal squared: 2^-298, the accumulator's least significant bit.
  ExactDot32 lo;
  lo.clear();
  const float sub = std::ldexp(1.0f, -149);
  lo.add_product(sub, sub);
  REQUIRE(lo.to_double() == std::ldexp(1.0, -298));
  lo.add_product(sub, -sub);
  REQUIRE(lo.to_double() == 0.0);
}

TEST_CASE("ExactDot32: subtracting one accumulator from another is exact", "[exact]") {
  ExactDot32 a, b;
  a.clear();
  b.clear();
  for (int i = 0; i < 1000; ++i) {
    const float x = static_cast<float>(i) * 0.1f;
    const float y = 1.0f / static_cast<float>(i + 1);
    a.add_product(x, y);
    b.add_product(x, y);
  }
  a.add(b, /*subtract=*/true);
  REQUIRE(a.to_double() == 0.0);
  // Ties round to even when read out: 1 + 2^-53 (exactly halfway) gives 1.
  ExactDot32 t;
  t.clear();
  t.add_product(1.0f, 1.0f);
  t.add_product(std::ldexp(1.0f, -53), 1.0f);
  REQUIRE(t.to_double() == 1.0);
  t.add_product(std::ldexp(1.0f, -80), 1.0f);  // now just above the tie: rounds up
  REQUIRE(t.to_double() == 1.0 + std::ldexp(1.0, -52));
}

// add_product has no branch on zero operands or signs (a zero adds a zero product; a negative
// product adds each digit's two's complement): operands with many +-0, signs at random, int8-like
// grids (few distinct magnitudes) and subnormals, accumulated with and without `subtract`, equal
// MPFR's exact sum rounded once.
TEST_CASE("ExactDot32: zeros, random signs and subnormals, added and subtracted", "[exact]") {
  const std::uint64_t seed = 20261203;
  for (int trial = 0; trial < 120; ++trial) {
    const int n = 1 + trial * 7;
    std::vector<float> a(n), b(n), neg_a(n);
    for (int i = 0; i < n; ++i) {
      const std::uint32_t w = exmy::native::philox_word(seed, 9, 2 * (trial * 1000 + i));
      const std::uint32_t v = exmy::native::philox_word(seed, 9, 2 * (trial * 1000 + i) + 1);
      const float sa = (w & 1) ? -1.0f : 1.0f;
      switch ((w >> 1) % 4) {
        case 0:
          a[i] = (w & 2) ? -0.0f : 0.0f;
          break;
        case 1:  // an int8 grid value times a scale
          a[i] = sa * static_cast<float>((w >> 8) % 128) * 0.0123f;
          break;
        case 2:  // subnormal
          a[i] = float_from_word((w & 0x807FFFFFu));
          break;
        default:
          a[i] = random_finite(seed, 3 * (trial * 1000 + i));
      }
      b[i] = (v % 5 == 0) ? 0.0f : sa * float_from_word(0x3F800000u | (v >> 9));
      neg_a[i] = -a[i];
    }
    ExactDot32 acc, sub;
    acc.clear();
    sub.clear();
    for (int i = 0; i < n; ++i) {
      acc.add_product(a[i], b[i]);
      sub.add_product(a[i], b[i], /*subtract=*/true);
    }
    INFO("trial " << trial);
    REQUIRE(acc.to_double() == mpfr_dot(a, b));
    REQUIRE(sub.to_double() == mpfr_dot(neg_a, b));
  }
}
