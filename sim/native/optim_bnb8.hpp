// bitsandbytes' 8-bit block-wise optimizers (docs/SEMANTICS.md 9.4), per element, in the order of
// bitsandbytes' CUDA kernels kOptimizerStatic8bit2StateBlockwise (Adam/AdamW) and
// kOptimizerStatic8bit1StateBlockwise (Momentum), and the 32-bit kernels kOptimizer32bit2State /
// kOptimizer32bit1State that bitsandbytes uses for tensors below min_8bit_size. A block step is:
//   1. every element: dequantize its states with the OLD block absmax and update them in fp32;
//   2. the block: new absmax = max |state| (NaN ignored, floor -FLT_MAX);
//   3. every element: update the parameter, requantize the states with the NEW absmax.
#pragma once

#include <cstdint>

#include "sim/native/codebook_lookup.hpp"
#include "sim/native/fp32_ops.hpp"
#include "sim/native/optim_storage.hpp"

namespace exmy::native {

// The fp32 scalars of one step, as the bitsandbytes kernels compute them from float arguments.
struct Bnb8Scalars {
  bool torch_order = false;  // named variant: PyTorch AdamW order (decay first, torch bias form)
  int step = 1;              // t, 1-based
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, lr = 1e-3f, wd = 0.0f;
  float one_minus_beta1 = 0.1f;  // RN32(1 - beta1) in fp32
  float one_minus_beta2 = 0.001f;
  float c2 = 1.0f;         // correction2 = sqrt32(RN32(1 - RN32(beta2^t)))
  float c2_eps = 1e-8f;    // RN32(c2 * eps)
  float step_size = 0.0f;  // RN32(RN32(-lr * c2) / c1), c1 = RN32(1 - RN32(beta1^t))
  float decay = 1.0f;      // RN32(1 - RN32(lr * wd))
  // torch_order only:
  float neg_step = 0.0f;     // RN32(-(lr / (1 - beta1^t))) (fp64)
  float bc2_sqrt = 1.0f;     // RN32(sqrt(1 - beta2^t)) (fp64)
  float torch_decay = 1.0f;  // RN32(1 - lr*wd) (fp64)
};

// Dequantization: RN32(code value * absmax).
EXMY_HD float bnb_dequant(const float* code, std::uint8_t c, float absmax) {
  return rn_mul(code[c], absmax);
}

// Decision thresholds of a 256-entry ascending codebook: mids[k] = codebook_midpoint(code, k),
// k = 0..254, the fp32 midpoints of bitsandbytes' search (sim/native/codebook_lookup.hpp), and a
// +inf sentinel mids[255] so that the search below needs no bounds check.
EXMY_HD float bnb_midpoint(const float* code, int k) {
  return k < 255 ? codebook_midpoint(code, k) : f32_from_bits(0x7F800000u);
}
inline void bnb_midpoints(const float* code, float* mids256) {
  for (int k = 0; k < 256; ++k) mids256[k] = bnb_midpoint(code, k);
}

// codebook_nearest(code, x, TieRule::even_index) with the thresholds precomputed: the number of
// midpoints strictly below x (binary lifting, 8 probes; NaN compares false and gives 0), moved to
// the even index when x is exactly a midpoint.
EXMY_HD std::uint8_t bnb_nearest(const float* mids256, float x) {
  int lo = 0;
  EXMY_UNROLL
  for (int step = 128; step > 0; step >>= 1) {
    if (mids256[lo + step - 1] < x) lo += step;
  }
  if (lo < 255 && mids256[lo] == x && (lo & 1) != 0) ++lo;
  return static_cast<std::uint8_t>(lo);
}

// Requantization of state 1 (signed map): nearest code of RN32(s / absmax), ties to the even
// index (bitsandbytes' binary search), then the kernel's sign guard: if the chosen code's sign
// bit differs from the state's, step one code toward the state's sign (uint8 arithmetic).
EXMY_HD std::uint8_t bnb_quant_signed(const float* code, const float* mids, float s, float absmax) {
  std::uint8_t c = bnb_nearest(mids, rn_div(s, absmax));
  if (f32_signbit(code[c]) != f32_signbit(s)) {
    c = static_cast<std::uint8_t>(s > 0.0f ? c + 1 : c - 1);
  }
  return c;
}
EXMY_HD std::uint8_t bnb_quant_unsigned(const float* mids, float s, float absmax) {
  return bnb_nearest(mids, rn_div(s, absmax));
}

// ---- Adam / AdamW, 8-bit states ----------------------------------------------------------------
// Phase 1. Returns false for a non-finite gradient: bitsandbytes then zeroes both states of the
// element and leaves its parameter untouched.
EXMY_HD bool bnb_adam8_states(const Bnb8Scalars& s, float g, float& s1, float& s2) {
  if (!f32_is_finite(g)) {
    s1 = 0.0f;
    s2 = 0.0f;
    return false;
  }
  s2 = rn_add(rn_mul(s2, s.beta2), rn_mul(rn_mul(s.one_minus_beta2, g), g));
  s1 = rn_add(rn_mul(s1, s.beta1), rn_mul(s.one_minus_beta1, g));
  return true;
}

// Phase 3, parameter. `st` is the parameter's storage type: the kernel writes T after the step and
// again after the decay (two roundings for bf16/fp16 parameters).
EXMY_HD float bnb_adam8_param(const Bnb8Scalars& s, Storage st, float p, float s1, float s2) {
  if (s.torch_order) {
    if (s.wd > 0.0f) p = to_storage(rn_mul(p, s.torch_decay), st);
    const float den = rn_add(rn_div(rn_sqrt(s2), s.bc2_sqrt), s.eps);
    return to_storage(rn_add(p, rn_div(rn_mul(s.neg_step, s1), den)), st);
  }
  p = to_storage(rn_add(p, rn_mul(s.step_size, rn_div(s1, rn_add(rn_sqrt(s2), s.c2_eps)))), st);
  if (s.wd > 0.0f) p = to_storage(rn_mul(p, s.decay), st);
  return p;
}

// Value a padding lane of bitsandbytes' last, partial block contributes to the block maxima: it
// loads g = 0, state-1 code 128 and state-2 code 0 and runs phase 1 on them.
EXMY_HD void bnb_adam8_padding(const Bnb8Scalars& s, const float* code1, const float* code2,
                               float absmax1, float absmax2, float& s1, float& s2) {
  s1 = bnb_dequant(code1, 128, absmax1);
  s2 = bnb_dequant(code2, 0, absmax2);
  bnb_adam8_states(s, 0.0f, s1, s2);
}

// ---- Momentum, 8-bit state ----------------------------------------------------------------------
// Phase 1: coupled weight decay (grad += p*wd), buf = grad on step 1. No finiteness check.
EXMY_HD float bnb_momentum8_state(const Bnb8Scalars& s, float p, float g, float s1) {
  if (s.wd > 0.0f) g = rn_add(g, rn_mul(p, s.wd));
  return s.step == 1 ? g : rn_add(rn_mul(s1, s.beta1), g);
}
EXMY_HD float bnb_momentum8_param(const Bnb8Scalars& s, Storage st, float p, float s1) {
  return to_storage(rn_sub(p, rn_mul(s.lr, s1)), st);
}
EXMY_HD float bnb_momentum8_padding(const Bnb8Scalars& s, const float* code1, float absmax1) {
  return bnb_momentum8_state(s, 0.0f, 0.0f, bnb_dequant(code1, 128, absmax1));
}

// ---- 32-bit fallback (tensors below min_8bit_size) ---------------------------------------------
// kOptimizer32bit2State, ADAM branch (update_scale = 1): note g*g before the (1 - beta2) factor.
EXMY_HD void bnb_adam32_element(const Bnb8Scalars& s, Storage st, float& p, float g, float& s1,
                                float& s2) {
  s1 = rn_add(rn_mul(s1, s.beta1), rn_mul(s.one_minus_beta1, g));
  s2 = rn_add(rn_mul(s2, s.beta2), rn_mul(s.one_minus_beta2, rn_mul(g, g)));
  p = to_storage(rn_add(p, rn_mul(s.step_size, rn_div(s1, rn_add(rn_sqrt(s2), s.c2_eps)))), st);
  if (s.wd > 0.0f) p = to_storage(rn_mul(p, s.decay), st);
}
// kOptimizer32bit1State, MOMENTUM branch.
EXMY_HD void bnb_momentum32_element(const Bnb8Scalars& s, Storage st, float& p, float g,
                                    float& s1) {
  if (s.wd > 0.0f) g = rn_add(g, rn_mul(p, s.wd));
  s1 = s.step == 1 ? g : rn_add(rn_mul(s1, s.beta1), g);
  p = to_storage(rn_add(p, rn_mul(-s.lr, s1)), st);
}

}  // namespace exmy::native
