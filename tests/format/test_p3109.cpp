// IEEE P3109 formats (sim/native/p3109.hpp, docs/SEMANTICS.md 1.2) against tables written from the
// P3109 interim report v4.0: §3.1 (bias), §4.7.2 (decode), §4.7.4 (rounding), §4.7.5
// (saturation), §4.7.6 (encode code points). Exhaustive decode of every code of every format with
// K <= 10 against the §4.7.2 formula evaluated in long double arithmetic (independent of the
// integer decoder); boundary tables for the projection. The exhaustive encode comparison against
// an exact-rational reference and gfloat is bench/peers/p3109_vs_gfloat.py.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "sim/format/p3109_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/p3109.hpp"

using namespace exmy;
using native::P3109Format;
using native::P3109Projection;
using native::P3109Round;
using native::P3109Sat;

namespace {

// §4.7.2 in long double (exact: at most 16 significant bits, exponents within range).
long double report_decode(int k, int p, bool s, bool e, std::uint64_t x) {
  const std::uint64_t K2 = std::uint64_t{1} << k, H = K2 / 2;
  const long double nan = NAN, inf = INFINITY;
  if (s && x == H) return nan;
  if (!s && x == K2 - 1) return nan;
  if (s && e && x == H - 1) return inf;
  if (s && e && x == K2 - 1) return -inf;
  if (!s && e && x == K2 - 2) return inf;
  if (s && x > H) return -report_decode(k, p, s, e, x - H);
  const int B = 1 << (s ? k - p - 1 : k - p);
  const std::uint64_t T = x % (std::uint64_t{1} << (p - 1)), Eb = x >> (p - 1);
  const long double frac = std::ldexp(static_cast<long double>(T), 1 - p);
  return Eb == 0 ? std::ldexp(frac, 1 - B) : std::ldexp(1.0L + frac, static_cast<int>(Eb) - B);
}

long double value_of(const P3109Format& f, std::uint64_t code) {
  const native::Unpacked u = native::p3109_unpack(f, code);
  if (u.cls == ValueClass::nan) return NAN;
  if (u.cls == ValueClass::inf) return u.negative ? -INFINITY : INFINITY;
  if (u.cls == ValueClass::zero) return 0.0L;
  const long double m = std::ldexp(static_cast<long double>(u.sig), u.exp - 63);
  return u.negative ? -m : m;
}

std::uint64_t project(const char* name, double x, P3109Round m, P3109Sat s, int n = 0,
                      std::uint32_t r = 0) {
  const P3109Format f = *parse_p3109_format(name);
  constexpr FloatFormat kFp64 = formats::fp64;
  std::uint64_t bits;
  std::memcpy(&bits, &x, 8);
  return native::p3109_project(f, P3109Projection{m, n, s}, native::unpack(kFp64, bits), r).code;
}

}  // namespace

TEST_CASE("P3109 names, biases and special code points (report 3.1, 3.2, 4.7.6)", "[p3109]") {
  const P3109Format a = *parse_p3109_format("binary8p3se");
  CHECK(a.bias() == 16);  // 2^(8-3-1)
  CHECK(a.nan_code() == 0x80);
  CHECK(a.pos_inf_code() == 0x7F);
  CHECK(a.neg_inf_code() == 0xFF);
  CHECK(a.max_code() == 0x7E);
  const P3109Format b = *parse_p3109_format("Binary8p1uf");  // §3.2's second example
  CHECK(b.bias() == 128);                                    // 2^(8-1)
  CHECK(b.nan_code() == 0xFF);
  CHECK(b.max_code() == 0xFE);
  const P3109Format c = *parse_p3109_format("binary12p7se");  // §3.2's first example
  CHECK(c.bias() == 16);
  CHECK(p3109_format_name(c) == "binary12p7se");
  CHECK(parse_p3109_format("binary8p3ue")->max_code() == 0xFD);  // +inf 0xFE, NaN 0xFF
  CHECK(!parse_p3109_format("binary8p3").has_value());
  CHECK(!parse_p3109_format("e4m3fn").has_value());
  CHECK_THROWS(parse_p3109_format("binary8p8se"));  // signed needs P < K
  CHECK_THROWS(parse_p3109_format("binary2p1se"));  // K > 2
  CHECK(parse_p3109_format("binary8p8uf").has_value());
}

TEST_CASE("P3109 decode of every code, K = 3..10, against the 4.7.2 formula", "[p3109]") {
  std::uint64_t codes = 0;
  for (int k = 3; k <= 10; ++k) {
    for (const bool s : {true, false}) {
      for (int p = 1; p <= (s ? k - 1 : k); ++p) {
        for (const bool e : {true, false}) {
          const P3109Format f{k, p, s, e};
          for (std::uint64_t x = 0; x < f.code_count(); ++x, ++codes) {
            const long double want = report_decode(k, p, s, e, x), got = value_of(f, x);
            INFO(p3109_format_name(f) << " code " << x);
            if (std::isnan(want)) {
              CHECK(std::isnan(got));
            } else {
              CHECK(got == want);
            }
          }
        }
      }
    }
  }
  CHECK(codes == 69616);  // sum over K of (4K - 2) formats x 2^K codes
}

TEST_CASE("P3109 projection: the report's examples and boundary table", "[p3109]") {
  using R = P3109Round;
  using S = P3109Sat;
  // §3 NOTE 2: 2.0 in Binary8p4se is 0x48; Inf is 0x7F.
  CHECK(project("binary8p4se", 2.0, R::nearest_even, S::sat_none) == 0x48);
  CHECK(project("binary8p4se", INFINITY, R::nearest_even, S::sat_none) == 0x7F);
  // No negative zero (3.1 NOTE 1): -0 and negatives rounding to 0 encode as 0.
  CHECK(project("binary8p4se", -0.0, R::nearest_even, S::sat_none) == 0x00);
  CHECK(project("binary8p4se", -1e-30, R::toward_negative, S::sat_none) == 0x81);
  CHECK(project("binary8p4se", -1e-30, R::toward_zero, S::sat_none) == 0x00);
  // binary8p3se: max 0x7E = 1.5·2^15 = 49152, ulp there 2^13. RNE: 49152 + 2^12 is a tie between
  // 0x7E (S = 6, even) and the grid point 1.75·2^15 (S = 7, 0x7F's place): stays at 0x7E; above
  // it rounds to 1.75·2^15 > M_hi → +inf under SatNone (4.7.3 NOTE 1).
  CHECK(project("binary8p3se", 49152 + 4096, R::nearest_even, S::sat_none) == 0x7E);
  CHECK(project("binary8p3se", 49152 + 4097, R::nearest_even, S::sat_none) == 0x7F);
  CHECK(project("binary8p3se", 49152 + 4097, R::nearest_even, S::sat_finite) == 0x7E);
  CHECK(project("binary8p3se", 57344, R::toward_zero, S::sat_none) == 0x7E);
  CHECK(project("binary8p3se", -1e9, R::toward_positive, S::sat_none) == 0xFE);
  CHECK(project("binary8p3se", -1e9, R::toward_negative, S::sat_none) == 0xFF);
  // ToOdd just above M_hi (even code 0x7E): rounds to the odd grid point above → +inf (SatNone,
  // signed extended); unsigned extended has the explicit rule → M_hi.
  CHECK(project("binary8p3se", 49153, R::to_odd, S::sat_none) == 0x7F);
  CHECK(project("binary8p3ue", 1e30, R::to_odd, S::sat_none) == 0xFD);
  CHECK(project("binary8p3ue", 1e30, R::nearest_even, S::sat_none) == 0xFE);
  // Finite formats: SatNone overflow and +inf give M_hi (never NaN), −inf gives M_lo.
  CHECK(project("binary8p3sf", 1e9, R::nearest_even, S::sat_none) == 0x7F);
  CHECK(project("binary8p3sf", INFINITY, R::nearest_even, S::sat_none) == 0x7F);
  CHECK(project("binary8p3sf", -INFINITY, R::nearest_even, S::sat_none) == 0xFF);
  // SatPropagate keeps infinities where the format has them, clamps finite overflow.
  CHECK(project("binary8p3se", INFINITY, R::nearest_even, S::sat_propagate) == 0x7F);
  CHECK(project("binary8p3se", 1e9, R::nearest_even, S::sat_propagate) == 0x7E);
  CHECK(project("binary8p3se", INFINITY, R::nearest_even, S::sat_finite) == 0x7E);
  // Unsigned: negatives saturate to 0 (SatFinite, SatPropagate, v3.2.1 OvfInf) or NaN (SatNone).
  CHECK(project("binary8p3ue", -1.0, R::nearest_even, S::sat_finite) == 0x00);
  CHECK(project("binary8p3ue", -1.0, R::nearest_even, S::sat_propagate) == 0x00);
  CHECK(project("binary8p3ue", -1.0, R::nearest_even, S::ovf_inf) == 0x00);
  CHECK(project("binary8p3ue", -1.0, R::nearest_even, S::sat_none) == 0xFF);
  CHECK(project("binary8p3ue", -1.0, R::toward_zero, S::sat_none) == 0x00);  // TZ → M_lo
  CHECK(project("binary8p3ue", -INFINITY, R::nearest_even, S::sat_none) == 0xFF);
  CHECK(project("binary8p3ue", -INFINITY, R::nearest_even, S::ovf_inf) == 0x00);
  CHECK(project("binary8p3ue", NAN, R::nearest_even, S::sat_finite) == 0xFF);
  // P = 1: CodeIsEven is the parity of Q + B (binary8p1se, B = 64: 2 = 0x41, 4 = 0x42, 8 = 0x43).
  CHECK(project("binary8p1se", 3.0, R::nearest_even, S::sat_none) == 0x42);  // tie → even 0x42
  CHECK(project("binary8p1se", 6.0, R::nearest_even, S::sat_none) == 0x42);  // tie → even 0x42
  CHECK(project("binary8p1se", 5.0, R::to_odd, S::sat_none) == 0x43);        // odd neighbour
  CHECK(project("binary8p1se", 9.0, R::to_odd, S::sat_none) == 0x43);
  // Subnormals (NOTE 2 of 4.7.3): binary8p3se's smallest subnormal 2^-17; half of it → 0, more
  // than half → 2^-17.
  CHECK(project("binary8p3se", std::ldexp(1.0, -18), R::nearest_even, S::sat_none) == 0x00);
  CHECK(project("binary8p3se", std::ldexp(1.5, -18), R::nearest_even, S::sat_none) == 0x01);
}

TEST_CASE("P3109 stochastic variants A, B, C (report 4.7.4)", "[p3109]") {
  using R = P3109Round;
  using S = P3109Sat;
  // binary8p3se at 1 + ν·2^-2 (quantum 2^-2 at 1): codes 0x40 (1.0) and 0x41 (1.25).
  // ν = 0.4, N = 2: A: ⌊1.6⌋ + R >= 4 ⇔ R >= 3; B: ⌊3.2⌋ + 2R + 1 >= 8 ⇔ R >= 2;
  // C: RNITE(1.6) = 2, 2 + R >= 4 ⇔ R >= 2.
  const double x = 1.0 + 0.4 * 0.25;
  for (std::uint32_t r = 0; r < 4; ++r) {
    INFO("R " << r);
    CHECK(project("binary8p3se", x, R::sr_a, S::sat_none, 2, r) == (r >= 3 ? 0x41u : 0x40u));
    CHECK(project("binary8p3se", x, R::sr_b, S::sat_none, 2, r) == (r >= 2 ? 0x41u : 0x40u));
    CHECK(project("binary8p3se", x, R::sr_c, S::sat_none, 2, r) == (r >= 2 ? 0x41u : 0x40u));
  }
  // ν = 3/8 exactly, N = 2: C's RNITE(1.5) = 2 (tie to even), A's ⌊1.5⌋ = 1.
  const double y = 1.0 + 0.375 * 0.25;
  CHECK(project("binary8p3se", y, R::sr_c, S::sat_none, 2, 2) == 0x41);
  CHECK(project("binary8p3se", y, R::sr_a, S::sat_none, 2, 2) == 0x40);
  // An exact value never moves.
  CHECK(project("binary8p3se", 1.25, R::sr_b, S::sat_none, 2, 3) == 0x41);
}
