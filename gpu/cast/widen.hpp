// The one widening of GPU inputs (fp32, bf16, fp16 elements) to fp32, shared by the cast kernels
// (gpu/cast/), the quantizers (gpu/quant/) and the host's array casts: the exact widening of
// sim/native/widen.hpp by input type, and on the device a faster form for callers whose result
// does not depend on a NaN's bits.
#pragma once

#include <cstdint>
#include <type_traits>

#include "gpu/cast/cast.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/widen.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace exmy::gpu {

using native::widen_bf16;
using native::widen_fp16;

// An element of input type In as it lies in memory.
template <CastInput In>
using InputElem = std::conditional_t<In == CastInput::fp32, std::uint32_t, std::uint16_t>;

// The exact fp32 bits of an element of type In (NaN sign and payload kept).
template <CastInput In>
EXMY_HD std::uint32_t widen_input(std::uint32_t x) {
  if constexpr (In == CastInput::fp32) {
    return x;
  } else if constexpr (In == CastInput::bf16) {
    return widen_bf16(x);
  } else {
    return widen_fp16(x);
  }
}

#if defined(__CUDACC__)
// widen_input for every non-NaN element, and some NaN for a NaN: fp16 takes the hardware
// conversion (cvt.f32.f16, exact for every finite and infinite fp16 value, subnormals included:
// no flush without .ftz) instead of the branchy software one.
template <CastInput In>
__device__ __forceinline__ std::uint32_t widen_input_nan_free(std::uint32_t x) {
  if constexpr (In == CastInput::fp16) {
    return __float_as_uint(__half2float(__ushort_as_half(static_cast<unsigned short>(x))));
  } else {
    return widen_input<In>(x);
  }
}
#endif

}  // namespace exmy::gpu
