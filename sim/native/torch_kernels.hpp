// The PyTorch kernel families an optimizer step can model (host and device).
#pragma once

#include <cstdint>

namespace exmy::native {

// Which PyTorch kernels ran the step (docs/SEMANTICS.md 9.2, 9.3, 12; `--compat`): the ATen CPU
// kernels (`torch-cpu`, the default), the CUDA TensorIterator kernels of `foreach=False`
// (`torch-cuda`), the CUDA multi-tensor-apply kernels of `foreach=True` (`torch-cuda-foreach`) or
// the fused Adam/AdamW kernel of `fused=True` (`torch-cuda-fused`, FusedAdamMathFunctor).
// They differ in how nvcc and GCC contract the same source lines, in where a Python scalar is
// rounded to a 16-bit dtype, and in CUDA's division by a CPU scalar (a multiply by its
// reciprocal); the forms were read from the kernels' SASS (bench/peers/torch_cuda_sass.sh).
enum class TorchKernels : std::uint8_t { cpu, cuda, cuda_foreach, cuda_fused };

}  // namespace exmy::native
