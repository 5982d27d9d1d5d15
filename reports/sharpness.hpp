// The logit sharpness metric of "To FP8 and back again" (2024), eqs. 1-2, for a softmax
// cross-entropy, computed in closed form instead of by the paper's L-BFGS-B search:
//   phi_eps = 100 (max_{z in C_eps} f(y + z) - f(y)) / (1 + f(y)),
//   C_eps = { z : |z_j| <= eps (|y_j| + 1) },  f(y) = logsumexp(y) - y_c (label c).
// f is convex in its argument, so its maximum over the box C_eps lies at a vertex; its partial
// derivatives are softmax_j > 0 for j != c and softmax_c - 1 < 0, and they keep their signs
// everywhere, so the maximising vertex is z_j = +eps(|y_j| + 1) for j != c and
// z_c = -eps(|y_c| + 1). docs/SEMANTICS.md 14.6.
#pragma once

#include <cstddef>
#include <span>

namespace exmy::reports {

// Cross-entropy of logits y (fp64 arithmetic, max-shifted log-sum-exp).
double softmax_cross_entropy(std::span<const double> y, std::size_t label);

// phi_eps for one row of logits (the paper's eps is 5e-4).
double logit_sharpness(std::span<const double> y, std::size_t label, double eps);
double logit_sharpness(std::span<const float> y, std::size_t label, double eps);

}  // namespace exmy::reports
