#include <cuda_runtime.h>

#include "gpu/common/runtime.hpp"

namespace exmy::gpu {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string device_name() {
  if (device_count() == 0) return "none";
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return "unknown";
  return p.name;
}

int device_capability() {
  if (device_count() == 0) return 0;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return 0;
  return p.major * 10 + p.minor;
}

}  // namespace exmy::gpu
