#include "reports/sharpness.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
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

std::optional<SharpnessBefore> sharpness_before_divergence(std::span<const float> loss,
                                                           std::span<const float> sharpness,
                                                           std::span<const float> base_loss,
                                                           std::span<const float> base_sharpness,
                                                           std::size_t min_onset) {
  const std::size_t n =
      std::min({loss.size(), sharpness.size(), base_loss.size(), base_sharpness.size()});
  std::size_t onset = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(loss[i]) || loss[i] > 3.0f * base_loss[i]) {
      onset = i;
      break;
    }
  }
  if (onset == n || onset < 3 || onset < min_onset) return std::nullopt;
  double a = 0, b = 0;
  for (std::size_t i = onset - 3; i < onset; ++i) {
    const bool identical = std::memcmp(&loss[i], &base_loss[i], sizeof(float)) == 0 &&
                           std::memcmp(&sharpness[i], &base_sharpness[i], sizeof(float)) == 0;
    if (identical) return std::nullopt;  // every one of the 3 steps must be the run's own
    a += sharpness[i] / 3.0;
    b += base_sharpness[i] / 3.0;
  }
  return SharpnessBefore{onset, a, b};
}

}  // namespace exmy::reports
