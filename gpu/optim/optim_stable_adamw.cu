// CUDA kernels of StableAdamW (gpu/optim/optim.hpp): the moments and the per-block sums of the
// update's squares, the fixed 256-leaf halving tree of docs/SEMANTICS.md 10 (in shared memory,
// level by level across blocks), then the parameter step with the step size from the RMS.
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

// ---- StableAdamW ------------------------------------------------------------------------------
// The 256-leaf halving tree on a[] in shared memory (kSumChunk == kThreads).
__device__ double tree_sum_block(double* a) {
  for (int h = native::kSumChunk / 2; h >= 1; h >>= 1) {
    __syncthreads();
    if (threadIdx.x < h) a[threadIdx.x] = native::rn_add64(a[threadIdx.x], a[threadIdx.x + h]);
  }
  __syncthreads();
  return a[0];
}

// Four leaf chunks (1024 terms) per block: thread t owns terms 4t..4t+3 (one float4), so chunk c
// of the block is a[256c, 256c + 256), summed by the same halving tree as the reference.
constexpr int kChunksPerBlock = 4;
__global__ void __launch_bounds__(kThreads)
    k_stable_moments(native::StableAdamWScalars s, bool vec, const float* g, float* v, float* u,
                     double* partial, std::size_t n) {
  __shared__ double a[native::kSumChunk * kChunksPerBlock];
  const std::size_t base = blockIdx.x * static_cast<std::size_t>(kThreads * 4);
  const std::size_t i0 = base + 4 * threadIdx.x;
  if (vec && i0 + 3 < n) {
    const float4 G = reinterpret_cast<const float4*>(g)[i0 / 4];
    float4 V = reinterpret_cast<float4*>(v)[i0 / 4];
    float4 U = reinterpret_cast<float4*>(u)[i0 / 4];
    a[4 * threadIdx.x + 0] = native::stable_adamw_moments(s, G.x, V.x, U.x);
    a[4 * threadIdx.x + 1] = native::stable_adamw_moments(s, G.y, V.y, U.y);
    a[4 * threadIdx.x + 2] = native::stable_adamw_moments(s, G.z, V.z, U.z);
    a[4 * threadIdx.x + 3] = native::stable_adamw_moments(s, G.w, V.w, U.w);
    reinterpret_cast<float4*>(v)[i0 / 4] = V;
    reinterpret_cast<float4*>(u)[i0 / 4] = U;
  } else {
    for (int j = 0; j < 4; ++j) {
      const std::size_t i = i0 + j;
      double term = 0.0;
      if (i < n) {
        float vi = v[i], ui = u[i];
        term = native::stable_adamw_moments(s, g[i], vi, ui);
        v[i] = vi;
        u[i] = ui;
      }
      a[4 * threadIdx.x + j] = term;
    }
  }
  for (int h = native::kSumChunk / 2; h >= 1; h >>= 1) {
    __syncthreads();
    for (int k = threadIdx.x; k < kChunksPerBlock * h; k += kThreads) {
      double* ac = a + (k / h) * native::kSumChunk;
      const int j = k % h;
      ac[j] = native::rn_add64(ac[j], ac[j + h]);
    }
  }
  __syncthreads();
  if (threadIdx.x < kChunksPerBlock) {
    const std::size_t chunk = base / native::kSumChunk + threadIdx.x;
    if (chunk * native::kSumChunk < n) partial[chunk] = a[threadIdx.x * native::kSumChunk];
  }
}

__global__ void __launch_bounds__(kThreads)
    k_tree_level(const double* in, double* out, std::size_t n) {
  __shared__ double a[native::kSumChunk];
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x;
  a[threadIdx.x] = i < n ? in[i] : 0.0;
  const double sum = tree_sum_block(a);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}

__global__ void k_stable_param(native::StableAdamWScalars s, float eta, float eta_lambda, bool vec,
                               float* p, const float* v, const float* u, std::size_t n) {
  const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t n4 = vec ? n / 4 : 0;
  for (std::size_t k = tid; k < n4; k += stride) {
    float4 P = reinterpret_cast<float4*>(p)[k];
    const float4 V = reinterpret_cast<const float4*>(v)[k];
    const float4 U = reinterpret_cast<const float4*>(u)[k];
    P.x = native::stable_adamw_param(s, eta, eta_lambda, P.x, V.x, U.x);
    P.y = native::stable_adamw_param(s, eta, eta_lambda, P.y, V.y, U.y);
    P.z = native::stable_adamw_param(s, eta, eta_lambda, P.z, V.z, U.z);
    P.w = native::stable_adamw_param(s, eta, eta_lambda, P.w, V.w, U.w);
    reinterpret_cast<float4*>(p)[k] = P;
  }
  for (std::size_t i = n4 * 4 + tid; i < n; i += stride) {
    p[i] = native::stable_adamw_param(s, eta, eta_lambda, p[i], v[i], u[i]);
  }
}

}  // namespace

float stable_adamw_step(const optim::AdamHyper& h, long step, float* p, const float* g, float* v,
                        float* u, std::size_t n, CUstream_st* stream) {
  const native::StableAdamWScalars s = optim::stable_adamw_scalars(h, step);
  double sum = 0.0;
  if (n > 0) {
    // Workspace: two levels of partial sums, per device, grown as needed. (Steps on one device
    // from several host threads at once would share it: exmy steps one tensor at a time.)
    static PerDeviceBuffer workspace;
    const std::size_t c0 = (n + kThreads - 1) / kThreads;
    const std::size_t need = c0 + (c0 + kThreads - 1) / kThreads + 1;
    double* ws = static_cast<double*>(workspace.get(need * sizeof(double), [](void*) {}));
    double* a = ws;
    double* b = ws + c0;
    const unsigned blocks = static_cast<unsigned>((c0 + kChunksPerBlock - 1) / kChunksPerBlock);
    k_stable_moments<<<blocks, kThreads, 0, stream>>>(s, aligned16(g, v, u), g, v, u, a, n);
    cuda_check_launch("stable_adamw moments");
    std::size_t len = c0;
    while (len > 1) {
      const std::size_t next = (len + kThreads - 1) / kThreads;
      k_tree_level<<<static_cast<unsigned>(next), kThreads, 0, stream>>>(a, b, len);
      cuda_check_launch("stable_adamw tree");
      std::swap(a, b);
      len = next;
    }
    cuda_check(cudaMemcpyAsync(&sum, a, sizeof sum, cudaMemcpyDeviceToHost, stream), "read sum");
    cuda_check(cudaStreamSynchronize(stream), "stable_adamw sync");
  }
  const float rms = optim::rms_from_sum(sum, n);
  const float eta = optim::stable_eta(h.lr, rms);
  const float eta_lambda = eta * static_cast<float>(h.wd);
  if (n > 0) {
    k_stable_param<<<grid_for(n, 4), kThreads, 0, stream>>>(s, eta, eta_lambda, aligned16(p, v, u),
                                                            p, v, u, n);
    cuda_check_launch("stable_adamw param");
  }
  return rms;
}

}  // namespace exmy::gpu
