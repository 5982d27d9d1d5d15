// torch.optim.Adafactor (torch 2.11, torch/optim/_adafactor.py; docs/SEMANTICS.md 9.2.8): the
// scalars of one step as the Python code computes them in fp64, and the element operations
// between its reductions, on the ATen CPU kernels. The tensor-level step (the reductions and
// their order) is sim/optim/family_adafactor.cpp; the reductions' orders are
// sim/native/torch_reduce_cpu.hpp.
#pragma once

#include <cmath>
#include <cstddef>

#include "sim/native/fp32_ops.hpp"
#include "sim/native/optim_adamw.hpp"
#include "sim/native/optim_storage.hpp"
#include "sim/native/torch_kernels.hpp"

namespace exmy::native {

// The hyperparameters as given (Python floats) and what the step derives from them.
struct TorchAdafactorHyper {
  double lr = 1e-2;
  double beta2_decay = -0.8;
  double eps1 = NAN;  // NaN: None, torch.finfo(param.dtype).eps
  double eps2 = 1e-3;
  double d = 1.0;
  double wd = 0.0;
  bool maximize = false;
  TorchKernels k = TorchKernels::cpu;
};

// torch.finfo(dtype).eps: 2^-23, 2^-7 (bf16), 2^-10 (fp16).
inline double torch_finfo_eps(Storage st) {
  return st == Storage::f32 ? 0x1p-23 : st == Storage::bf16 ? 0x1p-7 : 0x1p-10;
}

// The fp64 scalars of step t and the fp32 / dtype values the tensor ops receive.
struct TorchAdafactorScalars {
  double one_minus_beta2 = 1.0;  // step_float ** beta2_decay
  double rho = 1e-2;             // min(lr, 1 / step_float ** 0.5)
  double eps1 = 0.0;             // eps1, or finfo(dtype).eps
  float w = 1.0f;                // RN32(one_minus_beta2): lerp's weight (opmath)
  float wm1 = 0.0f;              // RN32(w - 1): lerp's large-weight coefficient
  bool has_wd = false;
  float decay = 1.0f;     // RN32(1 - lr * wd): param.mul_'s scalar (opmath)
  float clamp_rv = 0.0f;  // row_var.mean(...).clamp_(min=eps1): eps1.to<T>()
  float clamp_v = 0.0f;   // var_estimate.clamp_(min=eps1 * eps1): (eps1 * eps1).to<T>()
};

// Python's max(a, b) / min(a, b) on floats: the first argument unless the second compares
// greater (smaller); a NaN second argument never does.
inline double py_max(double a, double b) {
  return b > a ? b : a;
}
inline double py_min(double a, double b) {
  return b < a ? b : a;
}

// A Python float given to a tensor op of dtype st as Scalar::to<scalar_t>() reads it: fp64 ->
// fp32 -> st (c10's BFloat16/Half constructors take a float).
inline float scalar_to_storage(double v, Storage st) {
  return to_storage(static_cast<float>(v), st);
}

inline TorchAdafactorScalars torch_adafactor_scalars(const TorchAdafactorHyper& h, Storage st,
                                                     long t) {
  TorchAdafactorScalars s;
  const double tf = static_cast<double>(t);  // step_t.item(): exact in the fp32 step tensor
  s.one_minus_beta2 = std::pow(tf, h.beta2_decay);
  s.rho = py_min(h.lr, 1.0 / std::pow(tf, 0.5));
  s.eps1 = std::isnan(h.eps1) ? torch_finfo_eps(st) : h.eps1;
  s.w = static_cast<float>(s.one_minus_beta2);
  s.wm1 = rn_sub(s.w, 1.0f);
  s.has_wd = h.wd != 0.0;
  s.decay = static_cast<float>(1.0 - h.lr * h.wd);
  s.clamp_rv = scalar_to_storage(s.eps1, st);
  s.clamp_v = scalar_to_storage(s.eps1 * s.eps1, st);
  return s;
}

// self.lerp_(end, weight) with a scalar weight (ATen's lerp: |w| < 0.5 ? fma(w, end - self,
// self) : fma(w - 1, end - self, end)), rounded to st.
EXMY_HD float torch_lerp_scalar(float self, float end, float w, float wm1, Storage st) {
  const float d = rn_sub(end, self);
  return to_storage(w < 0.5f && w > -0.5f ? rn_fma(w, d, self) : rn_fma(wm1, d, end), st);
}

// x.clamp_(min=m): std::max / _mm256_max_ps(m, x): a NaN x stays NaN.
EXMY_HD float torch_clamp_min(float x, float m) {
  return f32_is_nan(x) ? x : (x < m ? m : x);
}

// x.rsqrt_() on the ATen CPU kernels: the Vectorized form 1 / sqrt(x) in fp32, rounded once to
// st; the scalar tail (tail: torch_cpu_scalar_tail) computes `T(1) / std::sqrt(a)`, whose c10
// sqrt of a 16-bit value rounds to T before the division.
EXMY_HD float torch_cpu_rsqrt(float x, Storage st, bool tail) {
  if (tail && st != Storage::f32) return to_storage(rn_div(1.0f, to_storage(rn_sqrt(x), st)), st);
  return to_storage(rn_div(1.0f, rn_sqrt(x)), st);
}

}  // namespace exmy::native
