// CUDA kernels of torch.optim.NAdam (docs/SEMANTICS.md 9.2.4) and its launcher in the table of
// gpu/optim/launchers.hpp. Every element runs native::torch_nadam_element, as the host loop
// (sim/optim/family_nadam.cpp) does; 16-bit parameters keep p, g and the states as codes of
// their dtype (torch's zeros_like(param)), decoded exactly and encoded back after the element.
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/common/launch.hpp"
#include "gpu/optim/launchers.hpp"
#include "gpu/optim/storage_codes.cuh"
#include "sim/native/optim_nadam.hpp"

namespace exmy::gpu {
namespace {

using native::Storage;

template <typename T, Storage ST>
__global__ void __launch_bounds__(kThreads)
    k_nadam(native::TorchNadamScalars s, native::TorchCpuTails tails, T* p, const T* g, T* m, T* v,
            std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float pi = dec<T, ST>(p[i]), mi = dec<T, ST>(m[i]), vi = dec<T, ST>(v[i]);
    const bool tail = s.k == native::TorchKernels::cpu && tails.at(i);
    native::torch_nadam_element(s, ST, pi, dec<T, ST>(g[i]), mi, vi, tail);
    p[i] = enc<T, ST>(pi);
    m[i] = enc<T, ST>(mi);
    v[i] = enc<T, ST>(vi);
  }
}

template <typename T, Storage ST>
void launch(const native::TorchNadamScalars& s, const StepLaunch& l) {
  k_nadam<T, ST><<<grid_for(l.n, 4), kThreads>>>(
      s, native::torch_cpu_tails(l.n, native::storage_bytes(ST), l.c.hyper.adam.cpu),
      static_cast<T*>(l.p), static_cast<const T*>(l.g), static_cast<T*>(l.array("exp_avg")),
      static_cast<T*>(l.array("exp_avg_sq")), l.n);
}

float launch_nadam(const StepLaunch& l) {
  const optim::Hyper& h = l.c.hyper;
  const native::TorchNadamScalars s = native::torch_nadam_scalars(
      h.adam.lr, h.adam.beta1, h.adam.beta2, h.adam.eps, h.adam.wd, h.extra[0], h.extra[1] != 0.0,
      h.extra[2] != 0.0, l.t, h.adam.kernels);
  if (!l.codes16) {
    launch<float, Storage::f32>(s, l);
  } else if (l.c.st == Storage::bf16) {
    launch<std::uint16_t, Storage::bf16>(s, l);
  } else {
    launch<std::uint16_t, Storage::f16>(s, l);
  }
  return 0.0f;
}

}  // namespace

EXMY_GPU_FAMILY_LAUNCHER(nadam){"nadam", launch_nadam};

}  // namespace exmy::gpu
