// Uncertainty and closed forms for section 1 (variance vs inner dimension).
//
// The rows^2 inner products of one trial share their operands, so they are correlated; trials
// are independent. Confidence intervals therefore come from a cluster bootstrap over trials:
// each replicate draws `trials` trial indices with replacement (Philox words, a pure function of
// the seed, the distribution, the k index and the replicate) and recomputes the statistic from
// the drawn trials' sums. The same indices serve every scheme of a (dist, k), so ratios between
// schemes (sr / rne) get paired intervals. Intervals are the 2.5th and 97.5th percentiles of the
// replicates (percentile bootstrap).
#pragma once

#include <cstdint>
#include <vector>

namespace exmy::reports {

// Trial indices of one bootstrap replicate: `trials` draws in [0, trials).
std::vector<int> bootstrap_draw(std::uint64_t seed, int dist, int kidx, int replicate, int trials);

// Number of replicates: 1000 for the full report, 200 for --quick and the tests.
int bootstrap_replicates(bool quick, int tiny);

struct Interval {
  double lo = 0, hi = 0;
};
// 2.5th and 97.5th percentiles (nearest rank on the sorted replicates).
Interval percentile_interval(std::vector<double> replicates);

// The mean of independent replicates (seeds) with its two-sided 95% Student-t interval,
// mean +- t(n-1) s / sqrt(n) (t tabulated for n = 2..8, 1.96 beyond; no interval for n < 2).
struct MeanCi {
  double mean = 0, lo = 0, hi = 0;
};
MeanCi mean_ci(const std::vector<double>& x);

// E[M^2] for M the largest |X_i| of n independent draws: X ~ N(0, 1) (student_nu == 0) or
// Student-t with nu = 4 (student_nu == 4). Numerical integration of
//   E[M^2] = int_0^inf 2x (1 - F(x)^n) dx,  F = CDF of |X|,
// with F^n formed as exp(n log1p(-tail)) so that n up to 2^40 keeps its precision. Relative
// error below 1e-6 (tests compare with the n = 1 moments 1 and 2 and with Monte Carlo).
double expected_max_sq(double n, int student_nu);

// Inverse of the CDF of that maximum for the Gaussian: the x with P(M <= x) = p. Used to draw
// the absmax of the part of a paper-shaped tensor that is not materialised (D.3 shapes).
double gaussian_max_quantile(double n, double p);

}  // namespace exmy::reports
