// Integer formats: names, every code of the 8-bit formats, and rounding of a boundary table in
// every mode against an independent reference (MPFR's own integer rounding functions).
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "sim/format/int_format.hpp"
#include "sim/format/registry.hpp"
#include "sim/oracle/mpfr_value.hpp"

using namespace exmy;
using oracle::MpfrValue;

namespace {

// Reference: round x to an integer with MPFR (rint / round / trunc / ceil / floor; rto built from
// trunc), then saturate; independent of native::int_round_pack's bit manipulation.
Encoded reference(const IntFormat& f, RoundMode mode, mpfr_srcptr x) {
  if (mpfr_nan_p(x)) return {0, flag::invalid};
  if (!f.is_signed && mpfr_sgn(x) < 0) return {0, flag::invalid};
  if (mpfr_inf_p(x)) {
    return {f.code_of(mpfr_sgn(x) < 0 ? f.min_value() : f.max_value()),
            flag::overflow | flag::inexact};
  }
  MpfrValue r(256);
  switch (mode) {
    case RoundMode::rne:
      mpfr_rint(r, x, MPFR_RNDN);
      break;
    case RoundMode::rna:
      mpfr_round(r, x);
      break;
    case RoundMode::rtz:
      mpfr_trunc(r, x);
      break;
    case RoundMode::rup:
      mpfr_ceil(r, x);
      break;
    case RoundMode::rdn:
      mpfr_floor(r, x);
      break;
    case RoundMode::rto:
      mpfr_trunc(r, x);
      if (!mpfr_integer_p(x)) {
        // Set the last bit: an even truncation moves one step away from zero.
        MpfrValue two(256);
        mpfr_fmod_ui(two, r, 2, MPFR_RNDN);
        if (mpfr_zero_p(two)) mpfr_add_si(r, r, mpfr_sgn(x) < 0 ? -1 : 1, MPFR_RNDN);
      }
      break;
    default:
      break;
  }
  const std::uint32_t inexact = mpfr_integer_p(x) ? 0 : flag::inexact;
  if (mpfr_cmp_si(r, f.max_value()) > 0)
    return {f.code_of(f.max_value()), flag::overflow | flag::inexact};
  if (mpfr_cmp_si(r, f.min_value()) < 0)
    return {f.code_of(f.min_value()), flag::overflow | flag::inexact};
  return {f.code_of(mpfr_get_si(r, MPFR_RNDN)), inexact};
}

std::vector<IntFormat> formats_under_test() {
  return {int_formats::int8,         int_formats::int8full,      int_formats::uint8,
          IntFormat{4, true, true},  IntFormat{4, true, false},  IntFormat{2, false, false},
          IntFormat{16, true, true}, IntFormat{32, true, false}, IntFormat{32, false, false}};
}

}  // namespace

TEST_CASE("integer format names", "[format][int]") {
  CHECK(*parse_int_format("int8") == int_formats::int8);
  CHECK(*parse_int_format("int8full") == int_formats::int8full);
  CHECK(*parse_int_format("uint8") == int_formats::uint8);
  CHECK(*parse_int_format("int4") == IntFormat{4, true, true});
  CHECK(*parse_int_format("uint32") == IntFormat{32, false, false});
  for (const char* bad : {"int1", "int33", "uint8full", "int", "int08", "intx", "int8sym", "i8"}) {
    INFO(bad);
    CHECK_FALSE(parse_int_format(bad).has_value());
  }
  for (const auto& f : formats_under_test()) CHECK(*parse_int_format(int_format_name(f)) == f);
  CHECK(int_formats::int8.min_value() == -127);
  CHECK(int_formats::int8full.min_value() == -128);
  CHECK(int_formats::uint8.max_value() == 255);
}

TEST_CASE("every code of int8, int8full and uint8 decodes and re-encodes to itself",
          "[format][int]") {
  for (const IntFormat f : {int_formats::int8, int_formats::int8full, int_formats::uint8}) {
    const Format reg = parse_format(int_format_name(f));
    MpfrValue v(64);
    int reachable = 0;
    for (std::uint64_t code = 0; code < 256; ++code) {
      reg.exact_value(code, v);
      REQUIRE(mpfr_cmp_si(v, f.value_of(code)) == 0);
      CHECK(f.code_of(f.value_of(code)) == code);
      if (!f.reachable(code)) {
        // int8's code 0x80 (-128) is outside the symmetric range: it saturates to -127.
        CHECK(code == 0x80);
        CHECK(reg.encode(v, Rounding{}).code == 0x81);
        continue;
      }
      ++reachable;
      for (const RoundMode m : {RoundMode::rne, RoundMode::rna, RoundMode::rtz, RoundMode::rup,
                                RoundMode::rdn, RoundMode::rto}) {
        const Encoded e = reg.encode(v, Rounding{m, 0, Overflow::none});
        CHECK(e.code == code);
        CHECK(e.flags == 0);
      }
      CHECK(reg.classify(code) == (f.value_of(code) == 0 ? ValueClass::zero : ValueClass::normal));
    }
    CHECK(reachable == (f.symmetric ? 255 : 256));
  }
}

TEST_CASE("integer rounding of a boundary table matches MPFR in every mode", "[format][int]") {
  // Offsets around each integer k: exact, quarter, half (ties), three quarters, and a hair either
  // side of the tie and of the integer (2^-40, below any 64-bit significand's reach at |k| < 2^23).
  const double offsets[] = {0.0,           0.25,          0.5,     0.75,
                            0.5 - 0x1p-40, 0.5 + 0x1p-40, 0x1p-40, 1.0 - 0x1p-40};
  int checked = 0;
  MpfrValue x(256);
  for (const auto& f : formats_under_test()) {
    const Format reg = parse_format(int_format_name(f));
    std::vector<double> ks;
    for (int k = -2; k <= 2; ++k) ks.push_back(k);
    for (const double lim :
         {static_cast<double>(f.max_value()), static_cast<double>(f.min_value())}) {
      for (int d = -2; d <= 2; ++d) ks.push_back(lim + d);
    }
    for (int k = -130; k <= 260; k += 7) ks.push_back(k);
    for (const double k : ks) {
      for (const double off : offsets) {
        for (const int side : {1, -1}) {
          mpfr_set_d(x, k, MPFR_RNDN);
          MpfrValue o(256);
          mpfr_set_d(o, off, MPFR_RNDN);
          if (side > 0) {
            mpfr_add(x, x, o, MPFR_RNDN);
          } else {
            mpfr_sub(x, x, o, MPFR_RNDN);
          }
          for (const RoundMode m : {RoundMode::rne, RoundMode::rna, RoundMode::rtz, RoundMode::rup,
                                    RoundMode::rdn, RoundMode::rto}) {
            const Encoded want = reference(f, m, x);
            const Encoded got = reg.encode(x, Rounding{m, 0, Overflow::none});
            INFO(int_format_name(f)
                 << " x=" << mpfr_get_d(x, MPFR_RNDN) << " mode " << static_cast<int>(m));
            REQUIRE(got.code == want.code);
            REQUIRE(got.flags == want.flags);
            ++checked;
          }
        }
      }
    }
  }
  CHECK(checked > 10000);
}

TEST_CASE("integer specials and huge values saturate under every overflow policy",
          "[format][int]") {
  MpfrValue x(256);
  for (const Overflow ov : {Overflow::none, Overflow::sat, Overflow::satfinite}) {
    const Format i8 = parse_format("int8");
    mpfr_set_inf(x, 1);
    CHECK(i8.encode(x, Rounding{RoundMode::rne, 0, ov}).code == 0x7F);
    mpfr_set_inf(x, -1);
    CHECK(i8.encode(x, Rounding{RoundMode::rne, 0, ov}).code == 0x81);
    mpfr_set_str(x, "1e300", 10, MPFR_RNDN);
    const Encoded e = i8.encode(x, Rounding{RoundMode::rtz, 0, ov});
    CHECK(e.code == 0x7F);
    CHECK(e.flags == (flag::overflow | flag::inexact));
    mpfr_set_nan(x);
    CHECK(i8.encode(x, Rounding{RoundMode::rne, 0, ov}).flags == flag::invalid);
    CHECK(i8.encode(x, Rounding{RoundMode::rne, 0, ov}).code == 0);
    // -0 has no integer code of its own.
    mpfr_set_zero(x, -1);
    CHECK(i8.encode(x, Rounding{}).code == 0);
    // Negative into unsigned: invalid, 0 (section 4.1), even when it would round to zero.
    mpfr_set_d(x, -0.25, MPFR_RNDN);
    const Encoded u = parse_format("uint8").encode(x, Rounding{RoundMode::rne, 0, ov});
    CHECK(u.code == 0);
    CHECK(u.flags == flag::invalid);
  }
}

TEST_CASE("integer stochastic rounding: P(up) = floor(f * 2^R) / 2^R exactly", "[format][int]") {
  const Format i8 = parse_format("int8");
  MpfrValue x(256);
  for (const double v : {2.3, -2.3, 126.9, -126.9, 0.625, 5.0}) {
    mpfr_set_d(x, v, MPFR_RNDN);
    for (const int R : {1, 3, 8}) {
      int ups = 0;
      const double frac = std::abs(v) - std::floor(std::abs(v));
      for (std::uint32_t w = 0; w < (1u << R); ++w) {
        const Encoded e = i8.encode(x, Rounding{RoundMode::sr, R, Overflow::none}, w);
        const std::int64_t got = int_formats::int8.value_of(e.code);
        const std::int64_t down = static_cast<std::int64_t>(std::trunc(v));
        if (got != down) ++ups;
      }
      INFO(v << " R=" << R);
      CHECK(ups == static_cast<int>(std::floor(frac * (1 << R))));
    }
  }
}

TEST_CASE("native int_convert from fp32 agrees with the registry on every bf16-exact input",
          "[format][int]") {
  // Every fp32 whose low 16 bits are zero (the bf16 grid): 65536 inputs per mode and format.
  MpfrValue x(64);
  for (const IntFormat f : {int_formats::int8, int_formats::uint8, IntFormat{4, true, false}}) {
    const Format reg = parse_format(int_format_name(f));
    for (const RoundMode m : {RoundMode::rne, RoundMode::rna, RoundMode::rtz, RoundMode::rup,
                              RoundMode::rdn, RoundMode::rto}) {
      const Rounding r{m, 0, Overflow::none};
      for (std::uint32_t hi = 0; hi < 65536; ++hi) {
        const std::uint32_t bits = hi << 16;
        mpfr_set_flt(x, native::float_of(bits), MPFR_RNDN);
        if (mpfr_nan_p(x) && (bits & 0x80000000u)) mpfr_setsign(x, x, 1, MPFR_RNDN);
        const Encoded a = native::int_convert(formats::fp32, f, r, bits);
        const Encoded b = reg.encode(x, r);
        if (a.code != b.code || a.flags != b.flags) {
          FAIL(int_format_name(f) << " bits 0x" << std::hex << bits << " mode " << std::dec
                                  << static_cast<int>(m));
        }
      }
    }
  }
  SUCCEED();
}
