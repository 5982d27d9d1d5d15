// The NVIDIA hardware conversion backend ("hw"): PTX cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 and
// .f16x2 (sm_89 and newer), and the reverse cvt.rn.f16x2.{e4m3x2,e5m2x2}. It is not our engine:
// it exists so that its bits can be compared with the software cast under Overflow::satfinite
// (gpu/verify/verify.hpp); differences are reported, not hidden. sm_90 has no bf16x2 source variant
// (PTX lists only f32 and f16x2 sources for fp8 targets), so bf16 is not offered here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"

struct CUstream_st;

namespace exmy::gpu {

enum class HwFp8 : std::uint8_t { e4m3, e5m2 };

// The format and rounding of our software path that the instruction is compared with.
constexpr FloatFormat hw_format(HwFp8 t) {
  return t == HwFp8::e4m3 ? formats::e4m3fn : formats::e5m2;
}
constexpr Rounding hw_rounding() {
  return Rounding{RoundMode::rne, 0, Overflow::satfinite};
}
constexpr const char* hw_name(HwFp8 t) {
  return t == HwFp8::e4m3 ? "e4m3" : "e5m2";
}

// True when the current device runs the instructions (compute capability 8.9+) and this build
// holds them; found once per device.
bool hw_fp8_available();

// out[i] = cvt.rn.satfinite.<t>x2.f32 of in[i] (device pointers, n elements).
void hw_cast_fp32_to_fp8(const float* in, std::size_t n, std::uint8_t* out, HwFp8 t,
                         CUstream_st* stream = nullptr);
// out[i] = cvt.rn.satfinite.<t>x2.f16x2 of the fp16 code in[i].
void hw_cast_fp16_to_fp8(const std::uint16_t* in, std::size_t n, std::uint8_t* out, HwFp8 t,
                         CUstream_st* stream = nullptr);
// out[i] = fp16 code of cvt.rn.f16x2.<t>x2 of code in[i] (the hardware's fp8 decode).
void hw_decode_fp8_to_fp16(const std::uint8_t* in, std::size_t n, std::uint16_t* out, HwFp8 t,
                           CUstream_st* stream = nullptr);

}  // namespace exmy::gpu
