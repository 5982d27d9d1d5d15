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
#include <optional>
#include <span>

namespace exmy::reports {

// Cross-entropy of logits y (fp64 arithmetic, max-shifted log-sum-exp).
double softmax_cross_entropy(std::span<const double> y, std::size_t label);

// phi_eps for one row of logits (the paper's eps is 5e-4).
double logit_sharpness(std::span<const double> y, std::size_t label, double eps);
double logit_sharpness(std::span<const float> y, std::size_t label, double eps);

// Sharpness before divergence ("To FP8 and back again", section 3.1), one low-precision run
// against its baseline run (the fp32 run of the same task and seed): the onset is the first step
// whose loss is not finite or exceeds 3x the baseline's at that step; the result holds the mean
// sharpness of both runs over the 3 steps before it. No result when the run never diverges, the
// onset is before index max(3, min_onset), or any of those 3 steps is bit-identical to the
// baseline's (loss and sharpness): such steps say nothing about the run (issue 35: onsets at
// steps 4-6 averaged steps where both runs were still the same; one identical step of three was
// still averaged until the rule asked every step to differ). `min_onset` keeps onsets out of a
// warmup prefix.
struct SharpnessBefore {
  std::size_t onset;  // index into the logs
  double before;      // the run's mean sharpness over onset-3 .. onset-1
  double baseline;    // the baseline's over the same steps
};
std::optional<SharpnessBefore> sharpness_before_divergence(std::span<const float> loss,
                                                           std::span<const float> sharpness,
                                                           std::span<const float> base_loss,
                                                           std::span<const float> base_sharpness,
                                                           std::size_t min_onset = 3);

}  // namespace exmy::reports
