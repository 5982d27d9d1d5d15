#include <catch2/catch.hpp>

#include "sim/format/float_names.hpp"

using namespace exmy;

TEST_CASE("generic eXmY names reproduce the presets", "[format]") {
  CHECK(*parse_float_format("e5m2") == formats::e5m2);
  CHECK(*parse_float_format("e4m3") == formats::e4m3);
  CHECK(*parse_float_format("e8m7") == formats::bf16);
  CHECK(*parse_float_format("e5m10") == formats::fp16);
  CHECK(*parse_float_format("e4m3b11fnuz") == formats::e4m3b11fnuz);
  CHECK(*parse_float_format("e4m3fnuzb11") == formats::e4m3b11fnuz);
  CHECK(*parse_float_format("e2m1fn") == formats::e2m1fn);
  CHECK(*parse_float_format("e8m0fnu") == formats::e8m0fnu);
  CHECK(*parse_float_format("bfloat16") == formats::bf16);
}

// ml_dtypes' type names (its README's list of types, 0.5): float<width>_<eXmY name>. The issue
// 34 call exmy.cast(x, 'float8_e4m3fn') is the first.
TEST_CASE("ml_dtypes' float8_/float6_/float4_ names are the formats they name", "[format]") {
  CHECK(*parse_float_format("float8_e4m3fn") == formats::e4m3fn);
  CHECK(*parse_float_format("float8_e5m2") == formats::e5m2);
  CHECK(*parse_float_format("float8_e4m3fnuz") == formats::e4m3fnuz);
  CHECK(*parse_float_format("float8_e5m2fnuz") == formats::e5m2fnuz);
  CHECK(*parse_float_format("float8_e4m3b11fnuz") == formats::e4m3b11fnuz);
  CHECK(*parse_float_format("float8_e4m3") == formats::e4m3);
  CHECK(*parse_float_format("float8_e3m4") == formats::e3m4);
  CHECK(*parse_float_format("float8_e8m0fnu") == formats::e8m0fnu);
  CHECK(*parse_float_format("float6_e2m3fn") == formats::e2m3fn);
  CHECK(*parse_float_format("float6_e3m2fn") == formats::e3m2fn);
  CHECK(*parse_float_format("float4_e2m1fn") == formats::e2m1fn);
  // The width must be the format's.
  CHECK_FALSE(parse_float_format("float8_e2m1fn"));
  CHECK_FALSE(parse_float_format("float4_e4m3fn"));
  CHECK_FALSE(parse_float_format("float8_"));
  CHECK_FALSE(parse_float_format("float8_bf16"));
  CHECK_FALSE(parse_float_format("float8_float8_e4m3fn"));
}

TEST_CASE("every preset's name round-trips", "[format]") {
  for (const auto& p : float_presets()) {
    INFO(p.name);
    CHECK(float_format_name(p.format) == p.name);
    CHECK(*parse_float_format(p.name) == p.format);
  }
  CHECK(float_format_name(*parse_float_format("e7m6")) == "e7m6");
  CHECK(float_format_name(*parse_float_format("e3m3fn")) == "e3m3fn");
  CHECK(float_format_name(*parse_float_format("e5m2b10")) == "e5m2b10");
}

TEST_CASE("malformed names are rejected", "[format]") {
  for (const char* bad : {"", "e", "e4", "e4m", "m3", "e0m3", "e12m3", "e4m53", "e4m3x", "e4m3fnq",
                          "e1m3", "e4m3b", "fp8", "E4M3"}) {
    INFO(bad);
    CHECK_FALSE(parse_float_format(bad).has_value());
  }
}
