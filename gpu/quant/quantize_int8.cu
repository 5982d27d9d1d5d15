// quantize for int8 (absmax-scaled integer) targets (Kind::int8): the launch sequence of
// detail_run_quantize.cuh and its code kernels, instantiated here for this target kind only.
#include <cuda_runtime.h>

#include "gpu/quant/detail_launch.cuh"
#include "gpu/quant/detail_run_quantize.cuh"

namespace exmy::gpu::quant_detail {

void run_quantize_int8(const void* x, CastInput in, const QArgs& a, const quant::Options& opt,
                       const QuantizedOut& o, cudaStream_t s) {
  run_quantize_for_input<Kind::int8>(x, in, a, opt, o, s);
}

}  // namespace exmy::gpu::quant_detail
