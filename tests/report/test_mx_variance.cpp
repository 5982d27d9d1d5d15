// The block-scaled variance laws (docs/SEMANTICS.md 14.8) against a Monte Carlo written here
// from the formats' definitions (OCP MX v1.0: scale 2^(floor(log2 amax) - emax_elem), elements
// rounded to nearest and saturated; NVFP4: an E4M3 block scale amax / 6, over a per-tensor
// amax / 2688 with two levels), and the section's outputs: the CSV and claims rows, determinism
// across thread counts, and planted wrong laws failing the check.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reports/claims.hpp"
#include "reports/mx_variance.hpp"
#include "reports/mx_variance_law.hpp"
#include "reports/report_context.hpp"
#include "reports/sections.hpp"
#include "sim/quant/quantize.hpp"

using namespace exmy::reports;

namespace {

// The nonnegative values of a float format with E exponent bits, M mantissa bits and bias b
// (subnormals included), up to fmax: enumerated from the definition.
std::vector<double> format_values(int E, int M, int bias, double fmax) {
  std::vector<double> v;
  for (int e = 0; e < (1 << E); ++e) {
    for (int m = 0; m < (1 << M); ++m) {
      const double x = e == 0 ? std::ldexp(m / double(1 << M), 1 - bias)
                              : std::ldexp(1.0 + m / double(1 << M), e - bias);
      if (x <= fmax) v.push_back(x);
    }
  }
  std::sort(v.begin(), v.end());
  return v;
}

// Nearest value of a sorted grid (ties have probability 0 here), saturating at its largest.
double nearest(const std::vector<double>& g, double y) {
  const double a = std::fabs(y);
  if (a >= g.back()) return std::copysign(g.back(), y);
  const auto it = std::lower_bound(g.begin(), g.end(), a);
  const double hi = *it, lo = it == g.begin() ? hi : *(it - 1);
  return std::copysign(a - lo < hi - a ? lo : hi, y);
}

struct Mc {
  double s2 = 0, se = 0, c = 0;
};

// Blocks of `block` i.i.d. inputs (N(0,1) or Student-t 4 from std::mt19937_64), `blocks_per_tensor`
// blocks a tensor (two-level: the tensor's absmax sets the level).
Mc monte_carlo(const std::string& kind, int E, int M, int bias, double fmax, int emax, int block,
               int nu, int tensors, int blocks_per_tensor, unsigned seed, double scale = 1.0) {
  const std::vector<double> g = format_values(E, M, bias, fmax);
  const std::vector<double> e4 = format_values(4, 3, 7, 448.0);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01(0.0, 1.0);
  std::chi_squared_distribution<double> chi(nu > 0 ? nu : 1);
  auto draw = [&] {
    const double z = n01(rng);
    return scale * (nu == 0 ? z : z / std::sqrt(chi(rng) / nu));
  };
  double s = 0, ss = 0, sc = 0, n = 0;
  std::vector<double> x(static_cast<std::size_t>(block) * blocks_per_tensor);
  for (int t = 0; t < tensors; ++t) {
    double amax_t = 0;
    for (double& v : x) {
      v = draw();
      amax_t = std::max(amax_t, std::fabs(v));
    }
    const double pts = amax_t / (448.0 * 6.0);
    for (int b = 0; b < blocks_per_tensor; ++b) {
      double a = 0;
      for (int i = 0; i < block; ++i) a = std::max(a, std::fabs(x[b * block + i]));
      double S = 0;
      if (kind == "mx") {
        S = std::ldexp(1.0, std::ilogb(a) - emax);
      } else if (kind == "nvfp4-1l") {
        S = nearest(e4, std::clamp(a / 6.0, 0.015625, 448.0));
      } else {
        S = pts * nearest(e4, std::clamp(a / 6.0 / pts, 0.015625, 448.0));
      }
      double bs = 0;
      for (int i = 0; i < block; ++i) {
        const double v = x[b * block + i];
        const double e = S * nearest(g, v / S) - v;
        bs += e * e;
        sc += e * v;
      }
      s += bs;
      ss += bs * bs;  // blocks are independent (within a tensor, nearly: through the level)
      n += block;
    }
  }
  Mc r;
  const double s2 = scale * scale;  // moments of X = (inputs) / scale
  r.s2 = s / n / s2;
  const double nb = n / block;
  const double var_block = ss / nb - (s / nb) * (s / nb);
  r.se = std::sqrt(var_block / nb) / block / s2;
  r.c = sc / n / s2;
  return r;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_dir(const std::string& tag) {
  const auto d = std::filesystem::temp_directory_path() /
                 ("exmy_test_mxvar_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

ReportOptions tiny(const std::string& dir, int threads) {
  ReportOptions o;
  o.out_dir = dir;
  o.threads = threads;
  o.tiny = 1;
  o.figures = false;
  return o;
}

}  // namespace

TEST_CASE("element grid rounding follows the OCP element formats", "[mx_variance]") {
  const ElemGrid f4 = elem_grid("e2m1fn");
  const std::vector<double> v = format_values(2, 1, 1, 6.0);
  REQUIRE(v == std::vector<double>{0, 0.5, 1, 1.5, 2, 3, 4, 6});
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-9.0, 9.0);
  for (int i = 0; i < 20000; ++i) {
    const double y = u(rng);
    CHECK(grid_round(f4, y) == nearest(v, y));
  }
  const ElemGrid f8 = elem_grid("e4m3fn");
  const std::vector<double> w = format_values(4, 3, 7, 448.0);
  REQUIRE(w.back() == 448.0);
  std::uniform_real_distribution<double> l(-12.0, 9.5);
  for (int i = 0; i < 20000; ++i) {
    const double y = std::exp2(l(rng)) * (i % 2 ? 1 : -1);
    CHECK(grid_round(f8, y) == nearest(w, y));
  }
  // Ties go to the even mantissa: 5 is between 4 and 6 (M = 1: 4 is even), 2.5 -> 2.
  CHECK(grid_round(f4, 5.0) == 4.0);
  CHECK(grid_round(f4, 2.5) == 2.0);
  CHECK(grid_round(f4, 7.0) == 6.0);  // saturates
}

TEST_CASE("the tail and density of |X| integrate to each other", "[mx_variance]") {
  for (int nu : {0, 4}) {
    // P(|X| > 1) - P(|X| > 3) = int_1^3 density.
    double s = 0;
    const int m = 20000;
    for (int i = 0; i < m; ++i) s += abs_density(1.0 + (i + 0.5) * 2.0 / m, nu) * 2.0 / m;
    CHECK(std::fabs(s - (abs_tail(1.0, nu) - abs_tail(3.0, nu))) < 1e-9);
    CHECK(std::fabs(abs_tail(0.0, nu) - 1.0) < 1e-12);
  }
  // Student-t 4: P(T > 2) = 1/2 - (3/4)(1/sqrt 2) + (1/4)(1/sqrt 2)^3, from F's closed form.
  const double y = 1.0 / std::sqrt(2.0);
  CHECK(std::fabs(abs_tail(2.0, 4) - 2 * (0.5 - 0.75 * y + 0.25 * y * y * y)) < 1e-14);
}

TEST_CASE("block error law vs a Monte Carlo from the definitions", "[mx_variance]") {
  struct Case {
    const char* kind;
    const char* elem;
    int E, M, bias;
    double fmax;
    int emax;
    int block;
    int nu;
    BlockScaleKind scale;
  };
  const Case cases[] = {
      {"mx", "e2m1fn", 2, 1, 1, 6.0, 2, 32, 0, BlockScaleKind::e8m0_floor},
      {"mx", "e2m1fn", 2, 1, 1, 6.0, 2, 16, 4, BlockScaleKind::e8m0_floor},
      {"mx", "e4m3fn", 4, 3, 7, 448.0, 8, 32, 0, BlockScaleKind::e8m0_floor},
      {"mx", "e5m2", 5, 2, 15, 57344.0, 15, 32, 4, BlockScaleKind::e8m0_floor},
      {"nvfp4-1l", "e2m1fn", 2, 1, 1, 6.0, 2, 16, 0, BlockScaleKind::e4m3},
      {"nvfp4", "e2m1fn", 2, 1, 1, 6.0, 2, 16, 0, BlockScaleKind::e4m3_two_level},
      {"nvfp4", "e2m1fn", 2, 1, 1, 6.0, 2, 32, 4, BlockScaleKind::e4m3_two_level},
  };
  unsigned seed = 20261202;
  for (const Case& c : cases) {
    const int per_tensor = 512 / c.block;  // a 512-element tensor (8 x 64)
    const unsigned this_seed = seed++;
    const Mc mc = monte_carlo(c.kind, c.E, c.M, c.bias, c.fmax, c.emax, c.block, c.nu, 6000,
                              per_tensor, this_seed);
    BlockLaw law;
    law.elem = elem_grid(c.elem);
    law.scale = c.scale;
    law.block = c.block;
    law.student_nu = c.nu;
    law.tensor_elements = 512;
    const ElementMoments m = block_error_moments(law);
    INFO(c.kind << " " << c.elem << " block " << c.block << " nu " << c.nu << " (mt19937_64 seed "
                << this_seed << "): law " << m.s2 << " MC " << mc.s2 << " +- " << mc.se
                << "; c law " << m.c << " MC " << mc.c);
    CHECK(std::fabs(m.sigma2 - (c.nu ? 2.0 : 1.0)) < 2e-4 * (c.nu ? 2.0 : 1.0));
    // 4 standard errors plus 0.5% for the two-level law's approximations (A's law averaged over
    // quantiles; the conditioning of other blocks on a <= A dropped).
    CHECK(std::fabs(m.s2 - mc.s2) < 4 * mc.se + 0.005 * mc.s2);
    // A wrong law (scale one binade off) is far outside that band.
    law.emax_shift = 1;
    const ElementMoments bad = block_error_moments(law);
    CHECK(std::fabs(bad.s2 - mc.s2) > 10 * mc.se + 0.05 * mc.s2);
  }
}

TEST_CASE("E8M0 scaling depends on the input scale's phase; the law follows it", "[mx_variance]") {
  // Inputs 2^phase N(0, 1), MXFP4 blocks of 32: the law at each phase against the Monte Carlo,
  // and the phase changes the error by more than the Monte Carlo's resolution.
  BlockLaw law;
  law.elem = elem_grid("e2m1fn");
  law.block = 32;
  double lo = 1e9, hi = 0;
  unsigned seed = 4242;
  for (double phase : {0.25, 0.5, 0.75}) {
    const Mc mc = monte_carlo("mx", 2, 1, 1, 6.0, 2, 32, 0, 4000, 16, seed, std::exp2(phase));
    law.phase = phase;
    const ElementMoments m = block_error_moments(law);
    INFO("phase " << phase << " (mt19937_64 seed " << seed << "): law " << m.s2 << " MC " << mc.s2
                  << " +- " << mc.se);
    CHECK(std::fabs(m.s2 - mc.s2) < 4 * mc.se + 0.005 * mc.s2);
    lo = std::min(lo, m.s2);
    hi = std::max(hi, m.s2);
    ++seed;
  }
  CHECK(hi / lo > 1.05);
}

TEST_CASE("two-level NVFP4 codes do not change under an input scale", "[mx_variance]") {
  // 448 a / A and x / (pts S) do not depend on a common factor of the tensor (SEMANTICS 14.8).
  std::mt19937_64 rng(31337);
  std::normal_distribution<double> n01(0.0, 1.0);
  std::vector<float> x(16 * 1024);
  for (float& v : x) v = static_cast<float>(n01(rng));
  exmy::quant::Options o;
  o.scheme = exmy::quant::parse_scheme("nvfp4");
  o.target = exmy::quant::parse_target("e2m1fn");
  o.two_level = true;
  const std::vector<std::size_t> shape{16, 1024};
  const auto base = exmy::quant::quantize(x, shape, o);
  for (float f : {1.3f, 1.41421356f, 3.0f, 0.1f}) {
    std::vector<float> y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] * f;
    const auto q = exmy::quant::quantize(y, shape, o);
    INFO("factor " << f << " (mt19937_64 seed 31337)");
    CHECK(q.codes == base.codes);
    CHECK(q.scale_codes == base.scale_codes);
  }
}

TEST_CASE("Var(d) closed form vs a direct Monte Carlo of inner products", "[mx_variance]") {
  // MXFP4 blocks of 32, k = 64: d = sum (u^ v^ - u v) over independent u, v (seed 99).
  std::mt19937_64 rng(99);
  std::normal_distribution<double> n01(0.0, 1.0);
  const std::vector<double> g = format_values(2, 1, 1, 6.0);
  const int k = 64, B = 32, n = 40000;
  auto q = [&](std::vector<double>& x) {
    std::vector<double> y(x.size());
    for (int b = 0; b < k / B; ++b) {
      double a = 0;
      for (int i = 0; i < B; ++i) a = std::max(a, std::fabs(x[b * B + i]));
      const double S = std::ldexp(1.0, std::ilogb(a) - 2);
      for (int i = 0; i < B; ++i) y[b * B + i] = S * nearest(g, x[b * B + i] / S);
    }
    return y;
  };
  double s = 0, ss = 0;
  std::vector<double> u(k), v(k);
  for (int t = 0; t < n; ++t) {
    for (auto& x : u) x = n01(rng);
    for (auto& x : v) x = n01(rng);
    const auto uh = q(u), vh = q(v);
    double d = 0;
    for (int i = 0; i < k; ++i) d += uh[i] * vh[i] - u[i] * v[i];
    s += d;
    ss += d * d;
  }
  const double var = (ss - s * s / n) / (n - 1);
  BlockLaw law;
  law.elem = elem_grid("e2m1fn");
  law.block = B;
  const ElementMoments m = block_error_moments(law);
  const double closed = var_d_closed(m, m, k);
  INFO("Var(d) MC " << var << " closed " << closed);
  // Relative standard error of a sample variance ~ sqrt(2 / n) (near-gaussian d): 0.7%.
  CHECK(std::fabs(var / closed - 1) < 0.03);
}

TEST_CASE("mx-variance section: CSV, claims, determinism, planted laws", "[mx_variance]") {
  const std::string d1 = temp_dir("t1"), d2 = temp_dir("t2");
  std::string csv1, csv2;
  SectionSummary sum;
  {
    ReportContext ctx(tiny(d1, 1));
    sum = run_mx_variance_section(ctx);
    csv1 = slurp(d1 + "/mx-variance/mx_variance.csv");
  }
  {
    ReportContext ctx(tiny(d2, 2));
    run_mx_variance_section(ctx);
    csv2 = slurp(d2 + "/mx-variance/mx_variance.csv");
  }
  REQUIRE(!csv1.empty());
  CHECK(csv1 == csv2);
  CHECK(slurp(d1 + "/mx-variance/law_checks.csv") == slurp(d2 + "/mx-variance/law_checks.csv"));
  // One row per dist x scheme x k (2 x 11 x 3 in the tiny configuration) plus the header.
  CHECK(std::count(csv1.begin(), csv1.end(), '\n') == 1 + 2 * 11 * 3);
  CHECK(csv1.find("mx:e2m1fn/32") != std::string::npos);
  CHECK(csv1.find("e4m3+fp32") != std::string::npos);
  // 3 MX schemes x 16 phases of the input scale, plus the header.
  const std::string ph = slurp(d1 + "/mx-variance/scale_phase.csv");
  CHECK(std::count(ph.begin(), ph.end(), '\n') == 1 + 3 * 16);
  int checks = 0;
  for (const Claim& c : sum.claims) {
    CHECK(claim_problem(c).empty());
    if (c.kind == "closed-form check") ++checks;
  }
  CHECK(checks >= 5);
  const std::string claims = claims_csv(sum.claims);
  CHECK(claims.find("closed-form check") != std::string::npos);
  CHECK(claims.find("MXFP4") != std::string::npos);
  std::filesystem::remove_all(d1);
  std::filesystem::remove_all(d2);

  // The check on the data: the law agrees, planted wrong laws disagree.
  ReportContext ctx(tiny(temp_dir("t3"), 2));
  const MxVarConfig cfg = mx_variance_config(false, 1);
  const MxVarResults r = run_mx_variance(ctx, cfg);
  for (const char* s : {"mx:e2m1fn/32", "mx:e4m3fn/32", "nvfp4/16"}) {
    const LawCheck ok = mx_law_check(r, InputDist::gaussian, s);
    INFO(s << " ratio " << ok.ratio << " [" << ok.ci.lo << ", " << ok.ci.hi << "]");
    CHECK(mx_law_verdict(ok).rfind("agrees", 0) == 0);
    const MxVarScheme* sc = nullptr;
    for (const auto& x : cfg.schemes) {
      if (x.name == s) sc = &x;
    }
    REQUIRE(sc != nullptr);
    // Planted wrong laws: the scale one binade too small (emax_elem + 1), and the absmax law
    // of a block a quarter as long (a smaller block has a smaller absmax).
    for (int plant = 0; plant < 2; ++plant) {
      std::vector<double> wrong;
      for (int k : cfg.ks) {
        BlockLaw l = mx_law(*sc, InputDist::gaussian, cfg.rows, k);
        if (plant == 0) {
          l.emax_shift = 1;
        } else {
          l.block = l.block / 4;
        }
        const ElementMoments m = block_error_moments(l);
        wrong.push_back(var_d_closed(m, m, k));
      }
      const LawCheck bad = mx_law_check(r, InputDist::gaussian, s, wrong);
      INFO("planted " << plant << " ratio " << bad.ratio << " [" << bad.ci.lo << ", " << bad.ci.hi
                      << "]");
      CHECK(mx_law_verdict(bad) == "disagrees");
    }
  }
}
