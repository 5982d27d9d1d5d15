// The NVIDIA fp8 conversion instructions as an exmy backend plugin: cvt.rn.satfinite.e4m3x2.f32
// and cvt.rn.satfinite.e5m2x2.f32 (sm_89 and newer, gpu/cast/hw_cvt.hpp), i.e. exmy's e4m3fn and
// e5m2 casts under "rne+satfinite". The instruction writes 0x7F for every NaN whatever its sign,
// where exmy keeps the sign and e5m2's NaN is 0x7E/0xFE (SEMANTICS 4.1, 12); the plugin selects
// exmy's NaN code for NaN inputs in software, as exmy's own quantizers do, so that the sweep
//   exmy verify --backend libexmy_backend_cvt_cuda.so --op cast --format e4m3fn
//               --round rne+satfinite --depth full
// expects 0 mismatches. Anything else (other formats, modes, devices below sm_89) returns 1.
//
// Entry points: exmy_backend_cast_f32 (host pointers: copies through device buffers kept between
// calls) and exmy_backend_cast_f32_device (device pointers, enqueued on the caller's stream),
// as include/exmy/backend.h defines them.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "exmy/backend.h"
#include "gpu/cast/hw_cvt.hpp"

namespace {

using exmy::gpu::HwFp8;

// exmy's NaN code of the target for a NaN of the given sign (SEMANTICS 4.1).
template <HwFp8 T>
__device__ __forceinline__ std::uint8_t exmy_nan(float x) {
  const std::uint8_t sign = signbit(x) ? 0x80 : 0x00;
  return sign | (T == HwFp8::e4m3 ? 0x7F : 0x7E);
}

// Two elements per thread, as the instruction converts pairs; a grid-stride loop covers any n.
template <HwFp8 T>
__global__ void cvt_kernel(const float* x, std::uint8_t* codes, unsigned long long n) {
  const unsigned long long pairs = (n + 1) / 2;
  for (unsigned long long p = blockIdx.x * 1ull * blockDim.x + threadIdx.x; p < pairs;
       p += 1ull * gridDim.x * blockDim.x) {
    const unsigned long long i = 2 * p;
    const float lo = x[i], hi = i + 1 < n ? x[i + 1] : 0.0f;
    const std::uint16_t d = exmy::gpu::cvt_f32x2<T>(lo, hi);
    codes[i] = isnan(lo) ? exmy_nan<T>(lo) : static_cast<std::uint8_t>(d & 0xFF);
    if (i + 1 < n) codes[i + 1] = isnan(hi) ? exmy_nan<T>(hi) : static_cast<std::uint8_t>(d >> 8);
  }
}

// 0: e4m3fn, 1: e5m2, -1: unsupported (format, rounding or device).
int target_of(const char* format, const char* rounding) {
  if (std::strcmp(rounding, "rne+satfinite") != 0) return -1;
  int which = -1;
  if (std::strcmp(format, "e4m3fn") == 0) which = 0;
  if (std::strcmp(format, "e5m2") == 0) which = 1;
  if (which < 0) return -1;
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess ||
      major * 10 + minor < 89) {
    return -1;
  }
  return which;
}

int launch(int which, const float* x, void* codes, unsigned long long n, cudaStream_t stream) {
  if (n == 0) return 0;
  const unsigned long long pairs = (n + 1) / 2;
  const unsigned threads = 256;
  const unsigned long long want = (pairs + threads - 1) / threads;
  const unsigned blocks = static_cast<unsigned>(want < 65535ull * 16 ? want : 65535ull * 16);
  auto* out = static_cast<std::uint8_t*>(codes);
  if (which == 0) {
    cvt_kernel<HwFp8::e4m3><<<blocks, threads, 0, stream>>>(x, out, n);
  } else {
    cvt_kernel<HwFp8::e5m2><<<blocks, threads, 0, stream>>>(x, out, n);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}

// Device buffers of the host entry point, grown as needed and kept between calls.
float* g_x = nullptr;
std::uint8_t* g_codes = nullptr;
unsigned long long g_room = 0;

}  // namespace

extern "C" {

EXMY_BACKEND_EXPORT unsigned exmy_backend_abi_version(void) {
  return EXMY_BACKEND_ABI_VERSION;
}

EXMY_BACKEND_EXPORT int exmy_backend_cast_f32_device(const char* format, const char* rounding,
                                                     unsigned long long seed, const float* x,
                                                     void* codes, unsigned long long n,
                                                     void* stream) {
  (void)seed;  // deterministic rounding only
  const int which = target_of(format, rounding);
  if (which < 0) return 1;
  return launch(which, x, codes, n, static_cast<cudaStream_t>(stream));
}

EXMY_BACKEND_EXPORT int exmy_backend_cast_f32(const char* format, const char* rounding,
                                              unsigned long long seed, const float* x, void* codes,
                                              unsigned long long n) {
  (void)seed;
  const int which = target_of(format, rounding);
  if (which < 0) return 1;
  if (n == 0) return 0;
  if (n > g_room) {
    cudaFree(g_x);
    cudaFree(g_codes);
    g_x = nullptr;
    g_codes = nullptr;
    g_room = 0;
    if (cudaMalloc(&g_x, n * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&g_codes, n) != cudaSuccess) {
      return 2;
    }
    g_room = n;
  }
  if (cudaMemcpy(g_x, x, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) return 2;
  if (launch(which, g_x, g_codes, n, nullptr) != 0) return 2;
  if (cudaMemcpy(codes, g_codes, n, cudaMemcpyDeviceToHost) != cudaSuccess) return 2;
  return 0;
}

}  // extern "C"
