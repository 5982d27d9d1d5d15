// torch.optim.Adafactor (docs/SEMANTICS.md 9.2.8) in gpu/optim's launcher table
// (gpu/optim/launchers.hpp). Its step is not per element: every step reduces the parameters, the
// gradient's rows and columns and the update in torch's orders (sim/native/torch_reduce_cpu.hpp)
// between element operations, so the registry entry lists no dtype with a GPU kernel and
// `exmy step --device cuda` refuses it (optim::require_gpu_kernel) before this launcher could run;
// the CPU engine (sim/optim/family_adafactor.cpp) is the one that steps it.
#include "gpu/optim/launchers.hpp"
#include "sim/common/error.hpp"

namespace exmy::gpu {
namespace {

float launch_adafactor(const StepLaunch& l) {
  throw InputError("--device cuda: no GPU step for " + l.c.opt.name + " (use --device cpu)");
}

}  // namespace

EXMY_GPU_FAMILY_LAUNCHER(adafactor){"adafactor", launch_adafactor};

}  // namespace exmy::gpu
