// gpu::dequantize: one element per thread and grid-stride step, the reference's
// native::dequant_element on the group's state or scale code.
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/detail_element.cuh"
#include "gpu/quant/detail_launch.cuh"
#include "gpu/quant/quantize.hpp"
#include "sim/quant/scheme_registry.hpp"

namespace exmy::gpu::quant_detail {
namespace {

__global__ void __launch_bounds__(kThreads)
    dequant_kernel(const std::uint8_t* __restrict__ codes, const float* __restrict__ state,
                   const std::uint8_t* __restrict__ mx_scales, float* __restrict__ out,
                   const __grid_constant__ QArgs a) {
  __shared__ float cb[256];
  if (a.kind == Kind::codebook) {
    for (int k = threadIdx.x; k < 256; k += blockDim.x) cb[k] = a.p.codebook[k];
    __syncthreads();
  }
  const std::uint64_t P = a.col ? a.cols : a.G;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < a.n;
       i += static_cast<std::uint64_t>(gridDim.x) * kThreads) {
    const std::uint64_t r = i / a.cols, c = i % a.cols;
    const std::uint8_t code = codes[a.transpose ? c * a.rows + r : i];
    const std::uint64_t g = a.col ? c : i / P;
    const float v = a.kind == Kind::mx
                        ? cold_dequant_element(a.p, cb, code, mx_scales[g])
                        : cold_dequant_element(a.p, cb, code, native::bits_of(state[g]));
    out[i] = v;
  }
}

}  // namespace

void run_dequantize_contiguous(const std::uint8_t* codes, const float* state,
                               const std::uint8_t* scale_codes, const QArgs& a, float* out,
                               cudaStream_t s) {
  if (a.n == 0) return;
  const std::uint64_t blocks = (a.n + kThreads - 1) / kThreads;
  dequant_kernel<<<blocks_for(blocks, 1), kThreads, 0, s>>>(codes, state, scale_codes, out, a);
  cuda_check_launch("dequantize kernel launch");
}

}  // namespace exmy::gpu::quant_detail

namespace exmy::gpu {

using namespace quant_detail;

void dequantize(const std::uint8_t* codes, const float* state, const std::uint8_t* mx_scales,
                std::size_t rows, std::size_t cols, const quant::Options& opt, float* out,
                CUstream_st* stream, float tensor_scale) {
  check_options(rows, cols, opt);
  const QArgs a = make_args(rows, cols, opt, quant::nvfp4_tensor_from_scale(opt, tensor_scale));
  // The scheme's launcher (its registry entry names it; detail_launch.cuh's table runs it).
  launcher(quant::scheme_entry(opt.scheme).gpu).dequantize(codes, state, mx_scales, a, out, stream);
}

}  // namespace exmy::gpu
