// Internal to gpu/*.cu: one device allocation that owns its memory, freed on every exit path (a
// throwing kernel check included), for the host-array wrappers.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "gpu/cuda_check.hpp"

namespace exmy::gpu {

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) {
    if (bytes > 0) cuda_check(cudaMalloc(&p_, bytes), "cudaMalloc (host-array wrapper)");
  }
  DeviceBuffer(const void* host, std::size_t bytes) : DeviceBuffer(bytes) { upload(host, bytes); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p_); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  // Synchronous copies of the first `bytes` bytes.
  void upload(const void* host, std::size_t bytes) {
    if (bytes > 0) cuda_check(cudaMemcpy(p_, host, bytes, cudaMemcpyHostToDevice), "upload");
  }
  void download(void* host, std::size_t bytes) const {
    if (bytes > 0) cuda_check(cudaMemcpy(host, p_, bytes, cudaMemcpyDeviceToHost), "download");
  }
  template <typename T>
  std::vector<T> download(std::size_t count) const {
    std::vector<T> v(count);
    download(v.data(), count * sizeof(T));
    return v;
  }

 private:
  void* p_ = nullptr;
};

}  // namespace exmy::gpu
