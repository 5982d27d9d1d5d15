// Helpers for the GPU tests and properties: device buffers that own their memory, and the
// weighted special-value bit patterns the inputs are drawn from.
#pragma once

#if EXMY_HAVE_CUDA
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/common/cuda_check.hpp"

namespace exmy::gpu::testing {

// CUDA failures throw gpu::CudaError (gpu/common/cuda_check.hpp), as in the library.
using exmy::gpu::cuda_check;

// A device allocation of `bytes` (+ `pad` bytes before the returned pointer, to test unaligned
// pointers), filled with 0xA5 so that unwritten outputs show.
class DeviceBytes {
 public:
  explicit DeviceBytes(std::size_t bytes, std::size_t pad = 0) : bytes_(bytes), pad_(pad) {
    cuda_check(cudaMalloc(&base_, bytes + pad + 16), "cudaMalloc");
    cuda_check(cudaMemset(base_, 0xA5, bytes + pad + 16), "cudaMemset");
  }
  ~DeviceBytes() { cudaFree(base_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  void* get() const { return static_cast<char*>(base_) + pad_; }
  template <class T>
  void upload(const std::vector<T>& v) {
    cuda_check(cudaMemcpy(get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  template <class T>
  std::vector<T> download(std::size_t n) const {
    cuda_check(cudaDeviceSynchronize(), "kernel");
    std::vector<T> v(n);
    cuda_check(cudaMemcpy(v.data(), get(), n * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return v;
  }

 private:
  void* base_ = nullptr;
  std::size_t bytes_, pad_;
};

// fp32 bit patterns that exercise every class: zeros, subnormals, normals near the format
// boundaries, ties, infinities, NaNs with payloads, huge outliers. `pick` selects one.
inline std::uint32_t special_fp32(std::uint32_t pick, std::uint32_t noise) {
  static const std::uint32_t table[] = {
      0x00000000u, 0x80000000u,                            // +-0
      0x00000001u, 0x807FFFFFu, 0x00400000u,               // fp32 subnormals
      0x7F800000u, 0xFF800000u,                            // +-inf
      0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0xFFBFFFFFu,  // NaNs (quiet/signalling, payloads)
      0x7F7FFFFFu, 0xFF7FFFFFu,                            // +-max fp32 (huge outliers)
      0x43E00000u, 0x43E80000u, 0x43E80001u,               // 448, 464 (e4m3fn tie), just above
      0x47600000u, 0x47700000u,                            // 57344, 61440 (e5m2 max, overflow tie)
      0x3F880000u, 0x3F900000u, 0x3F980000u,  // 1.0625, 1.125, 1.1875: ties for 3-bit mantissas
      0x3B000000u, 0x3A800000u, 0x3A000000u,  // 2^-9, 2^-10, 2^-11: e4m3fn subnormal edges
      0x37800000u, 0x33800000u,               // 2^-16, 2^-24
      0x00800000u, 0x80800000u,               // +-min normal fp32
      0x3F800000u, 0xBF800000u,               // +-1
  };
  constexpr std::uint32_t k = sizeof(table) / sizeof(table[0]);
  const std::uint32_t base = table[pick % k];
  // Half the time, perturb the low mantissa bits so ties become near-ties.
  return (noise & 1u) ? (base ^ ((noise >> 1) & 0x7u)) : base;
}

}  // namespace exmy::gpu::testing
#endif
