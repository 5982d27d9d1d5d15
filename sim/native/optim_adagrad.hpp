// torch.optim.Adagrad per element (docs/SEMANTICS.md 9.2.3): _single_tensor_adagrad on the ATen
// CPU kernels and on the CUDA kernels, and _multi_tensor_adagrad (foreach=True), which on CUDA
// multiplies the gradient by -clr as its own tensor op before an addcdiv with value 1. Written
// from torch 2.11.0's torch/optim/adagrad.py (git 70d99e998b49). The host loop
// (sim/optim/family_adagrad.cpp) and the CUDA kernels (gpu/optim/family_adagrad.cu) both call
// this function.
#pragma once

#include "sim/native/fp32_ops.hpp"
#include "sim/native/optim_adamw.hpp"
#include "sim/native/optim_storage.hpp"
#include "sim/native/torch_kernels.hpp"

namespace exmy::native {

// The fp32 values the tensor ops receive from the Python floats (computed on the host).
struct TorchAdagradScalars {
  bool has_wd = false;    // weight_decay != 0
  bool maximize = false;  // grad = -grad
  float wd = 0.0f;        // RN32(wd): add's alpha
  float neg_clr = 0.0f;   // RN32(-clr), clr = lr / (1 + (step - 1) * lr_decay) in fp64
  float eps = 1e-10f;     // RN32(eps)
  TorchKernels k = TorchKernels::cpu;
};

// step: the state's step after its increment (a float tensor's value, exact for t < 2^24).
inline TorchAdagradScalars torch_adagrad_scalars(double lr, double lr_decay, double eps, double wd,
                                                 bool maximize, long step, TorchKernels k) {
  TorchAdagradScalars s;
  s.has_wd = wd != 0.0;
  s.maximize = maximize;
  s.wd = static_cast<float>(wd);
  const double clr = lr / (1.0 + (static_cast<double>(step) - 1.0) * lr_decay);
  // single-tensor: value=-clr; foreach: -lr / (1 + ...), the same double
  s.neg_clr = static_cast<float>(-clr);
  s.eps = static_cast<float>(eps);
  s.k = k;
  return s;
}

// torch's state "sum" as created: full_like(param, initial_accumulator_value), the double
// converted to the dtype through fp32 (c10::BFloat16/Half construct from float).
EXMY_HD float torch_adagrad_initial_sum(double v, Storage st) {
  return to_storage(static_cast<float>(v), st);
}

// One element: p and sum hold values of storage st, g the gradient value (of st). tail: the
// element is in a CPU chunk's scalar tail (torch_cpu_scalar_tail: add with alpha differs there).
EXMY_HD void torch_adagrad_element(const TorchAdagradScalars& s, Storage st, float& p, float g,
                                   float& sum, bool tail = false) {
  const bool cpu = s.k == TorchKernels::cpu;
  if (s.maximize) g = -g;
  // grad = grad.add(param, alpha=weight_decay)
  if (s.has_wd) g = torch_add_alpha(g, p, add_scalar(s.wd, st, s.k), st, tail);
  // state_sum.addcmul_(grad, grad, value=1): CPU fma(1*g, g, sum); CUDA's value-1 case is the
  // same FMA (torch_addcmul)
  sum = to_storage(torch_addcmul(sum, g, g, 1.0f, cpu), st);  // fma(g, g, sum) on every kernel
  // std = state_sum.sqrt().add_(eps)
  float den = to_storage(rn_sqrt(sum), st);
  den = to_storage(rn_add(den, add_scalar(s.eps, st, s.k)), st);
  if (s.k == TorchKernels::cuda_foreach) {
    // numerator = _foreach_mul(grads, minus_clr); _foreach_addcdiv_(params, numerator, std):
    // value 1, p + RN(num / std)
    const float num = to_storage(rn_mul(g, s.neg_clr), st);
    p = to_storage(rn_add(p, rn_div(num, den)), st);
  } else {
    // param.addcdiv_(grad, std, value=-clr): CPU p + (value*g)/std unfused, CUDA fma(value,
    // g/std, p)
    p = to_storage(
        cpu ? rn_add(p, rn_div(rn_mul(s.neg_clr, g), den)) : rn_fma(s.neg_clr, rn_div(g, den), p),
        st);
  }
}

}  // namespace exmy::native
