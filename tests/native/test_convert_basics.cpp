// Known answers for the native engine: preset limits and the traps others fell into.
#include <catch2/catch.hpp>
#include <limits>
#include <random>

#include "sim/native/convert.hpp"
#include "sim/native/p3109.hpp"
#include "sim/native/philox.hpp"
#include "sim/oracle/steps/philox.hpp"

using namespace exmy;
using native::bits_of;
using native::convert;

namespace {
std::uint64_t from_f32(const FloatFormat& f, float x, Rounding r = {}) {
  return convert(formats::fp32, f, r, bits_of(x)).code;
}
}  // namespace

// The kernels' forms of section 3.2's words, against the step oracle's own Philox (independent
// code): the precomputed key schedule, and the shared prefix of blocks with equal high counter
// words (philox_prefix / philox_block(k, prefix, lo)), which the sr cast kernels use.
TEST_CASE("Philox key schedule and shared-prefix blocks equal the oracle's words",
          "[native][philox]") {
  const std::uint64_t seed = GENERATE(0ull, 0x0123456789abcdefull, ~0ull, 20261126ull);
  std::mt19937_64 gen(seed ^ 0x5eedull);
  INFO("seed " << seed);
  const native::PhiloxKeys keys = native::philox_keys(seed);
  for (int t = 0; t < 2000; ++t) {
    const std::uint32_t stream = t % 3 == 0 ? 0u : static_cast<std::uint32_t>(gen());
    std::uint64_t block = gen() >> 2;        // element 4 block + j stays below 2^64
    if (t % 4 == 1) block &= 0xFFFFFFFFull;  // hi = 0, the common case
    if (t % 4 == 2) block |= 0xFFFFFFFFull;  // lo = 2^32 - 1
    const auto hi = static_cast<std::uint32_t>(block >> 32);
    const auto lo = static_cast<std::uint32_t>(block);
    const native::Philox4 viaprefix =
        native::philox_block(keys, native::philox_prefix(keys, stream, hi), lo);
    const native::Philox4 viakeys = native::philox_block(keys, stream, block);
    for (int j = 0; j < 4; ++j) {
      const std::uint32_t want = oracle::steps::philox_element_word(seed, stream, 4 * block + j);
      INFO("stream " << stream << " block " << block << " word " << j);
      REQUIRE(viaprefix.w[j] == want);
      REQUIRE(viakeys.w[j] == want);
    }
  }
}

TEST_CASE("preset maxima follow from their NaN convention", "[native]") {
  CHECK(native::to_double(formats::e4m3fn, formats::e4m3fn.max_code()) == 448.0);
  CHECK(native::to_double(formats::e5m2, formats::e5m2.max_code()) == 57344.0);
  CHECK(native::to_double(formats::e4m3fnuz, formats::e4m3fnuz.max_code()) == 240.0);
  CHECK(native::to_double(formats::e5m2fnuz, formats::e5m2fnuz.max_code()) == 57344.0);
  CHECK(native::to_double(formats::e4m3, formats::e4m3.max_code()) == 240.0);
  CHECK(native::to_double(formats::e3m4, formats::e3m4.max_code()) == 15.5);
  CHECK(native::to_double(formats::e4m3b11fnuz, formats::e4m3b11fnuz.max_code()) == 30.0);
  CHECK(native::to_double(formats::e2m3fn, formats::e2m3fn.max_code()) == 7.5);
  CHECK(native::to_double(formats::e3m2fn, formats::e3m2fn.max_code()) == 28.0);
  CHECK(native::to_double(formats::e2m1fn, formats::e2m1fn.max_code()) == 6.0);
  CHECK(native::to_double(formats::e8m0fnu, 0xFE) == 0x1p127);
  CHECK(native::to_double(formats::e8m0fnu, 0x00) == 0x1p-127);
  CHECK(native::to_double(formats::fp16, formats::fp16.max_code()) == 65504.0);
}

// Regression: some implementations report 480 (S.1111.111) as e4m3fn's max; that code is NaN.
TEST_CASE("regression: e4m3fn max is 448, 0x7F is NaN", "[native][regression]") {
  CHECK(formats::e4m3fn.classify(0x7F) == ValueClass::nan);
  CHECK(from_f32(formats::e4m3fn, 464.0f) == 0x7E);  // tie between 448 and 480: to even (448)
  CHECK(from_f32(formats::e4m3fn, 465.0f) == 0x7F);  // rounds to 480 > max: NaN (no inf)
  CHECK(from_f32(formats::e4m3fn, 465.0f, {RoundMode::rne, 0, Overflow::satfinite}) == 0x7E);
  CHECK(from_f32(formats::e5m2, 61440.0f) == 0x7C);  // tie rounds to 65536: inf
  CHECK(from_f32(formats::e5m2, 61439.0f) == 0x7B);
}

TEST_CASE("signed zeros and fnuz zero", "[native][regression]") {
  CHECK(from_f32(formats::e4m3fn, -0.0f) == 0x80);
  CHECK(from_f32(formats::e4m3fnuz, -0.0f) == 0x00);  // no -0 in fnuz: 0x80 is NaN
  CHECK(from_f32(formats::e4m3fnuz, -1e-30f) == 0x00);
  CHECK(from_f32(formats::e4m3fn, -1e-30f) == 0x80);  // negative underflow keeps its sign
  CHECK(from_f32(formats::e4m3fnuz, std::numeric_limits<float>::quiet_NaN()) == 0x80);
}

TEST_CASE("NaN keeps its sign where the format can carry it", "[native][regression]") {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  CHECK(from_f32(formats::e5m2, qnan) == 0x7E);
  CHECK(from_f32(formats::e5m2, -qnan) == 0xFE);
  CHECK(from_f32(formats::e4m3fn, -qnan) == 0xFF);
  CHECK(from_f32(formats::e8m0fnu, qnan) == 0xFF);
}

TEST_CASE("Philox4x32-10 known answers (Random123 kat_vectors)", "[native][philox]") {
  auto a = native::philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  CHECK(a.w[0] == 0x6627e8d5u);
  CHECK(a.w[1] == 0xe169c58du);
  CHECK(a.w[2] == 0xbc57ac4cu);
  CHECK(a.w[3] == 0x9b00dbd8u);
  auto b = native::philox4x32_10({{~0u, ~0u, ~0u, ~0u}}, ~0u, ~0u);
  CHECK(b.w[0] == 0x408f276du);
  CHECK(b.w[1] == 0x41c83b0eu);
  CHECK(b.w[2] == 0xa20bc7c6u);
  CHECK(b.w[3] == 0x6d5451fdu);
  auto c = native::philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
                                 0xa4093822u, 0x299f31d0u);
  CHECK(c.w[0] == 0xd16cfe09u);
  CHECK(c.w[1] == 0x94fdccebu);
  CHECK(c.w[2] == 0x5001e420u);
  CHECK(c.w[3] == 0x24126ea1u);
}

// Regression (exmy issue: M = 0 ties). With no mantissa bits the kept significand T is 1 in every
// binade, so "T odd" sent every tie up: e7m0b64fnuz (= P3109 binary8p1se) gave 6 -> 8 where
// P3109's CodeIsEven gives 4 (4 is exponent code 66, even). Formats with a zero now take the
// code's parity (docs/SEMANTICS.md section 2, step 3); those without (e8m0fnu) keep ties up, as
// ml_dtypes 0.7 and torch round them. Checked against the P3109 engine (sim/native/p3109.hpp, its
// own rounding code) on every fp16 and bf16 input, K = 3..8, rne and rto, SatFinite.
TEST_CASE("regression: M = 0 formats with a zero round ties to the even code",
          "[native][m0-ties]") {
  const FloatFormat b8p1{7, 0, 64, true, false, NanEncoding::neg_zero, true};  // e7m0b64fnuz
  CHECK(from_f32(b8p1, 6.0f) == 66);   // 6 = tie of 4 (66) and 8 (67): 4
  CHECK(from_f32(b8p1, 3.0f) == 66);   // tie of 2 (65) and 4 (66): 4
  CHECK(from_f32(b8p1, 12.0f) == 68);  // tie of 8 (67) and 16 (68): 16
  CHECK(from_f32(b8p1, -6.0f) == (0x80 | 66));
  CHECK(from_f32(b8p1, 6.5f) == 67);  // above the tie
  // rto: an inexact even code moves to its odd neighbour.
  const Rounding rto{RoundMode::rto};
  CHECK(from_f32(b8p1, 5.0f, rto) == 67);  // 4 (even) inexact -> 8
  CHECK(from_f32(b8p1, 9.0f, rto) == 67);  // 8 (odd) stays
  CHECK(from_f32(b8p1, 4.0f, rto) == 66);  // exact stays
  // e8m0fnu (no zero) keeps ties up: 3 -> 4 (code 129), 1.5 -> 2 (128), as ml_dtypes 0.7.
  CHECK(from_f32(formats::e8m0fnu, 3.0f) == 129);
  CHECK(from_f32(formats::e8m0fnu, 1.5f) == 128);
  CHECK(from_f32(formats::e8m0fnu, 6.0f) == 130);

  for (int k = 3; k <= 8; ++k) {
    const FloatFormat g{k - 1, 0, 1 << (k - 2), true, false, NanEncoding::neg_zero, true};
    const native::P3109Format p{k, 1, true, false};
    for (const bool to_odd : {false, true}) {
      const Rounding r{to_odd ? RoundMode::rto : RoundMode::rne, 0, Overflow::satfinite};
      const native::P3109Projection pr{
          to_odd ? native::P3109Round::to_odd : native::P3109Round::nearest_even, 0,
          native::P3109Sat::sat_finite};
      for (const FloatFormat& src : {formats::fp16, formats::bf16}) {
        int bad = 0;
        for (std::uint32_t c = 0; c < 0x10000u; ++c) {
          const native::Unpacked u = native::unpack(src, c);
          if (u.cls == ValueClass::nan) continue;
          const std::uint64_t want = native::p3109_project(p, pr, u).code;
          const std::uint64_t got = native::encode(g, r, u).code;
          if (want != got && ++bad <= 3) {
            INFO("K " << k << " rto " << to_odd << " input 0x" << std::hex << c);
            CHECK(got == want);
          }
        }
        CHECK(bad == 0);
      }
    }
  }
}
