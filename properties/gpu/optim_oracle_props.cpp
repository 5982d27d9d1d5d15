// The GPU optimizer kernels against the multiprecision step oracle (sim/oracle/steps), directly:
// no native-engine code on the reference side, so a wrong rounding, a fused operation the
// document keeps unfused, or a swapped order in the shared EXMY_HD functions fails here even
// though it would pass the GPU-vs-native properties (both sides compile the same source).
// Small, shrinkable tensors (RapidCheck shrinks a failure to the fewest elements and steps);
// weighted boundary gradients (zeros, subnormal-squared magnitudes, huge values, inf/NaN where
// the step defines them). docs/SEMANTICS.md 13 "GPU properties against the oracle".
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gpu/optim/optim.hpp"
#include "sim/format/codebook.hpp"
#include "sim/native/float_format.hpp"
#include "sim/optim/optim.hpp"
#include "sim/oracle/steps/steps.hpp"
#include "tests/gpu/gpu_test_util.hpp"

using namespace exmy;
using exmy::gpu::testing::DeviceBytes;
namespace os = exmy::oracle::steps;
using os::Real;

namespace {

std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// Gradient values: normal-range, zero, magnitudes whose squares are fp32 subnormals or
// overflow, and (when `specials`) inf/NaN.
rc::Gen<float> gen_grad(bool specials) {
  const auto scaled = [](int lo, int hi) {
    return rc::gen::map(
        rc::gen::pair(rc::gen::inRange(lo, hi), rc::gen::inRange<std::uint32_t>(0, 1u << 24)),
        [](std::pair<int, std::uint32_t> e) {
          const float m = 1.0f + static_cast<float>(e.second & 0x7FFFFF) / 8388608.0f;
          return std::ldexp((e.second >> 23) ? -m : m, e.first);
        });
  };
  if (!specials) {
    return rc::gen::weightedOneOf<float>({{16, scaled(-20, 2)},
                                          {2, rc::gen::just(0.0f)},
                                          {1, scaled(-149, -60)},
                                          {1, scaled(60, 127)}});
  }
  return rc::gen::weightedOneOf<float>({{16, scaled(-20, 2)},
                                        {2, rc::gen::just(0.0f)},
                                        {1, scaled(-149, -60)},
                                        {1, scaled(60, 127)},
                                        {1, rc::gen::element(NAN, INFINITY, -INFINITY)}});
}

std::vector<float> gen_params(std::size_t n) {
  return *rc::gen::container<std::vector<float>>(
      n, rc::gen::map(rc::gen::inRange(-1000000, 1000000),
                      [](int k) { return static_cast<float>(k) / 524288.0f; }));
}

os::Tensor real_f32(const std::vector<float>& x) {
  os::Tensor r;
  for (float v : x) r.push_back(Real::of_f32_bits(bits_of(v)));
  return r;
}
os::Tensor real_codes(const std::vector<std::uint16_t>& x, const FloatFormat& f) {
  os::Tensor r;
  for (std::uint16_t c : x) r.push_back(Real::of_code(f, c));
  return r;
}

// Bits equal, NaNs as a class (the NaN a step writes is 9.1's business, not the oracle's).
bool same_f32(const std::vector<float>& gpu, const os::Tensor& ref) {
  if (gpu.size() != ref.size()) return false;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    if (std::isnan(gpu[i]) && ref[i].is_nan()) continue;
    if (ref[i].is_nan() || bits_of(gpu[i]) != ref[i].f32_bits()) return false;
  }
  return true;
}
bool same_codes(const std::vector<std::uint16_t>& gpu, const os::Tensor& ref,
                const FloatFormat& f) {
  if (gpu.size() != ref.size()) return false;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    const bool gnan = (gpu[i] & 0x7FFF) > (f.exp_bits == 8 ? 0x7F80u : 0x7C00u);
    if (gnan && ref[i].is_nan()) continue;
    if (ref[i].is_nan() || gpu[i] != ref[i].code(f)) return false;
  }
  return true;
}

optim::AdamHyper gen_adam() {
  optim::AdamHyper h;
  h.lr = *rc::gen::element(1e-3, 3e-4, 1e-2);
  h.beta1 = *rc::gen::element(0.9, 0.4, 0.0);
  h.beta2 = *rc::gen::element(0.999, 0.95);
  h.eps = *rc::gen::element(1e-8, 1e-6);
  h.wd = *rc::gen::element(0.0, 0.01, 0.1);
  return h;
}
os::AdamHyper oracle_adam(const optim::AdamHyper& h) {
  return os::AdamHyper{h.lr,  h.beta1, h.beta2,
                       h.eps, h.wd,    static_cast<os::Kernels>(static_cast<int>(h.kernels))};
}

}  // namespace

TEST_CASE("GPU torch Adam/AdamW/SGD (every --compat profile) equal the step oracle",
          "[gpu][optim][prop][oracle]") {
  rc::prop("fp32 parameters: gpu::adam_step / sgd_step vs oracle::torch_*_step", []() {
    const std::size_t n = *rc::gen::inRange<std::size_t>(1, 80);
    const int K = *rc::gen::inRange(1, 4);
    auto h = gen_adam();
    h.kernels = static_cast<native::TorchKernels>(*rc::gen::inRange(0, 3));
    const bool decoupled = *rc::gen::arbitrary<bool>();
    optim::SgdHyper sh{h.lr, *rc::gen::element(0.9, 0.0), *rc::gen::element(0.0, 0.1),
                       h.wd, *rc::gen::arbitrary<bool>(), h.kernels};
    if (sh.nesterov) sh.dampening = 0.0;
    // SGD's fused=True kernel has an oracle too (fp64 arithmetic, 9.3).
    if (*rc::gen::arbitrary<bool>()) sh.kernels = native::TorchKernels::cuda_fused;
    const auto p0 = gen_params(n);
    RC_TAG(static_cast<int>(h.kernels));
    DeviceBytes dp(n * 4), dg(n * 4), dm(n * 4), dv(n * 4), dps(n * 4), db(n * 4);
    const std::vector<float> zero(n, 0.0f);
    dp.upload(p0), dps.upload(p0), dm.upload(zero), dv.upload(zero), db.upload(zero);
    os::Tensor P = real_f32(p0), PS = P, M = real_f32(zero), V = M, B = M;
    const os::AdamHyper oh = oracle_adam(h);
    const os::SgdHyper osh{sh.lr,        sh.momentum,
                           sh.dampening, sh.wd,
                           sh.nesterov,  static_cast<os::Kernels>(static_cast<int>(sh.kernels))};
    for (int t = 1; t <= K; ++t) {
      const auto g = *rc::gen::container<std::vector<float>>(n, gen_grad(true));
      dg.upload(g);
      gpu::adam_step(h, decoupled, false, t, static_cast<float*>(dp.get()),
                     static_cast<const float*>(dg.get()), static_cast<float*>(dm.get()),
                     static_cast<float*>(dv.get()), n);
      gpu::sgd_step(sh, t, static_cast<float*>(dps.get()), static_cast<const float*>(dg.get()),
                    static_cast<float*>(db.get()), n);
      const os::Tensor G = real_f32(g);
      os::torch_adam_step(oh, decoupled, os::F32, t, P, G, M, V);
      os::torch_sgd_step(osh, os::F32, t, PS, G, B);
    }
    RC_ASSERT(same_f32(dp.download<float>(n), P));
    RC_ASSERT(same_f32(dm.download<float>(n), M));
    RC_ASSERT(same_f32(dv.download<float>(n), V));
    RC_ASSERT(same_f32(dps.download<float>(n), PS));
    RC_ASSERT(same_f32(db.download<float>(n), B));
  });
}

TEST_CASE("GPU torch Adam/SGD on bf16/fp16 parameters equal the step oracle",
          "[gpu][optim][prop][oracle]") {
  rc::prop("16-bit p, g, states: gpu 16-bit kernels vs oracle with T = bf16/fp16", []() {
    const std::size_t n = *rc::gen::inRange<std::size_t>(1, 80);
    const int K = *rc::gen::inRange(1, 4);
    const bool bf16 = *rc::gen::arbitrary<bool>();
    const native::Storage st = bf16 ? native::Storage::bf16 : native::Storage::f16;
    const FloatFormat& T = bf16 ? formats::bf16 : formats::fp16;
    auto h = gen_adam();
    h.kernels = static_cast<native::TorchKernels>(*rc::gen::inRange(0, 3));
    const bool decoupled = *rc::gen::arbitrary<bool>();
    optim::SgdHyper sh{h.lr, 0.9, 0.0, h.wd, *rc::gen::arbitrary<bool>(), h.kernels};
    if (*rc::gen::arbitrary<bool>()) sh.kernels = native::TorchKernels::cuda_fused;  // 9.3
    // Parameters and gradients are finite codes of T, either sign (inf/NaN arise in the steps
    // themselves: fp16 overflow, eps rounding to 0 in fp16).
    const int finite_end = bf16 ? 0x7F80 : 0x7C00;
    const auto code_gen = rc::gen::map(
        rc::gen::pair(rc::gen::inRange<int>(0, finite_end), rc::gen::arbitrary<bool>()),
        [](std::pair<int, bool> c) {
          return static_cast<std::uint16_t>(c.first | (c.second ? 0x8000 : 0));
        });
    const auto p = *rc::gen::container<std::vector<std::uint16_t>>(n, code_gen);
    DeviceBytes dp(n * 2), dg(n * 2), dm(n * 2), dv(n * 2), dps(n * 2), db(n * 2);
    const std::vector<std::uint16_t> zero(n, 0);
    dp.upload(p), dps.upload(p), dm.upload(zero), dv.upload(zero), db.upload(zero);
    os::Tensor P = real_codes(p, T), PS = P, M = real_codes(zero, T), V = M, B = M;
    const os::AdamHyper oh = oracle_adam(h);
    const os::SgdHyper osh{sh.lr,        sh.momentum,
                           sh.dampening, sh.wd,
                           sh.nesterov,  static_cast<os::Kernels>(static_cast<int>(sh.kernels))};
    for (int t = 1; t <= K; ++t) {
      const auto g = *rc::gen::container<std::vector<std::uint16_t>>(n, code_gen);
      dg.upload(g);
      gpu::adam_step(h, decoupled, false, st, t, static_cast<std::uint16_t*>(dp.get()),
                     static_cast<const std::uint16_t*>(dg.get()),
                     static_cast<std::uint16_t*>(dm.get()), static_cast<std::uint16_t*>(dv.get()),
                     n);
      gpu::sgd_step(sh, st, t, static_cast<std::uint16_t*>(dps.get()),
                    static_cast<const std::uint16_t*>(dg.get()),
                    static_cast<std::uint16_t*>(db.get()), n);
      const os::Tensor G = real_codes(g, T);
      os::torch_adam_step(oh, decoupled, T, t, P, G, M, V);
      os::torch_sgd_step(osh, T, t, PS, G, B);
    }
    RC_ASSERT(same_codes(dp.download<std::uint16_t>(n), P, T));
    RC_ASSERT(same_codes(dm.download<std::uint16_t>(n), M, T));
    RC_ASSERT(same_codes(dv.download<std::uint16_t>(n), V, T));
    RC_ASSERT(same_codes(dps.download<std::uint16_t>(n), PS, T));
    RC_ASSERT(same_codes(db.download<std::uint16_t>(n), B, T));
  });
}

TEST_CASE("GPU StableAdamW equals the step oracle (parameters, states, RMS)",
          "[gpu][optim][prop][oracle]") {
  rc::prop("gpu::stable_adamw_step vs oracle::stable_adamw_step", []() {
    const std::size_t n = *rc::gen::inRange<std::size_t>(1, 600);
    const int K = *rc::gen::inRange(1, 4);
    const auto h = gen_adam();
    const auto p0 = gen_params(n);
    DeviceBytes dp(n * 4), dg(n * 4), dv(n * 4), du(n * 4);
    const std::vector<float> zero(n, 0.0f);
    dp.upload(p0), dv.upload(zero), du.upload(zero);
    os::Tensor P = real_f32(p0), Vt = real_f32(zero), U = Vt;
    const os::AdamHyper oh = oracle_adam(h);
    for (int t = 1; t <= K; ++t) {
      const auto g = *rc::gen::container<std::vector<float>>(n, gen_grad(false));
      dg.upload(g);
      const float rms = gpu::stable_adamw_step(
          h, t, static_cast<float*>(dp.get()), static_cast<const float*>(dg.get()),
          static_cast<float*>(dv.get()), static_cast<float*>(du.get()), n);
      const Real orms = os::stable_adamw_step(oh, t, P, real_f32(g), Vt, U);
      RC_ASSERT(same_f32(std::vector<float>{rms}, os::Tensor{orms}));
    }
    RC_ASSERT(same_f32(dp.download<float>(n), P));
    RC_ASSERT(same_f32(dv.download<float>(n), Vt));
    RC_ASSERT(same_f32(du.download<float>(n), U));
  });
}

TEST_CASE("GPU 8-bit Adam and Momentum equal the step oracle", "[gpu][optim][prop][oracle]") {
  rc::prop("gpu::bnb_*8_step vs oracle::bnb_*8_step, 8-bit path at every size", []() {
    const std::size_t n = *rc::gen::inRange<std::size_t>(1, 700);  // partial 256-blocks
    const int K = *rc::gen::inRange(1, 4);
    const auto h = gen_adam();
    const bool momentum = *rc::gen::arbitrary<bool>();
    const int block = 256;
    // small_fallback off: the 8-bit path even below 4096 elements, so small tensors shrink.
    auto st = optim::bnb8_init(n, !momentum, block, false);
    os::Bnb8State ost = os::bnb8_init(n, !momentum, block, false);
    static const os::Codebook code1 = os::make_codebook(dynamic_codebook(true).values);
    static const os::Codebook code2 = os::make_codebook(dynamic_codebook(false).values);
    const auto p0 = gen_params(n);
    DeviceBytes dp(n * 4), dg(n * 4), dq1(n), dq2(n), da1(st.absmax1.size() * 4 + 4),
        da2(st.absmax2.size() * 4 + 4);
    dp.upload(p0);
    dq1.upload(st.q1);
    da1.upload(st.absmax1);
    if (!momentum) dq2.upload(st.q2), da2.upload(st.absmax2);
    gpu::Bnb8DeviceState ds;
    ds.block = block;
    ds.is_8bit = true;
    ds.q1 = static_cast<std::uint8_t*>(dq1.get());
    ds.q2 = static_cast<std::uint8_t*>(dq2.get());
    ds.absmax1 = static_cast<float*>(da1.get());
    ds.absmax2 = static_cast<float*>(da2.get());
    os::Tensor P = real_f32(p0);
    os::AdamHyper oh = oracle_adam(h);
    if (momentum) oh.beta1 = 0.9;
    optim::AdamHyper gh = h;
    if (momentum) gh.beta1 = 0.9;
    for (int t = 1; t <= K; ++t) {
      // Finite gradients: a NaN state makes the sign guard read an unspecified NaN sign (9.4).
      const auto g = *rc::gen::container<std::vector<float>>(n, gen_grad(false));
      dg.upload(g);
      const auto sc = optim::bnb8_scalars(gh, t, false);
      if (momentum) {
        gpu::bnb_momentum8_step(sc, static_cast<float*>(dp.get()),
                                static_cast<const float*>(dg.get()), ds, n);
        os::bnb_momentum8_step(oh, t, os::F32, code1, P, real_f32(g), ost);
      } else {
        gpu::bnb_adam8_step(sc, static_cast<float*>(dp.get()), static_cast<const float*>(dg.get()),
                            ds, n);
        os::bnb_adam8_step(oh, t, os::F32, code1, code2, P, real_f32(g), ost);
      }
    }
    RC_ASSERT(same_f32(dp.download<float>(n), P));
    RC_ASSERT(dq1.download<std::uint8_t>(n) == ost.q1);
    RC_ASSERT(same_f32(da1.download<float>(ost.a1.size()), ost.a1));
    if (!momentum) {
      RC_ASSERT(dq2.download<std::uint8_t>(n) == ost.q2);
      RC_ASSERT(same_f32(da2.download<float>(ost.a2.size()), ost.a2));
    }
  });
}
#endif
