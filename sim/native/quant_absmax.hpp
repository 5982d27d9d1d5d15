// The absmax reduction of tensor quantization (docs/SEMANTICS.md 7.2). max is exact in fp32 and,
// with the NaN rule below, commutative and associative: CPU loops and GPU tree reductions give the
// same bits in any order.
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"

namespace exmy::native {

// What a NaN element does to its group's absmax.
enum class NanPolicy : std::uint8_t {
  propagate,  // the group's absmax is NaN (torch.amax / x.abs().max(), TransformerEngine, torchao)
  ignore,     // NaN elements are skipped (CUDA fmaxf, as bitsandbytes' kQuantizeBlockwise)
  // `--compat bnb-cuda`: `ignore` through FMNMX.FTZ — a subnormal |x| counts as 0 (SEMANTICS 7.5)
  ignore_ftz,
};

// The absmax of an empty group (the identity of absmax_combine).
inline constexpr float kAbsmaxInit = 0.0f;

// acc' = max(acc, |x|). |x| has its sign cleared, so -0 and +0 both give +0 and the result is
// never negative. With `propagate` a NaN acc or x gives the canonical +NaN (0x7FC00000); with
// `ignore` a NaN x leaves acc unchanged (acc itself is then never NaN).
EXMY_HD float absmax_combine(float acc, float x, NanPolicy p) {
  float ax = abs32(x);
  if (p == NanPolicy::ignore_ftz && (bits_of(ax) & 0x7F800000u) == 0) ax = 0.0f;
  if (is_nan32(ax) || is_nan32(acc)) {
    if (p != NanPolicy::propagate) return is_nan32(acc) ? ax : acc;
    return float_of(0x7FC00000u);
  }
  return ax > acc ? ax : acc;
}

}  // namespace exmy::native
