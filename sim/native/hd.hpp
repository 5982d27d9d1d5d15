// Host/device portability: one macro, as CUTLASS does, so that the native engine compiles
// unchanged in host code (g++) and in CUDA kernels (nvcc).
#pragma once

#if defined(__CUDACC__)
#define EXMY_HD __host__ __device__ __forceinline__
#define EXMY_HD_NOINLINE __host__ __device__
#else
#define EXMY_HD inline __attribute__((always_inline))
#define EXMY_HD_NOINLINE inline
#endif

#include <cstdint>

namespace exmy::native {

// Count leading zeros of a nonzero 64-bit word; the two platforms spell it differently.
EXMY_HD int clz64(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return __builtin_clzll(x);
#endif
}

}  // namespace exmy::native
