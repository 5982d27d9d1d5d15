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

// Primitives whose implementation differs per platform (clz, bit casts, correctly rounded
// arithmetic, ...) live in sim/native/specialize/platform.hpp, not here.
