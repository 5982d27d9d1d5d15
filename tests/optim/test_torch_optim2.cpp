// torch.optim's second batch (docs/SEMANTICS.md 9.2.3-9.2.6): Adagrad, NAdam, RAdam and Adam /
// AdamW with amsgrad and maximize. The references here transcribe torch 2.11.0's
// _single_tensor_* / _multi_tensor_* code (torch/optim/adagrad.py, nadam.py, radam.py, adam.py)
// line by line in fp32, one tensor op per line, with the contractions SEMANTICS names for the ATen
// CPU kernels (addcmul: fma(value*t1, t2, self); addcdiv: self + value*t1/t2), the CUDA kernels
// (addcmul: fma(value, t1*t2, self); addcdiv: fma(value, t1/t2, self); a tensor divided by a CPU
// scalar: times its fp32 reciprocal) and foreach; weighted random fp32 inputs (seed printed), then
// the hyperparameters, profiles and state files through the CLI.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/optim/hyper_applies.hpp"
#include "sim/optim/registry.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;
using K = native::TorchKernels;

namespace {

using Arrays = std::map<std::string, std::vector<float>>;

// exmy's CPU step through the registry; "p" and every saved state array by file name.
Arrays exmy_run(const char* name, const optim::HyperOptions& o, K k, std::vector<float> p,
                const std::vector<std::vector<float>>& grads) {
  optim::Config c;
  c.opt = optim::find_optimizer(name);
  optim::check_hyper_applies(*c.opt.entry, o);
  c.hyper = optim::resolve_hyper(*c.opt.entry, o);
  optim::check_hyper_domains(*c.opt.entry, c.hyper);
  c.hyper.adam.kernels = c.hyper.sgd.kernels = k;
  c.st = native::Storage::f32;
  optim::State s = optim::init_state(c, p);
  auto engine = optim::cpu_stepper(c, p, s);
  for (std::size_t t = 0; t < grads.size(); ++t) engine->step(static_cast<long>(t + 1), grads[t]);
  engine->finish();
  Arrays a{{"p", p}};
  for (const auto& arr : c.opt.entry->arrays(c, s)) {
    a[arr.file] = *std::get<std::vector<float>*>(arr.data);
  }
  return a;
}

std::uint32_t bits(float x) {
  return std::bit_cast<std::uint32_t>(x);
}
// The CPU's addcdiv p + (c*x)/d and CUDA's fma(c, x/d, p).
float addcdiv(bool cpu, float p, float c, float x, float d) {
  return cpu ? p + (c * x) / d : std::fma(c, x / d, p);
}
// exp_avg.lerp_(grad, w): ATen's lerp, fma(w, g - m, m) for |w| < 0.5, else fma(w - 1, g - m, g).
float lerp(float m, float g, float w) {
  return std::fabs(w) < 0.5f ? std::fma(w, g - m, m) : std::fma(w - 1.0f, g - m, g);
}
// self.addcmul_(t1, t2, value=w): the CPU's self + (w*t1)*t2 contracted; CUDA's pointwise_op_impl
// (torch 2.11 aten/src/ATen/native/cuda/DeviceAddCmulCdiv.cuh): std::fma(t1, t2, self) when w is
// 1, else std::fma(w, t1*t2, self).
float addcmul(bool cpu, float a, float b, float c, float w) {
  if (cpu) return std::fma(w * b, c, a);
  return w == 1.0f ? std::fma(b, c, a) : std::fma(w, b * c, a);
}
// exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=w2)
float second_moment(bool cpu, float v, float g, float b2, float w2) {
  return addcmul(cpu, v * b2, g, g, w2);
}

// _single_tensor_adagrad / _multi_tensor_adagrad, one element, fp32.
void ref_adagrad(K k, double lr, double lr_decay, double wd, double eps, bool maximize, long t,
                 float& p, float g, float& sum) {
  const bool cpu = k == K::cpu;
  if (maximize) g = -g;
  if (wd != 0.0) g = std::fma(p, static_cast<float>(wd), g);  // grad.add(param, alpha=wd)
  const double clr = lr / (1 + (static_cast<double>(t) - 1) * lr_decay);
  sum = addcmul(cpu, sum, g, g, 1.0f);  // addcmul_(grad, grad, value=1)
  const float std_ = std::sqrt(sum) + static_cast<float>(eps);
  if (k == K::cuda_foreach) {
    const float num = g * static_cast<float>(-lr / (1 + (static_cast<double>(t) - 1) * lr_decay));
    p = p + num / std_;  // _foreach_addcdiv_(params, numerator, std), value 1
  } else {
    p = addcdiv(cpu, p, static_cast<float>(-clr), g, std_);
  }
}

// _single_tensor_nadam / _multi_tensor_nadam, one element, fp32; mp: the mu_product tensor.
void ref_nadam(K k, double lr, double b1, double b2, double wd, double eps, double psi, bool dec,
               bool maximize, long t, float& mp, float& p, float g, float& m, float& v) {
  const bool cpu = k == K::cpu;
  if (maximize) g = -g;
  const double step = static_cast<double>(t);
  const double bc2 = 1 - std::pow(b2, step);
  if (wd != 0.0) {
    if (dec) {
      p = p * static_cast<float>(1 - lr * wd);
    } else {
      g = std::fma(p, static_cast<float>(wd), g);
    }
  }
  const double mu = b1 * (1.0 - 0.5 * std::pow(0.96, step * psi));
  const double mu_next = b1 * (1.0 - 0.5 * std::pow(0.96, (step + 1) * psi));
  mp = mp * static_cast<float>(mu);
  m = lerp(m, g, static_cast<float>(1 - b1));
  v = second_moment(cpu, v, g, static_cast<float>(b2), static_cast<float>(1 - b2));
  float denom;
  if (k == K::cuda_foreach) {
    denom = std::sqrt(v) / static_cast<float>(std::pow(1 - std::pow(b2, step), 0.5));
  } else {
    // exp_avg_sq.div(bias_correction2).sqrt(): CUDA multiplies by the scalar's reciprocal
    denom = std::sqrt(cpu ? v / static_cast<float>(bc2) : v * static_cast<float>(1.0 / bc2));
  }
  denom = denom + static_cast<float>(eps);
  const double mpd = mp, mp_next = mpd * mu_next;
  p = addcdiv(cpu, p, static_cast<float>(-lr * (1.0 - mu) / (1.0 - mpd)), g, denom);
  p = addcdiv(cpu, p, static_cast<float>((-lr * mu_next) / (1.0 - mp_next)), m, denom);
}

// _single_tensor_radam / _multi_tensor_radam, one element, fp32.
void ref_radam(K k, double lr, double b1, double b2, double wd, double eps, bool dec, bool maximize,
               long t, float& p, float g, float& m, float& v) {
  const bool cpu = k == K::cpu;
  if (maximize) g = -g;
  const double step = static_cast<double>(t);
  if (wd != 0.0) {
    if (dec) {
      p = p * static_cast<float>(1 - lr * wd);
    } else {
      g = std::fma(p, static_cast<float>(wd), g);
    }
  }
  m = lerp(m, g, static_cast<float>(1 - b1));
  v = second_moment(cpu, v, g, static_cast<float>(b2), static_cast<float>(1 - b2));
  const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  const double rho_inf = 2 / (1 - b2) - 1;
  const double rho_t = rho_inf - 2 * step * std::pow(b2, step) / bc2;
  const double rect =
      rho_t > 5.0
          ? std::pow((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t),
                     0.5)
          : 0.0;
  if (k == K::cuda_foreach) {
    const double unrect = rect > 0 ? 0.0 : 1.0;
    float b = std::sqrt(v) + static_cast<float>(eps);
    b = b / static_cast<float>(std::pow(bc2, 0.5) * (lr * rect / bc1) * -1);
    b = 1.0f / b;
    b = b + static_cast<float>((lr * unrect / bc1) * -1);
    p = addcmul(false, p, m, b, 1.0f);  // _foreach_addcmul_(params, exp_avgs, buffer)
    return;
  }
  const float bcm = cpu ? m / static_cast<float>(bc1) : m * static_cast<float>(1.0 / bc1);
  float x = bcm * static_cast<float>(lr);
  if (rho_t > 5.0) {
    const float s = std::sqrt(v) + static_cast<float>(eps);
    const float adaptive = (1.0f / s) * static_cast<float>(std::pow(bc2, 0.5));
    x = x * adaptive * static_cast<float>(rect);
  }
  p = p - x;  // param.add_(update, alpha=-1.0)
}

// _single_tensor_adam / _multi_tensor_adam with amsgrad and maximize, one element, fp32.
void ref_adam(K k, bool adamw, double lr, double b1, double b2, double wd, double eps, bool amsgrad,
              bool maximize, long t, float& p, float g, float& m, float& v, float& vmax) {
  const bool cpu = k == K::cpu;
  if (maximize) g = -g;
  const double step = static_cast<double>(t);
  if (wd != 0.0) {
    if (adamw) {
      p = p * static_cast<float>(1 - lr * wd);
    } else {
      g = std::fma(p, static_cast<float>(wd), g);
    }
  }
  m = lerp(m, g, static_cast<float>(1 - b1));
  v = second_moment(cpu, v, g, static_cast<float>(b2), static_cast<float>(1 - b2));
  const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  const double step_size = lr / bc1, bc2_sqrt = std::pow(bc2, 0.5);
  if (amsgrad) vmax = std::isnan(vmax) || std::isnan(v) ? NAN : std::max(vmax, v);
  const float s = std::sqrt(amsgrad ? vmax : v);
  const float denom =
      (k == K::cuda ? s * static_cast<float>(1.0 / bc2_sqrt) : s / static_cast<float>(bc2_sqrt)) +
      static_cast<float>(eps);
  p = addcdiv(cpu, p, static_cast<float>(-step_size), m, denom);
}

const K kAll[] = {K::cpu, K::cuda, K::cuda_foreach};

struct Gen {
  std::mt19937_64 rng;
  std::uniform_real_distribution<double> u{0.0, 1.0};
  explicit Gen(std::uint64_t s) : rng(s) {}
  double operator()() { return u(rng); }
  // Heavy-tailed magnitudes with 10% exact zeros for gradients.
  float value(bool grad) {
    if (grad && (*this)() < 0.1) return 0.0f;
    const double mag =
        std::ldexp(1.0 + (*this)(), static_cast<int>((*this)() * (grad ? 30 : 10)) - 20);
    return static_cast<float>((*this)() < 0.5 ? -mag : mag);
  }
};

std::uint64_t printed_seed(const char* what) {
  const std::uint64_t seed = std::random_device{}();
  std::printf("%s random seed %llu\n", what, static_cast<unsigned long long>(seed));
  return seed;
}

constexpr std::size_t kN = 48;
constexpr int kSteps = 8;  // RAdam rectifies from step 6 on

std::vector<std::vector<float>> grads_of(Gen& r) {
  std::vector<std::vector<float>> gs(kSteps, std::vector<float>(kN));
  for (auto& g : gs)
    for (auto& x : g) x = r.value(true);
  return gs;
}

}  // namespace

TEST_CASE("adagrad: weighted random fp32 steps against torch's code", "[torch_optim2]") {
  const std::uint64_t seed = printed_seed("adagrad");
  INFO("seed " << seed);
  Gen r(seed);
  for (int trial = 0; trial < 60; ++trial) {
    const double lr = std::ldexp(1.0 + r(), -static_cast<int>(r() * 10));
    const double lr_decay = r() < 0.5 ? 0.0 : r();
    const double wd = r() < 0.5 ? 0.0 : 0.01, eps = r() < 0.5 ? 1e-10 : 1e-6;
    const double init = r() < 0.5 ? 0.0 : 0.1;
    const bool maximize = r() < 0.5;
    std::vector<float> p(kN);
    for (auto& x : p) x = r.value(false);
    const auto gs = grads_of(r);
    optim::HyperOptions o;
    o.lr = lr, o.wd = wd, o.eps = eps;
    o.extra = {{"--lr-decay", lr_decay}, {"--initial-accumulator-value", init}};
    if (maximize) o.extra.emplace_back("--maximize", 1.0);
    for (const K k : kAll) {
      const Arrays a = exmy_run("adagrad", o, k, p, gs);
      for (std::size_t i = 0; i < kN; ++i) {
        float pi = p[i], sum = static_cast<float>(init);
        for (int t = 0; t < kSteps; ++t)
          ref_adagrad(k, lr, lr_decay, wd, eps, maximize, t + 1, pi, gs[t][i], sum);
        INFO("trial " << trial << " element " << i << " kernels " << static_cast<int>(k));
        CHECK(bits(a.at("p")[i]) == bits(pi));
        CHECK(bits(a.at("sum")[i]) == bits(sum));
      }
    }
  }
}

TEST_CASE("nadam: weighted random fp32 steps against torch's code", "[torch_optim2]") {
  const std::uint64_t seed = printed_seed("nadam");
  INFO("seed " << seed);
  Gen r(seed);
  for (int trial = 0; trial < 60; ++trial) {
    const double lr = std::ldexp(1.0 + r(), -static_cast<int>(r() * 10));
    const double b1 = r() < 0.5 ? 0.9 : r() * 0.99, b2 = r() < 0.5 ? 0.999 : 0.5 + r() * 0.49;
    const double wd = r() < 0.5 ? 0.0 : 0.01, eps = r() < 0.5 ? 1e-8 : 1e-6;
    const double psi = r() < 0.5 ? 4e-3 : r();
    const bool dec = r() < 0.5, maximize = r() < 0.5;
    std::vector<float> p(kN);
    for (auto& x : p) x = r.value(false);
    const auto gs = grads_of(r);
    optim::HyperOptions o;
    o.lr = lr, o.beta1 = b1, o.beta2 = b2, o.wd = wd, o.eps = eps;
    o.extra = {{"--momentum-decay", psi}};
    if (dec) o.extra.emplace_back("--decoupled-wd", 1.0);
    if (maximize) o.extra.emplace_back("--maximize", 1.0);
    for (const K k : kAll) {
      const Arrays a = exmy_run("nadam", o, k, p, gs);
      for (std::size_t i = 0; i < kN; ++i) {
        float pi = p[i], m = 0.0f, v = 0.0f, mp = 1.0f;
        for (int t = 0; t < kSteps; ++t)
          ref_nadam(k, lr, b1, b2, wd, eps, psi, dec, maximize, t + 1, mp, pi, gs[t][i], m, v);
        INFO("trial " << trial << " element " << i << " kernels " << static_cast<int>(k));
        CHECK(bits(a.at("p")[i]) == bits(pi));
        CHECK(bits(a.at("exp_avg")[i]) == bits(m));
        CHECK(bits(a.at("exp_avg_sq")[i]) == bits(v));
      }
    }
  }
}

TEST_CASE("radam: weighted random fp32 steps against torch's code", "[torch_optim2]") {
  const std::uint64_t seed = printed_seed("radam");
  INFO("seed " << seed);
  Gen r(seed);
  for (int trial = 0; trial < 60; ++trial) {
    const double lr = std::ldexp(1.0 + r(), -static_cast<int>(r() * 10));
    // beta2 0.999 and 0.9 rectify within the 8 steps; 0.6 never does (rho_inf = 4)
    const double b1 = r() < 0.5 ? 0.9 : r() * 0.99;
    const double b2 = r() < 0.4 ? 0.999 : (r() < 0.5 ? 0.9 : 0.6);
    const double wd = r() < 0.5 ? 0.0 : 0.01, eps = r() < 0.5 ? 1e-8 : 1e-6;
    const bool dec = r() < 0.5, maximize = r() < 0.5;
    std::vector<float> p(kN);
    for (auto& x : p) x = r.value(false);
    const auto gs = grads_of(r);
    optim::HyperOptions o;
    o.lr = lr, o.beta1 = b1, o.beta2 = b2, o.wd = wd, o.eps = eps;
    if (dec) o.extra.emplace_back("--decoupled-wd", 1.0);
    if (maximize) o.extra.emplace_back("--maximize", 1.0);
    for (const K k : kAll) {
      const Arrays a = exmy_run("radam", o, k, p, gs);
      for (std::size_t i = 0; i < kN; ++i) {
        float pi = p[i], m = 0.0f, v = 0.0f;
        for (int t = 0; t < kSteps; ++t)
          ref_radam(k, lr, b1, b2, wd, eps, dec, maximize, t + 1, pi, gs[t][i], m, v);
        INFO("trial " << trial << " element " << i << " kernels " << static_cast<int>(k));
        CHECK(bits(a.at("p")[i]) == bits(pi));
        CHECK(bits(a.at("exp_avg")[i]) == bits(m));
        CHECK(bits(a.at("exp_avg_sq")[i]) == bits(v));
      }
    }
  }
}

TEST_CASE("adam amsgrad / maximize: weighted random fp32 steps against torch's code",
          "[torch_optim2]") {
  const std::uint64_t seed = printed_seed("adam amsgrad");
  INFO("seed " << seed);
  Gen r(seed);
  for (int trial = 0; trial < 60; ++trial) {
    const bool adamw = r() < 0.5, amsgrad = r() < 0.7, maximize = r() < 0.5;
    const double lr = std::ldexp(1.0 + r(), -static_cast<int>(r() * 10));
    const double b1 = r() < 0.5 ? 0.9 : r() * 0.99, b2 = r() < 0.5 ? 0.999 : 0.5 + r() * 0.49;
    const double wd = r() < 0.5 ? 0.0 : 0.01, eps = r() < 0.5 ? 1e-8 : 1e-6;
    std::vector<float> p(kN);
    for (auto& x : p) x = r.value(false);
    const auto gs = grads_of(r);
    optim::HyperOptions o;
    o.lr = lr, o.beta1 = b1, o.beta2 = b2, o.wd = wd, o.eps = eps;
    if (amsgrad) o.extra.emplace_back("--amsgrad", 1.0);
    if (maximize) o.extra.emplace_back("--maximize", 1.0);
    for (const K k : kAll) {
      const Arrays a = exmy_run(adamw ? "adamw" : "adam", o, k, p, gs);
      CHECK(a.count("state3") == (amsgrad ? 1u : 0u));
      for (std::size_t i = 0; i < kN; ++i) {
        float pi = p[i], m = 0.0f, v = 0.0f, vmax = 0.0f;
        for (int t = 0; t < kSteps; ++t)
          ref_adam(k, adamw, lr, b1, b2, wd, eps, amsgrad, maximize, t + 1, pi, gs[t][i], m, v,
                   vmax);
        INFO("trial " << trial << " element " << i << " kernels " << static_cast<int>(k));
        CHECK(bits(a.at("p")[i]) == bits(pi));
        CHECK(bits(a.at("state1")[i]) == bits(m));
        CHECK(bits(a.at("state2")[i]) == bits(v));
        if (amsgrad) CHECK(bits(a.at("state3")[i]) == bits(vmax));
      }
    }
  }
}

TEST_CASE("adam amsgrad: the maximum is kept (max_exp_avg_sq never decreases)", "[torch_optim2]") {
  // A large gradient then zeros: exp_avg_sq decays, max_exp_avg_sq keeps its first value, so
  // the amsgrad step is smaller than the plain one.
  std::vector<std::vector<float>> gs{{1.0f}, {0.0f}, {0.0f}};
  optim::HyperOptions ams;
  ams.extra.emplace_back("--amsgrad", 1.0);
  const Arrays a = exmy_run("adam", ams, K::cpu, {0.0f}, gs);
  const Arrays b = exmy_run("adam", {}, K::cpu, {0.0f}, gs);
  CHECK(a.at("state3")[0] > a.at("state2")[0]);
  CHECK(bits(a.at("state2")[0]) == bits(b.at("state2")[0]));
  CHECK(std::fabs(a.at("p")[0]) < std::fabs(b.at("p")[0]));
  // maximize: the step goes up the gradient
  optim::HyperOptions mx;
  mx.extra.emplace_back("--maximize", 1.0);
  CHECK(exmy_run("adamw", mx, K::cuda, {0.0f}, gs).at("p")[0] > 0.0f);
}

// Regression (H200 capture of 2026-12-01, bench/peers/torch_optim2_capture.py): the first model
// took CUDA's addcmul with value 1 as sum + RN(g*g); torch 2.11's pointwise_op_impl is one FMA
// there, and 188 of 1,000 fp32 Adagrad sums (single and foreach) and RAdam foreach's parameters
// differed by 1 ulp. g = 1 + 2^-12: g*g = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 (a tie to even);
// the FMA keeps the 2^-24 for the sum.
TEST_CASE("adagrad: CUDA addcmul with value 1 is one FMA (H200 regression)", "[torch_optim2]") {
  const float g = 1.0f + std::ldexp(1.0f, -12);
  const float s0 = std::ldexp(1.0f, -23);  // the sum after a first step on a tiny gradient
  optim::HyperOptions o;
  o.extra = {{"--initial-accumulator-value", static_cast<double>(s0)}};
  for (const K k : kAll) {
    const Arrays a = exmy_run("adagrad", o, k, {0.0f}, {{g}});
    CHECK(bits(a.at("sum")[0]) == bits(std::fma(g, g, s0)));
    CHECK(bits(a.at("sum")[0]) != bits(s0 + g * g));
  }
  // Adam's value 1 - beta2 = 1 (beta2 = 0) takes the same FMA on CUDA
  optim::HyperOptions b2;
  b2.beta2 = 0.0;
  const Arrays a = exmy_run("adam", b2, K::cuda, {0.0f}, {{g}});
  CHECK(bits(a.at("state2")[0]) == bits(std::fma(g, g, 0.0f)));
}

TEST_CASE("torch_optim2: hyperparameters, profiles and state files", "[torch_optim2][cli]") {
  // torch's constructor checks
  optim::HyperOptions bad;
  bad.extra.emplace_back("--lr-decay", -1.0);
  CHECK_THROWS_AS(exmy_run("adagrad", bad, K::cpu, {1.0f}, {{1.0f}}), InputError);
  optim::HyperOptions badpsi;
  badpsi.extra.emplace_back("--momentum-decay", -1.0);
  CHECK_THROWS_AS(exmy_run("nadam", badpsi, K::cpu, {1.0f}, {{1.0f}}), InputError);
  optim::HyperOptions b1;
  b1.beta1 = 1.0;
  CHECK_THROWS_AS(exmy_run("radam", b1, K::cpu, {1.0f}, {{1.0f}}), InputError);
  // The options belong to the families that read them.
  optim::HyperOptions ams;
  ams.extra.emplace_back("--amsgrad", 1.0);
  CHECK_NOTHROW(optim::check_hyper_applies(*optim::find_optimizer("adamw").entry, ams));
  CHECK_THROWS_AS(optim::check_hyper_applies(*optim::find_optimizer("sgd").entry, ams), InputError);
  CHECK_THROWS_AS(optim::check_hyper_applies(*optim::find_optimizer("nadam").entry, ams),
                  InputError);
  optim::HyperOptions mom;
  mom.momentum = 0.9;
  CHECK_THROWS_AS(optim::check_hyper_applies(*optim::find_optimizer("adagrad").entry, mom),
                  InputError);
  // torch-cpu, torch-cuda and torch-cuda-foreach cover the new families; no fused ones in 2.11
  for (const char* name : {"adagrad", "nadam", "radam"}) {
    optim::Config c;
    c.opt = optim::find_optimizer(name);
    c.hyper = optim::resolve_hyper(*c.opt.entry, {});
    for (const char* p : {"torch-cpu", "torch-cuda", "torch-cuda-foreach"}) {
      optim::Config d = c;
      CHECK_NOTHROW(optim::apply_compat(d, p));
    }
    CHECK_THROWS_AS(optim::apply_compat(c, "torch-cuda-fused"), InputError);
    CHECK_THROWS_AS(optim::apply_compat(c, "bnb-cuda"), InputError);
  }
  // Adagrad's initial accumulator is its state's value before the first step.
  optim::HyperOptions init;
  init.extra.emplace_back("--initial-accumulator-value", 0.25);
  CHECK(exmy_run("adagrad", init, K::cpu, {1.0f}, {}).at("sum")[0] == 0.25f);

  if (testing::cli().empty()) return;
  const std::string d = testing::make_tmpdir("exmy_torch_optim2");
  io::write_npy(d + "/p.npy", io::make_npy(std::vector<float>{1.0f, 3.0f}, {2}));
  io::write_npy(d + "/g.npy", io::make_npy(std::vector<float>{0.5f, 1.0f}, {2}));
  const std::string in = " --params " + d + "/p.npy --grads " + d + "/g.npy --steps 2";
  CHECK(testing::run("step --optimizer adamw --amsgrad --maximize --compat torch-cuda-fused" + in +
                     " --out " + d + "/a") == 0);
  for (const char* f : {"state1", "state2", "state3"})
    CHECK(testing::exists(d + "/a/" + f + ".npy"));
  CHECK(testing::run("step --optimizer adam" + in + " --out " + d + "/b") == 0);
  CHECK_FALSE(testing::exists(d + "/b/state3.npy"));
  CHECK(testing::run("step --optimizer adagrad --lr-decay 0.1 --initial-accumulator-value 0.1" +
                     in + " --out " + d + "/c") == 0);
  CHECK(testing::exists(d + "/c/sum.npy"));
  CHECK(testing::run("step --optimizer nadam --decoupled-wd --wd 0.1 --momentum-decay 0.01" + in +
                     " --compat torch-cuda-foreach --out " + d + "/e") == 0);
  CHECK(testing::run("step --optimizer radam --decoupled-wd --maximize" + in +
                     " --compat torch-cuda --out " + d + "/f") == 0);
  for (const char* s : {"e", "f"}) {
    CHECK(testing::exists(d + "/" + s + "/exp_avg.npy"));
    CHECK(testing::exists(d + "/" + s + "/exp_avg_sq.npy"));
  }
  // refused: exit 2, nothing written
  CHECK(testing::run("step --optimizer sgd --amsgrad" + in + " --out " + d + "/x") == 2);
  CHECK(testing::run("step --optimizer radam --compat torch-cuda-fused" + in + " --out " + d +
                     "/y") == 2);
  CHECK(testing::run("step --optimizer adagrad --lr-decay -1" + in + " --out " + d + "/z") == 2);
  for (const char* s : {"x", "y", "z"}) CHECK_FALSE(testing::exists(d + "/" + s));
}
