// StableAdamW (seed 000 Algorithm 2) and the defined-order sum of section 10.
#include <catch2/catch.hpp>
#include <cmath>

#include "optim_test_util.hpp"
#include "sim/optim/optim.hpp"

using namespace exmy;
using namespace exmy::optim;

TEST_CASE("tree sum: exact on integers, halving-tree order, any size", "[optim][reduce]") {
  for (std::size_t n : {0u, 1u, 255u, 256u, 257u, 65536u, 65537u, 100000u}) {
    std::vector<float> t(n);
    double exact = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      t[i] = static_cast<float>(i % 1000);
      exact += t[i];
    }
    INFO("n=" << n);
    CHECK(tree_sum(t) == exact);  // integer partial sums < 2^53 are exact in any order
  }
  // The order is the halving tree: with 1, 2^53 and -2^53 placed so that the tree adds
  // 1 + 0 ... the result differs from left-to-right summation.
  std::vector<float> t(256, 0.0f);
  t[0] = 1.0f;
  t[1] = 0x1p60f;
  t[128] = -0x1p60f;
  // tree: level h=128 pairs (0,128): 1 - 2^60 = -2^60 (1 lost), (1,129): 2^60; then sum 0.
  CHECK(tree_sum(t) == 0.0);
  // Left to right: (1 + 2^60) - 2^60 = 0 too; with t[1] moved to index 2 the tree keeps 1.
  std::vector<float> u(256, 0.0f);
  u[0] = 0x1p60f;
  u[128] = -0x1p60f;
  u[1] = 1.0f;
  CHECK(tree_sum(u) == 1.0);
}

TEST_CASE("StableAdamW with RMS <= 1 equals bias-corrected AdamW with decoupled decay",
          "[optim][stableadamw]") {
  const std::size_t n = 3000;
  AdamHyper h{1e-3, 0.9, 0.99, 1e-6, 0.1};
  auto p = optim_test::normal_values(n, 31);
  std::vector<double> pd(p.begin(), p.end()), md(n, 0.0), vd(n, 0.0);
  std::vector<float> v(n, 0.0f), u(n, 0.0f);
  auto g0 = optim_test::normal_values(n, 32);
  for (long t = 1; t <= 12; ++t) {
    // Shrinking gradients keep g^2 below the average u: RMS_t <= 1 (t = 1: exactly 1).
    std::vector<float> g(n);
    for (std::size_t i = 0; i < n; ++i) g[i] = g0[i] * std::pow(0.9f, static_cast<float>(t));
    const float rms = stable_adamw_step(h, t, p, g, v, u);
    INFO("t=" << t << " rms=" << rms);
    CHECK(rms <= 1.0f);
    for (std::size_t i = 0; i < n; ++i) {
      md[i] = h.beta1 * md[i] + (1 - h.beta1) * g[i];
      vd[i] = h.beta2 * vd[i] + (1 - h.beta2) * static_cast<double>(g[i]) * g[i];
      const double mh = md[i] / (1 - std::pow(h.beta1, t)), vh = vd[i] / (1 - std::pow(h.beta2, t));
      pd[i] = pd[i] - h.lr * h.wd * pd[i] - h.lr * mh / (std::sqrt(vh) + h.eps);
    }
  }
  double worst = 0.0;
  for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(p[i] - pd[i]));
  CHECK(worst < 2e-6);
}

TEST_CASE("StableAdamW clips the step by RMS when the second moment is stale",
          "[optim][stableadamw]") {
  const std::size_t n = 1000;
  AdamHyper h{1e-3, 0.9, 0.999, 1e-6, 0.0};
  std::vector<float> p(n, 0.0f), v(n, 0.0f), u(n, 0.0f);
  std::vector<float> g(n, 1e-3f);
  stable_adamw_step(h, 1, p, g, v, u);
  const auto v1 = v, u1 = u;
  const auto p1 = p;
  std::vector<float> g2(n, 1.0f);  // 1000x jump: u is stuck in the past
  const float rms = stable_adamw_step(h, 2, p, g2, v, u);
  // At t = 2, beta2_hat = beta2 / (1 + beta2) ~ 1/2, so u ~ g^2 / 2 and RMS ~ sqrt(2).
  CHECK(rms > 1.4f);
  // Independent recomputation of the per-element update with eta = lr / rms.
  const auto s = stable_adamw_scalars(h, 2);
  const float eta = static_cast<float>(h.lr) / rms;
  for (std::size_t i = 0; i < 3; ++i) {
    const float vv = s.beta1_hat * v1[i] + s.w1 * g2[i];
    const float uu = s.beta2_hat * u1[i] + s.w2 * (g2[i] * g2[i]);
    CHECK(v[i] == vv);
    CHECK(u[i] == uu);
    CHECK(p[i] == (p1[i] - (eta * 0.0f) * p1[i]) - (eta * vv) / (std::sqrt(uu) + s.eps));
  }
  // RMS equals sqrt(mean(g^2 / max(u, eps^2))) computed in fp64.
  double acc = 0.0;
  for (std::size_t i = 0; i < n; ++i) acc += 1.0 / std::max<double>(u[i], 1e-12);
  CHECK(std::abs(rms - std::sqrt(acc / n)) < 1e-5 * rms);
}

TEST_CASE("loss scaling: GradScaler growth/backoff and per-tensor skip", "[optim][scaler]") {
  DynamicScaler s;
  CHECK(s.scale == 65536.0f);
  std::vector<float> g{65536.0f, -131072.0f};
  CHECK_FALSE(unscale_and_check(g, s.scale));
  CHECK(g[0] == 1.0f);
  CHECK(g[1] == -2.0f);
  for (int i = 0; i < 1999; ++i) update_scale(s, false);
  CHECK(s.scale == 65536.0f);
  update_scale(s, false);
  CHECK(s.scale == 131072.0f);
  CHECK(s.growth_tracker == 0);
  std::vector<float> bad{1.0f, NAN};
  CHECK(unscale_and_check(bad, s.scale));
  update_scale(s, true);
  CHECK(s.scale == 65536.0f);
  CHECK(has_non_finite(std::vector<float>{1.0f, -INFINITY}));
  CHECK_FALSE(has_non_finite(std::vector<float>{1.0f, 3e38f}));
}
