#include "reports/variance_stats.hpp"

#include <algorithm>
#include <cmath>

#include "sim/native/philox.hpp"

namespace exmy::reports {

namespace {
// Section 1's bootstrap owns Philox streams 0x01F00000.. (data streams are 0x01000000 | ...).
constexpr std::uint32_t kBootstrapStream = 0x01F00000u;

// P(|X| > x).
double tail(double x, int nu) {
  if (nu == 0) return std::erfc(x / std::sqrt(2.0));
  // Student-t, nu = 4: F(t) = 1/2 + (3/8) a (1 - b/12) with a = t s, b = t^2 s^2,
  // s = 1 / sqrt(1 + t^2/4). With y = t s / 2: 1 - F = 1/2 - (3/4) y + (1/4) y^3
  // = (1/4) (1 - y)^2 (2 + y) = (1/4) c^2 (3 - c), c = 1 - y, and c = q / (1 + y) with
  // q = 1 / (1 + t^2/4) (since 1 - y^2 = q): no cancellation in the tail. P(|T| > t) = 2 (1 - F).
  const double q = 1.0 / (1.0 + x * x / 4.0);  // s^2
  const double ts = x * std::sqrt(q);          // in [0, 2)
  const double c = q / (1.0 + ts / 2.0);
  return 2.0 * 0.25 * c * c * (3.0 - c);
}
}  // namespace

std::vector<int> bootstrap_draw(std::uint64_t seed, int dist, int kidx, int replicate, int trials) {
  std::vector<int> idx(static_cast<std::size_t>(trials));
  const std::uint32_t stream = kBootstrapStream | (static_cast<std::uint32_t>(dist) << 16) |
                               (static_cast<std::uint32_t>(kidx) << 8);
  for (int j = 0; j < trials; ++j) {
    const std::uint64_t i =
        (static_cast<std::uint64_t>(replicate) << 20) + static_cast<std::uint64_t>(j);
    const std::uint32_t w = native::philox_word(seed, stream, i);
    // Multiply-shift maps a 32-bit word onto [0, trials); the bias is < trials / 2^32.
    idx[static_cast<std::size_t>(j)] = static_cast<int>(
        (static_cast<std::uint64_t>(w) * static_cast<std::uint64_t>(trials)) >> 32);
  }
  return idx;
}

int bootstrap_replicates(bool quick, int tiny) {
  return (quick || tiny) ? 200 : 1000;
}

namespace {
// Two-sided 95% Student-t quantile for n - 1 degrees of freedom: the table for 1..30 degrees of
// freedom, beyond it the Cornish-Fisher expansion in 1/df about z = 1.959964 (error below 1e-3
// at 30 df, smaller beyond). Until issue 35 the table stopped at n = 8 and every larger n took
// z = 1.96: intervals 15% too narrow at n = 9 and 7% at the lm-mantissa section's 18 seeds
// (regression test in tests/report/test_stats_intervals.cpp).
double t975(int n) {
  static const double t[] = {0,     0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447,
                             2.365, 2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145,
                             2.131, 2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074,
                             2.069, 2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (n < 2) return 0;
  if (n <= 31) return t[n];
  const double z = 1.959964, df = n - 1.0;
  const double z3 = z * z * z, z5 = z3 * z * z;
  return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df);
}
}  // namespace

MeanCi mean_ci(const std::vector<double>& x) {
  MeanCi r;
  const double n = static_cast<double>(x.size());
  if (x.empty()) return r;
  for (double v : x) r.mean += v / n;
  double ss = 0;
  for (double v : x) ss += (v - r.mean) * (v - r.mean);
  const double half =
      x.size() > 1 ? t975(static_cast<int>(x.size())) * std::sqrt(ss / (n - 1) / n) : 0;
  r.lo = r.mean - half;
  r.hi = r.mean + half;
  return r;
}

Interval percentile_interval(std::vector<double> r) {
  if (r.empty()) return {};
  std::sort(r.begin(), r.end());
  const auto at = [&](double p) {
    const double pos = p * static_cast<double>(r.size() - 1);
    return r[static_cast<std::size_t>(std::lround(pos))];
  };
  return {at(0.025), at(0.975)};
}

double expected_max_sq(double n, int nu) {
  // Integrate over s = log x (x from e^-12 to e^14: the integrand 2x (1 - F^n) x ds vanishes
  // at both ends for n <= 2^40), composite Simpson with 40000 intervals.
  const int m = 40000;
  const double a = -12.0, b = 14.0, h = (b - a) / m;
  auto f = [&](double s) {
    const double x = std::exp(s);
    const double t = tail(x, nu);
    const double fn = std::exp(n * std::log1p(-std::min(t, 1.0 - 1e-300)));
    return 2.0 * x * x * (1.0 - fn);  // 2x (1 - F^n) dx with dx = x ds
  };
  double sum = f(a) + f(b);
  for (int i = 1; i < m; ++i) sum += f(a + i * h) * (i % 2 ? 4.0 : 2.0);
  return sum * h / 3.0;
}

double gaussian_max_quantile(double n, double p) {
  // erf(x / sqrt 2)^n = p  <=>  erfc(x / sqrt 2) = -expm1(log(p) / n) = t. Solve
  // log erfc(y) = log t by Newton's method in y (log space keeps tiny t accurate).
  const double t = -std::expm1(std::log(p) / n);
  const double lt = std::log(t);
  double y = t < 0.5 ? std::sqrt(std::max(0.0, -lt - 0.5 * std::log(-lt * M_PI))) : 0.5;
  if (!(y > 0)) y = 0.5;
  for (int it = 0; it < 60; ++it) {
    const double e = std::erfc(y);
    const double g = std::log(e) - lt;
    const double dg = -2.0 / std::sqrt(M_PI) * std::exp(-y * y) / e;
    const double step = g / dg;
    y -= step;
    if (y < 0) y = 1e-6;
    if (std::fabs(step) < 1e-15 * std::max(1.0, y)) break;
  }
  return std::sqrt(2.0) * y;
}

}  // namespace exmy::reports
