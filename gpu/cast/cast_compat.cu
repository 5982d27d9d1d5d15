// The compat cast kernel (gpu/cast/cast_compat.hpp): one element per thread and grid-stride step;
// inputs widen exactly to fp32 (gpu/cast/widen.hpp) and take the host's rule function.
#include <cuda_runtime.h>

#include "gpu/cast/cast_compat.hpp"
#include "gpu/cast/widen.hpp"
#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"

namespace exmy::gpu {
namespace {

template <CastInput In>
__global__ void __launch_bounds__(kThreads)
    compat_kernel(const void* __restrict__ in, std::size_t n, std::uint8_t* __restrict__ codes,
                  native::CompatCast rule) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const std::uint32_t u = widen_input<In>(static_cast<const InputElem<In>*>(in)[i]);
    codes[i] = static_cast<std::uint8_t>(native::compat_cast_fp32(rule, u));
  }
}

}  // namespace

void cast_compat_codes(const void* in, CastInput in_type, std::size_t n, std::uint8_t* codes,
                       native::CompatCast rule, CUstream_st* stream) {
  if (n == 0) return;
  const unsigned grid = grid_for(n, 1);  // grid-stride beyond its cap
  switch (in_type) {
    case CastInput::fp32:
      compat_kernel<CastInput::fp32><<<grid, kThreads, 0, stream>>>(in, n, codes, rule);
      break;
    case CastInput::bf16:
      compat_kernel<CastInput::bf16><<<grid, kThreads, 0, stream>>>(in, n, codes, rule);
      break;
    case CastInput::fp16:
      compat_kernel<CastInput::fp16><<<grid, kThreads, 0, stream>>>(in, n, codes, rule);
      break;
  }
  cuda_check_launch("compat cast kernel launch");
}

}  // namespace exmy::gpu
