// CUDA kernels of torch.optim.Adam/AdamW (for-each and fused) and SGD on fp32 parameters
// (gpu/optim/optim.hpp; the 16-bit parameters' kernels are optim_torch16.cu). Each kernel calls
// the per-element functions of sim/native/optim_*.hpp; float4 loads/stores where every pointer is
// 16-byte aligned, then a scalar tail.
#include <cuda_runtime.h>

#include <array>
#include <cfloat>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "gpu/common/launch.hpp"
#include "gpu/optim/optim.hpp"
#include "sim/common/error.hpp"
#include "sim/native/bnb_dynamic_map.hpp"
#include "sim/native/optim_bnb8_search.hpp"

namespace exmy::gpu {
namespace {

// ---- PyTorch Adam / SGD
// --------------------------------------------------------------------------
// float4 loads/stores where every pointer is 16-byte aligned (vec), then a scalar tail.
// vm: max_exp_avg_sq where s.amsgrad, else null (the element's vmax is then a dummy).
__global__ void k_torch_adam(native::TorchAdamScalars s, bool vec, float* p, const float* g,
                             float* m, float* v, float* vm, std::size_t n) {
  const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t n4 = vec ? n / 4 : 0;
  for (std::size_t k = tid; k < n4; k += stride) {
    float4 P = reinterpret_cast<float4*>(p)[k], M = reinterpret_cast<float4*>(m)[k];
    float4 V = reinterpret_cast<float4*>(v)[k];
    float4 X = vm ? reinterpret_cast<float4*>(vm)[k] : float4{0.0f, 0.0f, 0.0f, 0.0f};
    const float4 G = reinterpret_cast<const float4*>(g)[k];
    native::torch_adam_element(s, native::Storage::f32, P.x, G.x, M.x, V.x, X.x, false);
    native::torch_adam_element(s, native::Storage::f32, P.y, G.y, M.y, V.y, X.y, false);
    native::torch_adam_element(s, native::Storage::f32, P.z, G.z, M.z, V.z, X.z, false);
    native::torch_adam_element(s, native::Storage::f32, P.w, G.w, M.w, V.w, X.w, false);
    reinterpret_cast<float4*>(p)[k] = P;
    reinterpret_cast<float4*>(m)[k] = M;
    reinterpret_cast<float4*>(v)[k] = V;
    if (vm) reinterpret_cast<float4*>(vm)[k] = X;
  }
  for (std::size_t i = n4 * 4 + tid; i < n; i += stride) {
    float pi = p[i], mi = m[i], vi = v[i], xi = vm ? vm[i] : 0.0f;
    native::torch_adam_element(s, native::Storage::f32, pi, g[i], mi, vi, xi, false);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
    if (vm) vm[i] = xi;
  }
}

__global__ void k_torch_fused_adam(native::TorchFusedAdamScalars s, float* p, const float* g,
                                   float* m, float* v, float* vm, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float pi = p[i], mi = m[i], vi = v[i], xi = vm ? vm[i] : 0.0f;
    native::torch_fused_adam_element(s, native::Storage::f32, pi, g[i], mi, vi, xi, i);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
    if (vm) vm[i] = xi;
  }
}

__global__ void k_torch_sgd(native::TorchSgdScalars s, bool first, float* p, const float* g,
                            float* buf, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float pi = p[i], bi = buf[i];
    native::torch_sgd_element(s, native::Storage::f32, pi, g[i], bi, first);
    p[i] = pi;
    buf[i] = bi;
  }
}

}  // namespace

void adam_step(const optim::AdamHyper& h, bool decoupled, bool fused, long step, float* p,
               const float* g, float* m, float* v, std::size_t n, CUstream_st* stream,
               float* vmax) {
  if (n == 0) return;
  if (h.amsgrad && vmax == nullptr) throw InputError("adam_step: amsgrad needs max_exp_avg_sq");
  float* vm = h.amsgrad ? vmax : nullptr;
  if (fused) {
    k_torch_fused_adam<<<grid_for(n, 4), kThreads, 0, stream>>>(
        optim::torch_fused_adam_scalars(h, step, decoupled, n), p, g, m, v, vm, n);
  } else {
    const bool vec = aligned16(p, g, m, v) && (vm == nullptr || aligned16(vm));
    k_torch_adam<<<grid_for(n, 4), kThreads, 0, stream>>>(
        optim::torch_adam_scalars(h, step, decoupled), vec, p, g, m, v, vm, n);
  }
  cuda_check_launch("adam_step");
}

void sgd_step(const optim::SgdHyper& h, long step, float* p, const float* g, float* buf,
              std::size_t n, CUstream_st* stream) {
  if (n == 0) return;
  k_torch_sgd<<<grid_for(n, 4), kThreads, 0, stream>>>(optim::torch_sgd_scalars(h), step == 1, p, g,
                                                       buf, n);
  cuda_check_launch("sgd_step");
}

}  // namespace exmy::gpu
