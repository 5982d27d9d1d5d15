// Adam / AdamW per-element updates (docs/SEMANTICS.md 9.2, 9.3). One function per variant; the
// host reference and the CUDA kernels both call these, so CPU and GPU agree bit for bit.
// Scalars derived from the hyperparameters and the step number are computed once on the host
// (sim/optim/torch_adam_sgd.cpp) and passed in already rounded, as PyTorch converts its Python
// doubles.
#pragma once

#include "sim/native/fp32_ops.hpp"
#include "sim/native/optim_storage.hpp"
#include "sim/native/torch_kernels.hpp"

namespace exmy::native {

// torch.optim.Adam/AdamW, _single_tensor_adam (the CPU default, foreach=False). Every field is the
// fp32 value PyTorch's CPU kernels see.
struct TorchAdamScalars {
  bool has_wd = false;
  bool decoupled = true;  // AdamW: param.mul_(1 - lr*wd); Adam: grad.add(param, alpha=wd)
  float decay = 1.0f;     // RN32(1 - lr*wd), the difference and product in fp64
  float wd = 0.0f;        // RN32(wd)
  float w1 = 0.1f;        // lerp weight RN32(1 - beta1) (fp64 difference)
  float w1m1 = -0.9f;     // RN32(w1 - 1), the large-weight lerp coefficient
  float beta2 = 0.999f;   // RN32(beta2)
  float w2 = 0.001f;      // RN32(1 - beta2) (fp64 difference)
  float neg_step = 0.0f;  // RN32(-(lr / (1 - beta1^t))), fp64 pow/division as CPython
  float bc2_sqrt = 1.0f;  // RN32((1 - beta2^t) ** 0.5), fp64
  float eps = 1e-8f;      // RN32(eps)
  TorchKernels k = TorchKernels::cpu;
  // torch-cuda only: RN32(1 / ((1 - beta2^t) ** 0.5)), the reciprocal div_true_kernel_cuda
  // multiplies by when the divisor is a CPU scalar, computed in fp64 from the Python float.
  float inv_bc2_sqrt = 1.0f;
  bool amsgrad = false;   // amsgrad=True: max_exp_avg_sq kept (state3), the denominator's
  bool maximize = false;  // maximize=True: grad = -grad
};

// Scalars reach the ATen CPU kernels in two ways (docs/SEMANTICS.md 9.1): mul/div/lerp/addcmul/
// addcdiv take them in opmath (fp32); the `alpha` of add and a Python-number operand of add are
// the tensor's dtype (the ufunc CPU kernel binds `alpha.to<scalar_t>()`, and TensorIterator casts
// the wrapped number to the common dtype), i.e. RN to bf16/fp16 of the fp32 value for 16-bit
// tensors. Identity for fp32.
// On CUDA (both kernel families) `alpha` is opmath (`alpha.to<opmath_t>()`) and a Python-number
// operand is read with `original_scalar_value<opmath_t>`: fp32, never rounded to T.
EXMY_HD float add_scalar(float x, Storage st, TorchKernels k = TorchKernels::cpu) {
  return k == TorchKernels::cpu ? to_storage(x, st) : x;
}

// a.add(b, alpha=alpha) with alpha = add_scalar(...), on a tensor of storage st (the ufunc add of
// aten/src/ATen/native/ufunc/add.h): its Vectorized form vec::fmadd(b, alpha, a) computes in fp32
// (one rounding to T), its scalar form self + alpha * other, in fp32 contracted by GCC to the same
// FMA, but for bf16/fp16 in c10::BFloat16/Half arithmetic, the product rounded to T first. The CPU
// scalar form runs on each chunk's tail (torch_cpu_scalar_tail, SEMANTICS 9.2.2); CUDA and the
// Vectorized CPU form are the FMA.
EXMY_HD float torch_add_alpha(float a, float b, float alpha, Storage st, bool cpu_tail) {
  if (cpu_tail && st != Storage::f32)
    return to_storage(rn_add(a, to_storage(rn_mul(alpha, b), st)), st);
  return to_storage(rn_fma(b, alpha, a), st);
}

// tensor.addcmul_(b, c, value=w) on values of one storage type, in fp32 (the caller rounds to T):
// the CPU kernel's self + (w*b)*c as GCC contracts it, fma(w ⊗ b, c, a); CUDA's pointwise_op_impl
// (aten/src/ATen/native/cuda/DeviceAddCmulCdiv.cuh in torch 2.11, shared by the TensorIterator
// kernel and the foreach functors) fma(b, c, a) when the fp32 w is exactly 1, else fma(w, b ⊗ c,
// a). Measured on an H200 (Adagrad's value=1 sums, RAdam foreach's update; SEMANTICS 9.2).
EXMY_HD float torch_addcmul(float a, float b, float c, float w, bool cpu) {
  if (cpu) return rn_fma(rn_mul(w, b), c, a);
  return w == 1.0f ? rn_fma(b, c, a) : rn_fma(w, rn_mul(b, c), a);
}

// One element. p, m, v (and vmax, max_exp_avg_sq, where s.amsgrad) hold values of storage type
// `st` (exact in fp32); g is the gradient value. AMS: -1 reads s.amsgrad; 0 or 1 says it at
// compile time (a GPU kernel instantiated per case, gpu/optim/optim_torch16.cu, which must then
// be s.amsgrad), so that the other case's code is not in the kernel.
template <int AMS = -1>
EXMY_HD void torch_adam_element(const TorchAdamScalars& s, Storage st, float& p, float g, float& m,
                                float& v, float& vmax, bool tail) {
  const bool amsgrad = AMS < 0 ? s.amsgrad : AMS != 0;
  const bool cpu = s.k == TorchKernels::cpu;
  if (s.maximize) g = -g;  // grad = -grad (exact)
  if (s.has_wd) {
    if (s.decoupled) {
      p = to_storage(rn_mul(p, s.decay), st);  // param.mul_(1 - lr*wd)
    } else {
      // grad.add(param, alpha=wd): vec::fmadd on the CPU (its scalar tail: torch_add_alpha),
      // a + alpha*b contracted by nvcc.
      g = torch_add_alpha(g, p, add_scalar(s.wd, st, s.k), st, tail);
    }
  }
  // exp_avg.lerp_(grad, 1 - beta1): ATen's lerp (CPU lerp_vec, CUDA at::native::lerp), one FMA
  // on either branch of |w| < 0.5.
  const float d = rn_sub(g, m);
  m = to_storage(s.w1 < 0.5f && s.w1 > -0.5f ? rn_fma(s.w1, d, m) : rn_fma(s.w1m1, d, g), st);
  // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2). CPU: ATen writes
  // self + (value*t1)*t2, which GCC contracts (-ffp-contract=fast, -mfma kernel builds) into
  // fma(value*t1, t2, self) — inferred from the torch 2.11 cross-check (the unfused form differed
  // in 26% of exp_avg_sq elements by <= 3 ulp). CUDA: a + alpha*(b*c) (PointwiseOpsKernel.cu and
  // the foreach PointwiseOpScalarFunctor), an FMUL then an FFMA in the SASS.
  v = to_storage(rn_mul(v, s.beta2), st);
  v = to_storage(torch_addcmul(v, g, g, s.w2, cpu), st);
  // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps): three tensor ops. CUDA
  // single-tensor divides by a CPU scalar as a multiply by its fp32 reciprocal (BUnaryFunctor
  // <MulFunctor>); foreach divides (BinaryOpScalarListFunctor<std::divides>).
  // amsgrad: torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq) (CUDA foreach:
  // _foreach_maximum_), NaN-propagating; the denominator reads the maximum.
  if (amsgrad) vmax = f32_is_nan(vmax) || f32_is_nan(v) ? vmax + v : (v > vmax ? v : vmax);
  float den = to_storage(rn_sqrt(amsgrad ? vmax : v), st);
  den = to_storage(
      s.k == TorchKernels::cuda ? rn_mul(den, s.inv_bc2_sqrt) : rn_div(den, s.bc2_sqrt), st);
  den = to_storage(rn_add(den, add_scalar(s.eps, st, s.k)), st);
  // param.addcdiv_(exp_avg, denom, value=-step_size). CPU: self + value*t1/t2 unfused. CUDA:
  // a + alpha*(b/c), the IEEE division then an FFMA.
  p = to_storage(
      cpu ? rn_add(p, rn_div(rn_mul(s.neg_step, m), den)) : rn_fma(s.neg_step, rn_div(m, den), p),
      st);
}
EXMY_HD void torch_adam_element(const TorchAdamScalars& s, Storage st, float& p, float g, float& m,
                                float& v, bool tail = false) {
  float vmax = 0.0f;  // unused unless s.amsgrad: callers that keep max_exp_avg_sq pass it
  torch_adam_element(s, st, p, g, m, v, vmax, tail);
}

// torch.optim.AdamW(fused=True), aten/src/ATen/native/cuda/fused_adam_utils.cuh adam_math: the
// hyperparameters are doubles there, so the moment updates and the decay run in fp64 and are
// rounded to fp32 on assignment; fp32 tensors only.
// torch.optim.Adam/AdamW(fused=True): torch 2.11's FusedAdamMathFunctor as compiled for sm_90
// (`--compat torch-cuda-fused`; docs/SEMANTICS.md 9.2). The Python floats are cast to fp32 once;
// the bias corrections use CUDA's powf (sim/native/libdevice_powf.hpp); the moments are
// ATen's lerp in its FMA form (lerp(g, m, β1) = fma(m, β1, fma(g, −β1, g))); sqrt and the
// divisions are correctly rounded; p, m, v are stored to T (RN) at the end.
struct TorchFusedAdamScalars {
  bool decoupled = true;
  bool has_wd = false;     // RN32(wd) != 0
  bool aligned = false;    // the kernel's vectorised path (n % 4 == 0: kILP = 4 per thread)
  float beta1 = 0.9f;      // RN32(beta1)
  float beta2 = 0.999f;    // RN32(beta2)
  float wd = 0.0f;         // RN32(wd)
  float lr_wd = 0.0f;      // RN32(lr) ⊗ RN32(wd)
  float eps = 1e-8f;       // RN32(eps)
  float step_size = 0.0f;  // RN32(lr) ⊘ (1 ⊖ powf(β1, t))
  float bc2_sqrt = 1.0f;   // √(1 ⊖ powf(β2, t))
  bool amsgrad = false;    // max_exp_avg_sq = std::max(max_exp_avg_sq, exp_avg_sq), in fp32
  bool maximize = false;   // grad = -grad as loaded
};

// One element at flat index i (its position decides one contraction, below); p, m, v hold values
// of storage type st, g the gradient value.
EXMY_HD void torch_fused_adam_element(const TorchFusedAdamScalars& s, Storage st, float& p, float g,
                                      float& m, float& v, float& vmax, std::size_t i) {
  if (s.maximize) g = -g;
  if (s.has_wd) {
    if (s.decoupled) {
      p = rn_fma(p, -s.lr_wd, p);  // param -= lr * weight_decay * param
    } else {
      // grad += param * weight_decay: nvcc left the first of each thread's kILP = 4 elements
      // unfused (FMUL, FADD) and contracted the other three. A thread's elements are i, i+1, i+2,
      // i+3 on the vectorised path and i, i+512, i+1024, i+1536 (512 threads per block) on the
      // other; chunks of 65536 elements keep both patterns aligned to the tensor's start.
      // With amsgrad (the depth-5 FusedAdamMathFunctor) every element is contracted (measured:
      // the H200 capture, n = 1,000 and 4,099; SEMANTICS 9.2.6).
      const bool first = !s.amsgrad && (s.aligned ? i % 4 == 0 : i % 2048 < 512);
      g = first ? rn_add(g, rn_mul(p, s.wd)) : rn_fma(p, s.wd, g);
    }
  }
  m = rn_fma(m, s.beta1, rn_fma(g, -s.beta1, g));
  const float g2 = rn_mul(g, g);
  v = rn_fma(v, s.beta2, rn_fma(g2, -s.beta2, g2));
  // std::max(max_exp_avg_sq, exp_avg_sq) on the fp32 values: (a < b) ? b : a, so a NaN
  // exp_avg_sq leaves the maximum as it was (torch.maximum's NaN would propagate)
  if (s.amsgrad) vmax = vmax < v ? v : vmax;
  const float den = rn_add(rn_div(rn_sqrt(s.amsgrad ? vmax : v), s.bc2_sqrt), s.eps);
  p = to_storage(rn_sub(p, rn_div(rn_mul(m, s.step_size), den)), st);
  m = to_storage(m, st);
  v = to_storage(v, st);
  if (s.amsgrad) vmax = to_storage(vmax, st);
}
EXMY_HD void torch_fused_adam_element(const TorchFusedAdamScalars& s, Storage st, float& p, float g,
                                      float& m, float& v, std::size_t i) {
  float vmax = 0.0f;  // unused unless s.amsgrad
  torch_fused_adam_element(s, st, p, g, m, v, vmax, i);
}

// torch.optim.SGD, _single_tensor_sgd (CPU default).
struct TorchSgdScalars {
  bool has_wd = false;
  bool has_momentum = true;
  bool nesterov = false;
  float wd = 0.0f;                   // RN32(wd)
  float momentum = 0.9f;             // RN32(momentum)
  float one_minus_dampening = 1.0f;  // RN32(1 - dampening) (fp64 difference)
  float neg_lr = -1e-3f;             // RN32(-lr)
  TorchKernels k = TorchKernels::cpu;
  // fused=True: RN32(1 ⊖ RN32(dampening)), FusedSgdMathFunctor's (1 - dampening) in fp32.
  float fused_one_minus_dampening = 1.0f;
  bool maximize = false;  // grad = -grad first (every kernel family)
};

// torch.optim.SGD(fused=True): torch 2.11's FusedSgdMathFunctor, which casts every scalar to fp32
// (opmath) once per launch and keeps the whole element update in fp32: the stored tensors are
// rounded to their dtype, the values carried between the lines are not (for bf16/fp16 this is
// what differs from foreach=False, which rounds g and buf to the dtype after each tensor op).
// nvcc's contractions on sm_90: g + wd·p, (1 − d)·g + RN(μ·buf), g + μ·buf', p − lr·g, each one
// FMA. With fp32 parameters the update equals torch-cuda's (0 differing elements against
// foreach=False in the capture of SEMANTICS 9.3).
EXMY_HD void torch_fused_sgd_element(const TorchSgdScalars& s, Storage st, float& p, float g,
                                     float& buf, bool first) {
  if (s.maximize) g = -g;
  if (s.has_wd) g = rn_fma(s.wd, p, g);  // g += weight_decay * p
  if (s.has_momentum) {
    // is_first_step ? g : momentum * buf + (1 - dampening) * g
    const float mb = first ? g : rn_fma(s.fused_one_minus_dampening, g, rn_mul(s.momentum, buf));
    buf = to_storage(mb, st);
    g = s.nesterov ? rn_fma(s.momentum, mb, g) : mb;
  }
  p = to_storage(rn_fma(s.neg_lr, g, p), st);  // p -= lr * g
}

// `first` is true on the step that creates the momentum buffer (buf = grad.clone()).
// tail: the element is in a CPU chunk's scalar tail (torch_cpu_scalar_tail).
EXMY_HD void torch_sgd_element(const TorchSgdScalars& s, Storage st, float& p, float g, float& buf,
                               bool first, bool tail = false) {
  if (s.k == TorchKernels::cuda_fused) return torch_fused_sgd_element(s, st, p, g, buf, first);
  if (s.maximize) g = -g;  // grad = -grad
  // grad.add(param, alpha=wd)
  if (s.has_wd) g = torch_add_alpha(g, p, add_scalar(s.wd, st, s.k), st, tail);
  if (s.has_momentum) {
    if (first) {
      buf = g;
    } else {
      buf = to_storage(rn_mul(buf, s.momentum), st);  // buf.mul_(momentum): fp32 scalar
      // .add_(grad, alpha=1-dampening)
      buf = torch_add_alpha(buf, g, add_scalar(s.one_minus_dampening, st, s.k), st, tail);
    }
    // nesterov: grad.add(buf, alpha=momentum)
    g = s.nesterov ? torch_add_alpha(g, buf, add_scalar(s.momentum, st, s.k), st, tail) : buf;
  }
  p = torch_add_alpha(p, g, add_scalar(s.neg_lr, st, s.k), st,
                      tail);  // param.add_(grad, alpha=-lr)
}

}  // namespace exmy::native
