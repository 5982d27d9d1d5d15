// Section 1's statistics: the closed form E[M^2] of the absmax against its known values and a
// Monte Carlo written here, the Gaussian max quantile against its defining equation, and the
// bootstrap draws (deterministic, in range, different per replicate).
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "reports/variance_stats.hpp"

using namespace exmy::reports;

TEST_CASE("expected_max_sq: one draw is the second moment (1 for N(0,1), 2 for t4)", "[variance]") {
  REQUIRE(expected_max_sq(1, 0) == Approx(1.0).epsilon(1e-6));
  REQUIRE(expected_max_sq(1, 4) == Approx(2.0).epsilon(1e-5));
}

TEST_CASE("expected_max_sq: two gaussian draws, E[max(|X|,|Y|)^2] = 1 + 2/pi", "[variance]") {
  // max(X^2, Y^2) = (X^2 + Y^2)/2 + |X^2 - Y^2|/2 and E|X^2 - Y^2| = E|2XY'| = 4/pi for the
  // rotated pair (X+Y)/sqrt2, (X-Y)/sqrt2: the expectation is 1 + 2/pi.
  REQUIRE(expected_max_sq(2, 0) == Approx(1.0 + 2.0 / M_PI).epsilon(1e-6));
}

TEST_CASE("expected_max_sq agrees with a Monte Carlo for n = 64 and 4096", "[variance]") {
  const unsigned seed = 20261125;
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> nd;
  std::student_t_distribution<double> td(4.0);
  for (double n : {64.0, 4096.0}) {
    for (int nu : {0, 4}) {
      const int reps = 3000;
      double s = 0, s2 = 0;
      for (int r = 0; r < reps; ++r) {
        double m = 0;
        for (int i = 0; i < static_cast<int>(n); ++i) {
          m = std::max(m, std::fabs(nu == 0 ? nd(gen) : td(gen)));
        }
        s += m * m;
        s2 += m * m * m * m;
      }
      const double mean = s / reps, sd = std::sqrt((s2 / reps - mean * mean) / reps);
      INFO("n=" << n << " nu=" << nu << " mc=" << mean << " +- " << sd);
      REQUIRE(std::fabs(expected_max_sq(n, nu) - mean) < 5 * sd);
    }
  }
}

TEST_CASE("expected_max_sq grows like 2 ln n for gaussians and like sqrt(n) for t4", "[variance]") {
  // Gaussian: E[M^2] = 2 ln n - ln ln n + O(1); the ratio to 2 ln n tends to 1 slowly.
  const double g1 = expected_max_sq(1 << 20, 0), g2 = expected_max_sq(1u << 30, 0);
  REQUIRE(g2 - g1 == Approx(2 * std::log(1024.0)).epsilon(0.1));
  // t4: P(|T| > x) ~ 6 x^-4 ... so M ~ n^(1/4) and E[M^2] ~ n^(1/2).
  const double t1 = expected_max_sq(1 << 20, 4), t2 = expected_max_sq(1u << 30, 4);
  REQUIRE(t2 / t1 == Approx(32.0).epsilon(0.01));
}

TEST_CASE("gaussian_max_quantile inverts erf(x/sqrt2)^n", "[variance]") {
  for (double n : {1.0, 100.0, 1e6, 3.4e8}) {
    for (double p : {1e-9, 0.01, 0.5, 0.99, 1 - 1e-9}) {
      const double x = gaussian_max_quantile(n, p);
      const double back = std::exp(n * std::log1p(-std::erfc(x / std::sqrt(2.0))));
      INFO("n=" << n << " p=" << p << " x=" << x);
      REQUIRE(back == Approx(p).epsilon(1e-6));
    }
  }
}

TEST_CASE("bootstrap draws: a function of (seed, dist, k, replicate), uniform over trials",
          "[variance]") {
  const auto a = bootstrap_draw(7, 0, 3, 11, 128);
  REQUIRE(a == bootstrap_draw(7, 0, 3, 11, 128));
  REQUIRE(a != bootstrap_draw(7, 0, 3, 12, 128));
  REQUIRE(a != bootstrap_draw(8, 0, 3, 11, 128));
  std::vector<int> hist(8, 0);
  for (int r = 0; r < 2000; ++r) {
    for (int t : bootstrap_draw(1, 1, 2, r, 8)) {
      REQUIRE(t >= 0);
      REQUIRE(t < 8);
      ++hist[t];
    }
  }
  for (int h : hist) REQUIRE(std::abs(h - 2000) < 200);  // 16000 draws over 8 bins
  const Interval ci = percentile_interval({5, 1, 4, 2, 3});
  REQUIRE(ci.lo == 1);
  REQUIRE(ci.hi == 5);
}
