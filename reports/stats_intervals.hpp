// The report's interval statistics, one module for every section (issue 35, "honest
// statistics"; docs/SEMANTICS.md 14, "Statistics"):
//   - signed quantities (paired differences): Student-t over independent replicates;
//   - positive quantities (losses, errors, variances): a log-scale interval, mean x exp(+-t cv /
//     sqrt n), whose bounds are positive whatever the spread (Student-t on a heavy-tailed mean
//     over 3 seeds gives negative lower bounds);
//   - runs that diverge: the median with its distribution-free order-statistic interval;
//   - ratios: a paired cluster bootstrap (Philox-seeded resampling, deterministic), percentile
//     interval widened by sqrt(n / (n - 1)) for n clusters (a bootstrap over n clusters
//     estimates a mean's variance (n - 1)/n too small; tests/report/test_stats_intervals.cpp
//     shows the coverage with and without the widening);
//   - fitted log-log slopes over independent cells (one cluster bootstrap per cell): the same
//     widening;
//   - digits: a value with an interval is printed to 2 significant digits of the half-width;
//   - quick verdicts: "preliminary" unless the interval settles them (interval_decides;
//     label_preliminary in reports/claims.hpp applies it to the claim table).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reports/variance_stats.hpp"

namespace exmy::reports {

struct Estimate {
  double value = 0, lo = 0, hi = 0;
  bool has_ci = false;
  int n = 0;           // replicates (seeds, clusters) behind it
  const char* method;  // "t", "log-t", "median", "bootstrap": for the report's method text
};

// Philox stream of the shared resampler: 0x0E000000 | purpose << 8 (purpose < 2^16). Sections
// pass their own purpose so that two statistics never share draws unless they are meant to pair.
std::uint32_t stats_stream(std::uint32_t purpose);

// Cluster indices of bootstrap replicate b: n draws in [0, n), draw j from philox_word(seed,
// stream, (b << 20) + j) by multiply-shift (n <= 2^20). A pure function of its arguments.
std::vector<int> resample_indices(std::uint64_t seed, std::uint32_t stream, int replicate, int n);

// Two-sided 95% Student-t quantile for n - 1 degrees of freedom (exact table to n = 31, then
// 1.96 + 2.4/(n - 1), within 0.003 of the quantile).
double t975(int n);

// Mean with mean +- t s / sqrt(n) (signed quantities; no interval for n < 2).
Estimate mean_t(const std::vector<double>& x);

// Mean of non-negative values with the log-scale interval mean x exp(+-t(n-1) (s / mean) /
// sqrt(n)) (the delta-method interval of log mean): both bounds are positive and the interval
// is the t interval to first order when s / mean is small. Negative values are a caller's bug
// (std::logic_error). All zeros: value 0, interval [0, 0].
Estimate positive_mean(const std::vector<double>& x);

// Median (the mean of the two central values for even n) with the order-statistic interval
// [x_(l), x_(n+1-l)], l the largest rank with P(Binomial(n, 1/2) < l) <= 0.025; for n < 6 no
// such rank exists and the interval is [min, max] (coverage 1 - 2^(1-n): 87.5% at n = 4).
Estimate median_ci(const std::vector<double>& x);

// The central value of per-seed results, some of which may have diverged (not finite, or
// flagged): the positive mean while none diverged, else the median (diverged runs count as
// +infinity, so the median says what a typical run does).
Estimate central_positive(const std::vector<double>& x, const std::vector<bool>& diverged);

// The same for signed per-seed results (paired differences): mean_t while none diverged, else the
// median with diverged runs (or a not-finite x) as +infinity.
Estimate central_signed(const std::vector<double>& x, const std::vector<bool>& diverged);

// Ratio of means sum(num) / sum(den) over paired clusters (num[i], den[i] from cluster i), with
// the widened percentile interval of `replicates` paired cluster-bootstrap replicates.
Estimate bootstrap_ratio(const std::vector<double>& num, const std::vector<double>& den,
                         std::uint64_t seed, std::uint32_t stream, int replicates);

// Percentile interval of replicates widened about `point` by sqrt(n / (n - 1)), n the number of
// clusters each replicate resampled (n <= 1: unwidened).
Interval widened_interval(const std::vector<double>& replicates, double point, int clusters);

// The log-log slope of y against x (least squares of log2 y on log2 x) with the widened interval
// of the slopes of replicate b of every cell: rep[c][b] is replicate b of cell c, each cell a
// cluster bootstrap over `clusters` independent clusters.
Estimate slope_ci(const std::vector<double>& x, const std::vector<double>& y,
                  const std::vector<std::vector<double>>& rep, int clusters);

// v printed to the resolution of its interval: the decimal place of the second significant digit
// of the half-width (hi - lo) / 2; %g with 4 significant digits when the half-width is 0 or not
// finite. fmt_ci gives "v [lo, hi]" with all three at that resolution.
std::string fmt_at(double v, double lo, double hi);
std::string fmt_ci(double v, double lo, double hi);

// SEMANTICS 14, "Preliminary verdicts": a quick run's verdict from an interval is final only when
// the interval [lo, hi] lies wholly inside the tolerance band of the expected value e
// ([e / near, e near] for e > 0; e -+ |e| (near - 1) otherwise) or wholly outside it: then more
// data can move the verdict at most between "reproduced" and "partly reproduced" (inside) or not
// at all (outside). Otherwise " (preliminary)" is appended.
bool interval_decides(double lo, double hi, double expected, double near);

}  // namespace exmy::reports
