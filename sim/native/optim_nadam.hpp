// torch.optim.NAdam per element (docs/SEMANTICS.md 9.2.4): _single_tensor_nadam on the ATen CPU
// and CUDA kernels, and _multi_tensor_nadam (foreach=True, CUDA), which takes the square root
// before the bias correction (sqrt(v) / bc2 ** 0.5, a true division) where the single-tensor code
// divides first (sqrt(v / bc2); CUDA multiplies by the reciprocal of the CPU scalar). Written from
// torch 2.11.0's torch/optim/nadam.py (git 70d99e998b49). mu_product is torch's fp32 CPU scalar
// tensor (capturable=False): a function of the step, computed on the host.
#pragma once

#include <cmath>

#include "sim/native/fp32_ops.hpp"
#include "sim/native/optim_adamw.hpp"
#include "sim/native/optim_storage.hpp"
#include "sim/native/torch_kernels.hpp"

namespace exmy::native {

struct TorchNadamScalars {
  bool has_wd = false;
  bool decoupled = false;  // decoupled_weight_decay: param.mul_(1 - lr*wd)
  bool maximize = false;
  float decay = 1.0f;     // RN32(1 - lr*wd), fp64
  float wd = 0.0f;        // RN32(wd)
  float w1 = 0.1f;        // RN32(1 - beta1): lerp's weight
  float w1m1 = -0.9f;     // RN32(w1 - 1)
  float beta2 = 0.999f;   // RN32(beta2)
  float w2 = 0.001f;      // RN32(1 - beta2)
  float bc2 = 1.0f;       // single CPU: RN32(1 - beta2^t)
  float inv_bc2 = 1.0f;   // single CUDA: RN32(1 / (1 - beta2^t)), fp64 reciprocal
  float bc2_sqrt = 1.0f;  // foreach: RN32((1 - beta2^t) ** 0.5)
  float eps = 1e-8f;      // RN32(eps)
  float c_grad = 0.0f;    // RN32(-lr * (1 - mu) / (1 - mu_product))
  float c_avg = 0.0f;     // RN32((-lr * mu_next) / (1 - mu_product * mu_next))
  TorchKernels k = TorchKernels::cpu;
};

// Host only. mu_product after step t: the fp32 tensor's 1 ⊗ RN32(mu_1) ⊗ ... ⊗ RN32(mu_t).
inline double torch_nadam_mu(double beta1, double momentum_decay, double step) {
  return beta1 * (1.0 - 0.5 * std::pow(0.96, step * momentum_decay));
}
inline TorchNadamScalars torch_nadam_scalars(double lr, double beta1, double beta2, double eps,
                                             double wd, double momentum_decay, bool decoupled,
                                             bool maximize, long t, TorchKernels k) {
  TorchNadamScalars s;
  s.has_wd = wd != 0.0;
  s.decoupled = decoupled;
  s.maximize = maximize;
  s.decay = static_cast<float>(1.0 - lr * wd);
  s.wd = static_cast<float>(wd);
  s.w1 = static_cast<float>(1.0 - beta1);
  s.w1m1 = s.w1 - 1.0f;
  s.beta2 = static_cast<float>(beta2);
  s.w2 = static_cast<float>(1.0 - beta2);
  const double step = static_cast<double>(t);
  const double bc2 = 1.0 - std::pow(beta2, step);
  s.bc2 = static_cast<float>(bc2);
  s.inv_bc2 = static_cast<float>(1.0 / bc2);
  s.bc2_sqrt = static_cast<float>(std::pow(bc2, 0.5));
  s.eps = static_cast<float>(eps);
  float mu_product = 1.0f;  // mu_product *= mu: fp32 tensor times RN32(mu)
  for (long j = 1; j <= t; ++j) {
    mu_product = mu_product *
                 static_cast<float>(torch_nadam_mu(beta1, momentum_decay, static_cast<double>(j)));
  }
  const double mu = torch_nadam_mu(beta1, momentum_decay, step);
  const double mu_next = torch_nadam_mu(beta1, momentum_decay, step + 1.0);
  const double mp = static_cast<double>(mu_product);  // _get_value(mu_product): .item()
  s.c_grad = static_cast<float>(-lr * (1.0 - mu) / (1.0 - mp));
  s.c_avg = static_cast<float>((-lr * mu_next) / (1.0 - mp * mu_next));
  s.k = k;
  return s;
}

// One element: p, m (exp_avg), v (exp_avg_sq) of storage st; g the gradient value. tail: the
// CPU scalar tail (torch_cpu_scalar_tail).
EXMY_HD void torch_nadam_element(const TorchNadamScalars& s, Storage st, float& p, float g,
                                 float& m, float& v, bool tail = false) {
  const bool cpu = s.k == TorchKernels::cpu;
  if (s.maximize) g = -g;
  if (s.has_wd) {
    if (s.decoupled) {
      p = to_storage(rn_mul(p, s.decay), st);  // param.mul_(1 - lr * weight_decay)
    } else {
      g = torch_add_alpha(g, p, add_scalar(s.wd, st, s.k), st, tail);  // grad.add(param, alpha)
    }
  }
  // exp_avg.lerp_(grad, 1 - beta1); exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
  // (Adam's forms, 9.2)
  const float d = rn_sub(g, m);
  m = to_storage(s.w1 < 0.5f && s.w1 > -0.5f ? rn_fma(s.w1, d, m) : rn_fma(s.w1m1, d, g), st);
  v = to_storage(rn_mul(v, s.beta2), st);
  v = to_storage(torch_addcmul(v, g, g, s.w2, cpu), st);
  float den;
  if (s.k == TorchKernels::cuda_foreach) {
    // _foreach_sqrt; _foreach_div_(., bias_correction_sqrt); _foreach_add_(., eps)
    den = to_storage(rn_sqrt(v), st);
    den = to_storage(rn_div(den, s.bc2_sqrt), st);
    den = to_storage(rn_add(den, s.eps), st);
  } else {
    // exp_avg_sq.div(bias_correction2).sqrt(); denom.add_(eps)
    den = to_storage(cpu ? rn_div(v, s.bc2) : rn_mul(v, s.inv_bc2), st);
    den = to_storage(rn_sqrt(den), st);
    den = to_storage(rn_add(den, add_scalar(s.eps, st, s.k)), st);
  }
  // param.addcdiv_(grad, denom, value=c_grad); param.addcdiv_(exp_avg, denom, value=c_avg):
  // CPU p + (value*x)/denom unfused, CUDA (and foreach's scalar list) fma(value, x/denom, p)
  const auto addcdiv = [&](float x, float c) {
    return to_storage(cpu ? rn_add(p, rn_div(rn_mul(c, x), den)) : rn_fma(c, rn_div(x, den), p),
                      st);
  };
  p = addcdiv(g, s.c_grad);
  p = addcdiv(m, s.c_avg);
}

}  // namespace exmy::native
