// The NaN-state table of bitsandbytes' 8-bit optimizers (docs/SEMANTICS.md 9.4, 9.4.1, 9.4.2):
// resumed states and gradients whose fp32 state, before the requantization's sign guard, is NaN
// (code 0.0 ⊗ absmax inf, code ⊗ NaN absmax, a NaN gradient) or a signed zero or infinity, with
// the state-1 code the document's rule gives. Shared by the CPU regression test
// (tests/optim/test_bnb8_nan_states.cpp) and the GPU test that compares the kernels with the CPU
// reference on the same inputs (tests/gpu/bnb8_nan_states_test.cpp).
//
// The expectations are written from the rule, not from a run: the guard reads signbit(s); a NaN
// that fp32 arithmetic made is CUDA's 0x7FFFFFFF on both engines (f32_nan_as_cuda), sign 0, its
// ratio is NaN, nearest(NaN) = code 0 (−0.99375, sign 1), the signs differ and NaN > 0 is false,
// so the guard steps to 0 − 1 = 255 (uint8). An x86 host's own NaN of 0 ⊗ ∞ (0xFFC00000) or a
// negative NaN operand kept code 0 before that rule (the rows marked x86_before = 0).
#pragma once

#include <cfloat>
#include <cstdint>
#include <vector>

#include "sim/native/optim_bnb8_ops.hpp"
#include "sim/optim/optim.hpp"

namespace bnb8_nan {

enum class Opt { adam, momentum, rmsprop, adagrad, lion, ademamix };
inline constexpr Opt kOpts[] = {Opt::adam,    Opt::momentum, Opt::rmsprop,
                                Opt::adagrad, Opt::lion,     Opt::ademamix};

inline const char* opt_name(Opt o) {
  switch (o) {
    case Opt::adam:
      return "adam8bit";
    case Opt::momentum:
      return "sgd8bit (momentum)";
    case Opt::rmsprop:
      return "rmsprop8bit";
    case Opt::adagrad:
      return "adagrad8bit";
    case Opt::lion:
      return "lion8bit";
    case Opt::ademamix:
      return "ademamix8bit";
  }
  return "?";
}

inline constexpr std::uint32_t kPosNan = 0x7FC00000u;  // quiet NaN, sign 0
inline constexpr std::uint32_t kNegNan = 0xFFC00000u;  // x86's default NaN, sign 1
inline constexpr std::uint32_t kInf = 0x7F800000u;
inline constexpr std::uint8_t kZeroCode = 127;  // the signed map's 0.0
inline constexpr std::uint8_t kPosCode = 200;   // a positive value of the signed map
inline constexpr std::uint8_t kNegCode = 10;    // a negative one

// One row: every element's state-1 code (AdEMAMix: m1 and m2) and every block's absmax1 (both
// halves for AdEMAMix); state 2 (Adam's and AdEMAMix's ν) code 0 under absmax2 1 (ν = 0);
// gradient bits at even and odd indices; p = 1. want_*: the state-1 code at even / odd
// elements of whole blocks (-1: not asserted). x86_before: the code the x86 reference gave
// before f32_nan_as_cuda (-1: the same as want), for the report of what changed.
struct Row {
  const char* name;
  Opt opt;
  bool sm90;
  long step;
  double wd;
  std::uint8_t code;
  std::uint32_t absmax;
  std::uint32_t g_even, g_odd;
  int want_even, want_odd;
  int x86_before;
};

inline bool one_state(Opt o) {
  return o == Opt::momentum || o == Opt::rmsprop || o == Opt::adagrad || o == Opt::lion;
}
inline bool zeroes_nonfinite(Opt o) {  // Adam's and AdEMAMix's phase 1 test g
  return o == Opt::adam || o == Opt::ademamix;
}

// Every row of the table, for both profiles.
inline std::vector<Row> rows() {
  const std::uint32_t g = 0x3C23D70Au;  // 0.01f
  const std::uint32_t neg_one = 0xBF800000u;
  std::vector<Row> r;
  for (const bool sm90 : {false, true}) {
    for (const Opt o : kOpts) {
      // t = 2: Momentum reads its dequantized state from t = 2 on (s1 = g at t = 1).
      // 0.0 ⊗ inf = NaN, then NaN ⊗ β ⊕ … stays NaN: guard → 255.
      r.push_back({"code 0.0, absmax +inf", o, sm90, 2, 0.0, kZeroCode, kInf, g, g, 255, 255, 0});
      // c ⊗ NaN = NaN (the host keeps the operand's sign 1): guard → 255.
      r.push_back(
          {"code 0.0, absmax -NaN", o, sm90, 2, 0.0, kZeroCode, kNegNan, g, g, 255, 255, 0});
      r.push_back(
          {"negative code, absmax -NaN", o, sm90, 2, 0.0, kNegCode, kNegNan, g, g, 255, 255, 0});
      // A positive NaN operand: sign 0 on both hosts already.
      r.push_back(
          {"positive code, absmax +NaN", o, sm90, 2, 0.0, kPosCode, kPosNan, g, g, 255, 255, -1});
      // A NaN gradient: Adam/AdEMAMix zero the states (an all-zero block: +0 ⊘ 0 = NaN → code 0,
      // +0's sign differs → 255); the one-state kernels have no test, NaN reaches the state:
      // 255 (x86 kept the gradient's sign 1: 0).
      r.push_back({"gradient -NaN", o, sm90, 2, 0.0, kPosCode, 0x3F800000u, kNegNan, kNegNan, 255,
                   255, zeroes_nonfinite(o) ? -1 : 0});
      r.push_back({"gradient +NaN", o, sm90, 2, 0.0, kPosCode, 0x3F800000u, kPosNan, kPosNan, 255,
                   255, -1});
      // ±inf states (not NaN): ratio inf ⊘ inf = NaN → code 0; +inf: signs differ, s > 0 → 1;
      // −inf: same sign → 0.
      r.push_back({"state +inf", o, sm90, 2, 0.0, kPosCode, kInf, g, g, 1, 1, -1});
      r.push_back({"state -inf", o, sm90, 2, 0.0, kNegCode, kInf, g, g, 0, 0, -1});
      // +0 states in an all-zero block: 0 ⊘ 0 = NaN → 0, signs differ, +0 > 0 false → 255.
      r.push_back(
          {"state +0, all-zero block", o, sm90, 2, 0.0, kZeroCode, 0u, 0u, 0u, 255, 255, -1});
      // −0 states (code 0.0 under absmax −1, g = −0) beside positive ones: −0 ⊘ A = −0 → code
      // 127 (+0), signs differ, −0 > 0 false → 126. RMSprop's and Adagrad's sums with g ⊗ g are
      // never −0 (−0 ⊕ +0 = +0): no row.
      if (o != Opt::rmsprop && o != Opt::adagrad) {
        r.push_back({"state -0 beside positive states", o, sm90, 2, 0.0, kZeroCode, neg_one,
                     0x80000000u, g, 126, -1, -1});
      }
    }
    // Momentum at t = 1: s1 = g. The exact profile does no arithmetic on g there (wd = 0), so
    // the guard reads the gradient's own sign on both engines: −NaN → 0, +NaN → 255; with
    // wd > 0 (g ⊕ p ⊗ wd) and under bnb-cuda (g ⊗ 1) the NaN is arithmetic: 255.
    const std::uint8_t c = kPosCode;
    const std::uint32_t one = 0x3F800000u;
    r.push_back({"t = 1, gradient -NaN", Opt::momentum, sm90, 1, 0.0, c, one, kNegNan, kNegNan,
                 sm90 ? 255 : 0, sm90 ? 255 : 0, 0});
    r.push_back({"t = 1, gradient -NaN, wd 0.1", Opt::momentum, sm90, 1, 0.1, c, one, kNegNan,
                 kNegNan, 255, 255, 0});
    r.push_back({"t = 1, gradient +NaN", Opt::momentum, sm90, 1, 0.0, c, one, kPosNan, kPosNan, 255,
                 255, -1});
  }
  return r;
}

inline exmy::optim::AdamHyper hyper(const Row& r) {
  exmy::optim::AdamHyper h;
  h.lr = 1e-2;
  h.wd = r.wd;
  switch (r.opt) {
    case Opt::adam:
      break;
    case Opt::momentum:
      h.beta1 = 0.9;
      break;
    case Opt::rmsprop:
      h.beta1 = 0.99;
      break;
    case Opt::adagrad:
      h.beta1 = 0.0;
      h.eps = 1e-10;
      break;
    case Opt::lion:
      h.lr = 1e-4;
      h.beta1 = 0.9;
      h.beta2 = 0.99;
      h.eps = 0.0;
      break;
    case Opt::ademamix:
      h.beta3 = 0.9999;
      h.alpha = 5.0;
      break;
  }
  if (r.sm90) h.bnb = exmy::native::BnbKernels::cuda_sm90;
  return h;
}

inline exmy::native::Bnb1Op bnb1_op(Opt o) {
  return o == Opt::rmsprop   ? exmy::native::Bnb1Op::rmsprop
         : o == Opt::adagrad ? exmy::native::Bnb1Op::adagrad
                             : exmy::native::Bnb1Op::lion;
}

// The row's resumed state for n parameters in blocks of `block` (8-bit at every n).
inline exmy::optim::Bnb8State initial_state(const Row& r, std::size_t n, int block) {
  using namespace exmy;
  optim::Bnb8State S = r.opt == Opt::ademamix
                           ? optim::bnb_ademamix_init(n, block, false)
                           : optim::bnb8_init(n, !one_state(r.opt), block, false);
  for (auto& q : S.q1) q = r.code;
  for (auto& a : S.absmax1) a = native::f32_from_bits(r.absmax);
  for (auto& q : S.q2) q = 0;
  for (auto& a : S.absmax2) a = 1.0f;
  return S;
}

inline std::vector<float> gradient(const Row& r, std::size_t n, exmy::native::Storage st) {
  std::vector<float> g(n);
  for (std::size_t i = 0; i < n; ++i) {
    g[i] =
        exmy::native::to_storage(exmy::native::f32_from_bits(i % 2 == 0 ? r.g_even : r.g_odd), st);
  }
  return g;
}

// The CPU reference's step r.step of the row (the earlier steps' scalars are not needed: the
// state is the resumed one).
inline void cpu_step(const Row& r, exmy::native::Storage st, std::vector<float>& p,
                     const std::vector<float>& g, exmy::optim::Bnb8State& S) {
  using namespace exmy;
  const native::Bnb8Scalars sc = optim::bnb8_scalars(hyper(r), r.step, false);
  switch (r.opt) {
    case Opt::adam:
      optim::bnb_adam8_step(sc, st, p, g, S);
      return;
    case Opt::momentum:
      optim::bnb_momentum8_step(sc, st, p, g, S);
      return;
    case Opt::ademamix:
      optim::bnb_ademamix_step(sc, st, p, g, S);
      return;
    default:
      optim::bnb1_step(sc, bnb1_op(r.opt), st, p, g, S);
  }
}

}  // namespace bnb8_nan
