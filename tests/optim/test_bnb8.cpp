// bitsandbytes 8-bit block-wise optimizers: the kernel's quantize_2D search, zero/NaN/huge-tiny
// blocks, the 32-bit fallback, and 8-bit Adam tracking 32-bit Adam on a regression problem.
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>

#include "optim_test_util.hpp"
#include "sim/common/error.hpp"
#include "sim/format/codebook.hpp"
#include "sim/optim/optim.hpp"
#include "tests/support/bnb_transcriptions.hpp"

using namespace exmy;
using namespace exmy::optim;
using bnb_ref::quantize_2d;
using optim_test::bits;

TEST_CASE("8-bit requantization equals bitsandbytes' quantize_2D search", "[optim][bnb8]") {
  for (bool is_signed : {true, false}) {
    const float* code = dynamic_codebook(is_signed).values.data();
    std::vector<float> xs{0.0f, -0.0f, 1.0f, -1.0f, NAN, FLT_MIN, -FLT_MIN};
    for (int k = 0; k < 256; ++k) {
      xs.push_back(code[k]);
      if (k < 255) {
        const float mid = (code[k] + code[k + 1]) * 0.5f;
        xs.push_back(mid);
        xs.push_back(std::nextafter(mid, 2.0f));
        xs.push_back(std::nextafter(mid, -2.0f));
      }
    }
    for (float x : optim_test::normal_values(20000, 3, 0.3f))
      xs.push_back(std::clamp(x, -1.0f, 1.0f));
    float mids[256];
    native::bnb_midpoints(code, mids);
    std::size_t bad = 0;
    for (float x : xs) {
      if (!is_signed && x < 0.0f) continue;  // state 2 is never negative
      const int want = quantize_2d(code, x, is_signed);
      bad += want != codebook_nearest(code, x, TieRule::even_index);
      bad += want != native::bnb_nearest(mids, x);
    }
    INFO("signed=" << is_signed);
    CHECK(bad == 0);
  }
}

TEST_CASE("8-bit state: sign guard keeps the first moment's sign", "[optim][bnb8]") {
  const float* code = dynamic_codebook(true).values.data();
  float mids[256];
  native::bnb_midpoints(code, mids);
  // A tiny positive state rounds to the zero code (index 127, +0.0): same sign bit, kept.
  CHECK(native::bnb_quant_signed(native::Bnb8Scalars{}, code, mids, 1e-9f, 1.0f) == 127);
  // A tiny negative one rounds to +0.0 too; the guard steps to 126, the smallest negative code.
  CHECK(native::bnb_quant_signed(native::Bnb8Scalars{}, code, mids, -1e-9f, 1.0f) == 126);
  CHECK(code[126] < 0.0f);
  // -0.0 has the sign bit: it also moves to 126 (the kernel compares sign bits).
  CHECK(native::bnb_quant_signed(native::Bnb8Scalars{}, code, mids, -0.0f, 1.0f) == 126);
}

TEST_CASE("8-bit Adam: zero gradients in a zero state stay zero (full and partial blocks)",
          "[optim][bnb8]") {
  const std::size_t n = 4096 + 100;  // 16 full blocks of 256 and a partial one
  auto st = bnb8_init(n, true, 256, true);
  std::vector<float> p(n, 1.0f), g(n, 0.0f);
  AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  for (long t = 1; t <= 3; ++t) bnb_adam8_step(bnb8_scalars(h, t, false), Storage::f32, p, g, st);
  for (float a : st.absmax1) CHECK(a == 0.0f);
  for (float a : st.absmax2) CHECK(a == 0.0f);
  // The states stay +0: 0/0 is NaN, the search sends NaN to code 0 (-1.0), and the sign guard
  // (+0 has no sign bit, -1.0 has) steps it down with uint8 wrap-around to 255 (+1.0), as the
  // bitsandbytes kernel does; 255 times absmax 0 dequantizes to +0 again.
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += st.q1[i] != 255 || st.q2[i] != 0;
  CHECK(bad == 0);
  // The parameter only decays: p * RN32(1 - RN32(lr*wd)) three times.
  const float d = 1.0f - 1e-3f * 0.01f;
  CHECK(p[0] == 1.0f * d * d * d);
}

TEST_CASE("8-bit Adam: NaN/inf gradients zero that element's states and skip its update",
          "[optim][bnb8]") {
  const std::size_t n = 5000;
  auto st = bnb8_init(n, true, 256, true);
  auto p = optim_test::normal_values(n, 4);
  const auto p0 = p;
  auto g = optim_test::normal_values(n, 5);
  AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.0};
  bnb_adam8_step(bnb8_scalars(h, 1, false), Storage::f32, p, g, st);
  g[10] = NAN;
  g[300] = INFINITY;
  g[4999] = -INFINITY;
  const auto p1 = p;
  bnb_adam8_step(bnb8_scalars(h, 2, false), Storage::f32, p, g, st);
  const float* c1 = dynamic_codebook(true).values.data();
  const float* c2 = dynamic_codebook(false).values.data();
  for (std::size_t i : {std::size_t{10}, std::size_t{300}, std::size_t{4999}}) {
    CHECK(bits(p[i]) == bits(p1[i]));
    CHECK(c1[st.q1[i]] == 0.0f);
    CHECK(c2[st.q2[i]] == 0.0f);
  }
  CHECK(p[11] != p1[11]);
  for (float x : p) CHECK(std::isfinite(x));
  CHECK(p0[0] != p[0]);
}

TEST_CASE("8-bit Adam: huge and tiny gradients in one block", "[optim][bnb8]") {
  const std::size_t n = 4096;
  auto st = bnb8_init(n, true, 256, true);
  std::vector<float> p(n, 0.5f), g(n);
  for (std::size_t i = 0; i < n; ++i) g[i] = (i % 7 == 0) ? 1e18f : ((i % 2) ? 1e-30f : -1e-20f);
  AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.0};
  bnb_adam8_step(bnb8_scalars(h, 1, false), Storage::f32, p, g, st);
  const float* c1 = dynamic_codebook(true).values.data();
  // The block maximum is represented exactly (code +-1 times absmax).
  const float s1_big = 0.1f * 1e18f;  // RN32(RN32(1 - 0.9) * g) with a zero old state
  CHECK(st.absmax1[0] == (1.0f - 0.9f) * 1e18f);
  CHECK(c1[st.q1[0]] * st.absmax1[0] == (1.0f - 0.9f) * 1e18f);
  (void)s1_big;
  for (float x : p) CHECK(std::isfinite(x));
}

TEST_CASE("8-bit: tensors below 4096 elements use the 32-bit kernels unless switched off",
          "[optim][bnb8]") {
  auto small = bnb8_init(4095, true, 256, true);
  CHECK_FALSE(small.is_8bit);
  CHECK(small.s1.size() == 4095);
  auto forced = bnb8_init(4095, true, 256, false);
  CHECK(forced.is_8bit);
  CHECK(forced.absmax1.size() == 16);
  CHECK(bnb8_init(4096, true, 2048, true).absmax2.size() == 2);
  CHECK_THROWS_AS(bnb8_init(10, true, 512, true), InputError);
  // 32-bit Adam fallback equals a transcription of kOptimizer32bit2State (ADAM branch).
  AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  auto p = optim_test::normal_values(4095, 8);
  auto p2 = p;
  std::vector<float> s1(4095, 0.0f), s2(4095, 0.0f);
  for (long t = 1; t <= 5; ++t) {
    const auto g = optim_test::normal_values(4095, 90 + static_cast<std::uint64_t>(t));
    const auto sc = bnb8_scalars(h, t, false);
    bnb_adam8_step(sc, Storage::f32, p, g, small);
    const float b1 = 0.9f, b2 = 0.999f, lr = 1e-3f, wd = 0.01f, eps = 1e-8f;
    const float c1 = 1.0f - static_cast<float>(std::pow(0.9f, static_cast<double>(t)));
    const float c2 = std::sqrt(1.0f - static_cast<float>(std::pow(0.999f, static_cast<double>(t))));
    const float step_size = -lr * c2 / c1;
    for (std::size_t i = 0; i < 4095; ++i) {
      s1[i] = s1[i] * b1 + ((1.0f - b1) * g[i]);
      s2[i] = s2[i] * b2 + ((1.0f - b2) * (g[i] * g[i]));
      p2[i] = p2[i] + (step_size * (s1[i] / (std::sqrt(s2[i]) + (eps * c2))));
      p2[i] = p2[i] * (1.0f - (lr * wd));
    }
  }
  std::size_t diff = 0;
  for (std::size_t i = 0; i < 4095; ++i) diff += bits(p[i]) != bits(p2[i]);
  CHECK(diff == 0);
}

namespace {
// Least squares y = X w* on a fixed problem; returns the final loss after `steps` of `opt`.
struct Regression {
  std::size_t rows = 32, n = 4096;
  std::vector<float> X, y;
  Regression() {
    X = optim_test::normal_values(rows * n, 77, 1.0f / 64.0f);
    const auto w = optim_test::normal_values(n, 78);
    y.assign(rows, 0.0f);
    for (std::size_t r = 0; r < rows; ++r) {
      double acc = 0.0;
      for (std::size_t j = 0; j < n; ++j) acc += static_cast<double>(X[r * n + j]) * w[j];
      y[r] = static_cast<float>(acc);
    }
  }
  double grad(const std::vector<float>& w, std::vector<float>& g) const {
    std::vector<double> res(rows);
    double loss = 0.0;
    for (std::size_t r = 0; r < rows; ++r) {
      double acc = -static_cast<double>(y[r]);
      for (std::size_t j = 0; j < n; ++j) acc += static_cast<double>(X[r * n + j]) * w[j];
      res[r] = acc;
      loss += acc * acc / static_cast<double>(rows);
    }
    g.assign(n, 0.0f);
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (std::size_t r = 0; r < rows; ++r) acc += 2.0 * res[r] * X[r * n + j];
      g[j] = static_cast<float>(acc / static_cast<double>(rows));
    }
    return loss;
  }
};
}  // namespace

TEST_CASE("8-bit AdamW tracks 32-bit AdamW on a regression problem", "[optim][bnb8]") {
  Regression prob;
  AdamHyper h{1e-2, 0.9, 0.995, 1e-8, 0.0};
  std::vector<float> w8(prob.n, 0.0f), w32(prob.n, 0.0f), g, m(prob.n, 0.0f), v(prob.n, 0.0f);
  auto st = bnb8_init(prob.n, true, 256, true);
  REQUIRE(st.is_8bit);
  const double loss0 = prob.grad(w8, g);
  double l8 = 0, l32 = 0;
  for (long t = 1; t <= 60; ++t) {
    l8 = prob.grad(w8, g);
    bnb_adam8_step(bnb8_scalars(h, t, false), Storage::f32, w8, g, st);
    l32 = prob.grad(w32, g);
    adam_step(h, true, Storage::f32, t, w32, g, m, v);
    if (t == 1) {
      // Step 1 updates with the fp32 states before they are quantized: equal up to the two
      // formulas' roundings.
      double worst = 0.0;
      for (std::size_t j = 0; j < prob.n; ++j)
        worst = std::max(worst, std::abs(1.0 * w8[j] - w32[j]));
      CHECK(worst < 1e-8);
    }
  }
  double dw = 0.0, nw = 0.0;
  for (std::size_t j = 0; j < prob.n; ++j) {
    dw += (static_cast<double>(w8[j]) - w32[j]) * (static_cast<double>(w8[j]) - w32[j]);
    nw += static_cast<double>(w32[j]) * w32[j];
  }
  INFO("loss0=" << loss0 << " loss8=" << l8 << " loss32=" << l32
                << " rel dw=" << std::sqrt(dw / nw));
  CHECK(l32 < 0.1 * loss0);
  CHECK(l8 < 0.1 * loss0);
  CHECK(std::abs(l8 - l32) < 0.25 * l32 + 1e-6 * loss0);
  // The problem is underdetermined (32 rows, 4096 unknowns): both runs fit it, along paths that
  // drift apart by the states' quantization error (a few percent per step).
  CHECK(std::sqrt(dw / nw) < 0.25);
}

TEST_CASE("8-bit Momentum: 32-bit fallback transcription and 8-bit sign/absmax", "[optim][bnb8]") {
  AdamHyper h{0.01, 0.9, 0.0, 0.0, 1e-4};
  auto p = optim_test::normal_values(5000, 12);
  auto st = bnb8_init(5000, false, 256, true);
  for (long t = 1; t <= 4; ++t) {
    const auto g = optim_test::normal_values(5000, 120 + static_cast<std::uint64_t>(t));
    bnb_momentum8_step(bnb8_scalars(h, t, false), Storage::f32, p, g, st);
  }
  for (float a : st.absmax1) CHECK(a > 0.0f);
  CHECK(st.q2.empty());
  for (float x : p) CHECK(std::isfinite(x));
}
