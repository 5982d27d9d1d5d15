// The lm-mantissa section's matmul-input range (reports/lm/operand_range.hpp): the binade
// histogram and its limit tallies against a hand-built tensor whose counts are written from
// docs/SEMANTICS.md 2.1 (max = (2 - 2^-7) 2^bias, min normal = 2^(1 - bias), bias = 2^(E-1) - 1),
// the GEMM's tally of its operands (padding excluded), the width rule on synthetic tallies, and
// the section's regression: at the width it chooses, its outer clamp acts.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reports/lm/gemm.hpp"
#include "reports/lm/mantissa_formats.hpp"
#include "reports/lm/operand_range.hpp"
#include "reports/report_context.hpp"
#include "reports/sections.hpp"

using namespace exmy::reports::lm;

namespace {

// Indices in comments: which limit region each element lies in, by the definition.
std::vector<float> hand_tensor() {
  const float inf = std::numeric_limits<float>::infinity();
  return {
      0.0f,                              // 0  zero
      -0.0f,                             // 1  zero
      1.0f,                              // 2  E2 min normal itself
      3.984375f,                         // 3  E2M7 max itself: (2 - 2^-7) 2
      3.9921875f,                        // 4  above E2M7 max, same binade
      65280.0f,                          // 5  E5M7 max itself: (2 - 2^-7) 2^15
      std::nextafter(65280.0f, inf),     // 6  above E5M7 max by one fp32 ulp
      -65536.0f,                         // 7  2^16
      1e30f,                             // 8
      inf,                               // 9
      -inf,                              // 10
      std::nanf(""),                     // 11 NaN: in neither region
      0x1p-14f,                          // 12 E5 min normal itself
      std::nextafter(0x1p-14f, 0.0f),    // 13 just below it
      -0x1p-100f,                        // 14
      0x1p-140f,                         // 15 fp32 subnormal
      0.5f,                              // 16
      0x1p-126f,                         // 17 E8 min normal (fp32's) itself
      (2.0f - 0x1p-7f) * 0x1p127f,       // 18 E8M7 max itself
      std::numeric_limits<float>::max()  // 19 above E8M7 max
  };
}

}  // namespace

TEST_CASE("operand range: histogram and limit tallies of a hand-built tensor", "[lm][range]") {
  const std::vector<float> x = hand_tensor();
  OperandHistogram h;
  add_to_histogram(x.data(), x.size(), h);
  REQUIRE(h.zeros == 2);
  REQUIRE(h.nans == 1);
  REQUIRE(h.bin[2 * 127] == 1);       // 1.0: binade [1, 2), not its top
  REQUIRE(h.bin[2 * 128] == 1);       // 3.984375: binade [2, 4), mantissa 0x7F0000 (not above)
  REQUIRE(h.bin[2 * 128 + 1] == 1);   // 3.9921875: above (2 - 2^-7) 2
  REQUIRE(h.bin[2 * 142] == 1);       // 65280
  REQUIRE(h.bin[2 * 142 + 1] == 1);   // its next float
  REQUIRE(h.bin[0] + h.bin[1] == 3);  // +0, -0, the subnormal
  long long total = 0;
  for (long long c : h.bin) total += c;
  REQUIRE(total == 20);

  struct Want {
    int e;
    long long above, below;
  } want[] = {
      {2, 9, 6},  // above 3.984375: 4, 5, 6, 7, 8, 9, 10, 18, 19; below 1: 12..17
      {5, 7, 4},  // above 65280: 6, 7, 8, 9, 10, 18, 19; below 2^-14: 13, 14, 15, 17
      {8, 3, 1},  // above (2 - 2^-7) 2^127: 9, 10, 19; below 2^-126: 15
  };
  for (const Want& w : want) {
    INFO("E" << w.e);
    const LimitTally t = limit_tally(h, w.e);
    REQUIRE(t.elements == 20);
    REQUIRE(t.zeros == 2);
    REQUIRE(t.nonfinite == 3);
    REQUIRE(t.above_max == w.above);
    REQUIRE(t.below_min_normal == w.below);
    REQUIRE(t.above_share() == static_cast<double>(w.above) / 20.0);
    REQUIRE(t.below_share() == static_cast<double>(w.below) / 20.0);
    REQUIRE(t.bias == (1 << (w.e - 1)) - 1);
    REQUIRE(t.max == (2.0 - 0x1p-7) * std::ldexp(1.0, t.bias));
    REQUIRE(t.min_normal == std::ldexp(1.0, 1 - t.bias));
  }
  REQUIRE(limit_tally(h, 7).max == 0x1.fep63);
  REQUIRE(limit_tally(h, 7).min_normal == 0x1p-62);
}

TEST_CASE("operand range: the tallies equal the masking's own limit-region count", "[lm][range]") {
  // A second derivation of the same regions (count_mask_limits compares fp32 bit patterns with
  // mask_max_bits / mask_min_normal_bits): every width, on weighted random magnitudes.
  const std::uint64_t seed = 20261204;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<float> x(50000);
  for (float& v : x) {
    const std::uint32_t u = static_cast<std::uint32_t>(rng());
    // Half uniform bit patterns (every binade, specials), half near the limits of small widths.
    float f;
    if (u & 1u) {
      std::memcpy(&f, &u, 4);
    } else {
      f = std::ldexp(1.0f + static_cast<float>((u >> 8) & 0xFFFF) / 65536.0f,
                     static_cast<int>((u >> 1) % 40) - 20);
      if (u & 2u) f = -f;
    }
    v = f;
  }
  OperandHistogram h;
  add_to_histogram(x.data(), x.size(), h);
  for (int e = kRangeMinExp; e <= kRangeMaxExp; ++e) {
    INFO("E" << e);
    OperandCast c;
    c.mode = CastMode::mask;
    c.exp_bits = e;
    c.man_bits = 7;
    MaskLimitCounts k;
    count_mask_limits(x.data(), x.size(), c, k);
    const LimitTally t = limit_tally(h, e);
    REQUIRE(t.elements == k.elements);
    REQUIRE(t.above_max == k.above_max);
    REQUIRE(t.below_min_normal == k.below_min_normal);
  }
}

TEST_CASE("operand range: the GEMM tallies op(A) and op(B) before the casts, padding excluded",
          "[lm][range]") {
  // M = 5, N = 3, K = 2: both packings pad (4-row panels of A, 8- or 16-column panels of B).
  const int M = 5, N = 3, K = 2;
  std::vector<float> A{0.0f, 1.0f, 2.0f, 3.0f, 0x1p-130f, -4.0f, 5.0f, 0.0f, 6.0f, 7.0f};
  std::vector<float> B{1.0f, 0.0f, 0x1p20f, -0.0f, 2.0f, 3.0f};
  std::vector<float> C0(M * N), C1(M * N);
  gemm({GemmSite::mlp_up, Pass::dgrad, nullptr}, M, N, K, A.data(), K, false, B.data(), N, false,
       C0.data(), N);
  GemmPolicy pol;  // identity casts
  RangeHistograms r;
  pol.range = &r;
  gemm({GemmSite::mlp_up, Pass::dgrad, &pol}, M, N, K, A.data(), K, false, B.data(), N, false,
       C1.data(), N);
  REQUIRE(C0 == C1);
  const LimitTally ta = limit_tally(r.at(GemmSite::mlp_up, Pass::dgrad, 0), 8);
  const LimitTally tb = limit_tally(r.at(GemmSite::mlp_up, Pass::dgrad, 1), 8);
  REQUIRE(ta.elements == M * K);
  REQUIRE(ta.zeros == 2);
  REQUIRE(ta.below_min_normal == 1);  // 2^-130
  REQUIRE(tb.elements == K * N);
  REQUIRE(tb.zeros == 2);
  REQUIRE(limit_tally(r.at(GemmSite::mlp_up, Pass::dgrad, 1), 4).above_max == 1);  // 2^20 > 255
  // Nothing else was tallied.
  const LimitTally all = limit_tally(pass_histogram(r, -1), 8);
  REQUIRE(all.elements == M * K + K * N);
  REQUIRE(limit_tally(pass_histogram(r, static_cast<int>(Pass::fwd)), 8).elements == 0);
}

TEST_CASE("operand range: the ablation width is the widest E whose share above max binds",
          "[lm][range]") {
  const auto tallies = [](const std::vector<long long>& above) {
    std::vector<LimitTally> v;
    for (std::size_t i = 0; i < above.size(); ++i) {
      LimitTally t;
      t.exp_bits = 2 + static_cast<int>(i);
      t.elements = 1000000;
      t.above_max = above[i];
      v.push_back(t);
    }
    return v;
  };
  // 1e-4 of 10^6 = 100 elements: E4 has exactly 100 (binds), E5 99 (does not).
  REQUIRE(binding_width(tallies({5000, 300, 100, 99, 0, 0, 0}), 1e-4) == 4);
  REQUIRE(binding_width(tallies({5000, 300, 100, 99, 0, 0, 0}), 0.0) == 5);  // any hit
  REQUIRE(binding_width(tallies({5000, 300, 100, 99, 0, 0, 0}), 1e-2) == 2);
  // Nothing binds: the narrowest (the outer clamp is closest to acting there).
  REQUIRE(binding_width(tallies({0, 0, 0, 0, 0, 0, 0}), 1e-4) == 2);
  REQUIRE(binding_width(tallies({99, 0, 0, 0, 0, 0, 0}), 1e-4) == 2);
  // Order does not matter.
  std::vector<LimitTally> rev = tallies({5000, 300, 100, 99, 0, 0, 0});
  std::reverse(rev.begin(), rev.end());
  REQUIRE(binding_width(rev, 1e-4) == 4);
  // outer_binds: a zero tally never binds, even at share 0.
  LimitTally z;
  z.elements = 10;
  REQUIRE_FALSE(outer_binds(z, 0.0));
  z.above_max = 1;
  REQUIRE(outer_binds(z, 0.1));
  REQUIRE_FALSE(outer_binds(z, 0.11));
}

TEST_CASE("lm-mantissa regression: the clamp ablation's outer clamp acts at the width it runs",
          "[lm][range][ablation]") {
  // Issue 35: at the paper's E7M7 no matmul input of this model reaches the max, so the outer
  // clamp never acted. The section now picks its width from the fp32 runs' range; at that width
  // the outer-clamped runs must have outer hits (the outer-only runs may still have none: the
  // fp32 range stays below every width's max, and the claim says so).
  const auto base =
      std::filesystem::temp_directory_path() / ("exmy_test_lmrange_" + std::to_string(::getpid()));
  std::filesystem::remove_all(base);
  exmy::reports::ReportOptions o;
  o.out_dir = base.string();
  o.seed = 6;
  o.threads = 2;
  o.tiny = 1;
  o.figures = false;
  const auto sum = exmy::reports::run_lm_mantissa_section(exmy::reports::ReportContext(o));
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  // The chosen width: the "all" row of operand_range.csv with ablation_width 1.
  std::istringstream rng(slurp(base.string() + "/lm-mantissa/operand_range.csv"));
  std::string line;
  int eb = -1, rows = 0;
  while (std::getline(rng, line)) {
    if (line.rfind("all,", 0) == 0 && line.substr(line.size() - 2) == ",1") {
      eb = std::stoi(line.substr(4));
      ++rows;
    }
  }
  REQUIRE(rows == 1);
  REQUIRE(eb >= kRangeMinExp);
  REQUIRE(eb <= kRangeMaxExp);
  // runs.csv: the outer-clamped ablation runs' above_max (column 14) summed.
  std::istringstream runs(slurp(base.string() + "/lm-mantissa/runs.csv"));
  const std::string em = "e" + std::to_string(eb) + "m7_outer-clamp_";
  long long hits = 0;
  int outer_runs = 0;
  while (std::getline(runs, line)) {
    if (line.rfind("ablation," + em, 0) != 0) continue;
    std::vector<std::string> col;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) col.push_back(c);
    REQUIRE(col.size() == 15);
    hits += std::stoll(col[13]);
    ++outer_runs;
  }
  REQUIRE(outer_runs == 3 * 2);  // both clamped, outer only, outer + flush; 2 seeds
  REQUIRE(hits > 0);
  // The claim names the width.
  bool named = false;
  for (const auto& c : sum.claims) {
    if (c.where.find("run here at E" + std::to_string(eb) + "M7") != std::string::npos)
      named = true;
  }
  REQUIRE(named);
  std::filesystem::remove_all(base);
}
