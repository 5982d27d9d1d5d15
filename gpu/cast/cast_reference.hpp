// The CPU reference of gpu/cast/cast.hpp, element by element: native::convert with the Philox word
// of the element's flat index (docs/SEMANTICS.md 3.2). Tests, properties and the exhaustive
// campaign compare the kernels with this. Header-only, host code.
#pragma once

#include <cstdint>

#include "gpu/cast/cast.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"

namespace exmy::gpu {

inline FloatFormat input_format(CastInput t) {
  return t == CastInput::fp32   ? formats::fp32
         : t == CastInput::bf16 ? formats::bf16
                                : formats::fp16;
}

// The sr:R word of element `index` (relative to the chunk) under p, 0 for other modes.
inline std::uint32_t reference_rand(const CastParams& p, std::uint64_t index) {
  if (p.rounding.mode != RoundMode::sr) return 0;
  return native::sr_word(native::philox_word(p.seed, p.stream, p.index_offset + index),
                         p.rounding.sr_bits);
}

inline std::uint32_t reference_code(CastInput t, const CastParams& p, std::uint32_t x,
                                    std::uint64_t index) {
  return static_cast<std::uint32_t>(
      native::convert(input_format(t), p.to, p.rounding, x, reference_rand(p, index)).code);
}

inline std::uint32_t reference_fake_quant_bits(CastInput t, const CastParams& p, std::uint32_t x,
                                               std::uint64_t index) {
  return native::bits_of(native::to_float(p.to, reference_code(t, p, x, index)));
}

}  // namespace exmy::gpu
