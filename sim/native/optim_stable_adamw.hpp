// StableAdamW (seed 000, Algorithm 2 with appendix F.2's max(u, eps^2)), per element, and the
// fixed-shape fp64 tree that sums the per-element RMS terms (docs/SEMANTICS.md 9.5 and 10).
#pragma once

#include <cstdint>

#include "sim/native/fp32_ops.hpp"

namespace exmy::native {

struct StableAdamWScalars {
  float beta1_hat = 0.0f;  // RN32(beta1 * (1 - beta1^(t-1)) / (1 - beta1^t)), fp64
  float w1 = 1.0f;         // RN32(1 - beta1_hat), fp64
  float beta2_hat = 0.0f;
  float w2 = 1.0f;
  float eps = 1e-6f;      // RN32(eps)
  float eps_sq = 1e-12f;  // RN32(eps * eps), fp64 product
};

// Phase 1: moving averages, and the element's term g^2 / max(u, eps^2) of RMS_t. The maximum
// propagates NaN (torch.maximum).
EXMY_HD float stable_adamw_moments(const StableAdamWScalars& s, float g, float& v, float& u) {
  v = rn_add(rn_mul(s.beta1_hat, v), rn_mul(s.w1, g));
  const float g2 = rn_mul(g, g);
  u = rn_add(rn_mul(s.beta2_hat, u), rn_mul(s.w2, g2));
  const float den = f32_is_nan(u) ? u : (u > s.eps_sq ? u : s.eps_sq);
  return rn_div(g2, den);
}

// Phase 2: theta <- theta - eta*lambda*theta - eta*v/(sqrt(u) + eps), left to right.
// eta_lambda = RN32(eta * lambda) is computed once per tensor.
EXMY_HD float stable_adamw_param(const StableAdamWScalars& s, float eta, float eta_lambda, float p,
                                 float v, float u) {
  const float decayed = rn_sub(p, rn_mul(eta_lambda, p));
  return rn_sub(decayed, rn_div(rn_mul(eta, v), rn_add(rn_sqrt(u), s.eps)));
}

// ---- the defined-order sum (section 10) ---------------------------------------------------------
// A leaf chunk is 256 consecutive terms (missing ones are +0); it is summed by the halving tree
// a[j] = RN64(a[j] + a[j + h]) for h = 128, 64, ..., 1, j < h. The chunk sums form the next level,
// summed the same way, until one value is left. A GPU block of 256 threads does exactly this
// in shared memory; the host code below does the same additions.
inline constexpr int kSumChunk = 256;

// Sum of one chunk held in a[0..256) (destroyed).
EXMY_HD double tree_sum_chunk(double* a) {
  for (int h = kSumChunk / 2; h >= 1; h >>= 1) {
    for (int j = 0; j < h; ++j) a[j] = rn_add64(a[j], a[j + h]);
  }
  return a[0];
}

}  // namespace exmy::native
