// torch.optim.RMSprop (docs/SEMANTICS.md 9.2.1). The references here follow torch 2.11's
// _single_tensor_rmsprop line by line (torch/optim/rmsprop.py) in fp32 with the contractions the
// section names for the ATen CPU and CUDA kernels: hand-worked cases whose every operation is
// exact, then weighted random fp32 inputs (seed printed) against that transcription, and the CLI
// (state files named as torch names its state, --centered, profiles).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/optim/hyper_applies.hpp"
#include "sim/optim/registry.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;

namespace {

struct Run {
  std::vector<float> p, square_avg, momentum_buffer, grad_avg;
};

// exmy's CPU step through the registry: `steps` steps with gradient g.
Run exmy_rmsprop(std::vector<float> p, const std::vector<float>& g, const optim::HyperOptions& o,
                 native::TorchKernels k, native::Storage st, long steps) {
  optim::Config c;
  c.opt = optim::find_optimizer("rmsprop");
  optim::check_hyper_applies(*c.opt.entry, o);
  c.hyper = optim::resolve_hyper(*c.opt.entry, o);
  optim::check_hyper_domains(*c.opt.entry, c.hyper);
  c.hyper.adam.kernels = c.hyper.sgd.kernels = k;
  c.st = st;
  optim::State s = optim::init_state(c, p);
  auto engine = optim::cpu_stepper(c, p, s);
  for (long t = 1; t <= steps; ++t) engine->step(t, g);
  engine->finish();
  Run r{p, s.s1, s.s2, s.s3};
  // The saved names are torch's state names.
  std::vector<std::string> names;
  for (const auto& a : c.opt.entry->arrays(c, s)) names.push_back(a.file);
  CHECK(names.front() == "square_avg");
  return r;
}

optim::HyperOptions opts(double lr, double alpha, double eps, double wd, double momentum,
                         bool centered) {
  optim::HyperOptions o;
  o.lr = lr;
  o.alpha = alpha;
  o.eps = eps;
  o.wd = wd;
  o.momentum = momentum;
  if (centered) o.extra.emplace_back("--centered", 1.0);
  return o;
}

const native::TorchKernels kAll[] = {native::TorchKernels::cpu, native::TorchKernels::cuda,
                                     native::TorchKernels::cuda_foreach};
const native::Storage kStorages[] = {native::Storage::f32, native::Storage::bf16,
                                     native::Storage::f16};

}  // namespace

TEST_CASE("rmsprop: hand-worked steps of torch's code (every operation exact)", "[rmsprop]") {
  for (const auto k : kAll) {
    for (const auto st : kStorages) {
      // square_avg = 0*0.75 + 0.25*0.5*0.5 = 0.0625; avg = sqrt(0.0625) + 0 = 0.25;
      // p = 1 + (-0.5 * 0.5) / 0.25 = 0.
      Run r = exmy_rmsprop({1.0f}, {0.5f}, opts(0.5, 0.75, 0.0, 0.0, 0.0, false), k, st, 1);
      CHECK(r.p[0] == 0.0f);
      CHECK(r.square_avg[0] == 0.0625f);
      // centered, alpha 0.5, g 1: square_avg 0.5, grad_avg = lerp(0, 1, 0.5) = 0.5,
      // avg = sqrt(0.5 - 0.5*0.5) = 0.5, p = 3 - 1 * 1 / 0.5 = 1.
      r = exmy_rmsprop({3.0f}, {1.0f}, opts(1.0, 0.5, 0.0, 0.0, 0.0, true), k, st, 1);
      CHECK(r.p[0] == 1.0f);
      CHECK(r.grad_avg[0] == 0.5f);
      CHECK(r.square_avg[0] == 0.5f);
      // momentum 0.5, centered, alpha 0.5, g 1, two steps, lr 1, eps 0:
      // step 1: sq 0.5, ga 0.5, avg 0.5, buf = 0*0.5 + 1/0.5 = 2, p = 8 - 2 = 6;
      // step 2: sq 0.75, ga 0.75, avg = sqrt(0.75 - 0.5625) = 0.4330127..., not exact: one step.
      r = exmy_rmsprop({8.0f}, {1.0f}, opts(1.0, 0.5, 0.0, 0.0, 0.5, true), k, st, 1);
      CHECK(r.momentum_buffer[0] == 2.0f);
      CHECK(r.p[0] == 6.0f);
      // weight decay 0.5 on p = 2: grad = 1 + 0.5*2 = 2; alpha 0.75: sq = 0.25*4 = 1; avg = 1;
      // p = 2 + (-0.25 * 2) / 1 = 1.5.
      r = exmy_rmsprop({2.0f}, {1.0f}, opts(0.25, 0.75, 0.0, 0.5, 0.0, false), k, st, 1);
      CHECK(r.p[0] == 1.5f);
      CHECK(r.square_avg[0] == 1.0f);
    }
  }
}

namespace {

// torch 2.11 _single_tensor_rmsprop on fp32 tensors, one element, as the kernels compute it:
// grad.add(param, alpha=wd) is fma(p, wd, g) on both (vec::fmadd / nvcc's FFMA); addcmul_ with
// a value is fma(value*t1, t2, self) on the CPU and fma(value, t1*t2, self) on CUDA; lerp_ is
// ATen's two-branch FMA; addcdiv_ is self + value*t1/t2 on the CPU, fma(value, t1/t2, self) on
// CUDA. Python floats reach the kernels as fp32; 1 - alpha is a Python (fp64) subtraction.
void torch_reference(bool cpu, double lr, double alpha, double eps, double wd, double mom,
                     bool centered, float& p, float g, float& sq, float& ga, float& buf) {
  const float a = static_cast<float>(alpha), w = static_cast<float>(1.0 - alpha);
  if (wd != 0.0) g = std::fma(p, static_cast<float>(wd), g);   // grad = grad.add(param, alpha=wd)
  sq = sq * a;                                                 // square_avg.mul_(alpha)
  sq = cpu ? std::fma(w * g, g, sq) : std::fma(w, g * g, sq);  // .addcmul_(grad, grad, value=w)
  float avg;
  if (centered) {
    const float d = g - ga;  // grad_avg.lerp_(grad, w)
    ga = std::fabs(w) < 0.5f ? std::fma(w, d, ga) : std::fma(w - 1.0f, d, g);
    // square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
    avg = std::sqrt(cpu ? std::fma(-1.0f * ga, ga, sq) : std::fma(-1.0f, ga * ga, sq));
  } else {
    avg = std::sqrt(sq);  // square_avg.sqrt()
  }
  avg = avg + static_cast<float>(eps);  // avg.add_(eps)
  const float nlr = static_cast<float>(-lr);
  if (mom > 0.0) {
    buf = buf * static_cast<float>(mom);                                // buf.mul_(momentum)
    buf = cpu ? buf + (1.0f * g) / avg : std::fma(1.0f, g / avg, buf);  // .addcdiv_(grad, avg)
    p = std::fma(buf, nlr, p);  // param.add_(buf, alpha=-lr)
  } else {
    p = cpu ? p + (nlr * g) / avg : std::fma(nlr, g / avg, p);  // param.addcdiv_(g, avg, -lr)
  }
}

}  // namespace

TEST_CASE("rmsprop: weighted random fp32 steps against torch's code", "[rmsprop]") {
  const std::uint64_t seed = std::random_device{}();
  std::printf("rmsprop random seed %llu\n", static_cast<unsigned long long>(seed));
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  // Heavy-tailed gradients with exact zeros; parameters of several magnitudes.
  const auto value = [&](bool grad) {
    const double r = u(rng);
    if (grad && r < 0.1) return 0.0f;
    const double mag = std::ldexp(1.0 + u(rng), static_cast<int>(u(rng) * (grad ? 30 : 10)) - 20);
    return static_cast<float>(u(rng) < 0.5 ? -mag : mag);
  };
  for (int trial = 0; trial < 200; ++trial) {
    const double lr = std::ldexp(1.0 + u(rng), -static_cast<int>(u(rng) * 12));
    const double alpha = u(rng) < 0.5 ? 0.99 : u(rng);  // both lerp branches
    const double eps = u(rng) < 0.5 ? 1e-8 : 1e-6;
    const double wd = u(rng) < 0.5 ? 0.0 : 0.01;
    const double mom = u(rng) < 0.5 ? 0.0 : 0.9;
    const bool centered = u(rng) < 0.5;
    const std::size_t n = 64;
    std::vector<float> p(n), g(n);
    for (auto& x : p) x = value(false);
    for (auto& x : g) x = value(true);
    for (const auto k : kAll) {
      const bool cpu = k == native::TorchKernels::cpu;
      const Run r =
          exmy_rmsprop(p, g, opts(lr, alpha, eps, wd, mom, centered), k, native::Storage::f32, 3);
      for (std::size_t i = 0; i < n; ++i) {
        float pi = p[i], sq = 0.0f, ga = 0.0f, buf = 0.0f;
        for (int t = 0; t < 3; ++t)
          torch_reference(cpu, lr, alpha, eps, wd, mom, centered, pi, g[i], sq, ga, buf);
        INFO("trial " << trial << " element " << i << " kernels " << static_cast<int>(k));
        CHECK(std::bit_cast<std::uint32_t>(r.p[i]) == std::bit_cast<std::uint32_t>(pi));
        CHECK(std::bit_cast<std::uint32_t>(r.square_avg[i]) == std::bit_cast<std::uint32_t>(sq));
        if (centered)
          CHECK(std::bit_cast<std::uint32_t>(r.grad_avg[i]) == std::bit_cast<std::uint32_t>(ga));
        if (mom > 0.0)
          CHECK(std::bit_cast<std::uint32_t>(r.momentum_buffer[i]) ==
                std::bit_cast<std::uint32_t>(buf));
      }
    }
  }
}

TEST_CASE("rmsprop: hyperparameters, profiles and state files", "[rmsprop][cli]") {
  const optim::Entry& e = *optim::find_optimizer("rmsprop").entry;
  // torch's constructor checks (lr, eps, momentum, weight_decay, alpha >= 0).
  CHECK_THROWS_AS(exmy_rmsprop({1.0f}, {1.0f}, opts(-1.0, 0.99, 1e-8, 0.0, 0.0, false),
                               native::TorchKernels::cpu, native::Storage::f32, 1),
                  InputError);
  CHECK_THROWS_AS(exmy_rmsprop({1.0f}, {1.0f}, opts(1e-2, -0.5, 1e-8, 0.0, 0.0, false),
                               native::TorchKernels::cpu, native::Storage::f32, 1),
                  InputError);
  optim::HyperOptions beta1;
  beta1.beta1 = 0.9;  // RMSprop reads no beta1
  CHECK_THROWS_AS(optim::check_hyper_applies(e, beta1), InputError);
  // --centered belongs to RMSprop only.
  optim::HyperOptions centered;
  centered.extra.emplace_back("--centered", 1.0);
  CHECK_NOTHROW(optim::check_hyper_applies(e, centered));
  CHECK_THROWS_AS(optim::check_hyper_applies(*optim::find_optimizer("adamw").entry, centered),
                  InputError);
  // torch-cpu, torch-cuda and torch-cuda-foreach cover it; no fused RMSprop in torch 2.11.
  optim::Config c;
  c.opt = optim::find_optimizer("rmsprop");
  c.hyper = optim::resolve_hyper(e, {});
  for (const char* p : {"torch-cpu", "torch-cuda", "torch-cuda-foreach"}) {
    optim::Config d = c;
    CHECK_NOTHROW(optim::apply_compat(d, p));
  }
  CHECK_THROWS_AS(optim::apply_compat(c, "torch-cuda-fused"), InputError);
  CHECK_THROWS_AS(optim::apply_compat(c, "bnb-cuda"), InputError);

  if (testing::cli().empty()) return;
  const std::string d = testing::make_tmpdir("exmy_rmsprop");
  io::write_npy(d + "/p.npy", io::make_npy(std::vector<float>{1.0f, 3.0f}, {2}));
  io::write_npy(d + "/g.npy", io::make_npy(std::vector<float>{0.5f, 1.0f}, {2}));
  CHECK(testing::run("step --optimizer rmsprop --params " + d + "/p.npy --grads " + d +
                     "/g.npy --centered --momentum 0.5 --compat torch-cuda-foreach --out " + d +
                     "/s") == 0);
  for (const char* f : {"square_avg", "momentum_buffer", "grad_avg"}) {
    CHECK(testing::exists(d + "/s/" + f + ".npy"));
  }
  CHECK(testing::run("step --optimizer adamw --params " + d + "/p.npy --grads " + d +
                     "/g.npy --centered --out " + d + "/t") == 2);
  CHECK(testing::run("step --optimizer rmsprop --params " + d + "/p.npy --grads " + d +
                     "/g.npy --compat torch-cuda-fused --out " + d + "/u") == 2);
}
