// ExactDot32 (sim/native/exact_dot.hpp): the exact inner products behind the variance report.
// Checked against MPFR at a precision where every sum is exact, then rounded once (RNDN).
#include <mpfr.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "sim/fast/exact_dot_simd.hpp"
#include "sim/fast/simd.hpp"
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

// fast::exact_dots (sim/fast/exact_dot_simd.hpp) against the add_product loop it replaces, on the
// instruction set the machine has and on SSE2: every pair's to_double, alone and after
// subtracting another accumulator (the variance report's d = <u^, v^> - <u, v>). Rows of every
// kind that decides its plan: gaussian-like (2-3 fp64 levels), narrow grids (1 level), wide
// exponent spans (4 levels, and past them the add_product fallback), subnormals, all-zero rows,
// +-0 mixed in, and lengths around the 4-lane body and the 1024-column blocks.
TEST_CASE("exact_dots equals the add_product loops, bit for bit", "[exact][fast]") {
  const std::uint64_t seed = 20261204;
  INFO("seed " << seed);
  const std::size_t ks[] = {0, 1, 3, 4, 5, 7, 64, 1023, 1024, 1025, 3001, 16384, 65536};
  int levels_seen[6] = {0, 0, 0, 0, 0, 0};  // index level + 1 (-1: zero row, 0: fallback)
  std::uint64_t ctr = 0;
  const auto next = [&] { return exmy::native::philox_word(seed, 11, ctr++); };
  const auto draw_row = [&](int kind, std::size_t k, float* out) {
    for (std::size_t c = 0; c < k; ++c) {
      const std::uint32_t w = next();
      float x = 0.0f;
      switch (kind) {
        case 0: {  // gaussian-like: Box-Muller of two words
          const double u1 = (static_cast<double>(w) + 0.5) / 4294967296.0;
          const double u2 = (static_cast<double>(next()) + 0.5) / 4294967296.0;
          x = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
          break;
        }
        case 1:  // an int8 grid times a scale, zeros and -0 included
          x = ((w & 1) ? -1.0f : 1.0f) * static_cast<float>((w >> 8) % 128) * 0.0123f;
          break;
        case 2:  // exponents over +-2^40: wide spans
          x = std::ldexp(((w & 1) ? -1.0f : 1.0f) * (1.0f + static_cast<float>(w >> 9) * 0x1p-23f),
                         static_cast<int>((w >> 1) % 81) - 40);
          break;
        case 3:  // any finite fp32 (subnormals, 2^127): fallback
          x = random_finite(seed + 1, ctr++);
          break;
        case 4:  // subnormals and tiny normals
          x = float_from_word((w & 0x80FFFFFFu));
          break;
        case 5:  // all +-0
          x = (w & 1) ? -0.0f : 0.0f;
          break;
        default:  // fp8-like: 3 mantissa bits, exponents +-8, with zeros
          x = (w % 7 == 0) ? 0.0f
                           : std::ldexp(((w & 1) ? -1.0f : 1.0f) * (1.0f + ((w >> 1) & 7) / 8.0f),
                                        static_cast<int>((w >> 4) % 17) - 8);
      }
      out[c] = x;
    }
  };
  for (const bool sse2 : {false, true}) {
    if (sse2) exmy::fast::simd::set_isa_limit(exmy::fast::simd::Isa::sse2);
    int trial = 0;
    for (const std::size_t k : ks) {
      for (int ku = 0; ku < 7; ++ku) {
        const int kv = (ku + trial) % 7;
        ++trial;
        const std::size_t ru = 1 + trial % 4, rv = 1 + (trial / 4) % 4;
        std::vector<float> u(ru * k), v(rv * k);
        for (std::size_t r = 0; r < ru; ++r) draw_row(r == 1 ? 5 : ku, k, &u[r * k]);
        for (std::size_t r = 0; r < rv; ++r) draw_row(r == 2 ? 0 : kv, k, &v[r * k]);
        std::vector<ExactDot32> fast(ru * rv), ref(ru * rv), other(ru * rv);
        for (std::size_t q = 0; q < ru * rv; ++q) {
          fast[q].clear();
          ref[q].clear();
          other[q].clear();
          other[q].add_product(static_cast<float>(q) + 0.25f, 3.0f);
        }
        exmy::fast::exact_dots(u.data(), ru, v.data(), rv, k, fast.data());
        for (std::size_t i = 0; i < ru; ++i) {
          for (std::size_t j = 0; j < rv; ++j) {
            const float* a = &u[i * k];
            const float* b = &v[j * k];
            for (std::size_t c = 0; c < k; ++c) ref[i * rv + j].add_product(a[c], b[c]);
            ++levels_seen[exmy::fast::exact_dot_levels(a, b, k) + 1];
          }
        }
        INFO("k " << k << " kinds " << ku << " " << kv << " sse2 " << sse2);
        for (std::size_t q = 0; q < ru * rv; ++q) {
          REQUIRE(fast[q].to_double() == ref[q].to_double());
          fast[q].add(other[q], true);
          ref[q].add(other[q], true);
          REQUIRE(fast[q].to_double() == ref[q].to_double());
        }
        if (k > 0 && k <= 1025) {
          // And against MPFR, for the first pair.
          const std::vector<float> a(u.begin(), u.begin() + static_cast<std::ptrdiff_t>(k));
          const std::vector<float> b(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k));
          ExactDot32 one;
          one.clear();
          exmy::fast::exact_dots(a.data(), 1, b.data(), 1, k, &one);
          REQUIRE(one.to_double() == mpfr_dot(a, b));
        }
      }
    }
    exmy::fast::simd::clear_isa_limit();
  }
  // Every plan was taken: zero rows, the fallback, and 1 to 4 fp64 levels.
  for (int l = 0; l < 6; ++l) {
    INFO("plan " << l - 1);
    CHECK(levels_seen[l] > 0);
  }
}

// Random rows keep their sums far below the levels' worst-case bounds (they grow like sqrt(k)):
// here every product is the largest of its row pair and of one sign, so each level's sums reach
// the bound the plan was made for, and one tiny element widens the span step by step through
// every level count (1 to 4) and into the fallback. A plan one bit too generous rounds here.
TEST_CASE("exact_dots: sums at the levels' bounds, every span", "[exact][fast]") {
  const float big = float_from_word(0x3FFFFFFFu);  // 2 - 2^-23: all significand bits set
  for (const bool sse2 : {false, true}) {
    if (sse2) exmy::fast::simd::set_isa_limit(exmy::fast::simd::Isa::sse2);
    for (const std::size_t k :
         {std::size_t{5}, std::size_t{1000}, std::size_t{4096}, std::size_t{65536}}) {
      for (int s = 0; s <= 140; s += 1) {
        std::vector<float> a(k, big), b(k, -big);
        a[k / 2] = std::ldexp(float_from_word(0x3FFFFFFFu), -s);  // the tiny element
        b[0] = std::ldexp(1.0f, -s / 2);
        ExactDot32 fast, ref;
        fast.clear();
        ref.clear();
        exmy::fast::exact_dots(a.data(), 1, b.data(), 1, k, &fast);
        for (std::size_t c = 0; c < k; ++c) ref.add_product(a[c], b[c]);
        // The sum itself must hold every bit: compare the exact remainder too.
        ExactDot32 diff = fast;
        diff.add(ref, /*subtract=*/true);
        INFO("k " << k << " spread " << s << " levels "
                  << exmy::fast::exact_dot_levels(a.data(), b.data(), k) << " sse2 " << sse2);
        REQUIRE(diff.to_double() == 0.0);
        REQUIRE(fast.to_double() == ref.to_double());
      }
    }
    exmy::fast::simd::clear_isa_limit();
  }
}
