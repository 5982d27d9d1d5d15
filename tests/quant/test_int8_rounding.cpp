// The per-element int8 rounding (SEMANTICS 7.3) against C library rounding, over a strided sweep
// of every fp32 below 2^8 in magnitude plus the exact half-integers and their neighbours.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>

#include "sim/native/philox.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_int8.hpp"
#include "tests/quant/quant_test_util.hpp"

using namespace exmy;
using native::bits_of;
using native::float_of;

namespace {

// Independent integer rounding of y in mode m (nearbyint/round/trunc/ceil/floor), saturated.
int ref_round(float y, RoundMode m) {
  const double d = y;
  double r = 0;
  switch (m) {
    case RoundMode::rne:
      r = std::nearbyint(d);
      break;
    case RoundMode::rna:
      r = std::round(d);
      break;
    case RoundMode::rtz:
      r = std::trunc(d);
      break;
    case RoundMode::rup:
      r = std::ceil(d);
      break;
    case RoundMode::rdn:
      r = std::floor(d);
      break;
    case RoundMode::rto: {
      r = std::trunc(d);
      if (r != d && std::fmod(std::fabs(r), 2.0) == 0.0) r += d > 0 ? 1 : -1;
      break;
    }
    default:
      break;
  }
  if (r > 127) r = 127;
  if (r < -127) r = -127;
  return static_cast<int>(r);
}

// sr:R by the definition: up iff floor(frac * 2^R) + w >= 2^R, frac = |y| - floor(|y|).
int ref_sr(float y, int R, std::uint32_t w) {
  const double a = std::fabs(static_cast<double>(y));
  const double t = std::floor(a);
  const double frac = a - t;  // exact: y has <= 24 significant bits
  const double fr = std::floor(std::ldexp(frac, R));
  double r = t + ((fr + w >= std::ldexp(1.0, R)) ? 1 : 0);
  if (r > 127) r = 127;
  return static_cast<int>(y < 0 ? -r : r);
}

}  // namespace

TEST_CASE("round_to_int8 matches C rounding on a strided sweep of |y| < 2^8", "[quant][int8]") {
  const RoundMode modes[] = {RoundMode::rne, RoundMode::rna, RoundMode::rtz,
                             RoundMode::rup, RoundMode::rdn, RoundMode::rto};
  std::size_t checked = 0, bad = 0;
  for (std::uint32_t b = 0; b <= 0x43800000u; b += 211) {
    for (const std::uint32_t sign : {0u, 0x80000000u}) {
      const float y = float_of(b | sign);
      for (const RoundMode m : modes) {
        const int got = native::round_to_int8(y, {m, 0, Overflow::none}).code;
        if (got != ref_round(y, m) && ++bad < 10) {
          std::printf("y=%a mode=%d got=%d want=%d\n", y, static_cast<int>(m), got,
                      ref_round(y, m));
        }
        ++checked;
      }
    }
  }
  INFO("checked " << checked);
  CHECK(bad == 0);
}

TEST_CASE("round_to_int8 boundary table: half-integers, neighbours, saturation", "[quant][int8]") {
  for (int k = -300; k <= 300; ++k) {
    const float h = static_cast<float>(k) + 0.5f;
    for (const float y :
         {h, std::nextafter(h, 1e9f), std::nextafter(h, -1e9f), static_cast<float>(k)}) {
      for (const RoundMode m : {RoundMode::rne, RoundMode::rna, RoundMode::rtz, RoundMode::rup,
                                RoundMode::rdn, RoundMode::rto}) {
        INFO("y=" << y << " mode=" << static_cast<int>(m));
        CHECK(native::round_to_int8(y, {m, 0, Overflow::none}).code == ref_round(y, m));
      }
    }
  }
  // Ties to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, 126.5 -> 126, 127.5 -> 128 saturates to 127.
  CHECK(native::round_to_int8(0.5f, {}).code == 0);
  CHECK(native::round_to_int8(1.5f, {}).code == 2);
  CHECK(native::round_to_int8(2.5f, {}).code == 2);
  CHECK(native::round_to_int8(-2.5f, {}).code == -2);
  CHECK(native::round_to_int8(126.5f, {}).code == 126);
  CHECK(native::round_to_int8(127.5f, {}).code == 127);
  CHECK((native::round_to_int8(127.5f, {}).flags & flag::overflow) != 0);
  // Specials: NaN -> 0 invalid; +-inf -> +-127 overflow; -0 -> 0; no -128 ever.
  CHECK(native::round_to_int8(NAN, {}).code == 0);
  CHECK(native::round_to_int8(NAN, {}).flags == flag::invalid);
  CHECK(native::round_to_int8(INFINITY, {}).code == 127);
  CHECK(native::round_to_int8(-INFINITY, {}).code == -127);
  CHECK(native::round_to_int8(-1e30f, {}).code == -127);
  CHECK(native::round_to_int8(-0.0f, {}).code == 0);
  CHECK(native::round_to_int8(-0.0f, {}).flags == 0);
  CHECK(native::round_to_int8(1e-45f, {}).code == 0);
  CHECK(native::round_to_int8(1e-45f, {RoundMode::rup, 0, Overflow::none}).code == 1);
}

TEST_CASE("round_to_int8 sr:R follows the truncated-residual definition", "[quant][int8][sr]") {
  const std::uint64_t seed = 20261121;
  std::printf("sr definition sweep seed %llu\n", static_cast<unsigned long long>(seed));
  std::size_t bad = 0;
  for (const int R : {1, 3, 8, 13, 23, 24, 32}) {
    for (std::uint32_t b = 0; b <= 0x43800000u; b += 4099) {
      const std::uint32_t i = b / 4099;
      const float y = float_of(b | ((i & 1) ? 0x80000000u : 0));
      const std::uint32_t w = native::sr_word(native::philox_word(seed, 16, i), R);
      const int got = native::round_to_int8(y, {RoundMode::sr, R, Overflow::none}, w).code;
      if (got != ref_sr(y, R, w)) ++bad;
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("sr rounding to int8 is unbiased (fixed seed)", "[quant][int8][sr]") {
  const std::uint64_t seed = 7;
  std::printf("sr unbiasedness seed %llu\n", static_cast<unsigned long long>(seed));
  for (const float y : {0.25f, -3.7f, 100.125f, 0.001f, 126.9f}) {
    const int n = 200000;
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      const std::uint32_t w = native::sr_word(native::philox_word(seed, 16, i), 24);
      sum += native::round_to_int8(y, {RoundMode::sr, 24, Overflow::none}, w).code;
    }
    const double mean = sum / n;
    // Bernoulli(p) over n draws: sd <= 0.5/sqrt(n) ~ 1.1e-3; 6 sd, plus the 2^-24 truncation.
    INFO("y=" << y << " mean=" << mean);
    CHECK(std::fabs(mean - y) < 6 * 0.5 / std::sqrt(static_cast<double>(n)) + 1e-6);
  }
}

TEST_CASE("absmax_combine: exact max of |x|, NaN policies, order independence", "[quant]") {
  using native::absmax_combine;
  using native::NanPolicy;
  CHECK(bits_of(absmax_combine(0.0f, -0.0f, NanPolicy::propagate)) == 0u);
  CHECK(absmax_combine(0.0f, -3.0f, NanPolicy::propagate) == 3.0f);
  CHECK(std::isnan(absmax_combine(1.0f, NAN, NanPolicy::propagate)));
  CHECK(std::isnan(absmax_combine(NAN, 5.0f, NanPolicy::propagate)));
  CHECK(bits_of(absmax_combine(NAN, 5.0f, NanPolicy::propagate)) == 0x7FC00000u);
  CHECK(absmax_combine(1.0f, NAN, NanPolicy::ignore) == 1.0f);
  CHECK(absmax_combine(1.0f, -INFINITY, NanPolicy::ignore) == INFINITY);
  // Any fold order gives the same bits (random permutations of a vector with a NaN).
  std::mt19937_64 rng(99);
  auto v = quant_test::random_floats(rng, 257);
  v[17] = NAN;
  for (const auto p : {NanPolicy::propagate, NanPolicy::ignore}) {
    float ref = native::kAbsmaxInit;
    for (float x : v) ref = absmax_combine(ref, x, p);
    for (int t = 0; t < 20; ++t) {
      std::shuffle(v.begin(), v.end(), rng);
      // A pairwise tree, as a GPU reduction would do it.
      std::vector<float> level(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) level[i] = absmax_combine(0.0f, v[i], p);
      while (level.size() > 1) {
        std::vector<float> next((level.size() + 1) / 2);
        for (std::size_t i = 0; i < next.size(); ++i) {
          next[i] = 2 * i + 1 < level.size() ? absmax_combine(level[2 * i], level[2 * i + 1], p)
                                             : level[2 * i];
        }
        level = next;
      }
      CHECK(bits_of(level[0]) == bits_of(ref));
    }
  }
}
