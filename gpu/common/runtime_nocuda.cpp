// Built instead of the kernels when nvcc is absent: every entry point says so.
#include "gpu/common/runtime.hpp"
#include "gpu/optim/optim_host.hpp"
#include "sim/common/error.hpp"

namespace exmy::gpu {

int device_count() {
  return 0;
}
std::string device_name() {
  return "none (built without CUDA)";
}

std::unique_ptr<optim::Stepper> optim_stepper(const optim::Config&, std::span<float>,
                                              optim::State&) {
  throw InputError("--device cuda: this exmy was built without CUDA (configure with nvcc present)");
}

}  // namespace exmy::gpu
