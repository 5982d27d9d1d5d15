// torch.optim.RMSprop per element (docs/SEMANTICS.md 9.2.1): _single_tensor_rmsprop on the ATen
// CPU kernels and on the CUDA kernels, and _multi_tensor_rmsprop (foreach=True), which computes
// the same bits on CUDA (every foreach functor has the TensorIterator kernel's form and no op
// divides by a CPU scalar). The host loop (sim/optim/family_rmsprop.cpp) and the CUDA kernels
// (gpu/optim/family_rmsprop.cu) both call this function.
#pragma once

#include "sim/native/fp32_ops.hpp"
#include "sim/native/optim_adamw.hpp"
#include "sim/native/optim_storage.hpp"
#include "sim/native/torch_kernels.hpp"

namespace exmy::native {

// The fp32 values the tensor ops receive from the Python floats (computed on the host).
struct TorchRmspropScalars {
  bool has_wd = false;        // weight_decay != 0
  bool centered = false;      // centered=True: grad_avg kept
  bool has_momentum = false;  // momentum > 0: momentum_buffer kept
  float wd = 0.0f;            // RN32(wd): add's alpha
  float alpha = 0.99f;        // RN32(alpha): square_avg.mul_(alpha)
  float w = 0.01f;            // RN32(1 - alpha) (fp64 difference): addcmul's value, lerp's weight
  float wm1 = -0.99f;         // RN32(w - 1): lerp's large-weight coefficient
  float eps = 1e-8f;          // RN32(eps)
  float momentum = 0.0f;      // RN32(momentum)
  float neg_lr = -1e-2f;      // RN32(-lr)
  TorchKernels k = TorchKernels::cpu;
  bool maximize = false;  // maximize=True: grad = -grad first
};

// The scalars from the Python floats (host only): each RN32 of the double, 1 - alpha in fp64 first
// as CPython computes it.
inline TorchRmspropScalars torch_rmsprop_scalars(double lr, double alpha, double eps, double wd,
                                                 double momentum, bool centered, TorchKernels k,
                                                 bool maximize = false) {
  TorchRmspropScalars s;
  s.has_wd = wd != 0.0;
  s.centered = centered;
  s.has_momentum = momentum > 0.0;
  s.wd = static_cast<float>(wd);
  s.alpha = static_cast<float>(alpha);
  s.w = static_cast<float>(1.0 - alpha);
  s.wm1 = s.w - 1.0f;
  s.eps = static_cast<float>(eps);
  s.momentum = static_cast<float>(momentum);
  s.neg_lr = static_cast<float>(-lr);
  s.k = k;
  s.maximize = maximize;
  return s;
}

// One element: p, sq (square_avg), ga (grad_avg, centered only), buf (momentum_buffer, momentum
// only) hold values of storage st; g is the gradient value (of st). Every tensor op rounds to st.
// tail: the element is in a CPU chunk's scalar tail (torch_cpu_scalar_tail; the two adds with
// alpha differ there for bf16/fp16).
EXMY_HD void torch_rmsprop_element(const TorchRmspropScalars& s, Storage st, float& p, float g,
                                   float& sq, float& ga, float& buf, bool tail = false) {
  const bool cpu = s.k == TorchKernels::cpu;
  if (s.maximize) g = -g;  // grad = -grad
  // grad = grad.add(param, alpha=weight_decay): fma(p, alpha, g) (CPU vec::fmadd, nvcc's FFMA)
  if (s.has_wd) g = torch_add_alpha(g, p, add_scalar(s.wd, st, s.k), st, tail);
  // square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha): the CPU's fma(value*g, g, sq),
  // CUDA's fma(value, g*g, sq) (the forms of Adam's exp_avg_sq, 9.2)
  sq = to_storage(rn_mul(sq, s.alpha), st);
  sq = to_storage(torch_addcmul(sq, g, g, s.w, cpu), st);
  float avg;
  if (s.centered) {
    // grad_avg.lerp_(grad, 1 - alpha): ATen's lerp, one FMA on either branch of |w| < 0.5
    const float d = rn_sub(g, ga);
    ga = to_storage(s.w < 0.5f && s.w > -0.5f ? rn_fma(s.w, d, ga) : rn_fma(s.wm1, d, g), st);
    // square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_(): CPU fma(-ga, ga, sq) (value*t1
    // is exact), CUDA fma(-1, ga*ga, sq) = sq - RN(ga*ga)
    avg = to_storage(cpu ? rn_fma(-ga, ga, sq) : rn_fma(-1.0f, rn_mul(ga, ga), sq), st);
    avg = to_storage(rn_sqrt(avg), st);
  } else {
    avg = to_storage(rn_sqrt(sq), st);  // square_avg.sqrt()
  }
  avg = to_storage(rn_add(avg, add_scalar(s.eps, st, s.k)), st);  // avg.add_(eps)
  if (s.has_momentum) {
    // buf.mul_(momentum).addcdiv_(grad, avg): value 1, so the CPU's buf + (1*g)/avg and CUDA's
    // fma(1, g/avg, buf) are both buf + RN(g/avg)
    buf = to_storage(rn_mul(buf, s.momentum), st);
    buf = to_storage(rn_add(buf, rn_div(g, avg)), st);
    p = torch_add_alpha(p, buf, add_scalar(s.neg_lr, st, s.k), st, tail);  // add_(buf, alpha=-lr)
  } else {
    // param.addcdiv_(grad, avg, value=-lr): CPU p + (value*g)/avg unfused, CUDA fma(value, g/avg,
    // p)
    p = to_storage(
        cpu ? rn_add(p, rn_div(rn_mul(s.neg_lr, g), avg)) : rn_fma(s.neg_lr, rn_div(g, avg), p),
        st);
  }
}

}  // namespace exmy::native
