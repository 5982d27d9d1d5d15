// CUDA kernels of torch.optim.RMSprop (docs/SEMANTICS.md 9.2.1) and its launcher in the table of
// gpu/optim/launchers.hpp. Every element runs native::torch_rmsprop_element, as the host loop
// (sim/optim/family_rmsprop.cpp) does; 16-bit parameters keep p, g and the states as codes of
// their dtype (torch's zeros_like(param)), decoded exactly and encoded back after the element.
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/common/launch.hpp"
#include "gpu/optim/launchers.hpp"
#include "sim/native/optim_rmsprop.hpp"

namespace exmy::gpu {
namespace {

using native::Storage;

// T: float (fp32 parameters) or std::uint16_t (codes of ST). ga and buf are null where the run
// keeps no grad_avg / momentum_buffer.
template <typename T, Storage ST>
__global__ void __launch_bounds__(kThreads)
    k_rmsprop(native::TorchRmspropScalars s, native::TorchCpuTails tails, T* p, const T* g, T* sq,
              T* ga, T* buf, std::size_t n) {
  const auto dec = [](T x) -> float {
    if constexpr (ST == Storage::f32) {
      return x;
    } else if constexpr (ST == Storage::bf16) {
      return native::f32_from_bf16(x);
    } else {
      return native::f32_from_f16(x);
    }
  };
  const auto enc = [](float x) -> T {
    if constexpr (ST == Storage::f32) {
      return x;
    } else if constexpr (ST == Storage::bf16) {
      return native::bf16_from_f32(x);
    } else {
      return native::f16_from_f32(x);
    }
  };
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float pi = dec(p[i]), si = dec(sq[i]);
    float gi = ga ? dec(ga[i]) : 0.0f, bi = buf ? dec(buf[i]) : 0.0f;
    // torch-cpu: the scalar tails of the ATen CPU kernels (SEMANTICS 9.2.2)
    const bool tail = s.k == native::TorchKernels::cpu && tails.at(i);
    native::torch_rmsprop_element(s, ST, pi, dec(g[i]), si, gi, bi, tail);
    p[i] = enc(pi);
    sq[i] = enc(si);
    if (ga) ga[i] = enc(gi);
    if (buf) buf[i] = enc(bi);
  }
}

template <typename T, Storage ST>
void launch(const native::TorchRmspropScalars& s, const StepLaunch& l) {
  const native::TorchCpuTails tails =
      native::torch_cpu_tails(l.n, native::storage_bytes(ST), l.c.hyper.adam.cpu);
  T* ga = s.centered ? static_cast<T*>(l.array("grad_avg")) : nullptr;
  T* buf = s.has_momentum ? static_cast<T*>(l.array("momentum_buffer")) : nullptr;
  k_rmsprop<T, ST>
      <<<grid_for(l.n, 4), kThreads>>>(s, tails, static_cast<T*>(l.p), static_cast<const T*>(l.g),
                                       static_cast<T*>(l.array("square_avg")), ga, buf, l.n);
}

float launch_rmsprop(const StepLaunch& l) {
  const optim::Hyper& h = l.c.hyper;
  const native::TorchRmspropScalars s =
      native::torch_rmsprop_scalars(h.adam.lr, h.adam.alpha, h.adam.eps, h.adam.wd, h.sgd.momentum,
                                    h.extra[0] != 0.0, h.adam.kernels, h.extra[1] != 0.0);
  // The family's states are in the parameters' dtype: codes16 and states16 agree.
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

EXMY_GPU_FAMILY_LAUNCHER(rmsprop){"rmsprop", launch_rmsprop};

}  // namespace exmy::gpu
