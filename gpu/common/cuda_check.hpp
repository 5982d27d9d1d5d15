// Internal to gpu/**/*.cu: every CUDA call's status is checked and turned into
// exmy::gpu::CudaError.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "gpu/cast/cast.hpp"

namespace exmy::gpu {

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw CudaError(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
  }
}

// After a launch: a bad configuration shows up here, a fault in the kernel at the next sync.
inline void cuda_check_launch(const char* what) {
  cuda_check(cudaGetLastError(), what);
}

inline cudaStream_t as_stream(CUstream_st* s) {
  return s;
}

}  // namespace exmy::gpu
