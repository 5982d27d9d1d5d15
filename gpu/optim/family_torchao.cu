// torchao's low-bit optimizers (sim/optim/family_torchao.cpp, docs/SEMANTICS.md 9.2.7) have no
// exmy GPU kernel yet: their registry entries list no GPU dtype, so `exmy step --device cuda`
// refuses them before a launch (optim::require_gpu_kernel); this launcher only fills the table.
#include <stdexcept>

#include "gpu/optim/launchers.hpp"

namespace exmy::gpu {
namespace {

float launch_torchao(const StepLaunch&) {
  throw std::logic_error("torchao optimizers: no GPU kernel (the registry lists none)");
}

}  // namespace

EXMY_GPU_FAMILY_LAUNCHER(torchao){"torchao", launch_torchao};

}  // namespace exmy::gpu
