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
#include "sim/native/sfu_sm90.hpp"

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
  // AdEMAMix (section 9.4.2): β3, α, and the bias corrections as the kernels use them.
  float beta3 = 0.0f, alpha = 0.0f, one_minus_beta3 = 1.0f;
  float c1 = 1.0f;      // correction1 = 1 ⊖ RN32(β1^t) (bnb-cuda: 1 ⊖ __powf(β1, t))
  float rcp_c1 = 1.0f;  // bnb-cuda: rcp.approx(c1) (s1 / c1 as s1 ⊗ rcp(c1))
  float rcp_c2 = 1.0f;  // bnb-cuda: rcp.approx(c2)
  // torch_order only:
  float neg_step = 0.0f;     // RN32(-(lr / (1 - beta1^t))) (fp64)
  float bc2_sqrt = 1.0f;     // RN32(sqrt(1 - beta2^t)) (fp64)
  float torch_decay = 1.0f;  // RN32(1 - lr*wd) (fp64)
  // `--compat bnb-cuda`: bitsandbytes' CUDA kernels as nvcc --use_fast_math compiled them for
  // sm_90 (FTZ arithmetic, the FMA contractions read from their SASS, MUFU approximations from
  // the measured tables; docs/SEMANTICS.md 9.4 and 17). The scalars above then hold the kernel's
  // values (bnb_sm90_scalars).
  bool sm90 = false;
  SfuTables sfu{};
};

// The kernels' scalars under bnb-cuda (kOptimizerStatic8bit2StateBlockwise and
// kOptimizer32bit2State, sm_90 SASS): c1 = 1 ⊖ __powf(β1, t), c2 = sqrt.approx(1 ⊖ __powf(β2, t)),
// step = (c2 ⊗ lr) ⊗ −rcp(c1), decay = fma(−lr, wd, 1); each ⊗ ⊕ with FTZ.
EXMY_HD void bnb_sm90_scalars(Bnb8Scalars& s) {
  const float t = static_cast<float>(s.step);  // I2FP, exact below 2^24
  const float c1 = ftz_add(-sfu_powf(s.sfu, s.beta1, t), 1.0f);
  s.c2 = sfu_sqrt_f(s.sfu, ftz_add(-sfu_powf(s.sfu, s.beta2, t), 1.0f));
  s.step_size = ftz_mul(ftz_mul(s.c2, s.lr), -sfu_rcp_f(s.sfu, c1));
  s.decay = ftz_fma(-s.lr, s.wd, 1.0f);
  s.one_minus_beta1 = ftz_add(-s.beta1, 1.0f);
  s.one_minus_beta2 = ftz_add(-s.beta2, 1.0f);
  s.one_minus_beta3 = ftz_add(-s.beta3, 1.0f);
  s.c1 = c1;
  s.rcp_c1 = sfu_rcp_f(s.sfu, c1);
  s.rcp_c2 = sfu_rcp_f(s.sfu, s.c2);
}

// Dequantization: RN32(code value * absmax).
EXMY_HD float bnb_dequant(const float* code, std::uint8_t c, float absmax) {
  return rn_mul(code[c], absmax);
}
EXMY_HD float bnb_dequant(const Bnb8Scalars& s, const float* code, std::uint8_t c, float absmax) {
  return s.sm90 ? ftz_mul(code[c], absmax) : rn_mul(code[c], absmax);
}
// The requantization ratio s / absmax: RN32, or under bnb-cuda __fdividef = s ⊗ rcp.approx(absmax).
// A block's normalisation x -> x / absmax: bitsandbytes' kernels multiply by rcp(absmax), one
// instruction whose result is the same for every element of the block (so a kernel may compute it
// once per block), the exact path divides.
struct BnbNorm {
  bool sm90 = false;
  float absmax = 1.0f;
  float inv = 1.0f;  // sm90: rcp.approx.ftz(absmax)
};
EXMY_HD BnbNorm bnb_norm(const Bnb8Scalars& s, float absmax) {
  return {s.sm90, absmax, s.sm90 ? sfu_rcp_f(s.sfu, absmax) : 1.0f};
}
EXMY_HD float bnb_ratio(const BnbNorm& n, float x) {
  return n.sm90 ? ftz_mul(n.inv, x) : rn_div(x, n.absmax);
}
EXMY_HD float bnb_ratio(const Bnb8Scalars& s, float x, float absmax) {
  return bnb_ratio(bnb_norm(s, absmax), x);
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
EXMY_HD std::uint8_t bnb_quant_signed(const Bnb8Scalars& k, const float* code, const float* mids,
                                      float s, float absmax) {
  std::uint8_t c = bnb_nearest(mids, bnb_ratio(k, s, absmax));
  if (f32_signbit(code[c]) != f32_signbit(s)) {
    c = static_cast<std::uint8_t>(s > 0.0f ? c + 1 : c - 1);
  }
  return c;
}
EXMY_HD std::uint8_t bnb_quant_unsigned(const Bnb8Scalars& k, const float* mids, float s,
                                        float absmax) {
  return bnb_nearest(mids, bnb_ratio(k, s, absmax));
}

// ---- Adam / AdamW, 8-bit states ----------------------------------------------------------------
// Phase 1. Returns false for a non-finite gradient: bitsandbytes then zeroes both states of the
// element and leaves its parameter untouched.
// Under bnb-cuda the contraction of the state updates depends on the parameter type (sm_90 SASS):
// fp32: s2 = fma(g, (1 ⊖ β2) ⊗ g, s2 ⊗ β2); bf16/fp16: s2 = fma(s2, β2, g ⊗ (g ⊗ (1 ⊖ β2)));
// both: s1 = fma(g, 1 ⊖ β1, s1 ⊗ β1); g is first multiplied by gnorm_scale = 1 (FTZ).
// s1 leaves with a NaN as CUDA's arithmetic makes it, 0x7FFFFFFF (f32_nan_as_cuda; no instruction
// on the device): its requantization's sign guard reads the sign bit, and a NaN state (code 0.0 ⊗
// absmax inf or a NaN absmax, a resumed state) is code 0 there, then 255 on CUDA where x86's
// 0xFFC00000 kept 0 (SEMANTICS 9.4; issue 33). s2's requantization has no guard.
EXMY_HD bool bnb_adam8_states(const Bnb8Scalars& s, Storage st, float g, float& s1, float& s2) {
  if (!f32_is_finite(g)) {
    s1 = 0.0f;
    s2 = 0.0f;
    return false;
  }
  if (s.sm90) {
    g = ftz_mul(g, 1.0f);
    s2 = st == Storage::f32 ? ftz_fma(g, ftz_mul(s.one_minus_beta2, g), ftz_mul(s2, s.beta2))
                            : ftz_fma(s2, s.beta2, ftz_mul(g, ftz_mul(g, s.one_minus_beta2)));
    s1 = f32_nan_as_cuda(ftz_fma(g, s.one_minus_beta1, ftz_mul(s1, s.beta1)));
    return true;
  }
  s2 = rn_add(rn_mul(s2, s.beta2), rn_mul(rn_mul(s.one_minus_beta2, g), g));
  s1 = f32_nan_as_cuda(rn_add(rn_mul(s1, s.beta1), rn_mul(s.one_minus_beta1, g)));
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
  if (s.sm90) {  // p = fma(step, s1 ⊗ rcp(fma(c2, eps, sqrt(s2))), p), then decay ⊗ p
    const float den = ftz_fma(s.c2, s.eps, sfu_sqrt_f(s.sfu, s2));
    p = to_storage(ftz_fma(s.step_size, ftz_mul(sfu_rcp_f(s.sfu, den), s1), p), st);
    if (s.wd > 0.0f) p = to_storage(ftz_mul(s.decay, p), st);
    return p;
  }
  p = to_storage(rn_add(p, rn_mul(s.step_size, rn_div(s1, rn_add(rn_sqrt(s2), s.c2_eps)))), st);
  if (s.wd > 0.0f) p = to_storage(rn_mul(p, s.decay), st);
  return p;
}

// Value a padding lane of bitsandbytes' last, partial block contributes to the block maxima: it
// loads g = 0, state-1 code 128 and state-2 code 0 and runs phase 1 on them.
EXMY_HD void bnb_adam8_padding(const Bnb8Scalars& s, Storage st, const float* code1,
                               const float* code2, float absmax1, float absmax2, float& s1,
                               float& s2) {
  s1 = bnb_dequant(s, code1, 128, absmax1);
  s2 = bnb_dequant(s, code2, 0, absmax2);
  bnb_adam8_states(s, st, 0.0f, s1, s2);
}

// ---- Momentum, 8-bit state ----------------------------------------------------------------------
// Phase 1: coupled weight decay (grad += p*wd), buf = grad on step 1. No finiteness check.
// bnb-cuda (sm_90 SASS): g ⊗ 1, g = fma(p, wd, g), s1 = fma(s1, β1, g), p = fma(−s1, lr, p).
// An arithmetic result leaves as CUDA's NaN (f32_nan_as_cuda, as in bnb_adam8_states: the sign
// guard reads it); the exact profile's s1 = g at t = 1 without decay is no arithmetic, so there
// both engines keep the gradient's own NaN (SEMANTICS 9.4).
EXMY_HD float bnb_momentum8_state(const Bnb8Scalars& s, float p, float g, float s1) {
  if (s.sm90) {
    g = ftz_mul(g, 1.0f);
    if (s.wd > 0.0f) g = ftz_fma(p, s.wd, g);
    return f32_nan_as_cuda(s.step == 1 ? g : ftz_fma(s1, s.beta1, g));
  }
  if (s.wd > 0.0f) g = f32_nan_as_cuda(rn_add(g, rn_mul(p, s.wd)));
  return s.step == 1 ? g : f32_nan_as_cuda(rn_add(rn_mul(s1, s.beta1), g));
}
EXMY_HD float bnb_momentum8_param(const Bnb8Scalars& s, Storage st, float p, float s1) {
  if (s.sm90) return to_storage(ftz_fma(-s1, s.lr, p), st);
  return to_storage(rn_sub(p, rn_mul(s.lr, s1)), st);
}
EXMY_HD float bnb_momentum8_padding(const Bnb8Scalars& s, const float* code1, float absmax1) {
  return bnb_momentum8_state(s, 0.0f, 0.0f, bnb_dequant(s, code1, 128, absmax1));
}

// ---- 32-bit fallback (tensors below min_8bit_size) ---------------------------------------------
// kOptimizer32bit2State, ADAM branch (update_scale = 1): note g*g before the (1 - beta2) factor.
// bnb-cuda (sm_90 SASS, every parameter type): g = T(g ⊗ 1), s1 = fma(s1, β1, g ⊗ (1 ⊖ β1)),
// s2 = fma(s2, β2, (1 ⊖ β2) ⊗ (g ⊗ g)), then the 8-bit kernel's parameter update.
EXMY_HD void bnb_adam32_element(const Bnb8Scalars& s, Storage st, float& p, float g, float& s1,
                                float& s2) {
  if (s.sm90) {
    g = to_storage(ftz_mul(g, 1.0f), st);
    s1 = ftz_fma(s1, s.beta1, ftz_mul(g, s.one_minus_beta1));
    s2 = ftz_fma(s2, s.beta2, ftz_mul(s.one_minus_beta2, ftz_mul(g, g)));
    const float den = ftz_fma(s.c2, s.eps, sfu_sqrt_f(s.sfu, s2));
    p = to_storage(ftz_fma(s.step_size, ftz_mul(s1, sfu_rcp_f(s.sfu, den)), p), st);
    if (s.wd > 0.0f) p = to_storage(ftz_mul(s.decay, p), st);
    return;
  }
  s1 = rn_add(rn_mul(s1, s.beta1), rn_mul(s.one_minus_beta1, g));
  s2 = rn_add(rn_mul(s2, s.beta2), rn_mul(s.one_minus_beta2, rn_mul(g, g)));
  p = to_storage(rn_add(p, rn_mul(s.step_size, rn_div(s1, rn_add(rn_sqrt(s2), s.c2_eps)))), st);
  if (s.wd > 0.0f) p = to_storage(rn_mul(p, s.decay), st);
}
// kOptimizer32bit1State, MOMENTUM branch.
// bnb-cuda (sm_90 SASS): g = T(g ⊗ 1), then with wd > 0 g = T(fma(p, wd, g)) — except for fp32
// parameters at positions i mod 4 = 1, 2, 3 (the thread's 2nd..4th element), where nvcc
// contracted the other product: g = fma(g, 1, p ⊗ wd) —, s1 = fma(s1, β1, g), p = p ⊖ (s1 ⊗ lr)
// (update_scale 1). `pos` is the element's flat index mod 4.
EXMY_HD void bnb_momentum32_element(const Bnb8Scalars& s, Storage st, float& p, float g, float& s1,
                                    int pos = 0) {
  if (s.sm90) {
    g = to_storage(ftz_mul(g, 1.0f), st);
    if (s.wd > 0.0f) {
      g = to_storage(
          st == Storage::f32 && pos != 0 ? ftz_fma(g, 1.0f, ftz_mul(p, s.wd)) : ftz_fma(p, s.wd, g),
          st);
    }
    s1 = s.step == 1 ? g : ftz_fma(s1, s.beta1, g);
    p = to_storage(ftz_fma(ftz_mul(s1, s.lr), -1.0f, p), st);
    return;
  }
  if (s.wd > 0.0f) g = rn_add(g, rn_mul(p, s.wd));
  s1 = s.step == 1 ? g : rn_add(rn_mul(s1, s.beta1), g);
  p = to_storage(rn_add(p, rn_mul(-s.lr, s1)), st);
}

}  // namespace exmy::native
