// K GPU optimizer steps == K reference steps, bit for bit, in the parameters and every state word:
// random sizes (1, partial 8-bit blocks, partial 32-element groups, several blocks), random
// hyperparameters, gradients with weighted specials, every optimizer and split format.
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/optim/optim.hpp"
#include "sim/optim/optim.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/support/rc_classify.hpp"

using namespace exmy;
using exmy::gpu::testing::DeviceBytes;

namespace {

std::uint32_t to_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// Mostly normal-range gradients of mixed scale, some zeros, rare inf/NaN (weighted), and rare
// huge/tiny magnitudes (2^-149 .. 2^100, subnormals included) mixed into the same tensor.
rc::Gen<float> gen_scaled(int lo_exp, int hi_exp) {
  return rc::gen::map(
      rc::gen::pair(rc::gen::inRange(lo_exp, hi_exp), rc::gen::arbitrary<std::uint32_t>()),
      [](std::pair<int, std::uint32_t> e) {
        const float m = 1.0f + static_cast<float>(e.second & 0xFFFFFF) / 16777216.0f;
        return std::ldexp((e.second >> 31) ? -m : m, e.first);
      });
}
rc::Gen<float> gen_normal_grad() {
  return gen_scaled(-30, 10);
}
rc::Gen<float> gen_grad(bool specials) {
  if (!specials) {
    return rc::gen::weightedOneOf<float>(
        {{20, gen_normal_grad()}, {2, rc::gen::just(0.0f)}, {1, gen_scaled(-149, 100)}});
  }
  return rc::gen::weightedOneOf<float>({{20, gen_normal_grad()},
                                        {2, rc::gen::just(0.0f)},
                                        {1, gen_scaled(-149, 100)},
                                        {1, rc::gen::element(NAN, INFINITY, -INFINITY)}});
}

// The same mixture drawn from a seeded std::mt19937_64, for tensors too large for RapidCheck's
// element-wise generators (shrinking then works on the seed).
float fast_grad(std::mt19937_64& r, bool specials) {
  const std::uint64_t u = r();
  const unsigned pick = static_cast<unsigned>(u % (specials ? 24 : 23));
  const std::uint32_t bits = static_cast<std::uint32_t>(u >> 32);
  const float m = 1.0f + static_cast<float>(bits & 0xFFFFFF) / 16777216.0f;
  const float sm = (bits >> 31) ? -m : m;
  if (pick < 20) return std::ldexp(sm, static_cast<int>((u >> 8) % 41) - 30);
  if (pick < 22) return 0.0f;
  if (pick < 23) return std::ldexp(sm, static_cast<int>((u >> 8) % 250) - 149);
  const float sp[] = {NAN, INFINITY, -INFINITY};
  return sp[(u >> 8) % 3];
}

// Zero runs of 256 aligned elements (whole 8-bit blocks at B = 256) in about a third of tensors.
void zero_blocks(std::vector<float>& g) {
  if (g.size() < 256 || *rc::gen::inRange(0, 3) != 0) return;
  const std::size_t blocks = g.size() / 256;
  const int count = *rc::gen::inRange(1, 4);
  for (int c = 0; c < count; ++c) {
    const std::size_t b = *rc::gen::inRange<std::size_t>(0, blocks);
    std::fill(g.begin() + b * 256, g.begin() + b * 256 + 256, 0.0f);
  }
}

constexpr std::size_t kLargeTensor = 20000;

std::vector<float> grads(std::size_t n, bool specials) {
  std::vector<float> g;
  if (n <= kLargeTensor) {
    g = *rc::gen::container<std::vector<float>>(n, gen_grad(specials));
  } else {
    std::mt19937_64 r(*rc::gen::arbitrary<std::uint64_t>());
    g.resize(n);
    for (auto& x : g) x = fast_grad(r, specials);
  }
  zero_blocks(g);
  return g;
}

// 1, small odd sizes, partial 8-bit blocks and 32-element groups, and rarely up to 3M elements.
std::size_t gen_size() {
  return *rc::gen::weightedOneOf<std::size_t>(
      {{4, rc::gen::just<std::size_t>(1)},
       {30, rc::gen::inRange<std::size_t>(1, 100)},
       {30, rc::gen::inRange<std::size_t>(4000, 9000)},
       {2, rc::gen::inRange<std::size_t>(100000, 3000000)}});
}

template <class T>
std::vector<T> dl(const DeviceBytes& d, std::size_t n) {
  return d.download<T>(n);
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}
// fp32 results: every bit equal, except that NaN payloads and signs are unspecified (x86 makes
// 0xFFC00000, CUDA 0x7FFFFFFF; docs/SEMANTICS.md 9.1).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (to_bits(a[i]) != to_bits(b[i]) && !(std::isnan(a[i]) && std::isnan(b[i]))) return false;
  }
  return true;
}

std::vector<float> params(std::size_t n) {
  if (n > kLargeTensor) {
    std::mt19937_64 r(*rc::gen::arbitrary<std::uint64_t>());
    std::vector<float> p(n);
    for (auto& x : p) x = static_cast<float>(static_cast<int>(r() % 2000001) - 1000000) / 524288.0f;
    return p;
  }
  return *rc::gen::container<std::vector<float>>(
      n, rc::gen::map(rc::gen::inRange(-1000000, 1000000),
                      [](int k) { return static_cast<float>(k) / 524288.0f; }));
}

optim::AdamHyper gen_adam() {
  optim::AdamHyper h;
  h.lr = *rc::gen::element(1e-3, 3e-4, 1e-2);
  h.beta1 = *rc::gen::element(0.9, 0.8, 0.0);
  h.beta2 = *rc::gen::element(0.999, 0.99, 0.95);
  h.eps = *rc::gen::element(1e-8, 1e-6);
  h.wd = *rc::gen::element(0.0, 0.01, 0.1);
  return h;
}

}  // namespace

TEST_CASE("GPU Adam/AdamW/SGD steps equal the reference", "[gpu][optim][prop]") {
  rc::prop("torch adam(w) default and fused, sgd", []() {
    exmy::testing::CaseLabels labels;
    const std::size_t n = gen_size();
    const int K = *rc::gen::inRange(1, 4);
    const auto h = gen_adam();
    const bool decoupled = *rc::gen::arbitrary<bool>();
    const bool fused = *rc::gen::arbitrary<bool>();
    auto p = params(n);
    std::vector<float> m(n, 0.0f), v(n, 0.0f), buf(n, 0.0f);
    auto ps = p;
    DeviceBytes dp(n * 4), dg(n * 4), dm(n * 4), dv(n * 4), db(n * 4), dps(n * 4);
    dp.upload(p);
    dm.upload(m);
    dv.upload(v);
    db.upload(buf);
    dps.upload(ps);
    optim::SgdHyper sh{h.lr, *rc::gen::element(0.9, 0.0), 0.0, h.wd, *rc::gen::arbitrary<bool>()};
    // SGD(fused=True)'s fp64 model or the ATen one (docs/SEMANTICS.md 9.3).
    sh.kernels = fused ? native::TorchKernels::cuda_fused : native::TorchKernels::cpu;
    for (int t = 1; t <= K; ++t) {
      const auto g = grads(n, true);
      labels.add_fp32(g.data(), g.size());
      dg.upload(g);
      gpu::adam_step(h, decoupled, fused, t, static_cast<float*>(dp.get()),
                     static_cast<const float*>(dg.get()), static_cast<float*>(dm.get()),
                     static_cast<float*>(dv.get()), n);
      gpu::sgd_step(sh, t, static_cast<float*>(dps.get()), static_cast<const float*>(dg.get()),
                    static_cast<float*>(db.get()), n);
      if (fused) {
        optim::adam_fused_step(h, decoupled, optim::Storage::f32, t, p, g, m, v);
      } else {
        optim::adam_step(h, decoupled, optim::Storage::f32, t, p, g, m, v);
      }
      optim::sgd_step(sh, optim::Storage::f32, t, ps, g, buf);
    }
    labels.emit();
    RC_ASSERT(same_bits(dl<float>(dp, n), p));
    RC_ASSERT(same_bits(dl<float>(dm, n), m));
    RC_ASSERT(same_bits(dl<float>(dv, n), v));
    RC_ASSERT(same_bits(dl<float>(dps, n), ps));
    RC_ASSERT(same_bits(dl<float>(db, n), buf));
  });
}

TEST_CASE("GPU 8-bit Adam/Momentum steps equal the reference", "[gpu][optim][prop]") {
  rc::prop("bnb 8-bit blockwise and 32-bit fallback", []() {
    exmy::testing::CaseLabels labels;
    const std::size_t n = gen_size();
    const int K = *rc::gen::inRange(1, 4);
    const auto h = gen_adam();
    const int block = *rc::gen::element(256, 2048);
    const bool fallback = *rc::gen::arbitrary<bool>();
    const bool momentum = *rc::gen::arbitrary<bool>();
    const bool torch_order = !momentum && *rc::gen::arbitrary<bool>();
    auto p = params(n);
    auto st = optim::bnb8_init(n, !momentum, block, fallback);
    // A 4-byte offset misaligns p and g for float4 and sends every block to the element-wise
    // kernel; otherwise full blocks take the vectorised kernel and the partial one the other.
    const std::size_t pad = *rc::gen::weightedElement<std::size_t>({{3, 0}, {1, 4}});
    DeviceBytes dp(n * 4, pad), dg(n * 4, pad), dq1(n, pad), dq2(n, pad),
        da1(st.absmax1.size() * 4 + 4), da2(st.absmax2.size() * 4 + 4), ds1(n * 4), ds2(n * 4);
    dp.upload(p);
    gpu::Bnb8DeviceState ds;
    ds.block = block;
    ds.is_8bit = st.is_8bit;
    if (st.is_8bit) {
      dq1.upload(st.q1);
      da1.upload(st.absmax1);
      if (!momentum) {
        dq2.upload(st.q2);
        da2.upload(st.absmax2);
      }
    } else {
      ds1.upload(st.s1);
      if (!momentum) ds2.upload(st.s2);
    }
    ds.q1 = static_cast<std::uint8_t*>(dq1.get());
    ds.q2 = static_cast<std::uint8_t*>(dq2.get());
    ds.absmax1 = static_cast<float*>(da1.get());
    ds.absmax2 = static_cast<float*>(da2.get());
    ds.s1 = static_cast<float*>(ds1.get());
    ds.s2 = static_cast<float*>(ds2.get());
    for (int t = 1; t <= K; ++t) {
      const auto g = grads(n, !momentum);
      labels.add_fp32(g.data(), g.size());
      labels.add_zero_groups(g.data(), g.size(), static_cast<std::size_t>(block));
      dg.upload(g);
      const auto sc = optim::bnb8_scalars(h, t, torch_order);
      if (momentum) {
        gpu::bnb_momentum8_step(sc, static_cast<float*>(dp.get()),
                                static_cast<const float*>(dg.get()), ds, n);
        optim::bnb_momentum8_step(sc, optim::Storage::f32, p, g, st);
      } else {
        gpu::bnb_adam8_step(sc, static_cast<float*>(dp.get()), static_cast<const float*>(dg.get()),
                            ds, n);
        optim::bnb_adam8_step(sc, optim::Storage::f32, p, g, st);
      }
    }
    labels.emit();
    RC_ASSERT(same_bits(dl<float>(dp, n), p));
    if (st.is_8bit) {
      RC_ASSERT(same_bits(dl<std::uint8_t>(dq1, n), st.q1));
      RC_ASSERT(same_bits(dl<float>(da1, st.absmax1.size()), st.absmax1));
      if (!momentum) {
        RC_ASSERT(same_bits(dl<std::uint8_t>(dq2, n), st.q2));
        RC_ASSERT(same_bits(dl<float>(da2, st.absmax2.size()), st.absmax2));
      }
    } else {
      RC_ASSERT(same_bits(dl<float>(ds1, n), st.s1));
      if (!momentum) RC_ASSERT(same_bits(dl<float>(ds2, n), st.s2));
    }
  });
}

TEST_CASE("GPU StableAdamW steps and RMS equal the reference", "[gpu][optim][prop]") {
  rc::prop("stableadamw", []() {
    exmy::testing::CaseLabels labels;
    const std::size_t n = *rc::gen::oneOf(rc::gen::inRange<std::size_t>(1, 300),
                                          rc::gen::inRange<std::size_t>(60000, 70000));
    const int K = *rc::gen::inRange(1, 4);
    const auto h = gen_adam();
    auto p = params(n);
    std::vector<float> v(n, 0.0f), u(n, 0.0f);
    DeviceBytes dp(n * 4), dg(n * 4), dv(n * 4), du(n * 4);
    dp.upload(p);
    dv.upload(v);
    du.upload(u);
    for (int t = 1; t <= K; ++t) {
      const auto g = grads(n, false);
      labels.add_fp32(g.data(), g.size());
      dg.upload(g);
      const float rg = gpu::stable_adamw_step(
          h, t, static_cast<float*>(dp.get()), static_cast<const float*>(dg.get()),
          static_cast<float*>(dv.get()), static_cast<float*>(du.get()), n);
      const float rr = optim::stable_adamw_step(h, t, p, g, v, u);
      // NaN RMS (inf/NaN or overflowing squares among the gradients): payload unspecified.
      RC_ASSERT(to_bits(rg) == to_bits(rr) || (std::isnan(rg) && std::isnan(rr)));
    }
    labels.emit();
    RC_ASSERT(same_bits(dl<float>(dp, n), p));
    RC_ASSERT(same_bits(dl<float>(dv, n), v));
    RC_ASSERT(same_bits(dl<float>(du, n), u));
  });
}

TEST_CASE("GPU split-format Adam/SGD steps equal the reference", "[gpu][optim][prop]") {
  rc::prop("bf16+k / fp16+k / e5m2+k, truncation and sr", []() {
    exmy::testing::CaseLabels labels;
    const std::size_t n = gen_size();
    const int K = *rc::gen::inRange(1, 4);
    const auto h = gen_adam();
    native::SplitFormat f;
    f.hi = *rc::gen::element(native::Storage::bf16, native::Storage::f16);
    f.fp8 = f.hi == native::Storage::f16 && *rc::gen::arbitrary<bool>();  // e5m2+k
    // k = 8 and 16 without sr (byte/halfword fields: their own kernel) drawn more often.
    const int kmax = f.hi == native::Storage::bf16 ? 16 : f.fp8 ? 21 : 13;
    f.k = *rc::gen::weightedOneOf<int>(
        {{3, rc::gen::inRange(0, kmax + 1)}, {2, rc::gen::element(8, kmax == 16 ? 16 : 8)}});
    f.sr = f.k > 0 && *rc::gen::weightedElement<bool>({{1, true}, {2, false}});
    const bool sgd = *rc::gen::arbitrary<bool>();
    const std::uint64_t seed = *rc::gen::arbitrary<std::uint64_t>();
    auto sp = optim::split_tensor(params(n), f, seed);
    std::vector<float> m(n, 0.0f), v(n, 0.0f);
    const std::size_t words = sp.extra.size();
    const std::size_t pad = *rc::gen::weightedElement<std::size_t>({{3, 0}, {1, 4}});
    DeviceBytes dh(n * 2, pad), dx(words * 4 + 4, pad), dg(n * 4, pad), dm(n * 4, pad),
        dv(n * 4, pad);
    dh.upload(sp.hi);
    if (words) dx.upload(sp.extra);
    dm.upload(m);
    dv.upload(v);
    optim::SgdHyper sh{h.lr, 0.9, 0.0, h.wd, false};
    for (int t = 1; t <= K; ++t) {
      const auto g = grads(n, false);
      labels.add_fp32(g.data(), g.size());
      dg.upload(g);
      if (sgd) {
        gpu::split_sgd_step(sh, t, seed, f, static_cast<std::uint16_t*>(dh.get()),
                            static_cast<std::uint32_t*>(dx.get()),
                            static_cast<const float*>(dg.get()), static_cast<float*>(dm.get()), n);
        optim::split_sgd_step(sh, t, seed, sp, g, m);
      } else {
        gpu::split_adam_step(h, true, t, seed, f, static_cast<std::uint16_t*>(dh.get()),
                             static_cast<std::uint32_t*>(dx.get()),
                             static_cast<const float*>(dg.get()), static_cast<float*>(dm.get()),
                             static_cast<float*>(dv.get()), n);
        optim::split_adam_step(h, true, t, seed, sp, g, m, v);
      }
    }
    labels.emit();
    RC_ASSERT(same_bits(dl<std::uint16_t>(dh, n), sp.hi));
    if (words) RC_ASSERT(same_bits(dl<std::uint32_t>(dx, words), sp.extra));
    RC_ASSERT(same_bits(dl<float>(dm, n), m));
    if (!sgd) RC_ASSERT(same_bits(dl<float>(dv, n), v));
  });
}

namespace {

// 16-bit codes of `st` (RN from the fp32 draws), and their exact fp32 values for the reference.
std::vector<std::uint16_t> to_codes(const std::vector<float>& x, native::Storage st) {
  std::vector<std::uint16_t> c(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    c[i] = st == native::Storage::bf16 ? native::bf16_from_f32(x[i]) : native::f16_from_f32(x[i]);
  }
  return c;
}
std::vector<float> from_codes(const std::vector<std::uint16_t>& c, native::Storage st) {
  std::vector<float> x(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) {
    x[i] = st == native::Storage::bf16 ? native::f32_from_bf16(c[i]) : native::f32_from_f16(c[i]);
  }
  return x;
}
// Codes equal, except that any two NaNs are equal (payload and sign unspecified, 9.1).
bool same_codes(const std::vector<std::uint16_t>& gpu, const std::vector<float>& ref,
                native::Storage st) {
  const auto want = to_codes(ref, st);
  if (gpu.size() != want.size()) return false;
  const std::uint16_t exp_mask = st == native::Storage::bf16 ? 0x7F80u : 0x7C00u;
  const auto is_nan = [&](std::uint16_t c) {
    return (c & exp_mask) == exp_mask && (c & ~exp_mask & 0x7FFFu) != 0;
  };
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    if (gpu[i] != want[i] && !(is_nan(gpu[i]) && is_nan(want[i]))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("GPU Adam/AdamW/SGD on bf16/fp16 parameters equal the reference", "[gpu][optim][prop]") {
  rc::prop("torch adam(w), sgd; 16-bit p, g and states", []() {
    exmy::testing::CaseLabels labels;
    const native::Storage st = *rc::gen::element(native::Storage::bf16, native::Storage::f16);
    const std::size_t n = gen_size();
    const int K = *rc::gen::inRange(1, 4);
    const auto h = gen_adam();
    const bool decoupled = *rc::gen::arbitrary<bool>();
    const bool fused = *rc::gen::arbitrary<bool>();  // fused=True models (9.2, 9.3)
    optim::SgdHyper sh{h.lr, *rc::gen::element(0.9, 0.0), *rc::gen::element(0.0, 0.1), h.wd,
                       *rc::gen::arbitrary<bool>()};
    if (sh.nesterov) sh.dampening = 0.0;
    sh.kernels = fused ? native::TorchKernels::cuda_fused : native::TorchKernels::cpu;
    const auto pc = to_codes(params(n), st);
    auto p = from_codes(pc, st), ps = p;
    std::vector<float> m(n, 0.0f), v(n, 0.0f), buf(n, 0.0f);
    const std::vector<std::uint16_t> zeros(n, 0);
    // Odd offsets of 2 bytes test the scalar (unaligned) path.
    const std::size_t pad = *rc::gen::element<std::size_t>(0, 2);
    DeviceBytes dp(n * 2, pad), dg(n * 2, pad), dm(n * 2, pad), dv(n * 2, pad), dps(n * 2, pad),
        db(n * 2, pad);
    dp.upload(pc);
    dps.upload(pc);
    dm.upload(zeros);
    dv.upload(zeros);
    db.upload(zeros);
    const auto u16 = [](const DeviceBytes& d) { return static_cast<std::uint16_t*>(d.get()); };
    for (int t = 1; t <= K; ++t) {
      const auto gc = to_codes(grads(n, true), st);
      const auto g = from_codes(gc, st);
      labels.add_fp32(g.data(), g.size());
      dg.upload(gc);
      gpu::adam_step(h, decoupled, fused, st, t, u16(dp), u16(dg), u16(dm), u16(dv), n);
      gpu::sgd_step(sh, st, t, u16(dps), u16(dg), u16(db), n);
      if (fused) {
        optim::adam_fused_step(h, decoupled, st, t, p, g, m, v);
      } else {
        optim::adam_step(h, decoupled, st, t, p, g, m, v);
      }
      optim::sgd_step(sh, st, t, ps, g, buf);
    }
    labels.emit();
    RC_ASSERT(same_codes(dl<std::uint16_t>(dp, n), p, st));
    RC_ASSERT(same_codes(dl<std::uint16_t>(dm, n), m, st));
    RC_ASSERT(same_codes(dl<std::uint16_t>(dv, n), v, st));
    RC_ASSERT(same_codes(dl<std::uint16_t>(dps, n), ps, st));
    if (sh.momentum != 0.0) RC_ASSERT(same_codes(dl<std::uint16_t>(db, n), buf, st));
  });
}
