#include "reports/sharpness.hpp"

#include <cmath>
#include <vector>

namespace exmy::reports {

double softmax_cross_entropy(std::span<const double> y, std::size_t label) {
  double m = -INFINITY;
  for (double v : y) m = v > m ? v : m;
  double s = 0;
  for (double v : y) s += std::exp(v - m);
  return std::log(s) + m - y[label];
}

double logit_sharpness(std::span<const float> y, std::size_t label, double eps) {
  const std::vector<double> v(y.begin(), y.end());
  return logit_sharpness(std::span<const double>(v), label, eps);
}

double logit_sharpness(std::span<const double> y, std::size_t label, double eps) {
  std::vector<double> base(y.begin(), y.end()), worst(y.size());
  for (std::size_t j = 0; j < y.size(); ++j) {
    const double w = eps * (std::fabs(base[j]) + 1.0);
    worst[j] = base[j] + (j == label ? -w : w);
  }
  const double f0 = softmax_cross_entropy(base, label);
  const double f1 = softmax_cross_entropy(worst, label);
  return 100.0 * (f1 - f0) / (1.0 + f0);
}

}  // namespace exmy::reports
