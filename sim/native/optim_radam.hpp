// torch.optim.RAdam per element (docs/SEMANTICS.md 9.2.5): _single_tensor_radam on the ATen CPU
// and CUDA kernels, and _multi_tensor_radam (foreach=True, CUDA), whose update is another
// sequence of tensor ops (sqrt, + eps, ÷ the signed step size, reciprocal, + the unrectified step,
// then addcmul). Written from torch 2.11.0's torch/optim/radam.py (git 70d99e998b49); the
// rectification test rho_t > 5 and its factor are host doubles.
#pragma once

#include <cmath>

#include "sim/native/fp32_ops.hpp"
#include "sim/native/optim_adamw.hpp"
#include "sim/native/optim_storage.hpp"
#include "sim/native/torch_kernels.hpp"

namespace exmy::native {

struct TorchRadamScalars {
  bool has_wd = false;
  bool decoupled = false;  // decoupled_weight_decay: param.mul_(1 - lr*wd)
  bool maximize = false;
  bool rect = false;     // rho_t > 5
  float decay = 1.0f;    // RN32(1 - lr*wd), fp64
  float wd = 0.0f;       // RN32(wd)
  float w1 = 0.1f;       // RN32(1 - beta1)
  float w1m1 = -0.9f;    // RN32(w1 - 1)
  float beta2 = 0.999f;  // RN32(beta2)
  float w2 = 0.001f;     // RN32(1 - beta2)
  float eps = 1e-8f;     // RN32(eps)
  // single-tensor
  float bc1 = 1.0f;      // CPU: RN32(1 - beta1^t), the divisor of exp_avg / bias_correction1
  float inv_bc1 = 1.0f;  // CUDA: RN32(1 / (1 - beta1^t)), fp64 reciprocal of the CPU scalar
  float lr = 1e-3f;      // RN32(lr)
  float c2 = 1.0f;       // RN32((1 - beta2^t) ** 0.5)
  float rect_v = 1.0f;   // RN32(rect), the rectification factor
  // foreach
  float fe_div = 0.0f;  // RN32((1 - beta2^t) ** 0.5 * (lr * rect / bc1) * -1)
  float fe_add = 0.0f;  // RN32((lr * unrectified / bc1) * -1)
  TorchKernels k = TorchKernels::cpu;
};

inline TorchRadamScalars torch_radam_scalars(double lr, double beta1, double beta2, double eps,
                                             double wd, bool decoupled, bool maximize, long t,
                                             TorchKernels k) {
  TorchRadamScalars s;
  s.has_wd = wd != 0.0;
  s.decoupled = decoupled;
  s.maximize = maximize;
  s.decay = static_cast<float>(1.0 - lr * wd);
  s.wd = static_cast<float>(wd);
  s.w1 = static_cast<float>(1.0 - beta1);
  s.w1m1 = s.w1 - 1.0f;
  s.beta2 = static_cast<float>(beta2);
  s.w2 = static_cast<float>(1.0 - beta2);
  s.eps = static_cast<float>(eps);
  const double step = static_cast<double>(t);
  const double b1t = std::pow(beta1, step), b2t = std::pow(beta2, step);
  const double bc1 = 1.0 - b1t, bc2 = 1.0 - b2t;
  const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
  const double rho_t = rho_inf - 2.0 * step * b2t / bc2;
  s.rect = rho_t > 5.0;
  const double rect = s.rect ? std::pow((rho_t - 4.0) * (rho_t - 2.0) * rho_inf /
                                            ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t),
                                        0.5)
                             : 0.0;
  s.bc1 = static_cast<float>(bc1);
  s.inv_bc1 = static_cast<float>(1.0 / bc1);
  s.lr = static_cast<float>(lr);
  s.c2 = static_cast<float>(std::pow(bc2, 0.5));
  s.rect_v = static_cast<float>(rect);
  const double unrect = rect > 0.0 ? 0.0 : 1.0;
  s.fe_add = static_cast<float>((lr * unrect / bc1) * -1.0);
  s.fe_div = static_cast<float>(std::pow(bc2, 0.5) * (lr * rect / bc1) * -1.0);
  s.k = k;
  return s;
}

// One element: p, m (exp_avg), v (exp_avg_sq) of storage st; g the gradient value.
EXMY_HD void torch_radam_element(const TorchRadamScalars& s, Storage st, float& p, float g,
                                 float& m, float& v, bool tail = false) {
  const bool cpu = s.k == TorchKernels::cpu;
  if (s.maximize) g = -g;
  if (s.has_wd) {
    if (s.decoupled) {
      p = to_storage(rn_mul(p, s.decay), st);
    } else {
      g = torch_add_alpha(g, p, add_scalar(s.wd, st, s.k), st, tail);
    }
  }
  const float d = rn_sub(g, m);
  m = to_storage(s.w1 < 0.5f && s.w1 > -0.5f ? rn_fma(s.w1, d, m) : rn_fma(s.w1m1, d, g), st);
  v = to_storage(rn_mul(v, s.beta2), st);
  v = to_storage(torch_addcmul(v, g, g, s.w2, cpu), st);
  if (s.k == TorchKernels::cuda_foreach) {
    // buffer = sqrt(v); += eps; /= bias_correction2 (the signed step size, -0 when not
    // rectified); reciprocal; += unrect_step_size; param.addcmul_(exp_avg, buffer): value 1,
    // fma(m, b, p) (torch_addcmul)
    float b = to_storage(rn_sqrt(v), st);
    b = to_storage(rn_add(b, s.eps), st);
    b = to_storage(rn_div(b, s.fe_div), st);
    b = to_storage(rn_div(1.0f, b), st);
    b = to_storage(rn_add(b, s.fe_add), st);
    p = to_storage(torch_addcmul(p, m, b, 1.0f, false), st);
    return;
  }
  // bias_corrected_exp_avg = exp_avg / bias_correction1 (CUDA: times the fp32 reciprocal)
  const float bcm = to_storage(cpu ? rn_div(m, s.bc1) : rn_mul(m, s.inv_bc1), st);
  float x = to_storage(rn_mul(bcm, s.lr), st);  // * lr
  if (s.rect) {
    // adaptive = bc2 ** 0.5 / (sqrt(v) + eps): Tensor.__rtruediv__ is reciprocal() * other
    float a = to_storage(rn_sqrt(v), st);
    a = to_storage(rn_add(a, add_scalar(s.eps, st, s.k)), st);
    a = to_storage(rn_div(1.0f, a), st);
    a = to_storage(rn_mul(a, s.c2), st);
    x = to_storage(rn_mul(x, a), st);         // * adaptive
    x = to_storage(rn_mul(x, s.rect_v), st);  // * rect
  }
  // param.add_(update, alpha=-1.0): p - x in either form (alpha*x exact)
  p = to_storage(rn_sub(p, x), st);
}

}  // namespace exmy::native
