// The lm-mantissa section's inner/outer clamp ablation ("To FP8 and back again", section 4.2,
// figure 5), at the paper's E7M7 and at another width: the variants' masking on values written
// from docs/SEMANTICS.md 2.1 (E7M7: max = (2 - 2^-7) 2^63, min_normal = 2^(2 - 2^6) = 2^-62), the
// limit-region tally, and the verdict.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "reports/lm/mantissa_formats.hpp"

using namespace exmy::reports::lm;
using exmy::MaskInner;
using exmy::MaskOuter;
using exmy::reports::MeanCi;

namespace {
const float kMax = (2.0f - 0x1p-7f) * 0x1p63f;  // SEMANTICS 2.1 at E = 7, M = 7
const float kMinNormal = 0x1p-62f;
}  // namespace

TEST_CASE(
    "E7M7 ablation: the variants are the paper's clamps (outer = above max, inner = below "
    "min normal)",
    "[lm][ablation]") {
  const auto a = ablation_formats(7);
  REQUIRE(a.size() == 5);
  for (const auto& f : a) {
    REQUIRE(f.ablation);
    REQUIRE(f.mode == CastMode::mask);
    REQUIRE(f.exp_bits == 7);
    REQUIRE(f.man_bits == 7);
  }
  REQUIRE(a[0].variant() == "both clamped");
  REQUIRE((a[0].outer == MaskOuter::clamp && a[0].inner == MaskInner::min));
  REQUIRE(a[1].variant() == "inner only");
  REQUIRE((a[1].outer == MaskOuter::keep && a[1].inner == MaskInner::min));
  REQUIRE(a[2].variant() == "outer only");
  REQUIRE((a[2].outer == MaskOuter::clamp && a[2].inner == MaskInner::keep));
  REQUIRE(a[0].name() == "e7m7_outer-clamp_inner-min");
  // Another width keeps the variants and their order, and names the width.
  const auto a3 = ablation_formats(3);
  REQUIRE(a3.size() == 5);
  for (std::size_t k = 0; k < a3.size(); ++k) {
    REQUIRE(a3[k].exp_bits == 3);
    REQUIRE(a3[k].man_bits == 7);
    REQUIRE(a3[k].variant() == a[k].variant());
  }
  REQUIRE(a3[2].name() == "e3m7_outer-clamp_inner-keep");
  // E3M7's limits, from the definition: max (2 - 2^-7) 2^3 = 15.9375, min normal 2^-2.
  const OperandCast c3 = a3[0].cast();
  REQUIRE(cast_operand(16.0f, c3) == 15.9375f);
  REQUIRE(cast_operand(0.2f, c3) == 0.25f);
  REQUIRE(cast_operand(15.9375f, c3) == 15.9375f);
  // Sweep and ablation names stay distinct (the CSVs' key).
  for (const auto& s : sweep_formats()) {
    for (const auto& f : a) REQUIRE(s.name() != f.name());
  }
}

TEST_CASE("E7M7 ablation: masking above max, below min normal, for each outer and inner rule",
          "[lm][ablation]") {
  const float inf = std::numeric_limits<float>::infinity();
  // (outer, inner) -> expected results of, in order: 2^64 (above max), -2^64, inf, 2^-63 (below
  // min normal), -2^-63, 1 + 2^-8 (inside: truncated to 7 bits, 1), max itself, min normal itself.
  struct Row {
    MaskOuter o;
    MaskInner i;
    float big, nbig, finf, small, nsmall;
  } rows[] = {
      {MaskOuter::clamp, MaskInner::min, kMax, -kMax, kMax, kMinNormal, -kMinNormal},
      {MaskOuter::keep, MaskInner::min, 0x1p64f, -0x1p64f, inf, kMinNormal, -kMinNormal},
      {MaskOuter::clamp, MaskInner::keep, kMax, -kMax, kMax, 0x1p-63f, -0x1p-63f},
      {MaskOuter::clamp, MaskInner::zero, kMax, -kMax, kMax, 0.0f, -0.0f},
      {MaskOuter::keep, MaskInner::zero, 0x1p64f, -0x1p64f, inf, 0.0f, -0.0f},
  };
  for (const auto& r : rows) {
    MatmulFormat f;
    f.mode = CastMode::mask;
    f.exp_bits = 7;
    f.man_bits = 7;
    f.outer = r.o;
    f.inner = r.i;
    f.ablation = true;
    const OperandCast c = f.cast();
    INFO(f.name());
    REQUIRE(cast_operand(0x1p64f, c) == r.big);
    REQUIRE(cast_operand(-0x1p64f, c) == r.nbig);
    REQUIRE(cast_operand(inf, c) == r.finf);
    REQUIRE(cast_operand(0x1p-63f, c) == r.small);
    REQUIRE(cast_operand(-0x1p-63f, c) == r.nsmall);
    REQUIRE(std::signbit(cast_operand(-0x1p-63f, c)));  // the sign is kept, flushed or not
    REQUIRE(cast_operand(1.0f + 0x1p-8f, c) == 1.0f);
    REQUIRE(cast_operand(kMax, c) == kMax);
    REQUIRE(cast_operand(kMinNormal, c) == kMinNormal);
    REQUIRE(std::isnan(cast_operand(std::nanf(""), c)));
  }
}

TEST_CASE("E7M7 ablation: the limit-region tally counts |x| > max and 0 < |x| < min normal",
          "[lm][ablation]") {
  const OperandCast c = ablation_formats(7)[0].cast();
  const std::vector<float> x{0.0f,     -0.0f,    1.0f,      kMax,       0x1p64f,       -0x1p64f,
                             INFINITY, 0x1p-63f, -0x1p-70f, kMinNormal, std::nanf(""), 0x1p-140f};
  MaskLimitCounts k;
  count_mask_limits(x.data(), x.size(), c, k);
  REQUIRE(k.elements == 12);
  REQUIRE(k.above_max == 3);             // 2^64, -2^64, inf (max itself is representable; NaN not)
  REQUIRE(k.below_min_normal == 3);      // 2^-63, -2^-70, the fp32 subnormal 2^-140; not +-0
  count_mask_limits(x.data(), 2, c, k);  // adds
  REQUIRE(k.elements == 14);
}

TEST_CASE("Clamp ablation verdict: every branch, the width named", "[lm][ablation]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const MeanCi pos{0.1, 0.05, 0.15}, neg{-0.1, -0.15, -0.05}, spans{0.0, -0.1, 0.1},
      none{nan, nan, nan};
  REQUIRE(ablation_verdict(7, 3, 0, 6, pos, 0).rfind("inconclusive (E7M7: no matmul input", 0) ==
          0);
  // Every reason names the width it ran at.
  REQUIRE(ablation_verdict(2, 3, 0, 6, pos, 0).rfind("inconclusive (E2M7: no matmul input", 0) ==
          0);
  // Divergences decide only when Fisher's exact test separates them (6 a side: 5 vs 0 does,
  // p = 12/792; 4 vs 0 does not, p = 30/495).
  REQUIRE(ablation_verdict(7, 5, 0, 6, spans, 5) ==
          "consistent (E7M7: more divergences with the outer clamp only: divergences 5 vs 0 of 6 "
          "(Fisher p 0.015))");
  REQUIRE(ablation_verdict(7, 1, 6, 6, pos, 5).rfind("inconsistent (E7M7: more divergences", 0) ==
          0);
  REQUIRE(ablation_verdict(7, 4, 0, 6, spans, 5) ==
          "inconclusive (E7M7: interval contains 0; divergences 4 vs 0 of 6 (Fisher p 0.061))");
  // The case of the full run at E2M7 (2 vs 0 of 6 diverged): no longer "inconsistent".
  REQUIRE(ablation_verdict(2, 0, 2, 6, none, 157) ==
          "inconclusive (E2M7: divergences 0 vs 2 of 6 (Fisher p 0.45); fewer than two seeds "
          "where neither run diverged)");
  REQUIRE(ablation_verdict(2, 0, 2, 6, pos, 157) ==
          "consistent (E2M7: outer only ends higher; divergences 0 vs 2 of 6 (Fisher p 0.45))");
  REQUIRE(ablation_verdict(2, 1, 1, 6, pos, 5) == "consistent (E2M7: outer only ends higher)");
  REQUIRE(ablation_verdict(7, 0, 0, 6, neg, 5) == "inconsistent (E7M7: outer only ends lower)");
  REQUIRE(ablation_verdict(7, 0, 0, 6, spans, 5) == "inconclusive (E7M7: interval contains 0)");
}

TEST_CASE("Fisher's exact test, two-sided, against hand-computed hypergeometric sums",
          "[lm][ablation]") {
  // 6 a side: P(4 of the 4 divergences in one arm) = C(6,4) / C(12,4) = 15/495, and the mirror.
  REQUIRE(fisher_exact_two_sided(4, 6, 0, 6) == Approx(30.0 / 495).epsilon(1e-9));
  REQUIRE(fisher_exact_two_sided(0, 6, 4, 6) == Approx(30.0 / 495).epsilon(1e-9));
  REQUIRE(fisher_exact_two_sided(5, 6, 0, 6) == Approx(12.0 / 792).epsilon(1e-9));
  // 5 vs 1: P(x) = C(6,x) C(6,6-x) / 924 = 36/924 at x = 5 and x = 1, 1/924 at 6 and 0.
  REQUIRE(fisher_exact_two_sided(5, 6, 1, 6) == Approx(74.0 / 924).epsilon(1e-9));
  REQUIRE(fisher_exact_two_sided(2, 6, 0, 6) == Approx(0.4545454545).epsilon(1e-8));
  REQUIRE(fisher_exact_two_sided(0, 6, 0, 6) == 1.0);
  REQUIRE(fisher_exact_two_sided(3, 3, 3, 3) == 1.0);
}
