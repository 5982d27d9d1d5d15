// Host-array entry point to the GPU optimizer kernels (optim.hpp), for `exmy step --device
// cuda` and for callers that hold their tensors in host memory. The stepper uploads the
// parameters and every state array of the registry entry (sim/optim/registry.hpp) once, keeps
// them on the device across steps (each step uploads only its gradient), and finish() downloads
// them into the same host arrays: bit for bit what optim::cpu_stepper leaves there (NaN payloads
// and signs aside, docs/SEMANTICS.md 9.1). Adam/AdamW/SGD with bf16/fp16 parameters hold p, g and
// the states as 16-bit codes on the device, as PyTorch does.
// Defined in CUDA builds by optim_host.cu; without CUDA (gpu/common/runtime_nocuda.cpp) it throws
// InputError. Throws InputError where the entry has no kernel for the parameter dtype
// (optim::require_gpu_kernel) or a reloaded 16-bit state holds a value that is not a code, and
// gpu::CudaError when a CUDA call fails.
#pragma once

#include <memory>
#include <span>

#include "sim/optim/registry.hpp"

namespace exmy::gpu {

// c, p and s are held by reference until finish().
std::unique_ptr<optim::Stepper> optim_stepper(const optim::Config& c, std::span<float> p,
                                              optim::State& s);

}  // namespace exmy::gpu
