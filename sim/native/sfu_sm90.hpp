// The approximate fp32 instructions of NVIDIA's special function unit (MUFU) and the FTZ
// arithmetic of fast-math kernels, modelled bit for bit from measured tables
// (docs/SEMANTICS.md 17). Host and device; the tables are decoded by sim/sfu/sfu_tables.hpp and
// measured by `exmy probe sfu --device cuda` (gpu/sfu/), which also checks every model below
// against the instruction on all 2^32 inputs.
//
// Each instruction is a table over one reduced domain plus exact scaling rules; the rules are
// what the probe proved, not assumptions (H100/H200, sm_90):
//   rcp.approx.ftz.f32   1/(m·2^e) = R[m]·2^-e                     R: 2^23 results on [1, 2)
//   sqrt.approx.ftz.f32  √(m·2^(2k+o)) = Q[o·2^23 + m]·2^k         Q: 2^24 results on [1, 4)
//   rsqrt.approx.ftz.f32 1/√(m·2^(2k+o)) = Y[o·2^23 + m]·2^-k      Y: 2^24 results on [1, 4)
//   ex2.approx.ftz.f32   |x| truncated to 23 fraction bits, n + t/2^23:
//                        2^x = P[t]·2^n (x > 0), G[t]·2^-n (x < 0)  P, G: 2^23 results each
//   lg2.approx.ftz.f32   m·2^e: e = 0 → L0[m]; e = −1 → L1[m]; e ≥ 1 → RZ(e + L0[m]);
//                        e ≤ −2 → −RZ(|e| − L0[m] − S[m]·0⁺)     L0, L1: 2^23 results, S: bits
// (S[m] = the hardware's internal logarithm lies above L0[m]; it matters only where |e| − L0[m]
// is an fp32 number, which is where the probe measures it.) A result below 2^−126 is flushed to
// a zero of its sign (.ftz), subnormal inputs count as zeros of their sign, NaN results are the
// hardware's 0x7FFFFFFF.
#pragma once

#include <cstdint>

#include "sim/native/fp32_ops.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/specialize/platform.hpp"

namespace exmy::native {

// Decoded tables (pointers into host or device memory; see sim/sfu/sfu_tables.hpp).
struct SfuTables {
  const std::uint32_t* rcp = nullptr;    // R, 2^23
  const std::uint32_t* sqrt = nullptr;   // Q, 2^24
  const std::uint32_t* rsqrt = nullptr;  // Y, 2^24
  const std::uint32_t* ex2p = nullptr;   // P, 2^23
  const std::uint32_t* ex2n = nullptr;   // G, 2^23
  const std::uint32_t* lg2e0 = nullptr;  // L0, 2^23
  const std::uint32_t* lg2e1 = nullptr;  // L1 (inputs in [0.5, 1)), 2^23
  const std::uint32_t* lg2s = nullptr;   // S, 2^23 bits as 2^18 words
};

constexpr std::uint32_t kSfuNaN = 0x7FFFFFFFu;

// A result whose biased exponent is re: normal, or flushed to a signed zero (re <= 0), or
// infinity (re >= 255).
EXMY_HD std::uint32_t sfu_pack(std::uint32_t sign, int re, std::uint32_t frac) {
  if (re <= 0) return sign;
  if (re >= 255) return sign | 0x7F800000u;
  return sign | (static_cast<std::uint32_t>(re) << 23) | frac;
}

EXMY_HD std::uint32_t sfu_rcp(const SfuTables& t, std::uint32_t x) {
  const std::uint32_t s = x & 0x80000000u, ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return kSfuNaN;
  if (ax == 0x7F800000u) return s;
  const int ef = static_cast<int>(ax >> 23);
  if (ef == 0) return s | 0x7F800000u;  // zero or flushed subnormal
  const std::uint32_t r = t.rcp[ax & 0x7FFFFFu];
  return sfu_pack(s, static_cast<int>(r >> 23) - (ef - 127), r & 0x7FFFFFu);
}

// sqrt and rsqrt share the reduction to [1, 4).
EXMY_HD std::uint32_t sfu_sqrt_like(const std::uint32_t* table, bool recip, std::uint32_t x) {
  const std::uint32_t s = x & 0x80000000u, ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return kSfuNaN;
  const int ef = static_cast<int>(ax >> 23);
  if (ef == 0) return recip ? (s | 0x7F800000u) : s;  // ±0 and flushed subnormals
  if (s != 0) return kSfuNaN;
  if (ax == 0x7F800000u) return recip ? 0u : 0x7F800000u;
  const int e = ef - 127, odd = e & 1, k = (e - odd) / 2;
  const std::uint32_t r = table[(static_cast<std::uint32_t>(odd) << 23) | (ax & 0x7FFFFFu)];
  return sfu_pack(0u, static_cast<int>(r >> 23) + (recip ? -k : k), r & 0x7FFFFFu);
}
EXMY_HD std::uint32_t sfu_sqrt(const SfuTables& t, std::uint32_t x) {
  return sfu_sqrt_like(t.sqrt, false, x);
}
EXMY_HD std::uint32_t sfu_rsqrt(const SfuTables& t, std::uint32_t x) {
  return sfu_sqrt_like(t.rsqrt, true, x);
}

EXMY_HD std::uint32_t sfu_ex2(const SfuTables& t, std::uint32_t x) {
  const std::uint32_t s = x & 0x80000000u, ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return kSfuNaN;
  const int ef = static_cast<int>(ax >> 23);
  if (ef == 0) return 0x3F800000u;  // ±0 and flushed subnormals: 1
  const int e = ef - 127;
  if (e >= 7) return s ? 0u : 0x7F800000u;  // |x| >= 128 (and ±inf)
  // |x|·2^23 truncated: |x| = (2^23 + frac)·2^(e−23).
  const std::uint64_t m = 0x800000u | (ax & 0x7FFFFFu);
  const int sh = e;  // (e − 23) + 23
  const std::uint64_t T = sh >= 0 ? (m << sh) : (sh > -40 ? (m >> -sh) : 0u);
  const int n = static_cast<int>(T >> 23);
  const std::uint32_t r = (s ? t.ex2n : t.ex2p)[T & 0x7FFFFFu];
  return sfu_pack(0u, static_cast<int>(r >> 23) + (s ? -n : n), r & 0x7FFFFFu);
}

// The lg2 rules add an exponent to L0 in fixed point with 48 fraction bits: exact, because every
// nonzero L0 is at least 2^-23 (the probe's tables: L0[1] = 1.7e-7), so its last bit is at least
// 2^-46, and |e| + 1 < 2^8 leaves the sum 56 bits.
constexpr int kSfuFix = 48;

// A fixed-point magnitude v (kSfuFix fraction bits, v < 2^(kSfuFix + 8)) rounded toward zero to
// fp32 bits.
EXMY_HD std::uint32_t sfu_rz_fixed(std::uint64_t v) {
  if (v == 0) return 0u;
  const int msb = 63 - clz64(v);  // the value's exponent is msb − kSfuFix
  const int drop = msb - 23;      // bits below the 24-bit significand
  const std::uint64_t sig = drop >= 0 ? (v >> drop) : (v << -drop);
  return (static_cast<std::uint32_t>(msb - kSfuFix + 127) << 23) |
         (static_cast<std::uint32_t>(sig) & 0x7FFFFFu);
}

// fp32 bits of a value in [0, 2^8) as fixed point (exact for values of at least 2^(23−kSfuFix)).
EXMY_HD std::uint64_t sfu_fixed(std::uint32_t b) {
  const int ef = static_cast<int>(b >> 23);
  if (ef == 0) return 0u;
  const std::uint64_t m = 0x800000u | (b & 0x7FFFFFu);
  const int sh = (ef - 127) - 23 + kSfuFix;
  return sh >= 0 ? (m << sh) : (sh > -64 ? (m >> -sh) : 0u);
}

EXMY_HD std::uint32_t sfu_lg2(const SfuTables& t, std::uint32_t x) {
  const std::uint32_t s = x & 0x80000000u, ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return kSfuNaN;
  const int ef = static_cast<int>(ax >> 23);
  if (ef == 0) return 0xFF800000u;  // ±0 and flushed subnormals: −inf
  if (s != 0) return kSfuNaN;
  if (ax == 0x7F800000u) return 0x7F800000u;
  const std::uint32_t m = ax & 0x7FFFFFu;
  const int e = ef - 127;
  if (e == 0) return t.lg2e0[m];
  if (e == -1) return t.lg2e1[m];
  const std::uint64_t L = sfu_fixed(t.lg2e0[m]);  // L0 in [0, 1)
  const std::uint64_t E = static_cast<std::uint64_t>(e > 0 ? e : -e) << kSfuFix;
  if (e > 0) return sfu_rz_fixed(E + L);
  // |e| − L0 rounded toward zero, one step lower when S says the true value is below it and
  // |e| − L0 is itself an fp32 number.
  const std::uint64_t v = E - L;
  std::uint32_t r = sfu_rz_fixed(v);
  const bool below = ((t.lg2s[m >> 5] >> (m & 31)) & 1u) != 0;
  if (below && sfu_fixed(r) == v) r -= 1u;  // the fp32 predecessor (toward zero)
  return 0x80000000u | r;
}

// The models on float values. Device code compiled for sm_90 issues the instruction itself (the
// probe proved the tables equal to it on all 2^32 inputs); other code reads the tables.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
#define EXMY_SFU_HW(ptx, x)               \
  float r;                                \
  asm(ptx " %0, %1;" : "=f"(r) : "f"(x)); \
  return r
EXMY_HD float sfu_rcp_f(const SfuTables&, float x) {
  EXMY_SFU_HW("rcp.approx.ftz.f32", x);
}
EXMY_HD float sfu_sqrt_f(const SfuTables&, float x) {
  EXMY_SFU_HW("sqrt.approx.ftz.f32", x);
}
EXMY_HD float sfu_ex2_f(const SfuTables&, float x) {
  EXMY_SFU_HW("ex2.approx.ftz.f32", x);
}
EXMY_HD float sfu_lg2_f(const SfuTables&, float x) {
  EXMY_SFU_HW("lg2.approx.ftz.f32", x);
}
EXMY_HD float sfu_rsqrt_f(const SfuTables&, float x) {
  EXMY_SFU_HW("rsqrt.approx.ftz.f32", x);
}
#undef EXMY_SFU_HW
#else
EXMY_HD float sfu_rcp_f(const SfuTables& t, float x) {
  return f32_from_bits(sfu_rcp(t, f32_bits(x)));
}
EXMY_HD float sfu_sqrt_f(const SfuTables& t, float x) {
  return f32_from_bits(sfu_sqrt(t, f32_bits(x)));
}
EXMY_HD float sfu_ex2_f(const SfuTables& t, float x) {
  return f32_from_bits(sfu_ex2(t, f32_bits(x)));
}
EXMY_HD float sfu_lg2_f(const SfuTables& t, float x) {
  return f32_from_bits(sfu_lg2(t, f32_bits(x)));
}
EXMY_HD float sfu_rsqrt_f(const SfuTables& t, float x) {
  return f32_from_bits(sfu_rsqrt(t, f32_bits(x)));
}
#endif
// The non-FTZ and division forms: fixed SASS sequences around the same MUFU instructions
// (nvcc 13.0, sm_90; docs/SEMANTICS.md 17.2). Scalings by powers of two are exact IEEE multiplies.
// rcp.approx.f32: subnormal |x| scaled by 2^24, |x| > 2^126 by 1/4, r = s ⊗ rcp(x ⊗ s).
EXMY_HD float sfu_rcp_full_f(const SfuTables& t, float x) {
  const float ax = f32_abs(x);
  float s = ax < f32_from_bits(0x00800000u) ? 16777216.0f : 1.0f;
  if (ax > 0x1p126f) s = 0.25f;
  return rn_mul(s, sfu_rcp_f(t, rn_mul(x, s)));
}
// sqrt.approx.f32: a subnormal x is scaled by 2^24 and the root by 2^-12.
EXMY_HD float sfu_sqrt_full_f(const SfuTables& t, float x) {
  if (f32_abs(x) >= f32_from_bits(0x00800000u)) return sfu_sqrt_f(t, x);
  return rn_mul(sfu_sqrt_f(t, rn_mul(x, 16777216.0f)), 0.000244140625f);
}
// rsqrt.approx.f32 (CUDA's rsqrtf without FTZ: torch's rsqrt kernels): a subnormal x is scaled
// by 2^24 and the result by 2^12 (checked against torch 2.11's x.rsqrt() on an H200: 16,384 fp32
// inputs from 2^-149 to 2^120 with zero and inf, bench/peers/torch_adafactor_capture.py).
EXMY_HD float sfu_rsqrt_full_f(const SfuTables& t, float x) {
  if (!(f32_abs(x) < f32_from_bits(0x00800000u)) || x == 0.0f) return sfu_rsqrt_f(t, x);
  return rn_mul(sfu_rsqrt_f(t, rn_mul(x, 16777216.0f)), 4096.0f);
}
// div.approx.ftz.f32: a ⊗ rcp(b) with FTZ (CUDA's __fdividef under --use_fast_math).
EXMY_HD float sfu_div_approx_ftz_f(const SfuTables& t, float a, float b) {
  return ftz_mul(a, sfu_rcp_f(t, b));
}
// div.approx.f32: a subnormal |b| scales both operands by 2^24.
EXMY_HD float sfu_div_approx_f(const SfuTables& t, float a, float b) {
  if (f32_abs(b) < f32_from_bits(0x00800000u)) {
    a = rn_mul(a, 16777216.0f);
    b = rn_mul(b, 16777216.0f);
  }
  return rn_mul(sfu_rcp_f(t, b), a);
}
// div.full.f32 (Triton's fp32 division): |b| > 2^126 scales both by 1/4, a subnormal |b| by 2^24.
EXMY_HD float sfu_div_full_f(const SfuTables& t, float a, float b) {
  const float ab = f32_abs(b);
  if (ab > 0x1p126f) {
    a = rn_mul(a, 0.25f);
    b = rn_mul(b, 0.25f);
  } else if (ab < f32_from_bits(0x00800000u)) {
    a = rn_mul(a, 16777216.0f);
    b = rn_mul(b, 16777216.0f);
  }
  return rn_mul(sfu_rcp_f(t, b), a);
}
// div.full.ftz.f32: the 1/4 scaling with FTZ multiplies.
EXMY_HD float sfu_div_full_ftz_f(const SfuTables& t, float a, float b) {
  if (f32_abs(b) > 0x1p126f) {
    a = ftz_mul(a, 0.25f);
    b = ftz_mul(b, 0.25f);
  }
  return ftz_mul(sfu_rcp_f(t, b), a);
}

// CUDA's __powf(x, y) under fast math: ex2.approx.ftz(y ⊗ lg2.approx.ftz(x)) with an FTZ multiply
// (bitsandbytes' kernels, sm_90 SASS: MUFU.LG2, FMUL.FTZ, MUFU.EX2).
EXMY_HD float sfu_powf(const SfuTables& t, float x, float y) {
  return sfu_ex2_f(t, ftz_mul(y, sfu_lg2_f(t, x)));
}

}  // namespace exmy::native
