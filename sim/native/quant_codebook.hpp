// Block-wise codebook quantization as 8-bit optimizers store their states (seed 002, bitsandbytes
// quantize_blockwise / kQuantizeBlockwise); docs/SEMANTICS.md 7.5. The nearest-code lookup is
// codebook_lookup.hpp's; this header holds the normalization and the dequantization.
#pragma once

#include <cstdint>

#include "sim/native/codebook_lookup.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"
#include "sim/native/sfu_sm90.hpp"

namespace exmy::native {

enum class NormOrder : std::uint8_t {
  recip_mul,  // n = RN32(x * RN32(1 / a))  kQuantizeBlockwise: smem_absmax_value = 1.0f / absmax
  div,        // n = RN32(x / a)            bitsandbytes' CPU quantize_block
  // `--compat bnb-cuda`: kQuantizeBlockwise as built with --use_fast_math (sm_90 SASS):
  // n = x ⊗ rcp.approx(a) with FTZ, no special case for a = 0 (0·inf = NaN)
  bnb_cuda,
};

// The normalized value fed to the codebook lookup. a == 0 (all-zero block) gives +0 for every
// element (no division: the code is the one nearest 0, the state 0, the dequantized value 0);
// otherwise IEEE fp32 arithmetic decides (a NaN or inf state gives NaN or 0).
EXMY_HD float codebook_normalize(float x, float a, NormOrder order, const SfuTables& sfu = {}) {
  if (order == NormOrder::bnb_cuda) return ftz_mul(x, sfu_rcp_f(sfu, a));
  if (a == 0.0f) return 0.0f;
  return order == NormOrder::div ? rn32_div(x, a) : rn32_mul(x, rn32_div(1.0f, a));
}

// kDequantizeBlockwise: x^ = RN32(code_value * a) (FMUL.FTZ under bnb-cuda).
EXMY_HD float codebook_dequant(const float* values256, std::uint8_t code, float a,
                               NormOrder order = NormOrder::recip_mul) {
  return order == NormOrder::bnb_cuda ? ftz_mul(values256[code], a) : rn32_mul(values256[code], a);
}

}  // namespace exmy::native
