// Exact text parsing (round to odd at 256 bits) and hex-float printing.
#include <catch2/catch.hpp>
#include <string>

#include "sim/common/error.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/oracle/exact_text.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/mpfr_value.hpp"

using namespace exmy;
using oracle::MpfrValue;

namespace {
std::string hex_of(const char* text) {
  MpfrValue v;
  oracle::parse_exact(text, v);
  return oracle::hexfloat_text(v);
}
}  // namespace

TEST_CASE("hexfloat_text: the CLI's normalised style", "[oracle][text]") {
  CHECK(hex_of("448") == "0x1.cp+8");
  CHECK(hex_of("-0x1p-9") == "-0x1p-9");
  CHECK(hex_of("0.001953125") == "0x1p-9");
  CHECK(hex_of("0") == "0x0p+0");
  CHECK(hex_of("-0") == "-0x0p+0");
  CHECK(hex_of("-0.0e10") == "-0x0p+0");
  CHECK(hex_of("inf") == "inf");
  CHECK(hex_of("-Infinity") == "-inf");
  CHECK(hex_of("NaN") == "nan");
  CHECK(hex_of("-nan") == "-nan");
  CHECK(hex_of("1") == "0x1p+0");
  CHECK(hex_of("+1.5") == "0x1.8p+0");
  CHECK(hex_of("0x3.0p0") == "0x1.8p+1");
  CHECK(hex_of("0X.8P1") == "0x1p+0");
  CHECK(hex_of("65504") == "0x1.ffcp+15");
  CHECK(hex_of("0x1.fffffffffffffp+1023") == "0x1.fffffffffffffp+1023");
  CHECK(hex_of("0x1p-1074") == "0x1p-1074");
  CHECK(hex_of("5.") == "0x1.4p+2");
  CHECK(hex_of(".25") == "0x1p-2");
}

TEST_CASE("hexfloat_text round-trips every code of the <= 16-bit presets", "[oracle][text]") {
  MpfrValue v, back;
  for (const auto& p : float_presets()) {
    if (p.format.total_bits() > 16) continue;
    for (std::uint64_t c = 0; c < (std::uint64_t{1} << p.format.total_bits()); ++c) {
      oracle::decode(p.format, c, v);
      const std::string text = oracle::hexfloat_text(v);
      CHECK(oracle::parse_exact(text, back));
      INFO(p.name << " code " << c << " text " << text);
      if (mpfr_nan_p(v)) {
        CHECK(mpfr_nan_p(back));
      } else {
        CHECK(mpfr_equal_p(v, back));
      }
      CHECK(mpfr_signbit(v) == mpfr_signbit(back));
    }
  }
}

TEST_CASE("hex-float text of fp64 values parses exactly and matches %a", "[oracle][text]") {
  MpfrValue v(53), back;
  for (std::uint64_t k = 0; k < 20000; ++k) {
    const auto b = native::philox_block(99, 0, k);
    const std::uint64_t bits = (std::uint64_t{b.w[0]} << 32) | b.w[1];
    const double d = native::double_of(bits);
    if (d != d) continue;
    mpfr_set_d(v, d, MPFR_RNDN);
    const std::string text = oracle::hexfloat_text(v);
    REQUIRE(oracle::parse_exact(text, back));
    CHECK(mpfr_cmp_d(back, d) == 0);
    CHECK(mpfr_signbit(back) == (bits >> 63 != 0));
  }
}

// Round to odd at 256 bits must give the single rounding of the exact decimal in every mode.
// Reference: the decimal at 4096 bits (RNDN); no decimal fraction below lies within 2^-4000 of a
// rounding boundary of any format (boundaries are dyadic with <= 64 significant bits), so both
// are on the same side of every boundary.
TEST_CASE("decimal text rounds once into every format and mode", "[oracle][text]") {
  const char* texts[] = {
      "0.1",
      "-0.3",
      "1e-3",
      "3.14159265358979323846264338327950288419716939937510",
      "464."
      "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000001",
      "463."
      "9999999999999999999999999999999999999999999999999999999999999999999999999999999999999999",
      "-57344.00000000000000000000000000000000000000000000000000000000000000000000000000000000001",
      "65519.999999999999999999999999999999999999999999999999999999999999999999999999999999999",
      "1.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000001",
      "0.0009765625000000000000000000000000000000000000000000000000000000000000000000000000000001",
      "1e-50",
      "3.4028235677973366e38",
      "1.00000000000000000000000000000000000001e-45",
  };
  MpfrValue parsed, exact(4096);
  for (const char* t : texts) {
    oracle::parse_exact(t, parsed);
    mpfr_set_str(exact, t, 10, MPFR_RNDN);
    for (const auto& p : float_presets()) {
      for (const RoundMode m : {RoundMode::rne, RoundMode::rna, RoundMode::rtz, RoundMode::rup,
                                RoundMode::rdn, RoundMode::rto, RoundMode::sr}) {
        for (const std::uint32_t w : {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu}) {
          const Rounding r{m, m == RoundMode::sr ? 32 : 0, Overflow::none};
          const Encoded a = oracle::encode(p.format, r, parsed, w);
          const Encoded b = oracle::encode(p.format, r, exact, w);
          INFO(t << " -> " << p.name << " mode " << static_cast<int>(m) << " w " << w);
          CHECK(a.code == b.code);
          CHECK(a.flags == b.flags);
        }
      }
    }
  }
  // The trap rto guards: 464 + 10^-90 is above e4m3fn's tie, though nearest at 256 bits is 464.
  oracle::parse_exact(texts[4], parsed);
  CHECK(oracle::encode(formats::e4m3fn, {}, parsed).code == 0x7F);
  oracle::parse_exact("464", parsed);
  CHECK(oracle::encode(formats::e4m3fn, {}, parsed).code == 0x7E);
}

// Hex-float text longer than 256 bits is held rounded to odd too: 1 + 2^-300 is above 1.
TEST_CASE("hex-float text beyond 256 bits keeps its sticky bit", "[oracle][text]") {
  const std::string text = "0x1." + std::string(74, '0') + "1p0";  // 1 + 2^-300
  MpfrValue v;
  CHECK_FALSE(oracle::parse_exact(text, v));
  CHECK(mpfr_cmp_ui(v, 1) > 0);
  CHECK(oracle::encode(formats::fp64, {RoundMode::rup, 0, Overflow::none}, v).code ==
        0x3FF0000000000001ull);
  CHECK(oracle::encode(formats::fp64, {}, v).code == 0x3FF0000000000000ull);
  CHECK(oracle::encode(formats::fp64, {}, v).flags == flag::inexact);
}

TEST_CASE("exact parse reports exactness", "[oracle][text]") {
  MpfrValue v;
  CHECK(oracle::parse_exact("0.5", v));
  CHECK(oracle::parse_exact("0x1.23456789abcdefp-3", v));
  CHECK_FALSE(oracle::parse_exact("0.1", v));
  CHECK(mpfr_get_prec(v) == oracle::kTextPrecision);
}

TEST_CASE("malformed or out-of-range text is an InputError naming the text", "[oracle][text]") {
  MpfrValue v;
  for (const char* bad : {"",       "+",        "-",  "abc", "1e",   "1e+",   "0x",  "0x.p1",
                          "1.2.3",  " 1",       "1 ", "1,5", "--1",  "0x1q3", "1p3", "0b101",
                          "nan(1)", "infinite", ".",  "e5",  "0x1p", "1_000", "١"}) {
    INFO("text '" << bad << "'");
    try {
      oracle::parse_exact(bad, v);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find(std::string("'") + bad + "'") != std::string::npos);
    }
  }
  for (const char* huge :
       {"1e999999999999", "-1e1000000000000000", "1e-999999999999", "0x1p-99999999999"}) {
    INFO(huge);
    CHECK_THROWS_AS(oracle::parse_exact(huge, v), InputError);
  }
}
