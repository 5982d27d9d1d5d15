// CUDA kernels of torch.optim.Adagrad (docs/SEMANTICS.md 9.2.3) and its launcher in the table of
// gpu/optim/launchers.hpp. Every element runs native::torch_adagrad_element, as the host loop
// (sim/optim/family_adagrad.cpp) does; 16-bit parameters keep p, g and the state as codes of
// their dtype (torch's full_like(param)), decoded exactly and encoded back after the element.
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/common/launch.hpp"
#include "gpu/optim/launchers.hpp"
#include "gpu/optim/storage_codes.cuh"
#include "sim/native/optim_adagrad.hpp"

namespace exmy::gpu {
namespace {

using native::Storage;

template <typename T, Storage ST>
__global__ void __launch_bounds__(kThreads)
    k_adagrad(native::TorchAdagradScalars s, native::TorchCpuTails tails, T* p, const T* g, T* sum,
              std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float pi = dec<T, ST>(p[i]), si = dec<T, ST>(sum[i]);
    // torch-cpu: the scalar tails of the ATen CPU kernels (SEMANTICS 9.2.2)
    const bool tail = s.k == native::TorchKernels::cpu && tails.at(i);
    native::torch_adagrad_element(s, ST, pi, dec<T, ST>(g[i]), si, tail);
    p[i] = enc<T, ST>(pi);
    sum[i] = enc<T, ST>(si);
  }
}

template <typename T, Storage ST>
void launch(const native::TorchAdagradScalars& s, const StepLaunch& l) {
  k_adagrad<T, ST><<<grid_for(l.n, 4), kThreads>>>(
      s, native::torch_cpu_tails(l.n, native::storage_bytes(ST), l.c.hyper.adam.cpu),
      static_cast<T*>(l.p), static_cast<const T*>(l.g), static_cast<T*>(l.array("sum")), l.n);
}

float launch_adagrad(const StepLaunch& l) {
  const optim::Hyper& h = l.c.hyper;
  const native::TorchAdagradScalars s = native::torch_adagrad_scalars(
      h.adam.lr, h.extra[0], h.adam.eps, h.adam.wd, h.extra[2] != 0.0, l.t, h.adam.kernels);
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

EXMY_GPU_FAMILY_LAUNCHER(adagrad){"adagrad", launch_adagrad};

}  // namespace exmy::gpu
