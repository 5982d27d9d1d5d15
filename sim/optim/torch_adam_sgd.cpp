// PyTorch Adam/AdamW/SGD reference steps (docs/SEMANTICS.md 9.2, 9.3).
#include <cmath>

#include "sim/common/error.hpp"
#include "sim/native/libdevice_powf.hpp"
#include "sim/optim/optim.hpp"
#include "sim/sfu/sfu_tables.hpp"

namespace exmy::optim {

namespace {
void check_sizes(std::size_t n, std::size_t a, const char* what) {
  if (a != n)
    throw InputError(std::string(what) + ": expected " + std::to_string(n) + " elements, got " +
                     std::to_string(a));
}
}  // namespace

native::TorchAdamScalars torch_adam_scalars(const AdamHyper& h, long step, bool decoupled) {
  native::TorchAdamScalars s;
  s.has_wd = h.wd != 0.0;
  s.decoupled = decoupled;
  // Python evaluates these in double; the tensor ops receive them rounded to fp32.
  s.decay = static_cast<float>(1.0 - h.lr * h.wd);
  s.wd = static_cast<float>(h.wd);
  s.w1 = static_cast<float>(1.0 - h.beta1);
  s.w1m1 = s.w1 - 1.0f;
  s.beta2 = static_cast<float>(h.beta2);
  s.w2 = static_cast<float>(1.0 - h.beta2);
  const double t = static_cast<double>(step);
  const double bc1 = 1.0 - std::pow(h.beta1, t);
  const double bc2 = 1.0 - std::pow(h.beta2, t);
  s.neg_step = static_cast<float>(-(h.lr / bc1));
  s.bc2_sqrt = static_cast<float>(std::pow(bc2, 0.5));  // CPython's float ** 0.5
  s.eps = static_cast<float>(h.eps);
  s.k = h.kernels;
  // div_true_kernel_cuda's reciprocal of a CPU scalar: high_prec_t(1.0) / scalar_value<double>,
  // the Python float itself (not first rounded to fp32 or T), then cast to opmath (fp32).
  s.inv_bc2_sqrt = static_cast<float>(1.0 / std::pow(bc2, 0.5));
  s.amsgrad = h.amsgrad;
  s.maximize = h.maximize;
  return s;
}

native::TorchFusedAdamScalars torch_fused_adam_scalars(const AdamHyper& h, long step,
                                                       bool decoupled, std::size_t n) {
  native::TorchFusedAdamScalars s;
  s.decoupled = decoupled;
  s.aligned = n % 4 == 0;
  s.beta1 = static_cast<float>(h.beta1);
  s.beta2 = static_cast<float>(h.beta2);
  s.wd = static_cast<float>(h.wd);
  s.has_wd = s.wd != 0.0f;
  s.eps = static_cast<float>(h.eps);
  const float lr = static_cast<float>(h.lr);
  s.lr_wd = lr * s.wd;
  // The step count is an fp32 tensor; powf is CUDA's (MUFU.RCP inside: the measured tables).
  const native::SfuTables& sfu = sfu::sm90_view();
  const float t = static_cast<float>(step);
  const float bc1 = 1.0f - native::cuda_powf(sfu, s.beta1, t);
  s.step_size = lr / bc1;
  s.bc2_sqrt = std::sqrt(1.0f - native::cuda_powf(sfu, s.beta2, t));
  s.amsgrad = h.amsgrad;
  s.maximize = h.maximize;
  return s;
}

native::TorchSgdScalars torch_sgd_scalars(const SgdHyper& h) {
  native::TorchSgdScalars s;
  s.has_wd = h.wd != 0.0;
  s.has_momentum = h.momentum != 0.0;
  s.nesterov = h.nesterov;
  s.wd = static_cast<float>(h.wd);
  s.momentum = static_cast<float>(h.momentum);
  s.one_minus_dampening = static_cast<float>(1.0 - h.dampening);
  s.neg_lr = static_cast<float>(-h.lr);
  s.k = h.kernels;
  s.fused_one_minus_dampening = 1.0f - static_cast<float>(h.dampening);
  s.maximize = h.maximize;
  return s;
}

void adam_step(const AdamHyper& h, bool decoupled, Storage st, long step, std::span<float> p,
               std::span<const float> g, std::span<float> m, std::span<float> v,
               std::span<float> vmax) {
  check_sizes(p.size(), g.size(), "gradient");
  check_sizes(p.size(), m.size(), "exp_avg");
  check_sizes(p.size(), v.size(), "exp_avg_sq");
  if (h.amsgrad) check_sizes(p.size(), vmax.size(), "max_exp_avg_sq");
  const native::TorchAdamScalars s = torch_adam_scalars(h, step, decoupled);
  const bool cpu = h.kernels == native::TorchKernels::cpu;
  float unused = 0.0f;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const bool tail =
        cpu && native::torch_cpu_scalar_tail(i, p.size(), native::storage_bytes(st), h.cpu);
    native::torch_adam_element(s, st, p[i], native::to_storage(g[i], st), m[i], v[i],
                               h.amsgrad ? vmax[i] : unused, tail);
  }
}

void adam_fused_step(const AdamHyper& h, bool decoupled, Storage st, long step, std::span<float> p,
                     std::span<const float> g, std::span<float> m, std::span<float> v,
                     std::span<float> vmax) {
  check_sizes(p.size(), g.size(), "gradient");
  check_sizes(p.size(), m.size(), "exp_avg");
  check_sizes(p.size(), v.size(), "exp_avg_sq");
  if (h.amsgrad) check_sizes(p.size(), vmax.size(), "max_exp_avg_sq");
  const native::TorchFusedAdamScalars s = torch_fused_adam_scalars(h, step, decoupled, p.size());
  float unused = 0.0f;
  for (std::size_t i = 0; i < p.size(); ++i) {
    native::torch_fused_adam_element(s, st, p[i], native::to_storage(g[i], st), m[i], v[i],
                                     h.amsgrad ? vmax[i] : unused, i);
  }
}

void sgd_step(const SgdHyper& h, Storage st, long step, std::span<float> p,
              std::span<const float> g, std::span<float> buf) {
  check_sizes(p.size(), g.size(), "gradient");
  check_sizes(p.size(), buf.size(), "momentum_buffer");
  const native::TorchSgdScalars s = torch_sgd_scalars(h);
  const bool cpu = h.kernels == native::TorchKernels::cpu;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const bool tail =
        cpu && native::torch_cpu_scalar_tail(i, p.size(), native::storage_bytes(st), h.cpu);
    native::torch_sgd_element(s, st, p[i], native::to_storage(g[i], st), buf[i], step == 1, tail);
  }
}

}  // namespace exmy::optim
