// Per-element pieces of quantized matmuls (docs/SEMANTICS.md 8): the exact int8 dot product, the
// dequantization epilogue of SwitchBack eq. 2 / eq. 4, and the fp32-accumulated dot product of
// float codes (FP8) in a defined order. Shared by sim/quant/ and gpu/.
#pragma once

#include <cstdint>

#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"

namespace exmy::native {

// Exact int8 dot product: the sum of a[k*sa] * b[k*sb] over k < K in int64, then wrapped to int32
// (two's complement, as IMMA/DP4A accumulators wrap). |sum| <= K * 127^2 fits int32 for
// K <= 133144 = floor((2^31 - 1) / 127^2), so no wrap happens below that K.
EXMY_HD std::int32_t dot_int8(const std::int8_t* a, std::int64_t sa, const std::int8_t* b,
                              std::int64_t sb, std::int64_t K) {
  std::int64_t acc = 0;
  for (std::int64_t k = 0; k < K; ++k) acc += std::int64_t{a[k * sa]} * std::int64_t{b[k * sb]};
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(acc)));
}

// 1 / 127^2 as fp32: SwitchBack's divfactor = 1. / (127. * 127.) is a Python double passed to a
// Triton kernel as an fp32 scalar, i.e. RN32(1/16129).
inline constexpr float kInvQ2 = static_cast<float>(1.0 / (127.0 * 127.0));

// The order of the dequantization epilogue out = acc * sr * sc / 127^2 (sr: the row state of the
// left operand, sc: the column/tensor state of the right operand).
enum class DequantOrder : std::uint8_t {
  // SwitchBack int8_matmul_rowwise_dequantize / _mixed_dequantize:
  //   out = RN32(sc * RN32(sr * RN32(RN32(acc) * RN32(1/127^2))))
  switchback,
  // factor first: out = RN32(RN32(acc) * RN32(RN32(sr * sc) * RN32(1/127^2)))
  factor_first,
  // bitsandbytes >= 0.45 kdequant_mm_int32_fp16 (LLM.int8()'s epilogue, no bias):
  //   out = fma32(RN32(RN32(RN32(acc) * sr) * sc), MM_DEQUANT_CONST, +0)
  // with MM_DEQUANT_CONST = 6.200012e-05f, which is RN32(1/127^2) (the same fp32 value).
  bnb,
};

EXMY_HD float dequant_int8_product(std::int32_t acc, float sr, float sc, DequantOrder order) {
  const float facc = rn32_from_i32(acc);
  if (order == DequantOrder::factor_first) {
    return rn32_mul(facc, rn32_mul(rn32_mul(sr, sc), kInvQ2));
  }
  if (order == DequantOrder::bnb) {
    // fma with +0: the product rounded once, except that an exact -0 product becomes +0.
    return rn32_canonical(rn_fma(rn32_mul(rn32_mul(facc, sr), sc), kInvQ2, 0.0f));
  }
  return rn32_mul(sc, rn32_mul(sr, rn32_mul(facc, kInvQ2)));
}

// Accumulation order of an fp32 dot product of K exact products p_k (float codes decoded to fp32;
// an FP8 x FP8 product is exact in fp32).
enum class AccumOrder : std::uint8_t {
  sequential,  // acc = +0; for k = 0..K-1: acc = RN32(acc + p_k)
  pairwise,    // sum(p[0..K)) = RN32(sum(p[0..h)) + sum(p[h..K))), h = ceil(K/2); K=1: p_0; K=0: +0
};

// Sequential fp32 dot product of two fp32 vectors (strided), products rounded to fp32 (exact for
// FP8 inputs), sums as AccumOrder::sequential.
EXMY_HD float dot_fp32_sequential(const float* a, std::int64_t sa, const float* b, std::int64_t sb,
                                  std::int64_t K) {
  float acc = 0.0f;
  for (std::int64_t k = 0; k < K; ++k) acc = rn32_add(acc, rn32_mul(a[k * sa], b[k * sb]));
  return acc;
}

// Pairwise fp32 dot product (AccumOrder::pairwise), iterative so it also runs in device code:
// the recursion tree of ceil-halves is evaluated with an explicit stack of (lo, hi, partial).
EXMY_HD float dot_fp32_pairwise(const float* a, std::int64_t sa, const float* b, std::int64_t sb,
                                std::int64_t K) {
  if (K <= 0) return 0.0f;
  // Post-order walk: stack frames hold ranges; results stack holds partial sums.
  struct Frame {
    std::int64_t lo, hi;
    bool expanded;
  };
  Frame st[128];
  float res[128];
  int sp = 0, rp = 0;
  st[sp++] = {0, K, false};
  while (sp > 0) {
    Frame f = st[--sp];
    if (f.hi - f.lo == 1) {
      res[rp++] = rn32_mul(a[f.lo * sa], b[f.lo * sb]);
    } else if (!f.expanded) {
      const std::int64_t h = f.lo + (f.hi - f.lo + 1) / 2;
      st[sp++] = {f.lo, f.hi, true};
      st[sp++] = {h, f.hi, false};
      st[sp++] = {f.lo, h, false};
    } else {
      const float right = res[--rp];
      const float left = res[--rp];
      res[rp++] = rn32_add(left, right);
    }
  }
  return res[0];
}

}  // namespace exmy::native
