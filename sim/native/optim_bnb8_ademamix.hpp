// bitsandbytes' AdEMAMix (docs/SEMANTICS.md 9.4.2) per element: the ADEMAMIX branches of
// kOptimizerStatic8bit2StateBlockwise (8-bit m1, m2 with the signed map and ν with the unsigned
// one, block 256) and of kOptimizer32bit2State (fp32 states below min_8bit_size and for
// AdEMAMix32bit). Three states: m1 (β1), ν (β2), m2 (β3, the slow EMA); the update
// p ← p − lr·((m1 / c1 + α·m2) / (√ν / c2 + eps)), then the decoupled decay.
// Exact arithmetic follows the kernel source in fp32 (RN); `--compat bnb-cuda` the sm_90 SASS of
// libbitsandbytes_cuda130.so (0.50.2) as noted at each function (FTZ, MUFU rcp/sqrt).
#pragma once

#include "sim/native/optim_bnb8.hpp"

namespace exmy::native {

// 8-bit phase 1 on the dequantized old states (s1 = m1, s2 = ν, s3 = m2). A non-finite gradient
// zeroes the element's three states and returns false (its parameter is left alone).
// bnb-cuda: g ⊗ 1; ν = fma(g, (1 ⊖ β2) ⊗ g, ν ⊗ β2) for fp32 parameters,
// fma(ν, β2, g ⊗ (g ⊗ (1 ⊖ β2))) for bf16/fp16 (Adam's forms); m1 = fma(g, 1 ⊖ β1, m1 ⊗ β1),
// m2 = fma(g, 1 ⊖ β3, m2 ⊗ β3).
// m1 and m2 leave with a NaN as CUDA's arithmetic makes it, 0x7FFFFFFF (f32_nan_as_cuda; no
// instruction on the device): their requantization's sign guard reads the sign bit, and a NaN
// state (code 0.0 ⊗ absmax inf, a resumed state) is code 0 there, then 255 on CUDA where x86's
// 0xFFC00000 kept 0 (SEMANTICS 9.4.2; issue 33).
EXMY_HD bool bnb_ademamix8_states(const Bnb8Scalars& s, Storage st, float g, float& s1, float& s2,
                                  float& s3) {
  if (!f32_is_finite(g)) {
    s1 = s2 = s3 = 0.0f;
    return false;
  }
  if (s.sm90) {
    g = ftz_mul(g, 1.0f);
    s2 = st == Storage::f32 ? ftz_fma(g, ftz_mul(s.one_minus_beta2, g), ftz_mul(s2, s.beta2))
                            : ftz_fma(s2, s.beta2, ftz_mul(g, ftz_mul(g, s.one_minus_beta2)));
    s1 = f32_nan_as_cuda(ftz_fma(g, s.one_minus_beta1, ftz_mul(s1, s.beta1)));
    s3 = f32_nan_as_cuda(ftz_fma(g, s.one_minus_beta3, ftz_mul(s3, s.beta3)));
    return true;
  }
  s2 = rn_add(rn_mul(s2, s.beta2), rn_mul(rn_mul(s.one_minus_beta2, g), g));
  s1 = f32_nan_as_cuda(rn_add(rn_mul(s1, s.beta1), rn_mul(s.one_minus_beta1, g)));
  s3 = f32_nan_as_cuda(rn_add(rn_mul(s3, s.beta3), rn_mul(s.one_minus_beta3, g)));
  return true;
}

// The parameter update of both kernels: p ← T(p ⊖ lr ⊗ (((s1 ⊘ c1) ⊕ (α ⊗ s3)) ⊘ ((√s2 ⊘ c2) ⊕
// eps))), then with wd > 0 p ← T(p ⊗ (1 ⊖ lr ⊗ wd)).
// bnb-cuda: p ← T(fma(−(fma(s3, α, rcp(c1) ⊗ s1) ⊗ rcp(fma(sqrt(s2), rcp(c2), eps))), lr, p)),
// then p ← T(decay ⊗ p).
EXMY_HD float bnb_ademamix_param(const Bnb8Scalars& s, Storage st, float p, float s1, float s2,
                                 float s3) {
  if (s.sm90) {
    const float num = ftz_fma(s3, s.alpha, ftz_mul(s.rcp_c1, s1));
    const float den = ftz_fma(sfu_sqrt_f(s.sfu, s2), s.rcp_c2, s.eps);
    p = to_storage(ftz_fma(-ftz_mul(num, sfu_rcp_f(s.sfu, den)), s.lr, p), st);
    if (s.wd > 0.0f) p = to_storage(ftz_mul(s.decay, p), st);
    return p;
  }
  const float num = rn_add(rn_div(s1, s.c1), rn_mul(s.alpha, s3));
  const float den = rn_add(rn_div(rn_sqrt(s2), s.c2), s.eps);
  p = to_storage(rn_sub(p, rn_mul(s.lr, rn_div(num, den))), st);
  if (s.wd > 0.0f) p = to_storage(rn_mul(p, s.decay), st);
  return p;
}

// A padding lane of the last, partial block: g = 0, m1 and m2 code 128, ν code 0.
EXMY_HD void bnb_ademamix8_padding(const Bnb8Scalars& s, Storage st, const float* code1,
                                   const float* code2, float absmax1, float absmax2, float absmax3,
                                   float& s1, float& s2, float& s3) {
  s1 = bnb_dequant(s, code1, 128, absmax1);
  s2 = bnb_dequant(s, code2, 0, absmax2);
  s3 = bnb_dequant(s, code1, 128, absmax3);
  bnb_ademamix8_states(s, st, 0.0f, s1, s2, s3);
}

// kOptimizer32bit2State ADEMAMIX: no finiteness test; the gradient register has type T.
// Source order: m1 = m1·β1 + (1 − β1)·g, m2 = m2·β3 + (1 − β3)·g, ν = ν·β2 + ((1 − β2)·g)·g.
// bnb-cuda (every dtype): g = T(g ⊗ 1), m1 = fma(m1, β1, (1 ⊖ β1) ⊗ g),
// m2 = fma(m2, β3, g ⊗ (1 ⊖ β3)), ν = fma(ν, β2, g ⊗ (g ⊗ (1 ⊖ β2))), then the update above.
EXMY_HD void bnb_ademamix32_element(const Bnb8Scalars& s, Storage st, float& p, float g, float& s1,
                                    float& s2, float& s3) {
  if (s.sm90) {
    g = to_storage(ftz_mul(g, 1.0f), st);
    s1 = ftz_fma(s1, s.beta1, ftz_mul(s.one_minus_beta1, g));
    s3 = ftz_fma(s3, s.beta3, ftz_mul(g, s.one_minus_beta3));
    s2 = ftz_fma(s2, s.beta2, ftz_mul(g, ftz_mul(g, s.one_minus_beta2)));
  } else {
    s1 = rn_add(rn_mul(s1, s.beta1), rn_mul(s.one_minus_beta1, g));
    s3 = rn_add(rn_mul(s3, s.beta3), rn_mul(s.one_minus_beta3, g));
    s2 = rn_add(rn_mul(s2, s.beta2), rn_mul(rn_mul(s.one_minus_beta2, g), g));
  }
  p = bnb_ademamix_param(s, st, p, s1, s2, s3);
}

}  // namespace exmy::native
