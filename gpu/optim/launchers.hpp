// The launcher table of gpu/optim (docs/SEMANTICS.md 9.9): one launcher per optimizer family,
// keyed by its FamilyDef::name (sim/optim/registry.hpp). The GPU stepper (optim_host.cu) holds
// the parameters, gradient and every state array of the entry on the device and calls the
// family's launcher once per step; it never switches on the family. The core families' launchers
// are in optim_host.cu; a family of cmake/ExmyOptimFamilies.cmake defines
// kGpuLauncher_<N> in gpu/optim/family_<N>.cu.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "sim/optim/registry.hpp"

namespace exmy::gpu {

// One step's device operands.
struct StepLaunch {
  const optim::Config& c;
  const optim::State& s;  // the host state: layout flags only (its arrays live on the device)
  long t;                 // the step, 1-based
  std::size_t n;          // elements
  bool codes16;   // p and g are 16-bit codes of c.st (FamilyDef::param_codes16, 16-bit params)
  bool states16;  // fp32 state arrays are 16-bit codes too (FamilyDef::states_param_dtype)
  void* p;        // device parameters: float, or uint16 codes (null for split entries)
  const void* g;  // device gradient, as p
  // The device buffer of the state array saved as `file` (StateArray::file); InputError if none.
  std::function<void*(const char* file)> array;
};
// Launches one step on the default stream; returns RMS_t where the entry reports it, else 0.
using StepLauncher = float (*)(const StepLaunch& l);
struct FamilyLauncher {
  std::string_view family;
  StepLauncher launch;
};
// Declares (and, followed by an initializer, defines) the launcher of family N.
#define EXMY_GPU_FAMILY_LAUNCHER(N) extern const FamilyLauncher kGpuLauncher_##N

}  // namespace exmy::gpu
