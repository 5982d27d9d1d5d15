// bitsandbytes' one-state RMSprop8bit / Adagrad8bit / Lion8bit and their 32-bit states
// (docs/SEMANTICS.md 9.4.1): expected values worked by hand from the section's formulas, the
// registry's state layout, and the engine against the MPFR step oracle over several steps of
// heavy-tailed gradients with exact zeros (the verify campaign covers every input class).
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <random>

#include "optim_test_util.hpp"
#include "sim/common/error.hpp"
#include "sim/format/codebook.hpp"
#include "sim/optim/optim.hpp"
#include "sim/optim/registry.hpp"
#include "sim/oracle/steps/steps.hpp"

using namespace exmy;
using namespace exmy::optim;
using native::Bnb1Op;
using optim_test::bits;

namespace {

const Bnb1Op kOps[] = {Bnb1Op::rmsprop, Bnb1Op::adagrad, Bnb1Op::lion};

AdamHyper hyper(Bnb1Op op, double wd = 0.0, bool cuda = false) {
  AdamHyper h;
  h.lr = op == Bnb1Op::lion ? 1e-4 : 1e-2;
  h.beta1 = op == Bnb1Op::rmsprop ? 0.99 : op == Bnb1Op::lion ? 0.9 : 0.0;
  h.beta2 = op == Bnb1Op::lion ? 0.99 : 0.0;
  h.eps = op == Bnb1Op::adagrad ? 1e-10 : op == Bnb1Op::lion ? 0.0 : 1e-8;
  h.wd = wd;
  if (cuda) h.bnb = native::BnbKernels::cuda_sm90;
  return h;
}

// Student-t with 2 degrees of freedom times 1e-2 (heavy tails), every 7th gradient exactly 0,
// rounded to the parameters' dtype. The seed is printed.
std::vector<float> heavy_tailed(std::size_t n, std::uint64_t seed, Storage st) {
  std::printf("bnb1 test data: student-t(2) n=%zu seed=%llu\n", n,
              static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::student_t_distribution<double> t2(2.0);
  std::vector<float> g(n);
  for (std::size_t i = 0; i < n; ++i) {
    g[i] = i % 7 == 0 ? 0.0f : native::to_storage(static_cast<float>(1e-2 * t2(rng)), st);
  }
  return g;
}

}  // namespace

TEST_CASE("bnb1: zero gradients in a zero state keep the parameters; all-zero blocks code 255",
          "[optim][bnb8][bnb1]") {
  for (const bool cuda : {false, true}) {
    for (const Bnb1Op op : kOps) {
      for (const std::size_t n : {std::size_t{5000}, std::size_t{300}}) {
        auto p = optim_test::normal_values(n, 3);
        const auto p0 = p;
        const std::vector<float> g(n, 0.0f);
        Bnb8State st = bnb8_init(n, false, 256, true);
        bnb1_step(bnb8_scalars(hyper(op, 0.0, cuda), 1, false), op, Storage::f32, p, g, st);
        for (std::size_t i = 0; i < n; ++i) REQUIRE(bits(p[i]) == bits(p0[i]));
        if (st.is_8bit) {
          // s1 = +0 everywhere: 0/0 → NaN → code 0 (−1.0), whose sign differs: guard → 255.
          for (const std::uint8_t q : st.q1) REQUIRE(q == 255);
          for (const float a : st.absmax1) REQUIRE(bits(a) == 0u);
        } else {
          for (const float s : st.s1) REQUIRE(bits(s) == 0u);
        }
      }
    }
  }
}

TEST_CASE("bnb1: below 4096 elements the 32-bit states, the *32bit names at every size",
          "[optim][bnb8][bnb1]") {
  const auto state_of = [](const char* name, std::size_t n) {
    Config c;
    c.opt = find_optimizer(name);
    const std::vector<float> p(n, 1.0f);
    return init_state(c, p);
  };
  CHECK_FALSE(state_of("lion8bit", 4095).bnb.is_8bit);
  CHECK(state_of("lion8bit", 4096).bnb.is_8bit);
  CHECK(state_of("rmsprop8bit", 4096).bnb.absmax1.size() == 16);
  for (const char* name : {"lion32bit", "rmsprop32bit", "adagrad32bit", "paged_lion32bit"}) {
    const State s = state_of(name, 70000);
    CHECK_FALSE(s.bnb.is_8bit);
    CHECK(s.bnb.s1.size() == 70000);
    CHECK(s.bnb.q1.empty());
  }
  // The saved arrays carry bitsandbytes' names: state1 (+ absmax1 for 8-bit states).
  Config c;
  c.opt = find_optimizer("adagrad8bit");
  State s8 = state_of("adagrad8bit", 5000);
  const auto a = c.opt.entry->arrays(c, s8);
  REQUIRE(a.size() == 2);
  CHECK(std::string(a[0].file) == "state1");
  CHECK(std::string(a[1].file) == "absmax1");
}

TEST_CASE("bnb1: 8-bit RMSprop and Adagrad divide the loaded gradient, 32-bit the decayed one",
          "[optim][bnb8][bnb1]") {
  // p = 1, wd = 0.5, g = −0.5: the state sees g' = g ⊕ p ⊗ wd = 0, so s1 = 0. The 8-bit kernel
  // divides g itself: p ← 1 ⊖ lr ⊗ (−0.5 ⊘ (0 ⊕ eps)); the 32-bit kernel overwrote its gradient
  // register with g' = 0 and leaves p = 1 (section 9.4.1, exact arithmetic).
  for (const Bnb1Op op : {Bnb1Op::rmsprop, Bnb1Op::adagrad}) {
    for (const std::size_t n : {std::size_t{4096}, std::size_t{100}}) {
      const AdamHyper h = hyper(op, 0.5);
      std::vector<float> p(n, 1.0f);
      const std::vector<float> g(n, -0.5f);
      Bnb8State st = bnb8_init(n, false, 256, true);
      bnb1_step(bnb8_scalars(h, 1, false), op, Storage::f32, p, g, st);
      const float lr = static_cast<float>(h.lr), eps = static_cast<float>(h.eps);
      const float want = st.is_8bit ? 1.0f - lr * (-0.5f / (0.0f + eps)) : 1.0f;
      for (const float x : p) REQUIRE(bits(x) == bits(want));
    }
  }
}

TEST_CASE("bnb1: Lion's step is rounded to the parameters' dtype in the 8-bit kernel",
          "[optim][bnb8][bnb1]") {
  // l = T(lr ⊗ sgn(c)): lr 1e-4 = 0x38D1B717 rounds to the bf16 0x38D2 (low half 0xB717 > 0x8000).
  native::Bnb8Scalars s = bnb8_scalars(hyper(Bnb1Op::lion), 1, false);
  float p = 1.0f, l = 0.0f;
  native::bnb1_state8(s, Bnb1Op::lion, Storage::bf16, p, 0.5f, 0.0f, l);
  CHECK(bits(l) == 0x38D20000u);
  native::bnb1_state8(s, Bnb1Op::lion, Storage::f32, p, -0.5f, 0.0f, l);
  CHECK(bits(l) == bits(-1e-4f));
  // sgn(NaN) = 0: a NaN state leaves the parameter alone.
  native::bnb1_state8(s, Bnb1Op::lion, Storage::f32, p, 0.5f, NAN, l);
  CHECK(bits(l) == 0u);
  CHECK(bits(native::bnb1_param8(s, Bnb1Op::lion, Storage::f32, 3.0f, 0.5f, NAN, l)) == bits(3.0f));
  // Decoupled weight decay (0.50): p ← T(p ⊗ (1 ⊖ lr ⊗ wd)) before the sign step.
  AdamHyper hw = hyper(Bnb1Op::lion, 0.25);
  s = bnb8_scalars(hw, 1, false);
  p = 2.0f;
  native::bnb1_state8(s, Bnb1Op::lion, Storage::f32, p, 0.0f, 0.0f, l);
  const float lr = static_cast<float>(hw.lr);
  CHECK(bits(p) == bits(2.0f * (1.0f - lr * 0.25f)));
}

// Regression (H200 run 2026-12-01: lion32bit/paged_lion32bit and the small lion8bit cases with
// wd 0.1 differed on ~50 % of fp32 parameters, 16-bit ones exact). bitsandbytes 0.50.2's
// kOptimizer32bit1State<float, LION> source is `p = p * (1 - lr*wd); p = p - lr*sgn(c)`; the sm_90
// SASS of libbitsandbytes_cuda130.so keeps p in a register and emits one FFMA
// p = fma(decay, p, -(sgn(c)·lr·update_scale)) (offset 0x1380, decay = fma(-wd, lr, 1) at 0x0290).
// Worked by hand (exact rationals, then one RN32): lr 0.01f, wd 0.1f, decay = RN32(1 - wd·lr) =
// 0x3F7FBE77; p = 0x3E8BA859, g = 0.5, s1 = 0: c > 0, l = lr; fma gives RN32(decay·p - lr) =
// 0x3E8665E0, two roundings RN32(RN32(decay·p) - lr) = 0x3E8665E1 (the exact profile: source
// order).
TEST_CASE("bnb1: bnb-cuda 32-bit Lion contracts the decoupled decay into the step for fp32",
          "[optim][bnb8][bnb1][bnbfix]") {
  AdamHyper h = hyper(Bnb1Op::lion, 0.1, true);
  h.lr = 0.01;
  h.beta1 = 0.5;
  h.beta2 = 0.9;
  const float p0 = native::f32_from_bits(0x3E8BA859u);
  {
    const native::Bnb8Scalars s = bnb8_scalars(h, 1, false);
    REQUIRE(bits(s.decay) == 0x3F7FBE77u);
    float p = p0, s1 = 0.0f;
    native::bnb1_element32(s, Bnb1Op::lion, Storage::f32, p, 0.5f, s1);
    CHECK(bits(p) == 0x3E8665E0u);
    // s1 = fma(0, β2, g ⊗ (1 ⊖ β2)): 1 ⊖ 0.9f = 0x3DCCCCD0 (exact), times 0.5 = 0x3D4CCCD0.
    CHECK(bits(s1) == 0x3D4CCCD0u);
    // The same element at every flat position (no per-lane contraction variants for Lion).
    for (int pos = 0; pos < 4; ++pos) {
      float q = p0, t = 0.0f;
      native::bnb1_element32(s, Bnb1Op::lion, Storage::f32, q, 0.5f, t, pos);
      CHECK(bits(q) == 0x3E8665E0u);
    }
    // Without weight decay: fma(l, -1, p) = RN32(p - lr), unchanged.
    AdamHyper h0 = h;
    h0.wd = 0.0;
    const native::Bnb8Scalars s0 = bnb8_scalars(h0, 1, false);
    float q = p0, t = 0.0f;
    native::bnb1_element32(s0, Bnb1Op::lion, Storage::f32, q, 0.5f, t);
    CHECK(bits(q) == bits(p0 - 0.01f));
  }
  {  // the exact profile keeps the source's two statements
    AdamHyper he = h;
    he.bnb = native::BnbKernels::exact;
    const native::Bnb8Scalars s = bnb8_scalars(he, 1, false);
    float p = p0, s1 = 0.0f;
    native::bnb1_element32(s, Bnb1Op::lion, Storage::f32, p, 0.5f, s1);
    CHECK(bits(p) == 0x3E8665E1u);
  }
}

TEST_CASE("bnb1: the engine equals the MPFR step oracle over 4 steps of heavy-tailed gradients",
          "[optim][bnb8][bnb1]") {
  const auto cb1 = dynamic_codebook(true).values;
  const oracle::steps::Codebook oc = oracle::steps::make_codebook(cb1);
  for (const Bnb1Op op : kOps) {
    for (const Storage st : {Storage::f32, Storage::bf16, Storage::f16}) {
      for (const std::size_t n : {std::size_t{4096 + 300}, std::size_t{1000}}) {
        for (const double wd : {0.0, 0.01}) {
          const AdamHyper h = hyper(op, wd);
          std::vector<float> p = optim_test::normal_values(n, 7);
          for (float& x : p) x = native::to_storage(x, st);
          std::vector<oracle::steps::Real> P;
          for (const float x : p) P.push_back(oracle::steps::Real::of_double(x));
          Bnb8State s = bnb8_init(n, false, 256, true);
          oracle::steps::Bnb8State o = oracle::steps::bnb8_init(n, false, 256, true);
          const oracle::steps::AdamHyper oh{h.lr, h.beta1, h.beta2, h.eps, h.wd};
          const auto& T = st == Storage::f32    ? oracle::steps::F32
                          : st == Storage::bf16 ? oracle::steps::BF16
                                                : oracle::steps::F16;
          for (long t = 1; t <= 4; ++t) {
            const auto g = heavy_tailed(n, 100 + static_cast<std::uint64_t>(t), st);
            std::vector<oracle::steps::Real> G;
            for (const float x : g) G.push_back(oracle::steps::Real::of_double(x));
            bnb1_step(bnb8_scalars(h, t, false), op, st, p, g, s);
            oracle::steps::bnb1_step(static_cast<oracle::steps::Bnb1Op>(static_cast<int>(op)), oh,
                                     t, T, oc, P, G, o);
            for (std::size_t i = 0; i < n; ++i) REQUIRE(bits(p[i]) == P[i].f32_bits());
            if (s.is_8bit) {
              REQUIRE(s.q1 == o.q1);
              for (std::size_t b = 0; b < o.a1.size(); ++b)
                REQUIRE(bits(s.absmax1[b]) == o.a1[b].f32_bits());
            } else {
              for (std::size_t i = 0; i < n; ++i) REQUIRE(bits(s.s1[i]) == o.s1[i].f32_bits());
            }
          }
        }
      }
    }
  }
}

TEST_CASE("ademamix: the engine equals the MPFR step oracle over 4 steps of heavy-tailed gradients",
          "[optim][bnb8][ademamix]") {
  const oracle::steps::Codebook oc1 = oracle::steps::make_codebook(dynamic_codebook(true).values);
  const oracle::steps::Codebook oc2 = oracle::steps::make_codebook(dynamic_codebook(false).values);
  for (const Storage st : {Storage::f32, Storage::bf16, Storage::f16}) {
    for (const std::size_t n : {std::size_t{4096 + 300}, std::size_t{1000}}) {
      for (const double wd : {0.0, 0.01}) {
        AdamHyper h;
        h.wd = wd;
        h.beta3 = 0.9999;
        h.alpha = 5.0;
        std::vector<float> p = optim_test::normal_values(n, 9);
        for (float& x : p) x = native::to_storage(x, st);
        std::vector<oracle::steps::Real> P;
        for (const float x : p) P.push_back(oracle::steps::Real::of_double(x));
        Bnb8State s = bnb_ademamix_init(n, 256, true);
        oracle::steps::Bnb8State o = oracle::steps::bnb8_init(n, true, 256, true);
        oracle::steps::bnb_ademamix_init(o, n);
        const oracle::steps::AdamHyper oh{h.lr, h.beta1, h.beta2, h.eps, h.wd};
        const auto& T = st == Storage::f32    ? oracle::steps::F32
                        : st == Storage::bf16 ? oracle::steps::BF16
                                              : oracle::steps::F16;
        for (long t = 1; t <= 4; ++t) {
          const auto g = heavy_tailed(n, 200 + static_cast<std::uint64_t>(t), st);
          std::vector<oracle::steps::Real> G;
          for (const float x : g) G.push_back(oracle::steps::Real::of_double(x));
          bnb_ademamix_step(bnb8_scalars(h, t, false), st, p, g, s);
          oracle::steps::bnb_ademamix_step(oh, h.beta3, h.alpha, t, T, oc1, oc2, P, G, o);
          for (std::size_t i = 0; i < n; ++i) REQUIRE(bits(p[i]) == P[i].f32_bits());
          if (s.is_8bit) {
            REQUIRE(s.q1 == o.q1);
            REQUIRE(s.q2 == o.q2);
            for (std::size_t b = 0; b < o.a1.size(); ++b)
              REQUIRE(bits(s.absmax1[b]) == o.a1[b].f32_bits());
          } else {
            for (std::size_t i = 0; i < 2 * n; ++i) REQUIRE(bits(s.s1[i]) == o.s1[i].f32_bits());
            for (std::size_t i = 0; i < n; ++i) REQUIRE(bits(s.s2[i]) == o.s2[i].f32_bits());
          }
        }
      }
    }
  }
}

TEST_CASE("ademamix: bitsandbytes' state layout; bnb-cuda refuses sizes that race on absmax1",
          "[optim][bnb8][ademamix]") {
  Config c;
  c.opt = find_optimizer("ademamix8bit");
  c.hyper = resolve_hyper(*c.opt.entry, HyperOptions{});
  CHECK(c.hyper.adam.beta3 == 0.9999);
  CHECK(c.hyper.adam.alpha == 5.0);
  CHECK(c.hyper.adam.wd == 0.01);
  State s = init_state(c, std::vector<float>(5000, 1.0f));
  const auto a = c.opt.entry->arrays(c, s);
  REQUIRE(a.size() == 4);
  CHECK(std::string(a[0].file) == "state1");
  CHECK(a[0].stack == 2);  // (2, *shape): m1 then m2
  CHECK(s.bnb.q1.size() == 10000);
  CHECK(std::string(a[1].file) == "absmax1");
  CHECK(a[1].stack == 2);  // (2, blocks)
  CHECK(s.bnb.absmax1.size() == 2 * 20);
  CHECK(std::string(a[2].file) == "state2");
  CHECK(std::string(a[3].file) == "absmax2");
  // 5000 = 19·256 + 136: bitsandbytes' m2 absmax index (n + i) / 256 overlaps m1's last block.
  apply_compat(c, "bnb-cuda");
  CHECK_THROWS_AS(init_state(c, std::vector<float>(5000, 1.0f)), InputError);
  CHECK(init_state(c, std::vector<float>(5120, 1.0f)).bnb.is_8bit);
  CHECK_FALSE(init_state(c, std::vector<float>(1000, 1.0f)).bnb.is_8bit);  // 32-bit kernel: fine
  // Regression (H200 run 2026-12-01: bitsandbytes' AdEMAMix32bit state1 had shape (n,), exmy's
  // (2, n), params/state2 differed almost everywhere). bitsandbytes 0.50.2's ademamix.py: class
  // AdEMAMix32bit(Optimizer2State) -- not AdEMAMix, whose init_state allocates
  // _get_state_double_buffer (2, *p.size()) -- so Optimizer2State.init_state gives state1 =
  // zeros_like(p) while kOptimizer32bit2State ADEMAMIX loads/stores m2 at state1[n + i] (issue
  // #2075): no defined result, refused; --variant double-buffer is AdEMAMix(optim_bits=32).
  for (const char* name : {"ademamix32bit", "paged_ademamix32bit"}) {
    c.opt = find_optimizer(name);
    c.variant = "default";
    CHECK_THROWS_AS(init_state(c, std::vector<float>(5000, 1.0f)), InputError);
    CHECK_THROWS_AS(init_state(c, std::vector<float>(1001, 1.0f)), InputError);
    c.variant = "double-buffer";
    const State s32 = init_state(c, std::vector<float>(5000, 1.0f));
    CHECK_FALSE(s32.bnb.is_8bit);
    CHECK(s32.bnb.s1.size() == 10000);
    CHECK(s32.bnb.s2.size() == 5000);
    const auto a32 = c.opt.entry->arrays(c, const_cast<State&>(s32));
    REQUIRE(a32.size() == 2);
    CHECK(a32[0].stack == 2);
  }
  // The exact profile models the kernel with the buffer it expects (m2 = state1's second half).
  Config e;
  e.opt = find_optimizer("ademamix32bit");
  e.hyper = resolve_hyper(*e.opt.entry, HyperOptions{});
  CHECK(init_state(e, std::vector<float>(5000, 1.0f)).bnb.s1.size() == 10000);
}
