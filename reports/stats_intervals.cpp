#include "reports/stats_intervals.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "reports/output_files.hpp"
#include "reports/variance_config.hpp"
#include "sim/native/philox.hpp"

namespace exmy::reports {

std::uint32_t stats_stream(std::uint32_t purpose) {
  return 0x0E000000u | ((purpose & 0xFFFFu) << 8);
}

std::vector<int> resample_indices(std::uint64_t seed, std::uint32_t stream, int replicate, int n) {
  std::vector<int> idx(static_cast<std::size_t>(std::max(n, 0)));
  for (int j = 0; j < n; ++j) {
    const std::uint64_t i =
        (static_cast<std::uint64_t>(replicate) << 20) + static_cast<std::uint64_t>(j);
    const std::uint32_t w = native::philox_word(seed, stream, i);
    idx[static_cast<std::size_t>(j)] =
        static_cast<int>((static_cast<std::uint64_t>(w) * static_cast<std::uint64_t>(n)) >> 32);
  }
  return idx;
}

double t975(int n) {
  // Quantiles of Student's t at 0.975 for 1..30 degrees of freedom (standard tables).
  static const double t[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                             2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  const int df = n - 1;
  if (df < 1) return 0;
  if (df <= 30) return t[df - 1];
  return 1.96 + 2.4 / df;
}

namespace {
void mean_sd(const std::vector<double>& x, double& mean, double& sd) {
  const double n = static_cast<double>(x.size());
  mean = 0;
  for (double v : x) mean += v;
  mean /= n;
  double ss = 0;
  for (double v : x) ss += (v - mean) * (v - mean);
  sd = x.size() > 1 ? std::sqrt(ss / (n - 1)) : 0;
}
}  // namespace

Estimate mean_t(const std::vector<double>& x) {
  Estimate e;
  e.method = "t";
  e.n = static_cast<int>(x.size());
  if (x.empty()) return e;
  double m, sd;
  mean_sd(x, m, sd);
  e.value = e.lo = e.hi = m;
  if (x.size() < 2) return e;
  const double half = t975(e.n) * sd / std::sqrt(static_cast<double>(x.size()));
  e.lo = m - half;
  e.hi = m + half;
  e.has_ci = true;
  return e;
}

Estimate positive_mean(const std::vector<double>& x) {
  Estimate e;
  e.method = "log-t";
  e.n = static_cast<int>(x.size());
  if (x.empty()) return e;
  for (double v : x) {
    if (!(v >= 0)) throw std::logic_error("positive_mean: a value is negative or not a number");
  }
  double m, sd;
  mean_sd(x, m, sd);
  e.value = e.lo = e.hi = m;
  if (x.size() < 2) return e;
  e.has_ci = true;
  if (m == 0) return e;
  const double f = std::exp(t975(e.n) * (sd / m) / std::sqrt(static_cast<double>(x.size())));
  e.lo = m / f;
  e.hi = m * f;
  return e;
}

Estimate median_ci(const std::vector<double>& x) {
  Estimate e;
  e.method = "median";
  e.n = static_cast<int>(x.size());
  if (x.empty()) return e;
  std::vector<double> s = x;
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  e.value = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  if (n < 2) {
    e.lo = e.hi = e.value;
    return e;
  }
  // l = the largest rank with P(B < l) <= 0.025, B ~ Binomial(n, 1/2); cdf summed in fp64.
  int l = 1;
  double cdf = std::ldexp(1.0, -static_cast<int>(n));  // P(B = 0) = P(B < 1)
  double pmf = cdf;
  for (std::size_t r = 1; r < n; ++r) {
    pmf *= static_cast<double>(n - r + 1) / static_cast<double>(r);  // P(B = r)
    if (cdf + pmf > 0.025) break;
    cdf += pmf;
    l = static_cast<int>(r) + 1;
  }
  e.lo = s[static_cast<std::size_t>(l - 1)];
  e.hi = s[n - static_cast<std::size_t>(l)];
  e.has_ci = true;
  return e;
}

namespace {
// x with diverged entries as +infinity; true when there was one.
bool mark_diverged(std::vector<double>& y, const std::vector<bool>& diverged) {
  bool any = false;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if ((i < diverged.size() && diverged[i]) || !std::isfinite(y[i])) {
      y[i] = INFINITY;
      any = true;
    }
  }
  return any;
}
}  // namespace

Estimate central_positive(const std::vector<double>& x, const std::vector<bool>& diverged) {
  std::vector<double> y = x;
  return mark_diverged(y, diverged) ? median_ci(y) : positive_mean(y);
}

Estimate central_signed(const std::vector<double>& x, const std::vector<bool>& diverged) {
  std::vector<double> y = x;
  return mark_diverged(y, diverged) ? median_ci(y) : mean_t(y);
}

Interval widened_interval(const std::vector<double>& replicates, double point, int clusters) {
  Interval ci = percentile_interval(replicates);
  if (clusters > 1) {
    const double f = std::sqrt(static_cast<double>(clusters) / (clusters - 1));
    ci.lo = point - (point - ci.lo) * f;
    ci.hi = point + (ci.hi - point) * f;
  }
  return ci;
}

Estimate bootstrap_ratio(const std::vector<double>& num, const std::vector<double>& den,
                         std::uint64_t seed, std::uint32_t stream, int replicates) {
  Estimate e;
  e.method = "bootstrap";
  const int n = static_cast<int>(std::min(num.size(), den.size()));
  e.n = n;
  double sn = 0, sd = 0;
  for (int i = 0; i < n; ++i) {
    sn += num[static_cast<std::size_t>(i)];
    sd += den[static_cast<std::size_t>(i)];
  }
  e.value = e.lo = e.hi = sd != 0 ? sn / sd : 0;
  if (n < 2 || replicates < 1) return e;
  std::vector<double> r;
  r.reserve(static_cast<std::size_t>(replicates));
  for (int b = 0; b < replicates; ++b) {
    double a = 0, c = 0;
    for (int i : resample_indices(seed, stream, b, n)) {
      a += num[static_cast<std::size_t>(i)];
      c += den[static_cast<std::size_t>(i)];
    }
    if (c != 0) r.push_back(a / c);
  }
  const Interval ci = widened_interval(r, e.value, n);
  e.lo = ci.lo;
  e.hi = ci.hi;
  e.has_ci = true;
  return e;
}

Estimate slope_ci(const std::vector<double>& x, const std::vector<double>& y,
                  const std::vector<std::vector<double>>& rep, int clusters) {
  Estimate e;
  e.method = "bootstrap";
  e.n = clusters;
  e.value = e.lo = e.hi = loglog_slope(x, y);
  if (rep.empty() || rep.size() != x.size()) return e;
  std::size_t reps = rep.front().size();
  for (const auto& r : rep) reps = std::min(reps, r.size());
  if (reps == 0) return e;
  std::vector<double> s;
  s.reserve(reps);
  std::vector<double> yy(x.size());
  for (std::size_t b = 0; b < reps; ++b) {
    for (std::size_t c = 0; c < x.size(); ++c) yy[c] = rep[c][b];
    s.push_back(loglog_slope(x, yy));
  }
  const Interval ci = widened_interval(s, e.value, clusters);
  e.lo = ci.lo;
  e.hi = ci.hi;
  e.has_ci = true;
  return e;
}

namespace {
// The decimal exponent q of the resolution of an interval (10^q, q = floor(log10 half) - 1),
// or a sentinel when the half-width gives none.
constexpr int kNoResolution = 1000;
int resolution_exp(double lo, double hi) {
  const double half = 0.5 * (hi - lo);
  if (!(half > 0) || !std::isfinite(half)) return kNoResolution;
  return static_cast<int>(std::floor(std::log10(half))) - 1;
}
// `scale`: the largest magnitude printed beside v (v itself, or the largest of v, lo, hi), which
// picks fixed or scientific notation for all of them alike.
std::string at_resolution(double v, int q, double scale) {
  if (q == kNoResolution || !std::isfinite(v)) return fmt_g(v, 4);
  const double step = std::pow(10.0, q);
  const double r = std::round(v / step) * step;
  char buf[64];
  const double a = std::fabs(r);
  if (a != 0 && (scale < 1e-3 || scale >= 1e7)) {
    // Scientific: as many mantissa digits as reach 10^q.
    const int e10 = static_cast<int>(std::floor(std::log10(a)));
    std::snprintf(buf, sizeof buf, "%.*e", std::max(0, e10 - q), r);
  } else {
    std::snprintf(buf, sizeof buf, "%.*f", std::max(0, -q), r == 0 ? 0.0 : r);
  }
  return buf;
}
}  // namespace

namespace {
double scale_of(double v, double lo, double hi) {
  double s = 0;
  for (double x : {v, lo, hi}) {
    if (std::isfinite(x)) s = std::max(s, std::fabs(x));
  }
  return s;
}
}  // namespace

std::string fmt_at(double v, double lo, double hi) {
  return at_resolution(v, resolution_exp(lo, hi), scale_of(v, lo, hi));
}

std::string fmt_ci(double v, double lo, double hi) {
  const int q = resolution_exp(lo, hi);
  const double s = scale_of(v, lo, hi);
  return at_resolution(v, q, s) + " [" + at_resolution(lo, q, s) + ", " + at_resolution(hi, q, s) +
         "]";
}

bool interval_decides(double lo, double hi, double expected, double near) {
  double blo, bhi;
  if (expected > 0) {
    blo = expected / near;
    bhi = expected * near;
  } else {
    blo = expected - std::fabs(expected) * (near - 1);
    bhi = expected + std::fabs(expected) * (near - 1);
  }
  const bool inside = blo <= lo && hi <= bhi;
  const bool outside = hi < blo || lo > bhi;
  return inside || outside;
}

}  // namespace exmy::reports
