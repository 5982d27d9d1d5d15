// The element value of a stored optimizer array and back, for the family kernels: T is float
// (fp32 arrays) or std::uint16_t (the codes of ST), decoded and rounded (RN) as the host loops do
// through native::to_storage (docs/SEMANTICS.md 9.1).
#pragma once

#include <cstdint>

#include "sim/native/optim_storage.hpp"

namespace exmy::gpu {

template <typename T, native::Storage ST>
__device__ float dec(T x) {
  if constexpr (ST == native::Storage::f32) {
    return x;
  } else if constexpr (ST == native::Storage::bf16) {
    return native::f32_from_bf16(x);
  } else {
    return native::f32_from_f16(x);
  }
}

template <typename T, native::Storage ST>
__device__ T enc(float x) {
  if constexpr (ST == native::Storage::f32) {
    return x;
  } else if constexpr (ST == native::Storage::bf16) {
    return native::bf16_from_f32(x);
  } else {
    return native::f16_from_f32(x);
  }
}

}  // namespace exmy::gpu
