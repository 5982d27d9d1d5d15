// Inline PTX for the hardware fp8 conversions (gpu/cast/hw_cast.hpp). Builds for architectures
// below sm_89 compile the kernels to a trap; the host checks the device before launching.
#include <cuda_runtime.h>

#include <atomic>

#include "gpu/cast/hw_cast.hpp"
#include "gpu/cast/hw_cvt.hpp"
#include "gpu/common/launch.hpp"

namespace exmy::gpu {
namespace {

// 16 elements per thread: four 16-byte loads, one 16-byte store.
template <HwFp8 T>
__global__ void __launch_bounds__(kThreads)
    hw_f32_kernel(const float* __restrict__ in, std::size_t n, std::uint8_t* __restrict__ out,
                  bool vector_ok) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x * 16;
  for (std::size_t base = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 16;
       base < n; base += stride) {
    if (vector_ok && base + 16 <= n) {
      float4 v[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) v[k] = reinterpret_cast<const float4*>(in + base)[k];
      uint4 o;
      std::uint32_t* ow = reinterpret_cast<std::uint32_t*>(&o);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const std::uint32_t a = cvt_f32x2<T>(v[k].x, v[k].y);
        const std::uint32_t b = cvt_f32x2<T>(v[k].z, v[k].w);
        ow[k] = a | (b << 16);
      }
      *reinterpret_cast<uint4*>(out + base) = o;
    } else {
      for (std::size_t i = base; i < n && i < base + 16; ++i) {
        out[i] = static_cast<std::uint8_t>(cvt_f32x2<T>(in[i], 0.0f) & 0xFFu);
      }
    }
  }
}

template <HwFp8 T>
__global__ void __launch_bounds__(kThreads)
    hw_f16_kernel(const std::uint16_t* __restrict__ in, std::size_t n,
                  std::uint8_t* __restrict__ out) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = static_cast<std::uint8_t>(cvt_f16x2<T>(in[i]) & 0xFFu);
  }
}

template <HwFp8 T>
__global__ void __launch_bounds__(kThreads)
    hw_decode_kernel(const std::uint8_t* __restrict__ in, std::size_t n,
                     std::uint16_t* __restrict__ out) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = static_cast<std::uint16_t>(cvt_to_f16x2<T>(in[i]) & 0xFFFFu);
  }
}

void require_hw() {
  if (!hw_fp8_available()) {
    throw CudaError("hw fp8 conversion needs a device of compute capability 8.9 or newer");
  }
}

}  // namespace

bool hw_fp8_available() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  // Per device, once: the cast path choice asks on every call (0 unknown, 1 no, 2 yes).
  static std::atomic<int> known[64];
  if (dev >= 0 && dev < 64 && known[dev].load(std::memory_order_relaxed) != 0) {
    return known[dev].load(std::memory_order_relaxed) == 2;
  }
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  // The build must also hold sm_89+ code; sm_80-only builds would trap.
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, hw_f32_kernel<HwFp8::e4m3>) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  const bool ok = major * 10 + minor >= 89 && attr.binaryVersion >= 89;
  if (dev >= 0 && dev < 64) known[dev].store(ok ? 2 : 1, std::memory_order_relaxed);
  return ok;
}

void hw_cast_fp32_to_fp8(const float* in, std::size_t n, std::uint8_t* out, HwFp8 t,
                         CUstream_st* stream) {
  if (n == 0) return;
  require_hw();
  const bool vec = (reinterpret_cast<std::uintptr_t>(in) & 15u) == 0 &&
                   (reinterpret_cast<std::uintptr_t>(out) & 15u) == 0;
  const unsigned grid = grid_for(n, 16);
  if (t == HwFp8::e4m3) {
    hw_f32_kernel<HwFp8::e4m3><<<grid, kThreads, 0, stream>>>(in, n, out, vec);
  } else {
    hw_f32_kernel<HwFp8::e5m2><<<grid, kThreads, 0, stream>>>(in, n, out, vec);
  }
  cuda_check_launch("hw fp8 cast launch");
}

void hw_cast_fp16_to_fp8(const std::uint16_t* in, std::size_t n, std::uint8_t* out, HwFp8 t,
                         CUstream_st* stream) {
  if (n == 0) return;
  require_hw();
  const unsigned grid = grid_for(n, 1);
  if (t == HwFp8::e4m3) {
    hw_f16_kernel<HwFp8::e4m3><<<grid, kThreads, 0, stream>>>(in, n, out);
  } else {
    hw_f16_kernel<HwFp8::e5m2><<<grid, kThreads, 0, stream>>>(in, n, out);
  }
  cuda_check_launch("hw fp8 cast launch");
}

void hw_decode_fp8_to_fp16(const std::uint8_t* in, std::size_t n, std::uint16_t* out, HwFp8 t,
                           CUstream_st* stream) {
  if (n == 0) return;
  require_hw();
  const unsigned grid = grid_for(n, 1);
  if (t == HwFp8::e4m3) {
    hw_decode_kernel<HwFp8::e4m3><<<grid, kThreads, 0, stream>>>(in, n, out);
  } else {
    hw_decode_kernel<HwFp8::e5m2><<<grid, kThreads, 0, stream>>>(in, n, out);
  }
  cuda_check_launch("hw fp8 decode launch");
}

}  // namespace exmy::gpu
