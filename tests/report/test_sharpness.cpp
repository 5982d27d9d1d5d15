// The closed-form logit sharpness against the definition: the maximum over every vertex of the
// box (small vocabularies, exhaustively) and over random points inside it.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "reports/sharpness.hpp"

using namespace exmy::reports;

namespace {
double ce_at(const std::vector<float>& y, const std::vector<double>& z, std::size_t c) {
  std::vector<double> v(y.size());
  for (std::size_t j = 0; j < y.size(); ++j) v[j] = static_cast<double>(y[j]) + z[j];
  return softmax_cross_entropy(v, c);
}
}  // namespace

TEST_CASE("logit sharpness: the closed form is the maximum over the box", "[sharpness]") {
  const unsigned seed = 20261125;
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> nd(0.0, 3.0);
  std::uniform_real_distribution<double> ud(-1.0, 1.0);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t V = 2 + trial % 9;  // 2..10: 2^V vertices
    std::vector<float> y(V);
    for (auto& v : y) v = static_cast<float>(nd(gen));
    const std::size_t c = static_cast<std::size_t>(trial) % V;
    const double eps = trial % 2 ? 5e-4 : 0.1;
    std::vector<double> y64(y.begin(), y.end());
    const double f0 = softmax_cross_entropy(y64, c);
    double best = -INFINITY;
    for (unsigned mask = 0; mask < (1u << V); ++mask) {
      std::vector<double> z(V);
      for (std::size_t j = 0; j < V; ++j) {
        z[j] = ((mask >> j) & 1u ? 1.0 : -1.0) * eps * (std::fabs(y[j]) + 1.0);
      }
      best = std::max(best, ce_at(y, z, c));
    }
    const double phi = logit_sharpness(y, c, eps);
    INFO("trial " << trial << " V=" << V);
    REQUIRE(phi == Approx(100.0 * (best - f0) / (1.0 + f0)).epsilon(1e-9).margin(1e-12));
    for (int k = 0; k < 50; ++k) {  // no interior point beats it
      std::vector<double> z(V);
      for (std::size_t j = 0; j < V; ++j) z[j] = ud(gen) * eps * (std::fabs(y[j]) + 1.0);
      REQUIRE(100.0 * (ce_at(y, z, c) - f0) / (1.0 + f0) <= phi + 1e-9);
    }
  }
}

TEST_CASE("logit sharpness: two classes in closed form", "[sharpness]") {
  // y = (0, 0), label 0, eps: z = (-eps, +eps): f1 = log(1 + e^{2 eps}), f0 = log 2.
  const std::vector<float> y{0.0f, 0.0f};
  const double eps = 0.01;
  const double expect =
      100.0 * (std::log1p(std::exp(2 * eps)) - std::log(2.0)) / (1 + std::log(2.0));
  REQUIRE(logit_sharpness(y, 0, eps) == Approx(expect).epsilon(1e-12));
  REQUIRE(logit_sharpness(y, 0, 0.0) == 0.0);
}

// Issue 35: the sharpness-before-divergence rows paired every 8-bit run with the sparse task's
// fp32 run and averaged steps where the run was still bit-identical to its baseline. The rule,
// from its statement in reports/sharpness.hpp, on hand-made logs.
TEST_CASE("sharpness before divergence: onset, the 3 steps before it, identical steps refused",
          "[report][sharpness]") {
  using exmy::reports::sharpness_before_divergence;
  const std::vector<float> base_loss{2.0f, 2.0f, 2.0f, 2.0f, 2.0f, 2.0f};
  const std::vector<float> base_sharp{1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  // Differs from step 1 on; loss 7 > 3 x 2 at step 4: onset 4, steps 1..3 averaged.
  const std::vector<float> loss{2.0f, 2.5f, 3.0f, 5.0f, 7.0f, NAN};
  const std::vector<float> sharp{1.0f, 3.0f, 6.0f, 9.0f, 12.0f, 0.0f};
  const auto s = sharpness_before_divergence(loss, sharp, base_loss, base_sharp);
  REQUIRE(s);
  CHECK(s->onset == 4);
  CHECK(s->before == Approx(6.0));
  CHECK(s->baseline == Approx(1.0));
  // A non-finite loss is an onset too (step 3 here).
  const std::vector<float> nan_loss{2.05f, 2.1f, 2.2f, NAN, 2.0f, 2.0f};
  const auto n = sharpness_before_divergence(nan_loss, sharp, base_loss, base_sharp);
  REQUIRE(n);
  CHECK(n->onset == 3);
  // Never diverges: no row.
  CHECK_FALSE(sharpness_before_divergence(base_loss, sharp, base_loss, base_sharp));
  // Onset before step 3: no row.
  const std::vector<float> early{2.0f, 9.0f, 2.0f, 2.0f, 2.0f, 2.0f};
  CHECK_FALSE(sharpness_before_divergence(early, sharp, base_loss, base_sharp));
  // The 3 steps before the onset bit-identical to the baseline: no row (the old code made one).
  const std::vector<float> same_then_jump{2.0f, 2.0f, 2.0f, 2.0f, 9.0f, 9.0f};
  CHECK_FALSE(sharpness_before_divergence(same_then_jump, base_sharp, base_loss, base_sharp));
}

// Issue 35's degenerate onsets: a low-precision run that is its baseline bit for bit for its first
// steps and diverges at step 4-6. Each of the 3 steps before the onset must be the run's own: one
// identical step of three (the old rule still averaged it) refuses the row, and so does an onset
// inside the prefix the caller excludes (min_onset, the spike section's ignored warmup).
TEST_CASE("sharpness before divergence: degenerate onsets are refused (regression, issue 35)",
          "[report][sharpness]") {
  using exmy::reports::sharpness_before_divergence;
  const std::vector<float> base_loss(8, 2.0f), base_sharp(8, 1.0f);
  // Identical for steps 0..3, differs at 4, diverges at 5: steps 2, 3 identical -> refused.
  const std::vector<float> loss{2.0f, 2.0f, 2.0f, 2.0f, 2.5f, 7.0f, 7.0f, 7.0f};
  const std::vector<float> sharp{1.0f, 1.0f, 1.0f, 1.0f, 4.0f, 8.0f, 8.0f, 8.0f};
  CHECK_FALSE(sharpness_before_divergence(loss, sharp, base_loss, base_sharp));
  // Only the loss identical at one step while the sharpness differs: the step is distinct.
  std::vector<float> sharp2 = sharp;
  sharp2[2] = 1.5f;
  sharp2[3] = 2.0f;
  const auto s = sharpness_before_divergence(loss, sharp2, base_loss, base_sharp);
  REQUIRE(s);
  CHECK(s->onset == 5);
  CHECK(s->before == Approx((1.5 + 2.0 + 4.0) / 3));
  // The same run with the caller's min_onset past the onset: refused; at the onset: accepted.
  CHECK_FALSE(sharpness_before_divergence(loss, sharp2, base_loss, base_sharp, 6));
  CHECK(sharpness_before_divergence(loss, sharp2, base_loss, base_sharp, 5));
  // Exactly one identical step of the three (index 3): refused.
  std::vector<float> sharp3 = sharp2;
  sharp3[3] = 1.0f;
  std::vector<float> loss3 = loss;
  loss3[3] = 2.0f;
  CHECK_FALSE(sharpness_before_divergence(loss3, sharp3, base_loss, base_sharp));
}
