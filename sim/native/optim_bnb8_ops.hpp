// bitsandbytes' one-state optimizers besides Momentum — RMSprop, Adagrad, Lion — per element
// (docs/SEMANTICS.md 9.4.1): the RMSPROP / ADAGRAD / LION branches of kOptimizerStatic8bit1State-
// Blockwise (8-bit states, block 256) and of kOptimizer32bit1State (the 32-bit states below
// min_8bit_size and the *32bit optimizers). The block structure (old absmax, block maximum with
// padding lanes, requantization with the sign guard) is the one of sim/native/optim_bnb8.hpp;
// only the element arithmetic differs, so one function per phase takes the operation.
//
// Two arithmetics, as for Adam: the exact one (every C operation of the kernel source rounded to
// fp32, RN; __fdividef as a division, sqrtf correctly rounded) and, under `--compat bnb-cuda`
// (Bnb8Scalars::sm90), the forms nvcc --use_fast_math emitted for sm_90, read from
// `cuobjdump -sass` of libbitsandbytes_cuda130.so (0.50.2): FTZ arithmetic, the contractions
// noted at each function, MUFU.SQRT and MUFU.RCP for sqrtf and __fdividef.
#pragma once

#include <cstdint>

#include "sim/native/optim_bnb8.hpp"

namespace exmy::native {

// The operation of a one-state bitsandbytes optimizer (bitsandbytes' Optimizer_t names).
enum class Bnb1Op : std::uint8_t { rmsprop, adagrad, lion };

// sgn(x) of the kernels, (0 < x) - (x < 0) on fp32: NaN gives 0 (both compares false). Under
// bnb-cuda the compares are FSETP.FTZ, which read a subnormal as zero; the x it is applied to is
// an FTZ result there, so the same function serves both.
EXMY_HD float bnb_sgn(float x) {
  return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f;
}

// Phase 1 of kOptimizerStatic8bit1StateBlockwise: the new state from the dequantized old one
// `s1`, the gradient g (of the parameters' dtype `st`) and the parameter p. Lion decays p here
// (decoupled weight decay since 0.50, p ← T(p ⊗ (1 ⊖ lr ⊗ wd))) and returns in `l` the step
// T(lr ⊗ sgn(c)) the kernel keeps in its gradient register (of type T: rounded to the
// parameters' dtype). No finiteness test (the one-state kernel has none).
// bnb-cuda (sm_90 SASS, every dtype): g' = g ⊗ 1 (gnorm_scale); RMSprop/Adagrad with wd > 0
// g' = fma(p, wd, g'); RMSprop s1 = fma(g' ⊗ g', 1 ⊖ β1, s1 ⊗ β1); Adagrad s1 = fma(g', g', s1);
// Lion decay = fma(−lr, wd, 1), c = fma(g', 1 ⊖ β1, s1 ⊗ β1), s1 = fma(g', 1 ⊖ β2, s1 ⊗ β2).
EXMY_HD float bnb1_state8_value(const Bnb8Scalars& s, Bnb1Op op, Storage st, float& p, float g,
                                float s1, float& l) {
  l = 0.0f;
  if (s.sm90) {
    g = ftz_mul(g, 1.0f);
    switch (op) {
      case Bnb1Op::rmsprop:
        if (s.wd > 0.0f) g = ftz_fma(p, s.wd, g);
        return ftz_fma(ftz_mul(g, g), s.one_minus_beta1, ftz_mul(s1, s.beta1));
      case Bnb1Op::adagrad:
        if (s.wd > 0.0f) g = ftz_fma(p, s.wd, g);
        return ftz_fma(g, g, s1);
      case Bnb1Op::lion: {
        if (s.wd > 0.0f) p = to_storage(ftz_mul(s.decay, p), st);
        const float c = ftz_fma(g, s.one_minus_beta1, ftz_mul(s1, s.beta1));
        l = to_storage(ftz_mul(bnb_sgn(c), s.lr), st);
        return ftz_fma(g, s.one_minus_beta2, ftz_mul(s1, s.beta2));
      }
    }
    return s1;
  }
  switch (op) {
    case Bnb1Op::rmsprop:  // s1*beta1 + ((1 - beta1) * (g*g))
      if (s.wd > 0.0f) g = rn_add(g, rn_mul(p, s.wd));
      return rn_add(rn_mul(s1, s.beta1), rn_mul(s.one_minus_beta1, rn_mul(g, g)));
    case Bnb1Op::adagrad:  // s1 + g*g
      if (s.wd > 0.0f) g = rn_add(g, rn_mul(p, s.wd));
      return rn_add(s1, rn_mul(g, g));
    case Bnb1Op::lion: {  // p *= 1 - lr*wd; l = lr*sgn(s1*b1 + (1-b1)*g); s1*b2 + (1-b2)*g
      if (s.wd > 0.0f) p = to_storage(rn_mul(p, s.decay), st);
      const float c = rn_add(rn_mul(s1, s.beta1), rn_mul(s.one_minus_beta1, g));
      l = to_storage(rn_mul(s.lr, bnb_sgn(c)), st);
      return rn_add(rn_mul(s1, s.beta2), rn_mul(s.one_minus_beta2, g));
    }
  }
  return s1;
}
// The state the kernels requantize: bnb1_state8_value, an arithmetic result in every branch, with a
// NaN as CUDA's 0x7FFFFFFF (f32_nan_as_cuda, no instruction on the device), since the sign guard
// reads its sign bit: a resumed state of code 0.0 under absmax inf, a NaN absmax or a NaN
// gradient gives code 255 on CUDA, where x86's 0xFFC00000 or a carried negative NaN kept 0
// (SEMANTICS 9.4.1). Lion's sgn(c) reads no NaN's sign (0).
EXMY_HD float bnb1_state8(const Bnb8Scalars& s, Bnb1Op op, Storage st, float& p, float g, float s1,
                          float& l) {
  return f32_nan_as_cuda(bnb1_state8_value(s, op, st, p, g, s1, l));
}

// Phase 3: the parameter from the new state. RMSprop and Adagrad divide the gradient as loaded
// (without the weight-decay term that phase 1 added): p ← T(p ⊖ lr ⊗ (g ⊘ (√s1 ⊕ eps))); Lion
// p ← T(p ⊖ l). bnb-cuda: p ← T(fma(−(g ⊗ rcp(sqrt(s1) ⊕ eps)), lr, p)), Lion T(p ⊖ l).
EXMY_HD float bnb1_param8(const Bnb8Scalars& s, Bnb1Op op, Storage st, float p, float g, float s1,
                          float l) {
  if (op == Bnb1Op::lion) return to_storage(s.sm90 ? ftz_add(p, -l) : rn_sub(p, l), st);
  if (s.sm90) {
    const float q = ftz_mul(g, sfu_rcp_f(s.sfu, ftz_add(sfu_sqrt_f(s.sfu, s1), s.eps)));
    return to_storage(ftz_fma(-q, s.lr, p), st);
  }
  return to_storage(rn_sub(p, rn_mul(s.lr, rn_div(g, rn_add(rn_sqrt(s1), s.eps)))), st);
}

// A padding lane of the last, partial block: g = p = 0, state code 128, phase 1.
EXMY_HD float bnb1_padding8(const Bnb8Scalars& s, Bnb1Op op, Storage st, const float* code1,
                            float absmax1) {
  float p = 0.0f, l;
  return bnb1_state8(s, op, st, p, 0.0f, bnb_dequant(s, code1, 128, absmax1), l);
}

// kOptimizer32bit1State (fp32 state; update_scale 1: max_unorm is 0 for these optimizers).
// The gradient register has type T: g ← T(g ⊗ 1), with wd > 0 (RMSprop, Adagrad)
// g ← T(g ⊕ p ⊗ wd). RMSprop s1 = s1 ⊗ β1 ⊕ ((1 ⊖ β1) ⊗ g) ⊗ g, p ← T(p ⊖ lr ⊗ (g ⊘ (√s1 ⊕ eps)));
// Adagrad s1 = s1 ⊕ g ⊗ g, the same p; Lion p ← T(p ⊗ decay) (wd > 0), then
// p ← T(p ⊖ lr ⊗ sgn(s1 ⊗ β1 ⊕ (1 ⊖ β1) ⊗ g)) and s1 = s1 ⊗ β2 ⊕ (1 ⊖ β2) ⊗ g (l in fp32 here).
// bnb-cuda (sm_90 SASS): the weight-decay term is fma(p, wd, g) — for fp32 parameters only at
// positions i ≡ 0 (mod 4), fma(g, 1, p ⊗ wd) at the thread's other three (as in Momentum);
// RMSprop s1 = fma(s1, β1, g ⊗ (g ⊗ (1 ⊖ β1))), p ← T(fma((g ⊗ rcp(sqrt(s1) ⊕ eps)) ⊗ lr, −1, p));
// Adagrad s1 = fma(g, g, s1), p ← T(fma(−(g ⊗ rcp(sqrt(s1) ⊕ eps)), lr, p)); Lion
// c = fma(s1, β1, g ⊗ (1 ⊖ β1)), l = sgn(c) ⊗ lr; fp32 parameters with wd > 0
// p ← fma(decay, p, −l) (one rounding: kOptimizer32bit1State<float, LION> at sm_90 offset
// 0x1380), otherwise p ← T(decay ⊗ p) (wd > 0) and p ← T(fma(l, −1, p));
// s1 = fma(s1, β2, g ⊗ (1 ⊖ β2)). `pos` is the element's flat index mod 4.
EXMY_HD void bnb1_element32(const Bnb8Scalars& s, Bnb1Op op, Storage st, float& p, float g,
                            float& s1, int pos = 0) {
  if (s.sm90) {
    g = to_storage(ftz_mul(g, 1.0f), st);
    if (s.wd > 0.0f && op != Bnb1Op::lion) {
      g = to_storage(
          st == Storage::f32 && pos != 0 ? ftz_fma(g, 1.0f, ftz_mul(p, s.wd)) : ftz_fma(p, s.wd, g),
          st);
    }
    switch (op) {
      case Bnb1Op::rmsprop: {
        s1 = ftz_fma(s1, s.beta1, ftz_mul(g, ftz_mul(g, s.one_minus_beta1)));
        const float q = ftz_mul(g, sfu_rcp_f(s.sfu, ftz_add(sfu_sqrt_f(s.sfu, s1), s.eps)));
        p = to_storage(ftz_fma(ftz_mul(q, s.lr), -1.0f, p), st);
        return;
      }
      case Bnb1Op::adagrad: {
        s1 = ftz_fma(g, g, s1);
        const float q = ftz_mul(g, sfu_rcp_f(s.sfu, ftz_add(sfu_sqrt_f(s.sfu, s1), s.eps)));
        p = to_storage(ftz_fma(-q, s.lr, p), st);
        return;
      }
      case Bnb1Op::lion: {
        const float c = ftz_fma(s1, s.beta1, ftz_mul(g, s.one_minus_beta1));
        // The step l = (sgn(c) ⊗ lr) ⊗ update_scale (update_scale 1). For fp32 parameters with
        // wd > 0 nvcc contracted the two source statements p = p·decay; p = p − l into one
        // FFMA p = fma(decay, p, −l) (no store of T in between); 16-bit parameters round
        // decay ⊗ p to T first, and without decay it is fma(l, −1, p).
        const float l = ftz_mul(ftz_mul(bnb_sgn(c), s.lr), 1.0f);
        if (s.wd > 0.0f && st == Storage::f32) {
          p = ftz_fma(s.decay, p, -l);
        } else {
          if (s.wd > 0.0f) p = to_storage(ftz_mul(s.decay, p), st);
          p = to_storage(ftz_fma(l, -1.0f, p), st);
        }
        s1 = ftz_fma(s1, s.beta2, ftz_mul(g, s.one_minus_beta2));
        return;
      }
    }
    return;
  }
  if (s.wd > 0.0f && op != Bnb1Op::lion) g = to_storage(rn_add(g, rn_mul(p, s.wd)), st);
  switch (op) {
    case Bnb1Op::rmsprop:
      s1 = rn_add(rn_mul(s1, s.beta1), rn_mul(rn_mul(s.one_minus_beta1, g), g));
      p = to_storage(rn_sub(p, rn_mul(s.lr, rn_div(g, rn_add(rn_sqrt(s1), s.eps)))), st);
      return;
    case Bnb1Op::adagrad:
      s1 = rn_add(s1, rn_mul(g, g));
      p = to_storage(rn_sub(p, rn_mul(s.lr, rn_div(g, rn_add(rn_sqrt(s1), s.eps)))), st);
      return;
    case Bnb1Op::lion: {
      if (s.wd > 0.0f) p = to_storage(rn_mul(p, s.decay), st);
      const float c = rn_add(rn_mul(s1, s.beta1), rn_mul(s.one_minus_beta1, g));
      p = to_storage(rn_sub(p, rn_mul(s.lr, bnb_sgn(c))), st);
      s1 = rn_add(rn_mul(s1, s.beta2), rn_mul(s.one_minus_beta2, g));
      return;
    }
  }
}

}  // namespace exmy::native
