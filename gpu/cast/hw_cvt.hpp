// The NVIDIA fp8 conversion instructions as device functions (sm_89 and newer), shared by the
// hardware backend (gpu/cast/hw_cast.cu) and the quantizers' fp8 element paths (gpu/quant/*.cu).
// cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 equals exmy's e4m3fn / e5m2 cast under rne + satfinite on
// every fp32 input that is not NaN (the exhaustive hw campaign of SEMANTICS 13: 0 mismatches
// outside NaN on all 2^32 inputs, each format; a NaN becomes 0x7F whatever its sign), so a kernel
// may use it for non-NaN inputs in place of the software fast cast, which stays the definition
// (CUTLASS's pairing of an instruction with a bit-matching software path). Below sm_89 the
// functions trap; callers choose the software path there (EXMY_HW_FP8). Include from .cu only.
#pragma once

#include <cstdint>

#include "gpu/cast/hw_cast.hpp"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define EXMY_HW_FP8 1
#endif

namespace exmy::gpu {

// Two fp32 -> two fp8 codes; the instruction puts its first source in the upper byte, so the
// element with the lower address goes second.
template <HwFp8 T>
__device__ __forceinline__ std::uint16_t cvt_f32x2(float lo, float hi) {
#if defined(EXMY_HW_FP8)
  std::uint16_t d;
  if constexpr (T == HwFp8::e4m3) {
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  }
  return d;
#else
  __trap();
  return 0;
#endif
}

// Two fp16 codes packed lo | hi << 16 -> two fp8 codes, lo in the low byte.
template <HwFp8 T>
__device__ __forceinline__ std::uint16_t cvt_f16x2(std::uint32_t pair) {
#if defined(EXMY_HW_FP8)
  std::uint16_t d;
  if constexpr (T == HwFp8::e4m3) {
    asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(d) : "r"(pair));
  } else {
    asm("cvt.rn.satfinite.e5m2x2.f16x2 %0, %1;" : "=h"(d) : "r"(pair));
  }
  return d;
#else
  __trap();
  return 0;
#endif
}

// Four fp32 -> four fp8 codes, x0 in the low byte. One asm block, so that the two 16-bit results
// are joined by the instructions themselves instead of being masked and permuted as integers.
template <HwFp8 T>
__device__ __forceinline__ std::uint32_t cvt_f32x4(float x0, float x1, float x2, float x3) {
#if defined(EXMY_HW_FP8)
  std::uint32_t d;
  if constexpr (T == HwFp8::e4m3) {
    asm("{ .reg .b16 l, h;\n"
        "cvt.rn.satfinite.e4m3x2.f32 l, %2, %1;\n"
        "cvt.rn.satfinite.e4m3x2.f32 h, %4, %3;\n"
        "mov.b32 %0, {l, h}; }"
        : "=r"(d)
        : "f"(x0), "f"(x1), "f"(x2), "f"(x3));
  } else {
    asm("{ .reg .b16 l, h;\n"
        "cvt.rn.satfinite.e5m2x2.f32 l, %2, %1;\n"
        "cvt.rn.satfinite.e5m2x2.f32 h, %4, %3;\n"
        "mov.b32 %0, {l, h}; }"
        : "=r"(d)
        : "f"(x0), "f"(x1), "f"(x2), "f"(x3));
  }
  return d;
#else
  __trap();
  return 0;
#endif
}

// Four fp16 codes (two pairs, each lo | hi << 16) -> four fp8 codes, the first pair's lo in the
// low byte.
template <HwFp8 T>
__device__ __forceinline__ std::uint32_t cvt_f16x4(std::uint32_t pair0, std::uint32_t pair1) {
#if defined(EXMY_HW_FP8)
  std::uint32_t d;
  if constexpr (T == HwFp8::e4m3) {
    asm("{ .reg .b16 l, h;\n"
        "cvt.rn.satfinite.e4m3x2.f16x2 l, %1;\n"
        "cvt.rn.satfinite.e4m3x2.f16x2 h, %2;\n"
        "mov.b32 %0, {l, h}; }"
        : "=r"(d)
        : "r"(pair0), "r"(pair1));
  } else {
    asm("{ .reg .b16 l, h;\n"
        "cvt.rn.satfinite.e5m2x2.f16x2 l, %1;\n"
        "cvt.rn.satfinite.e5m2x2.f16x2 h, %2;\n"
        "mov.b32 %0, {l, h}; }"
        : "=r"(d)
        : "r"(pair0), "r"(pair1));
  }
  return d;
#else
  __trap();
  return 0;
#endif
}

template <HwFp8 T>
__device__ __forceinline__ std::uint32_t cvt_to_f16x2(std::uint16_t pair) {
#if defined(EXMY_HW_FP8)
  std::uint32_t d;
  if constexpr (T == HwFp8::e4m3) {
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(d) : "h"(pair));
  } else {
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(d) : "h"(pair));
  }
  return d;
#else
  __trap();
  return 0;
#endif
}

}  // namespace exmy::gpu
