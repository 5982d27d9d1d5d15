// What the CUDA kernels of bitsandbytes' 8-bit optimizers share across their translation units
// (gpu/optim/optim_bnb8.cu: Adam, Momentum, RMSprop, Adagrad, Lion; optim_bnb8_ademamix.cu:
// AdEMAMix): the device copies of the dynamic maps and bucket tables (made once per device, in
// optim_bnb8.cu), the exact block maxima, the parameter I/O of fp32/bf16/fp16 storage and the
// launch geometry. Internal to gpu/optim; not installed.
#pragma once

#include <cuda_runtime.h>

#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "gpu/common/launch.hpp"
#include "gpu/optim/optim.hpp"
#include "sim/common/error.hpp"
#include "sim/native/optim_bnb8_ops.hpp"
#include "sim/native/optim_bnb8_search.hpp"

namespace exmy::gpu::bnb8 {

// CTAs of the 8-bit kernels: enough to fill the device (8 resident per SM), each looping over
// quantization blocks so that the codebooks are loaded once per CTA. Every block's result is
// independent of which CTA computes it, so the count changes only the speed.
unsigned ctas_8bit(std::size_t want);

// Device copies of the two dynamic maps (signed at [0, 256), unsigned at [256, 512)), made once
// per device.
const float* device_codes();

// Block maximum of non-NaN, non-negative values (|s| folded from -FLT_MAX): fmaxf is exact and
// order-free here, so any reduction shape gives the reference's value.
__device__ inline float block_max(float x, float* smem) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, o));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();
  if (lane == 0) smem[warp] = x;
  __syncthreads();
  float r = smem[0];
  for (int w = 1; w < kThreads / 32; ++w) r = fmaxf(r, smem[w]);
  return r;
}

// Codebook and its fp32 midpoints in shared memory, once per CTA (CTAs loop over many blocks).
__device__ inline void load_code(const float* codes, float* c, float* mids) {
  c[threadIdx.x] = codes[threadIdx.x];
  __syncthreads();
  mids[threadIdx.x] = native::bnb_midpoint(c, threadIdx.x);
  __syncthreads();
}

// Parameters and gradients of the element-wise 8-bit kernels: fp32 values, or bf16/fp16 codes
// (bitsandbytes keeps both in the parameter's dtype; its states stay 8-bit codes with fp32
// absmax, or fp32 in the 32-bit fallback). Decoding is exact; encoding a result is the RN rounding
// the reference's to_storage already applied, so it is exact too.
template <native::Storage ST>
struct ParamIO {
  using T = std::conditional_t<ST == native::Storage::f32, float, std::uint16_t>;
  __device__ static float load(const T* a, std::size_t i) {
    if constexpr (ST == native::Storage::f32) {
      return a[i];
    } else if constexpr (ST == native::Storage::bf16) {
      return native::f32_from_bf16(a[i]);
    } else {
      return native::f32_from_f16(a[i]);
    }
  }
  __device__ static void store(T* a, std::size_t i, float x) {
    if constexpr (ST == native::Storage::f32) {
      a[i] = x;
    } else if constexpr (ST == native::Storage::bf16) {
      a[i] = native::bf16_from_f32(x);
    } else {
      a[i] = native::f16_from_f32(x);
    }
  }
};

// Four consecutive parameters/gradients k*4 .. k*4+3 as one vector access: a 16-byte float4 for
// fp32, an 8-byte uint2 of codes for bf16/fp16 (pointers aligned to the vector).
template <native::Storage ST>
__device__ __forceinline__ void load4(const typename ParamIO<ST>::T* a, std::size_t k, float v[4]) {
  if constexpr (ST == native::Storage::f32) {
    const float4 x = reinterpret_cast<const float4*>(a)[k];
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else {
    const uint2 x = reinterpret_cast<const uint2*>(a)[k];
    const std::uint16_t h[4] = {
        static_cast<std::uint16_t>(x.x), static_cast<std::uint16_t>(x.x >> 16),
        static_cast<std::uint16_t>(x.y), static_cast<std::uint16_t>(x.y >> 16)};
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = ParamIO<ST>::load(h, j);
  }
}
template <native::Storage ST>
__device__ __forceinline__ void store4(typename ParamIO<ST>::T* a, std::size_t k,
                                       const float v[4]) {
  if constexpr (ST == native::Storage::f32) {
    reinterpret_cast<float4*>(a)[k] = make_float4(v[0], v[1], v[2], v[3]);
  } else {
    std::uint16_t h[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) ParamIO<ST>::store(h, j, v[j]);
    reinterpret_cast<uint2*>(a)[k] =
        make_uint2(h[0] | (std::uint32_t{h[1]} << 16), h[2] | (std::uint32_t{h[3]} << 16));
  }
}

// Maximum over a warp (exact and order-free, as block_max).
__device__ inline float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, o));
  return x;
}

// Both maps with their thresholds (+inf sentinels) and bucket tables
// (sim/native/optim_bnb8_search.hpp), one copy in device memory and one per CTA in shared memory.
// (sim/native/optim_bnb8_search.hpp), one copy in device memory and one per CTA in shared memory.
struct Bnb8Tables {
  float code[2][256];               // [0] signed (state 1), [1] unsigned (state 2)
  float t[2][native::kBucketMids];  // thresholds
  std::uint8_t start[2][native::kBucketTable];
  int z;  // the signed map's negative codes are 0..z-1
};
static_assert(sizeof(Bnb8Tables) % 4 == 0, "copied as 32-bit words");

// The tables in device memory, built and copied once per device.
const Bnb8Tables* device_tables();

__device__ inline void load_tables(const Bnb8Tables* src, Bnb8Tables* dst) {
  const auto* s = reinterpret_cast<const std::uint32_t*>(src);
  auto* d = reinterpret_cast<std::uint32_t*>(dst);
  for (int i = threadIdx.x; i < static_cast<int>(sizeof(Bnb8Tables) / 4); i += kThreads) {
    d[i] = s[i];
  }
  __syncthreads();
}

// CTAs for `nblocks` quantization blocks at `per_cta` blocks per CTA, capped at what the
// kernel keeps resident on every SM (the vectorised kernels loop over the rest): the occupancy of
// this instantiation, queried once per device (it reads the current device).
template <auto Kernel>
unsigned block_grid(std::size_t nblocks, std::size_t per_cta) {
  static PerDeviceValue resident;
  const int per_sm = resident.get([](int) {
    int r = 0;
    cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r, Kernel, kThreads, 0), "occupancy");
    return r < 1 ? 1 : r;
  });
  const std::size_t want = (nblocks + per_cta - 1) / per_cta;
  const std::size_t cap = static_cast<std::size_t>(per_sm) * sm_count();
  return static_cast<unsigned>(want < cap ? want : cap);
}

// f(std::integral_constant<Storage, ST>{}) for the 16-bit parameter storage pt (bf16 or fp16),
// the one dispatch of the 16-bit overloads below.
template <class F>
void with_storage16(native::Storage pt, const char* what, F&& f) {
  using native::Storage;
  switch (pt) {
    case Storage::bf16:
      return f(std::integral_constant<Storage, Storage::bf16>{});
    case Storage::f16:
      return f(std::integral_constant<Storage, Storage::f16>{});
    default:
      throw InputError(std::string(what) + ": 16-bit codes need bf16 or fp16 parameters");
  }
}

}  // namespace exmy::gpu::bnb8
