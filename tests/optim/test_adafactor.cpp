// torch.optim.Adafactor (docs/SEMANTICS.md 9.2.8). The references here are transcriptions of
// torch 2.11's sources, written for this test: _single_tensor_adafactor
// (torch/optim/_adafactor.py) line by line, the lastdim norm kernel and the generic norm loop of
// aten/src/ATen/native/cpu/ReduceOpsKernel.cpp with the tail grouping of SEMANTICS 9.2.8, and
// cascade_sum's row_sum (SumKernel.cpp) in its recursive form for the sizes where that form and
// the implementation's levels coincide. Hand-worked cases whose order matters, weighted random
// fp32 inputs (seed printed), and the CLI (torch's state names and shapes, resume, domains).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/torch_reduce_cpu.hpp"
#include "sim/optim/hyper_applies.hpp"
#include "sim/optim/memory.hpp"
#include "sim/optim/registry.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;

namespace {

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
volatile float sink;  // keeps the test's own fp32 arithmetic from being folded
float mul(float a, float b) {
  sink = a * b;
  return sink;
}
float add(float a, float b) {
  sink = a + b;
  return sink;
}

// ReduceOpsKernel.cpp's lastdim kernel for fp32 (Vectorized<float> of 8): acc_vec += d*d per
// vector, buffer[0] = buffer[0] + buffer[j], then the tail; GCC's tail: groups of 4 as
// b + RN(x*x), the rest std::fma (SEMANTICS 9.2.8).
float ref_norm_lastdim(const std::vector<float>& x) {
  float acc[8] = {};
  std::size_t d = 0;
  for (; d + 8 <= x.size(); d += 8) {
    for (int j = 0; j < 8; ++j) acc[j] = add(acc[j], mul(x[d + j], x[d + j]));
  }
  float b = acc[0];
  for (int j = 1; j < 8; ++j) b = add(b, acc[j]);
  const std::size_t m = x.size() - d;
  for (std::size_t k = 0; k < m; ++k) {
    const float v = x[d + k];
    b = k < m / 4 * 4 ? add(b, mul(v, v)) : std::fma(v, v, b);
  }
  return std::sqrt(b);
}

}  // namespace

TEST_CASE("adafactor: the CPU norm orders (lastdim, serial) against their transcriptions",
          "[optim][adafactor]") {
  // Hand-worked: x = 1 + 2^-12 squares to 1 + 2^-11 + 2^-24, which RN32 rounds to 1 + 2^-11 (a
  // tie to even), so a tail element summed with FMA keeps the 2^-24 its plain product lost.
  const float x = 1.0f + 0x1p-12f;
  const float b0 = 0x1p-23f;  // any b whose sum with x*x lands on the 2^-23 grid
  CHECK(bits(std::fma(x, x, b0)) != bits(add(b0, mul(x, x))));
  // 5 elements: a group of 4 plain, then one FMA; 4 elements: all plain.
  for (std::size_t n : {4u, 5u, 7u, 8u, 13u, 16u, 17u}) {
    std::vector<float> v(n, x);
    INFO(n);
    CHECK(bits(native::torch_cpu_norm2_lastdim(v.data(), n, 1, false)) ==
          bits(ref_norm_lastdim(v)));
  }
  const unsigned seed = 20261202;
  std::printf("adafactor norm seed %u\n", seed);
  std::mt19937 rng(seed);
  std::student_t_distribution<float> heavy(2.0f);
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t n = 1 + rng() % 300;
    std::vector<float> v(n);
    for (float& e : v) e = heavy(rng) * 1e-2f;
    INFO(n);
    REQUIRE(bits(native::torch_cpu_norm2_lastdim(v.data(), n, 1, false)) ==
            bits(ref_norm_lastdim(v)));
    // NormTwoOps' serial loop, strided: every element's product rounded, adds in order
    std::vector<float> strided(3 * n);
    for (std::size_t i = 0; i < n; ++i) strided[3 * i] = v[i];
    float b = 0.0f;
    for (float e : v) b = add(b, mul(e, e));
    REQUIRE(bits(native::torch_cpu_norm2_serial(strided.data(), n, 3)) == bits(std::sqrt(b)));
  }
}

TEST_CASE("adafactor: cascade_sum's row_sum for small sizes", "[optim][adafactor]") {
  // n < 8: row_sum over the elements as a (-1, 4) array: partial k holds x[4i + k]; the rest is
  // added to partial 0; then p0 + p1 + p2 + p3. 1, 2^-24 x 6: in order the 2^-24 would vanish
  // one by one (ties to even), here p1 + p2 + p3 = 3 * 2^-24 and p0 = 1 + 2^-24 + 2^-24 = 1.
  std::vector<float> x = {1.0f, 0x1p-24f, 0x1p-24f, 0x1p-24f, 0x1p-24f, 0x1p-24f};
  const float p0 = add(add(1.0f, 0x1p-24f), 0x1p-24f);  // x0 + x4 + x5
  const float want = add(add(add(p0, 0x1p-24f), 0x1p-24f), 0x1p-24f);
  CHECK(bits(native::torch_cpu_sum(x.data(), x.size())) == bits(add(0.0f, want)));
  // n >= 8: 8-lane items; for n = 8 * k with k < 4 the items go to partials 0..k-1 and each
  // lane sums p0 + p1 + p2 + p3, then fin = 0 + lane 0 + ... + lane 7.
  std::vector<float> y(24);
  std::mt19937 rng(7);
  for (float& e : y) e = std::ldexp(static_cast<float>(rng() % 1000 + 1), -(int)(rng() % 30));
  float fin = 0.0f;
  for (int l = 0; l < 8; ++l) fin = add(fin, add(add(add(y[l], y[8 + l]), y[16 + l]), 0.0f));
  CHECK(bits(native::torch_cpu_sum(y.data(), y.size())) == bits(add(0.0f, fin)));
}

TEST_CASE("adafactor: the step against _single_tensor_adafactor (fp32, CPU)",
          "[optim][adafactor]") {
  // A line-by-line transcription for fp32 parameters with the orders above (R, C < 8: the
  // lastdim norms are plain tails of groups of 4 and an FMA remainder; the column norms are
  // serial; the row mean is row_sum of scalars).
  const std::size_t R = 5, C = 6, n = R * C;
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 0.5f);
  std::vector<float> p(n), g(n);
  for (float& e : p) e = nd(rng);
  for (float& e : g) e = nd(rng) * 0.01f;
  g[7] = 0.0f;
  optim::Config c;
  c.opt = optim::find_optimizer("adafactor");
  optim::HyperOptions o;
  o.lr = 5e-3;
  o.wd = 0.1;
  o.extra = {{"--beta2-decay", -0.5}, {"--d", 2.0}};
  c.hyper = optim::resolve_hyper(*c.opt.entry, o);
  optim::check_hyper_domains(*c.opt.entry, c.hyper);
  c.shape = {R, C};
  std::vector<float> pe = p;
  optim::State s = optim::init_state(c, pe);
  REQUIRE(s.s1.size() == R);
  REQUIRE(s.s2.size() == C);
  std::vector<float> rv(R, 0.0f), cv(C, 0.0f), pr = p;
  auto engine = optim::cpu_stepper(c, pe, s);
  for (long t = 1; t <= 3; ++t) {
    engine->step(t, g);
    const double omb = std::pow(static_cast<double>(t), -0.5);
    const double rho = std::min(5e-3, 1.0 / std::pow(static_cast<double>(t), 0.5));
    const double eps1 = 0x1p-23, eps2 = 1e-3;
    const auto lerp = [&](float self, float end) {
      const float w = static_cast<float>(omb), d = add(end, -self);
      return std::fabs(w) < 0.5f ? std::fma(w, d, self) : std::fma(add(w, -1.0f), d, end);
    };
    const double alpha =
        std::max(eps2, static_cast<double>(ref_norm_lastdim(pr)) / std::sqrt(30.0)) * rho;
    for (float& e : pr) e = mul(e, static_cast<float>(1.0 - 5e-3 * 0.1));
    for (std::size_t r = 0; r < R; ++r) {
      std::vector<float> row(g.begin() + r * C, g.begin() + (r + 1) * C);
      const float m = ref_norm_lastdim(row);
      rv[r] = lerp(rv[r], mul(m, m) / static_cast<float>(C));
    }
    for (std::size_t k = 0; k < C; ++k) {
      float b = 0.0f;
      for (std::size_t r = 0; r < R; ++r) b = add(b, mul(g[r * C + k], g[r * C + k]));
      const float m = std::sqrt(b);
      cv[k] = lerp(cv[k], mul(m, m) / static_cast<float>(R));
    }
    // row_var.mean(dim=-2): row_sum of 5 scalars: partials rv0..rv3, rv4 into partial 0
    const float sum = add(0.0f, add(add(add(add(rv[0], rv[4]), rv[1]), rv[2]), rv[3]));
    const float mean = std::max(sum / static_cast<float>(R), static_cast<float>(eps1));
    std::vector<float> u(n);
    for (std::size_t r = 0; r < R; ++r) {
      for (std::size_t k = 0; k < C; ++k) {
        float v = mul(rv[r], cv[k]) / mean;
        v = std::max(v, static_cast<float>(eps1 * eps1));
        u[r * C + k] = mul(1.0f / std::sqrt(v), g[r * C + k]);
      }
    }
    const double denom =
        std::max(1.0, static_cast<double>(ref_norm_lastdim(u)) / (std::sqrt(30.0) * 2.0));
    const float a = static_cast<float>(-alpha / denom);
    for (std::size_t i = 0; i < n; ++i) pr[i] = std::fma(u[i], a, pr[i]);
  }
  engine->finish();
  for (std::size_t i = 0; i < n; ++i) {
    INFO(i);
    CHECK(bits(pe[i]) == bits(pr[i]));
  }
  for (std::size_t r = 0; r < R; ++r) CHECK(bits(s.s1[r]) == bits(rv[r]));
  for (std::size_t k = 0; k < C; ++k) CHECK(bits(s.s2[k]) == bits(cv[k]));
}

TEST_CASE("adafactor: exmy step writes torch's state names and shapes; resume; domains",
          "[optim][adafactor][cli]") {
  const std::string d = testing::make_tmpdir("exmy_adafactor");
  std::vector<float> p(6 * 10), g(4 * 6 * 10);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (float& e : p) e = nd(rng) * 0.5f;
  for (float& e : g) e = nd(rng) * 0.01f;
  io::write_npy(d + "/p.npy", io::make_npy(p, {6, 10}));
  io::write_npy(d + "/g.npy", io::make_npy(g, {4, 6, 10}));
  std::vector<float> g2(g.begin(), g.begin() + 120), g3(g.begin() + 120, g.end());
  io::write_npy(d + "/g01.npy", io::make_npy(g2, {2, 6, 10}));
  io::write_npy(d + "/g23.npy", io::make_npy(g3, {2, 6, 10}));
  const std::string base = "step --optimizer adafactor --params " + d + "/p.npy --quiet ";
  REQUIRE(testing::run(base + "--grads " + d + "/g.npy --steps 4 --out " + d + "/a") == 0);
  const io::NpyArray rv = io::read_npy(d + "/a/row_var.npy");
  const io::NpyArray cv = io::read_npy(d + "/a/col_var.npy");
  CHECK(rv.shape == std::vector<std::size_t>{6, 1});
  CHECK(cv.shape == std::vector<std::size_t>{1, 10});
  // 2 + 2 steps through --state equal 4 steps
  REQUIRE(testing::run(base + "--grads " + d + "/g01.npy --steps 2 --out " + d + "/b") == 0);
  REQUIRE(testing::run("step --optimizer adafactor --params " + d + "/b/params.npy --state " + d +
                       "/b --grads " + d + "/g23.npy --steps 2 --quiet --out " + d + "/c") == 0);
  for (const char* f : {"/params.npy", "/row_var.npy", "/col_var.npy"}) {
    INFO(f);
    CHECK(io::read_npy(d + "/a" + f).data == io::read_npy(d + "/c" + f).data);
  }
  // 1-d: variance, the parameters' shape
  io::write_npy(d + "/p1.npy", io::make_npy(p));
  io::write_npy(d + "/g1.npy", io::make_npy(std::vector<float>(g.begin(), g.begin() + 60)));
  REQUIRE(testing::run("step --optimizer adafactor --params " + d + "/p1.npy --grads " + d +
                       "/g1.npy --param-dtype bf16 --quiet --out " + d + "/v") ==
          2);  // fp32 values
  REQUIRE(testing::run("step --optimizer adafactor --params " + d + "/p1.npy --grads " + d +
                       "/g1.npy --quiet --out " + d + "/v") == 0);
  CHECK(io::read_npy(d + "/v/variance.npy").shape == std::vector<std::size_t>{60});
  // torch's constructor domains and the options Adafactor does not read
  const std::string g1 = "--grads " + d + "/g.npy --steps 4 --out " + d + "/bad";
  CHECK(testing::run(base + g1 + " --beta2-decay 0.1") == 2);
  CHECK(testing::run(base + g1 + " --d 0.5") == 2);
  CHECK(testing::run(base + g1 + " --eps1 -1") == 2);
  CHECK(testing::run(base + g1 + " --eps2 -1") == 2);
  CHECK(testing::run(base + g1 + " --wd -1") == 2);
  CHECK(testing::run(base + g1 + " --beta1 0.9") == 2);
  // the CUDA kernels' model (9.2.8): both forms run, the fused one is refused (torch has none)
  const std::string gcu = "--grads " + d + "/g.npy --steps 4 --out " + d + "/cu";
  CHECK(testing::run(base + gcu + " --compat torch-cuda") == 0);
  CHECK(testing::run(base + gcu + "f --compat torch-cuda-foreach") == 0);
  CHECK(testing::run(base + g1 + " --compat torch-cuda-fused") == 2);
  std::system(("rm -rf " + d).c_str());
}

TEST_CASE("memory: Adafactor's factored state and amsgrad's fourth state",
          "[optim][memory][adafactor]") {
  optim::MemoryConfig c;
  c.optimizer = "adafactor";
  c.weight_bytes = 2;
  c.shape = {4096, 1024};
  double state = -1;
  for (const auto& r : optim::memory_breakdown(c)) {
    if (r.item == "optimizer state") state = r.bytes_per_param;
  }
  CHECK(state == 2.0 * (4096.0 + 1024.0) / (4096.0 * 1024.0));
  c.shape = {};
  for (const auto& r : optim::memory_breakdown(c)) {
    if (r.item == "optimizer state") state = r.bytes_per_param;
  }
  CHECK(state == 2.0);  // 1-d: variance, one bf16 value per parameter
  optim::MemoryConfig a;
  a.optimizer = "adamw";
  a.amsgrad = true;
  CHECK(optim::memory_total_per_param(optim::memory_breakdown(a)) == 4.0 + 4.0 + 8.0 + 4.0);
  a.optimizer = "sgd";
  CHECK_THROWS_AS(optim::memory_breakdown(a), InputError);
}
