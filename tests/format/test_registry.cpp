// The format registry: names, errors, and decode -> encode identity for every code of every narrow
// float preset, integer and codebook.
#include <catch2/catch.hpp>

#include "sim/common/error.hpp"
#include "sim/format/float_names.hpp"
#include "sim/format/registry.hpp"
#include "sim/oracle/mpfr_value.hpp"

using namespace exmy;

TEST_CASE("registry parses every kind of name", "[format][registry]") {
  CHECK(parse_format("e4m3fn").kind == FormatKind::floating);
  CHECK(parse_format("int8").kind == FormatKind::integer);
  CHECK(parse_format("uint4").in.bits == 4);
  CHECK(parse_format("dynamic").kind == FormatKind::codebook);
  CHECK(parse_format("dynamic-unsigned").cb->values[0] == 0.0f);
  CHECK(parse_format("linear").cb->name == "linear");
  CHECK_THROWS_WITH(parse_format("e9m9zz"), Catch::Contains("unknown format 'e9m9zz'") &&
                                                Catch::Contains("int<N>") &&
                                                Catch::Contains("dynamic"));
  CHECK_THROWS_AS(parse_format("table:/nonexistent/t.txt"), InputError);
}

TEST_CASE("decode then encode is the identity on every non-NaN code", "[format][registry]") {
  std::vector<std::string> names;
  for (const auto& p : narrow_float_presets()) names.push_back(p.name);
  for (const char* n : {"int8", "int8full", "uint8", "int4", "uint2", "dynamic", "dynamic-unsigned",
                        "linear-unsigned"}) {
    names.push_back(n);
  }
  oracle::MpfrValue v(64);
  for (const auto& name : names) {
    const Format f = parse_format(name);
    const std::uint64_t n = std::uint64_t{1} << f.code_bits();
    for (std::uint64_t code = 0; code < n; ++code) {
      const ValueClass c = f.classify(code);
      if (c == ValueClass::nan) continue;
      if (f.kind == FormatKind::integer && !f.in.reachable(code)) continue;
      f.exact_value(code, v);
      INFO(name << " code " << code);
      CHECK(f.encode(v, Rounding{}).code == code);
      CHECK(f.encode(v, Rounding{}).flags == 0);
    }
  }
}

TEST_CASE("codebook directed modes bracket the value", "[format][registry]") {
  const Format f = parse_format("dynamic");
  oracle::MpfrValue x(64), lo(64), hi(64);
  for (const double d : {0.3, -0.3, 1e-7, -0.9999, 0.99999, 5.0, -5.0}) {
    mpfr_set_d(x, d, MPFR_RNDN);
    const auto dn = f.encode(x, Rounding{RoundMode::rdn, 0, Overflow::none}).code;
    const auto up = f.encode(x, Rounding{RoundMode::rup, 0, Overflow::none}).code;
    f.exact_value(dn, lo);
    f.exact_value(up, hi);
    INFO(d);
    if (d > -0.993 && d < 1.0) {
      CHECK(mpfr_cmp(lo, x) <= 0);
      CHECK(mpfr_cmp(hi, x) >= 0);
      CHECK(up - dn == 1);
    }
    const auto tz = f.encode(x, Rounding{RoundMode::rtz, 0, Overflow::none}).code;
    CHECK(tz == (d >= 0 ? dn : up));
  }
}
