// Built instead of the kernels when nvcc is absent: every entry point says so.
#include "gpu/common/runtime.hpp"

namespace exmy::gpu {

int device_count() {
  return 0;
}
std::string device_name() {
  return "none (built without CUDA)";
}

}  // namespace exmy::gpu
