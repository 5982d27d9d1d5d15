// Parameter/state storage types of the optimizer steps. Every tensor operation of a reference
// optimizer computes in fp32 ("opmath", as PyTorch does for bf16/fp16 tensors) and rounds its
// result once to the storage type of the tensor it writes (RN, ties to even; overflow to inf; NaN
// to the quiet NaN with the sign kept, docs/SEMANTICS.md 4.1).
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/fp32_ops.hpp"

namespace exmy::native {

enum class Storage : std::uint8_t { f32, bf16, f16 };

EXMY_HD constexpr int storage_bytes(Storage s) {
  return s == Storage::f32 ? 4 : 2;
}

// fp32 -> bf16 code, RN ties to even (bf16 is fp32's top half, so this is a 16-bit rounding of the
// pattern; the carry out of the mantissa moves into the exponent, and into inf at the top).
EXMY_HD std::uint16_t bf16_from_f32(float x) {
  const std::uint32_t u = f32_bits(x);
  if (f32_is_nan(x)) return static_cast<std::uint16_t>((u >> 16 & 0x8000u) | 0x7FC0u);
  const std::uint32_t lsb = (u >> 16) & 1u;
  return static_cast<std::uint16_t>((u + 0x7FFFu + lsb) >> 16);
}
EXMY_HD float f32_from_bf16(std::uint16_t h) {
  return f32_from_bits(std::uint32_t{h} << 16);
}

// fp16 through the one rounding routine (formats are local literals: device code cannot odr-use a
// host constexpr object). Device code takes the hardware conversions (cvt.rn.f16.f32 and the
// exact widening) for every non-NaN value: they are IEEE round-to-nearest-even with overflow to
// inf and gradual underflow, i.e. the same function. NaNs become the quiet NaN with their sign
// (SEMANTICS 4.1), written out here as the pattern `convert` gives (0x7E00 | sign, 0x7FC00000 |
// sign: equal to it for every fp32 and fp16 NaN, tests/native/test_optim_storage_nan.cpp): on
// the device, a NaN fallback through `convert` put a copy of the whole conversion in every
// kernel that rounds to fp16 (its 16-bit AdamW kernel was 10% slower for it, H200 2026-12-02).
// Checked on the device for every fp16 code and random fp32 values (tests/gpu/optim16_test.cu,
// properties/gpu/optim_props.cu).
EXMY_HD std::uint16_t f16_from_f32(float x) {
  constexpr FloatFormat kF32{8, 23, 127, true, true, NanEncoding::ieee, true};
  constexpr FloatFormat kF16{5, 10, 15, true, true, NanEncoding::ieee, true};
  if (f32_is_nan(x)) return static_cast<std::uint16_t>((f32_bits(x) >> 16 & 0x8000u) | 0x7E00u);
  std::uint16_t hw;
  if (hw_f16_from_f32(x, hw)) return hw;  // the device's cvt (platform.hpp)
  return static_cast<std::uint16_t>(convert(kF32, kF16, Rounding{}, f32_bits(x)).code);
}
EXMY_HD float f32_from_f16(std::uint16_t h) {
  constexpr FloatFormat kF32{8, 23, 127, true, true, NanEncoding::ieee, true};
  constexpr FloatFormat kF16{5, 10, 15, true, true, NanEncoding::ieee, true};
  if ((h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0) {
    return f32_from_bits((std::uint32_t{h} & 0x8000u) << 16 | 0x7FC00000u);
  }
  float hw;
  if (hw_f32_from_f16(h, hw)) return hw;
  return f32_from_bits(static_cast<std::uint32_t>(convert(kF16, kF32, Rounding{}, h).code));
}

// RN of an fp32 value to the storage type, returned as the (exact) fp32 value.
EXMY_HD float to_storage(float x, Storage s) {
  switch (s) {
    case Storage::bf16:
      return f32_from_bf16(bf16_from_f32(x));
    case Storage::f16:
      return f32_from_f16(f16_from_f32(x));
    default:
      return x;
  }
}

}  // namespace exmy::native
