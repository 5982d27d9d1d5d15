// Stochastic rounding checked exactly (docs/SEMANTICS.md 3.1): for R <= 8 every one of the 2^R
// words is tried; the number of words that round away from zero must equal floor(f * 2^R), f the
// residual in quanta, and the native engine must agree with the oracle for every word.
#include <catch2/catch.hpp>

#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/mpfr_value.hpp"

using namespace exmy;
using oracle::MpfrValue;

TEST_CASE("sr:R for R <= 8: exactly floor(f * 2^R) of the 2^R words round up", "[oracle][sr]") {
  // Residuals j / 2^10 of a quantum: zero, the smallest, around 1/4, 1/2, 3/4, the largest.
  const unsigned long kJ = 10;
  const unsigned long residuals[] = {0,   1,   2,   127, 128, 129, 255,  256,  257, 300,
                                     511, 512, 513, 700, 767, 768, 1000, 1022, 1023};
  MpfrValue v(64), next(64), step(64), x(128);
  std::uint64_t words_checked = 0;
  for (const auto& p : narrow_float_presets()) {
    const FloatFormat& f = p.format;
    const std::uint64_t max = oracle::max_finite_code(f);
    for (std::uint64_t c = 0; c < max; ++c) {  // pairs (c, c + 1) below the overflow boundary
      oracle::decode(f, c, v);
      mpfr_abs(v, v, MPFR_RNDN);
      oracle::decode(f, c + 1, next);
      mpfr_sub(step, next, v, MPFR_RNDN);
      for (const unsigned long j : residuals) {
        mpfr_mul_ui(x, step, j, MPFR_RNDN);
        mpfr_div_2ui(x, x, kJ, MPFR_RNDN);
        mpfr_add(x, x, v, MPFR_RNDN);
        for (const bool negative : {false, true}) {
          if (negative && !f.is_signed) continue;
          if (negative) mpfr_neg(x, x, MPFR_RNDN);
          const double xd = mpfr_get_d(x, MPFR_RNDN);
          REQUIRE(mpfr_cmp_d(x, xd) == 0);  // every point is an fp64 number
          const Encoded down = oracle::encode(f, {RoundMode::rtz, 0, Overflow::none}, x);
          for (int R = 1; R <= 8; ++R) {
            const Rounding r{RoundMode::sr, R, Overflow::none};
            std::uint64_t up = 0;
            for (std::uint32_t w = 0; w < (1u << R); ++w) {
              const Encoded o = oracle::encode(f, r, x, w);
              const Encoded n = native::convert(formats::fp64, f, r, native::bits_of(xd), w);
              ++words_checked;
              if (n.code != o.code || n.flags != o.flags) {
                INFO(p.name << " x=" << xd << " sr:" << R << " w=" << w);
                CHECK(n.code == o.code);
                CHECK(n.flags == o.flags);
              }
              if (o.code != down.code) ++up;
            }
            // floor(f * 2^R) with f = j / 2^10.
            const std::uint64_t expected = (j << R) >> kJ;
            if (up != expected) {
              INFO(p.name << " pair at 0x" << std::hex << c << std::dec << " residual " << j
                          << "/1024 negative " << negative << " sr:" << R);
              CHECK(up == expected);
            }
          }
          if (negative) mpfr_neg(x, x, MPFR_RNDN);
        }
      }
    }
  }
  CHECK(words_checked > 1000000);
}

TEST_CASE("sr: representable inputs never move, whatever the word", "[oracle][sr]") {
  MpfrValue v(64);
  for (const auto& p : narrow_float_presets()) {
    const FloatFormat& f = p.format;
    for (std::uint64_t c = 0; c < (std::uint64_t{1} << f.total_bits()); ++c) {
      const ValueClass cls = oracle::classify(f, c);
      if (cls != ValueClass::normal && cls != ValueClass::subnormal) continue;
      oracle::decode(f, c, v);
      for (const int R : {1, 8, 32}) {
        for (const std::uint32_t w : {0u, 0xFFFFFFFFu, 0x80000000u}) {
          const Encoded o = oracle::encode(f, {RoundMode::sr, R, Overflow::none}, v, w);
          INFO(p.name << " code 0x" << std::hex << c << " sr:" << std::dec << R);
          CHECK(o.code == c);
          CHECK(o.flags == 0);
        }
      }
    }
  }
}
