// quantize for codebook targets (Kind::codebook): the launch sequence of detail_run_quantize.cuh
// and its code kernels, instantiated here for this target kind only.
#include <cuda_runtime.h>

#include "gpu/quant/codebook_table.hpp"
#include "gpu/quant/detail_launch.cuh"
#include "gpu/quant/detail_run_quantize.cuh"

namespace exmy::gpu::quant_detail {
namespace {

// The codebook's bucket table (gpu/quant/codebook_table.hpp), one entry per thread.
__global__ void __launch_bounds__(kThreads)
    cb_table_kernel(std::uint32_t* __restrict__ table, const __grid_constant__ QArgs a) {
  __shared__ float cb[256];
  __shared__ float mids[255];
  for (int k = threadIdx.x; k < 256; k += blockDim.x) cb[k] = a.p.codebook[k];
  __syncthreads();
  for (int k = threadIdx.x; k < 255; k += blockDim.x) mids[k] = native::codebook_midpoint(cb, k);
  __syncthreads();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kCbEntries) table[i] = codebook_table_entry(mids, a.p.tie, i);
}

}  // namespace

void run_quantize_codebook(const void* x, CastInput in, const QArgs& a, const quant::Options& opt,
                           const QuantizedOut& o, cudaStream_t s) {
  run_quantize_for_input<Kind::codebook>(x, in, a, opt, o, s);
}

// Builds the codebook bucket table into scratch (freed by the caller, stream-ordered).
std::uint32_t* build_cb_table(const QArgs& a, cudaStream_t s) {
  void* p = nullptr;
  cuda_check(cudaMallocAsync(&p, kCbEntries * sizeof(std::uint32_t), s), "cudaMallocAsync");
  auto* table = static_cast<std::uint32_t*>(p);
  cb_table_kernel<<<kCbEntries / kThreads, kThreads, 0, s>>>(table, a);
  cuda_check_launch("codebook table kernel launch");
  return table;
}

}  // namespace exmy::gpu::quant_detail
