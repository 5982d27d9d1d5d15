// Deterministic GPU checks of Adam/AdamW/SGD on bf16/fp16 parameters against the host reference:
// every 16-bit gradient code in one tensor, a 3M-element tensor with an odd size, aligned and
// unaligned pointers, and the storage argument check. (The RapidCheck properties in
// properties/gpu/optim_props.cu cover random sizes and hyperparameters.)
#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu/optim/optim.hpp"
#include "sim/common/error.hpp"
#include "sim/optim/optim.hpp"
#include "tests/gpu/gpu_test_util.hpp"

using namespace exmy;
using exmy::gpu::testing::DeviceBytes;
using native::Storage;

namespace {

std::uint16_t encode(float x, Storage st) {
  return st == Storage::bf16 ? native::bf16_from_f32(x) : native::f16_from_f32(x);
}
float decode(std::uint16_t c, Storage st) {
  return st == Storage::bf16 ? native::f32_from_bf16(c) : native::f32_from_f16(c);
}
bool is_nan_code(std::uint16_t c, Storage st) {
  const std::uint16_t e = st == Storage::bf16 ? 0x7F80u : 0x7C00u;
  return (c & e) == e && (c & 0x7FFFu & ~e) != 0;
}

// Index of the first element whose GPU code differs from the reference value's code (NaNs of
// any payload/sign are equal, docs/SEMANTICS.md 9.1), or n.
std::size_t first_diff(const std::vector<std::uint16_t>& gpu, const std::vector<float>& ref,
                       Storage st) {
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    const std::uint16_t w = encode(ref[i], st);
    if (gpu[i] != w && !(is_nan_code(gpu[i], st) && is_nan_code(w, st))) return i;
  }
  return gpu.size();
}

struct Case {
  Storage st;
  std::vector<std::uint16_t> p;                // initial parameter codes
  std::vector<std::vector<std::uint16_t>> gs;  // gradient codes, one tensor per step
};

// K = 3 steps of AdamW, Adam (L2) and SGD (nesterov) on the GPU and the host; every code equal.
void run_case(const Case& c, std::size_t pad) {
  const std::size_t n = c.p.size();
  INFO("storage " << (c.st == Storage::bf16 ? "bf16" : "fp16") << " n=" << n << " pad=" << pad);
  optim::AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  optim::SgdHyper sh{1e-2, 0.9, 0.0, 0.01, true};
  for (const bool decoupled : {true, false}) {
    std::vector<float> p(n), ps(n), m(n, 0.0f), v(n, 0.0f), buf(n, 0.0f);
    for (std::size_t i = 0; i < n; ++i) p[i] = ps[i] = decode(c.p[i], c.st);
    const std::vector<std::uint16_t> zeros(n, 0);
    DeviceBytes dp(n * 2, pad), dg(n * 2, pad), dm(n * 2, pad), dv(n * 2, pad), dps(n * 2, pad),
        db(n * 2, pad);
    dp.upload(c.p);
    dps.upload(c.p);
    dm.upload(zeros);
    dv.upload(zeros);
    db.upload(zeros);
    const auto u16 = [](const DeviceBytes& d) { return static_cast<std::uint16_t*>(d.get()); };
    long t = 0;
    for (const auto& gc : c.gs) {
      ++t;
      std::vector<float> g(n);
      for (std::size_t i = 0; i < n; ++i) g[i] = decode(gc[i], c.st);
      dg.upload(gc);
      gpu::adam_step(h, decoupled, false, c.st, t, u16(dp), u16(dg), u16(dm), u16(dv), n);
      gpu::sgd_step(sh, c.st, t, u16(dps), u16(dg), u16(db), n);
      optim::adam_step(h, decoupled, c.st, t, p, g, m, v);
      optim::sgd_step(sh, c.st, t, ps, g, buf);
    }
    INFO("decoupled " << decoupled);
    CHECK(first_diff(dp.download<std::uint16_t>(n), p, c.st) == n);
    CHECK(first_diff(dm.download<std::uint16_t>(n), m, c.st) == n);
    CHECK(first_diff(dv.download<std::uint16_t>(n), v, c.st) == n);
    CHECK(first_diff(dps.download<std::uint16_t>(n), ps, c.st) == n);
    CHECK(first_diff(db.download<std::uint16_t>(n), buf, c.st) == n);
  }
}

}  // namespace

TEST_CASE("GPU 16-bit Adam/SGD: every gradient code", "[gpu][optim]") {
  for (const Storage st : {Storage::bf16, Storage::f16}) {
    // 65537 elements: gradient code i at element i (i < 65536; one more so the size is odd), in
    // step order identity, reversed, identity; parameters a fixed shuffle of ordinary values.
    const std::size_t n = 65537;
    std::printf("optim16 every-code case: seed 4242\n");
    std::mt19937_64 rng(4242);
    std::normal_distribution<float> d(0.0f, 1.0f);
    Case c{st, std::vector<std::uint16_t>(n), {}};
    for (auto& x : c.p) x = encode(d(rng), st);
    for (int k = 0; k < 3; ++k) {
      std::vector<std::uint16_t> g(n);
      for (std::size_t i = 0; i < n; ++i) {
        g[i] = static_cast<std::uint16_t>(k == 1 ? 65535 - (i & 0xFFFF) : (i & 0xFFFF));
      }
      c.gs.push_back(g);
    }
    run_case(c, 0);
    run_case(c, 2);  // 2-byte offset: the scalar path
  }
}

TEST_CASE("GPU 16-bit Adam/SGD: 3M elements, odd size, huge and tiny mixed", "[gpu][optim]") {
  for (const Storage st : {Storage::bf16, Storage::f16}) {
    const std::size_t n = 3000001;
    std::printf("optim16 large case: seed 777\n");
    std::mt19937_64 rng(777);
    std::uniform_real_distribution<double> e(-40.0, 20.0), e_wide(-150.0, 130.0), m(1.0, 2.0);
    Case c{st, std::vector<std::uint16_t>(n), {}};
    for (auto& x : c.p) x = encode(static_cast<float>(std::ldexp(m(rng), -2) - 0.375), st);
    for (int k = 0; k < 3; ++k) {
      std::vector<std::uint16_t> g(n);
      for (auto& x : g) {
        const std::uint64_t r = rng();
        const double sign = (r & 1) ? -1.0 : 1.0;
        const double mag = (r % 16 == 0) ? std::ldexp(m(rng), static_cast<int>(e_wide(rng)))
                                         : std::ldexp(m(rng), static_cast<int>(e(rng)));
        x = (r % 97 == 0) ? static_cast<std::uint16_t>(r >> 16) : encode(float(sign * mag), st);
      }
      c.gs.push_back(g);
    }
    run_case(c, 0);
  }
}

TEST_CASE("GPU 16-bit Adam/SGD: storage must be bf16 or fp16", "[gpu][optim]") {
  optim::AdamHyper h;
  CHECK_THROWS_AS(
      gpu::adam_step(h, true, false, Storage::f32, 1, nullptr, nullptr, nullptr, nullptr, 0),
      InputError);
  CHECK_THROWS_AS(gpu::sgd_step(optim::SgdHyper{}, Storage::f32, 1, nullptr, nullptr, nullptr, 0),
                  InputError);
}
#endif
