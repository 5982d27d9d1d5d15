// docs/SEMANTICS.md 9.5 (StableAdamW, seed 000 Algorithm 2 with appendix F.2) and section 10
// (the fixed fp64 sum tree) on exact values.
#include <stdexcept>

#include "sim/oracle/steps/steps.hpp"

namespace exmy::oracle::steps {
namespace {

const Real& one() {
  static const Real r = Real::of_double(1.0);
  return r;
}

// β̂ = β·(1 − β^(t−1)) / (1 − β^t) in fp64, left to right (0 at t = 1).
Real beta_hat(double beta, long t) {
  const Real b = Real::of_double(beta);
  const Real t1 = Real::of_double(static_cast<double>(t - 1)), tt = Real::of_double(t);
  const Real num = mul(F64, b, sub(F64, one(), pow(F64, b, t1)));
  return div(F64, num, sub(F64, one(), pow(F64, b, tt)));
}

}  // namespace

Real tree_sum(const Tensor& terms) {
  constexpr std::size_t C = 256;  // leaf chunk
  if (terms.empty()) return Real();
  // The fp32 terms widen exactly to fp64 (a Real already is exact); each level sums chunks of
  // 256 (missing entries +0) by the halving tree a[j] ← a[j] ⊕₆₄ a[j + h], h = 128, …, 1.
  Tensor level = terms;
  do {
    Tensor next((level.size() + C - 1) / C);
    for (std::size_t c = 0; c < next.size(); ++c) {
      Tensor a(C);
      for (std::size_t j = 0; j < C && c * C + j < level.size(); ++j) a[j] = level[c * C + j];
      for (std::size_t h = C / 2; h >= 1; h /= 2) {
        for (std::size_t j = 0; j < h; ++j) a[j] = add(F64, a[j], a[j + h]);
      }
      next[c] = a[0];
    }
    level.swap(next);
  } while (level.size() > 1);
  return level[0];
}

Real stable_adamw_step(const AdamHyper& h, long t, Tensor& p, const Tensor& g, Tensor& v,
                       Tensor& u) {
  const std::size_t n = p.size();
  if (g.size() != n || v.size() != n || u.size() != n) {
    throw std::logic_error("step oracle: tensor sizes differ");
  }
  // Host scalars: fp64, then RN32.
  const Real bh1 = beta_hat(h.beta1, t), bh2 = beta_hat(h.beta2, t);
  const Real b1 = round(F32, bh1), b2 = round(F32, bh2);
  const Real w1 = round(F32, sub(F64, one(), bh1)), w2 = round(F32, sub(F64, one(), bh2));
  const Real eps = Real::of_double(h.eps);
  const Real e = round(F32, eps), e2 = round(F32, mul(F64, eps, eps));
  // Phase 1.
  Tensor terms(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = add(F32, mul(F32, b1, v[i]), mul(F32, w1, g[i]));  // (β̂1 ⊗ v) ⊕ (w1 ⊗ g)
    const Real g2 = mul(F32, g[i], g[i]);
    u[i] = add(F32, mul(F32, b2, u[i]), mul(F32, w2, g2));  // (β̂2 ⊗ u) ⊕ (w2 ⊗ g2)
    terms[i] = div(F32, g2, maximum(u[i], e2));             // g2 ⊘ max(u, e2)
  }
  // Per tensor: RMS_t = RN32(√₆₄(S ⊘₆₄ n)), η = RN32(lr) ⊘ max(1, RMS_t), ηλ = η ⊗ RN32(wd).
  Real rms;
  if (n > 0) {
    rms = round(F32, sqrt(F64, div(F64, tree_sum(terms), Real::of_double(static_cast<double>(n)))));
  }
  const Real lr = round(F32, Real::of_double(h.lr));
  const Real eta = rms.is_nan() ? rms : div(F32, lr, gt(rms, one()) ? rms : one());
  const Real eta_l = mul(F32, eta, round(F32, Real::of_double(h.wd)));
  // Phase 2: p ← (p ⊖ (ηλ ⊗ p)) ⊖ ((η ⊗ v) ⊘ (√u ⊕ e)).
  for (std::size_t i = 0; i < n; ++i) {
    const Real decayed = sub(F32, p[i], mul(F32, eta_l, p[i]));
    p[i] = sub(F32, decayed, div(F32, mul(F32, eta, v[i]), add(F32, sqrt(F32, u[i]), e)));
  }
  return rms;
}

}  // namespace exmy::oracle::steps
