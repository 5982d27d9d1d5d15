// Section 3 (format error profiles): the measured numbers against their closed forms.
#include <catch2/catch.hpp>
#include <cmath>

#include "reports/format_profile.hpp"
#include "sim/format/float_names.hpp"

using namespace exmy;
using namespace exmy::reports;

TEST_CASE("format limits: unit roundoff 2^-(M+1) and the preset maxima", "[formats]") {
  for (const auto& p : float_presets()) {
    const FormatLimits l = format_limits(p.name, p.format);
    INFO(p.name);
    REQUIRE(l.unit_roundoff == std::ldexp(1.0, -(p.format.man_bits + 1)));
    REQUIRE(l.sharp_bound == l.unit_roundoff / (1 + l.unit_roundoff));
    REQUIRE(std::isfinite(l.decades_total));
    REQUIRE(l.decades_total >= l.decades_normal);
  }
  // Maxima derived in SEMANTICS 1: 1.75 * 2^8, 1.75 * 2^15, 1.875 * 2^7, 7.5, 6.
  REQUIRE(format_limits("e4m3fn", formats::e4m3fn).max == 448.0);
  REQUIRE(format_limits("e5m2", formats::e5m2).max == 57344.0);
  REQUIRE(format_limits("e4m3fnuz", formats::e4m3fnuz).max == 240.0);
  REQUIRE(format_limits("e2m3fn", formats::e2m3fn).max == 7.5);
  REQUIRE(format_limits("e2m1fn", formats::e2m1fn).max == 6.0);
  // e4m3fn: min positive 2^-9, so log10(448 * 2^9) decades.
  REQUIRE(format_limits("e4m3fn", formats::e4m3fn).decades_total ==
          Approx(std::log10(448.0 * 512.0)).epsilon(1e-12));
}

TEST_CASE("rne worst relative error per binade equals (q/2)/(2^e+q/2) exactly", "[formats]") {
  for (const auto& p : narrow_float_presets()) {
    const auto prof = binade_profiles(p.format, 16);
    REQUIRE(!prof.empty());
    const double u = std::ldexp(1.0, -(p.format.man_bits + 1));
    for (const auto& b : prof) {
      INFO(p.name << " binade 2^" << b.e);
      REQUIRE(b.max_rel <= b.bound);
      if (b.has_worst_point) REQUIRE(b.max_rel == b.bound);
      if (!b.subnormal) REQUIRE(b.bound == u / (1 + u));
    }
    // The lowest binade of a format with subnormals holds only the smallest subnormal and its
    // double: the worst point 1.5 * 2^e rounds by half of it, relative error 1/3.
    if (p.format.subnormals && p.format.man_bits > 0) {
      REQUIRE(prof.front().subnormal);
      REQUIRE(prof.front().max_rel == (0.5 / 1.5));
    }
  }
}

TEST_CASE("sr:R bias and variance equal floor(f 2^R)/2^R - f and p(1-p) at every point",
          "[formats]") {
  const auto fr = sr_fractions(16);
  for (const char* name : {"bf16", "e4m3fn", "e5m2", "e2m1fn"}) {
    const FloatFormat f = *parse_float_format(name);
    for (int R = 1; R <= 12; ++R) {
      const auto pts = sr_profile(f, R, fr);
      for (const auto& p : pts) {
        INFO(name << " R=" << R << " f=" << p.f);
        REQUIRE(p.bias_ulp == p.bias_closed);
        REQUIRE(p.var_ulp2 == p.var_closed);
        // |bias| < 2^-R ulp and never away from zero (floor): the SEMANTICS 3.1 bounds.
        REQUIRE(p.bias_ulp <= 0.0);
        REQUIRE(-p.bias_ulp < std::ldexp(1.0, -R));
        REQUIRE(std::fabs(p.rne_err_ulp) <= 0.5);
      }
    }
  }
}

TEST_CASE("sr_fractions are 40-bit, inside (0, 1) and distinct", "[formats]") {
  const auto fr = sr_fractions(64);
  for (std::size_t i = 0; i < fr.size(); ++i) {
    REQUIRE(fr[i] > 0.0);
    REQUIRE(fr[i] < 1.0);
    REQUIRE(std::ldexp(fr[i], 40) == std::floor(std::ldexp(fr[i], 40)));
    for (std::size_t j = 0; j < i; ++j) REQUIRE(fr[i] != fr[j]);
  }
}
