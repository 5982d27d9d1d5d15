// quantize for block-scaled (MX E8M0, NVFP4 E4M3 scale byte) targets (Kind::mx): the launch
// sequence of detail_run_quantize.cuh and its code kernels, instantiated here for this target kind
// only.
#include <cuda_runtime.h>

#include "gpu/quant/detail_launch.cuh"
#include "gpu/quant/detail_run_quantize.cuh"

namespace exmy::gpu::quant_detail {

void run_quantize_block_scaled(const void* x, CastInput in, const QArgs& a,
                               const quant::Options& opt, const QuantizedOut& o, cudaStream_t s) {
  run_quantize_for_input<Kind::mx>(x, in, a, opt, o, s);
}

}  // namespace exmy::gpu::quant_detail
