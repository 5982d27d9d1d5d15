// StableAdamW reference step and the defined-order sum (docs/SEMANTICS.md 9.5, 10).
#include <cmath>

#include "sim/common/error.hpp"
#include "sim/optim/optim.hpp"

namespace exmy::optim {

native::StableAdamWScalars stable_adamw_scalars(const AdamHyper& h, long step) {
  native::StableAdamWScalars s;
  const double t = static_cast<double>(step);
  // beta_hat = beta (1 - beta^(t-1)) / (1 - beta^t) in fp64, left to right; t = 1 gives 0.
  const double b1 = h.beta1 * (1.0 - std::pow(h.beta1, t - 1.0)) / (1.0 - std::pow(h.beta1, t));
  const double b2 = h.beta2 * (1.0 - std::pow(h.beta2, t - 1.0)) / (1.0 - std::pow(h.beta2, t));
  s.beta1_hat = static_cast<float>(b1);
  s.w1 = static_cast<float>(1.0 - b1);
  s.beta2_hat = static_cast<float>(b2);
  s.w2 = static_cast<float>(1.0 - b2);
  s.eps = static_cast<float>(h.eps);
  s.eps_sq = static_cast<float>(h.eps * h.eps);
  return s;
}

double tree_sum(std::span<const float> terms) {
  constexpr std::size_t C = native::kSumChunk;
  std::vector<double> level(terms.begin(), terms.end());
  if (level.empty()) return 0.0;
  double a[C];
  do {
    std::vector<double> next((level.size() + C - 1) / C);
    for (std::size_t c = 0; c < next.size(); ++c) {
      for (std::size_t j = 0; j < C; ++j) {
        const std::size_t i = c * C + j;
        a[j] = i < level.size() ? level[i] : 0.0;
      }
      next[c] = native::tree_sum_chunk(a);
    }
    level.swap(next);
  } while (level.size() > 1);
  return level[0];
}

float rms_from_sum(double sum, std::size_t n) {
  if (n == 0) return 0.0f;
  return static_cast<float>(std::sqrt(sum / static_cast<double>(n)));
}

float stable_eta(double lr, float rms) {
  const float lr32 = static_cast<float>(lr);
  if (std::isnan(rms)) return rms;
  return lr32 / (rms > 1.0f ? rms : 1.0f);
}

float stable_adamw_step(const AdamHyper& h, long step, std::span<float> p, std::span<const float> g,
                        std::span<float> v, std::span<float> u) {
  const std::size_t n = p.size();
  if (g.size() != n || v.size() != n || u.size() != n) {
    throw InputError("stableadamw: parameter, gradient and state sizes differ");
  }
  const native::StableAdamWScalars s = stable_adamw_scalars(h, step);
  std::vector<float> terms(n);
  for (std::size_t i = 0; i < n; ++i) terms[i] = native::stable_adamw_moments(s, g[i], v[i], u[i]);
  const float rms = rms_from_sum(tree_sum(terms), n);
  const float eta = stable_eta(h.lr, rms);
  const float eta_lambda = eta * static_cast<float>(h.wd);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = native::stable_adamw_param(s, eta, eta_lambda, p[i], v[i], u[i]);
  }
  return rms;
}

}  // namespace exmy::optim
