// The PyTorch kernel families an optimizer step can model (host and device).
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/native/hd.hpp"

namespace exmy::native {

// Which PyTorch kernels ran the step (docs/SEMANTICS.md 9.2, 9.3, 12; `--compat`): the ATen CPU
// kernels (`torch-cpu`, the default), the CUDA TensorIterator kernels of `foreach=False`
// (`torch-cuda`), the CUDA multi-tensor-apply kernels of `foreach=True` (`torch-cuda-foreach`) or
// the fused Adam/AdamW kernel of `fused=True` (`torch-cuda-fused`, FusedAdamMathFunctor).
// They differ in how nvcc and GCC contract the same source lines, in where a Python scalar is
// rounded to a 16-bit dtype, and in CUDA's division by a CPU scalar (a multiply by its
// reciprocal); the forms were read from the kernels' SASS (bench/peers/torch_cuda_sass.sh).
enum class TorchKernels : std::uint8_t { cpu, cuda, cuda_foreach, cuda_fused };

// How the ATen CPU kernels walk a tensor (docs/SEMANTICS.md 9.2.2; `--compat torch-cpu[:tN]`).
// TensorIterator::for_each runs one range when numel < GRAIN_SIZE (32768), else
// at::parallel_for's min(threads, ceil(numel / 32768)) chunks of ceil(numel / chunks) elements;
// in each chunk cpu_kernel_vec's vectorized_loop (aten/src/ATen/native/cpu/Loops.h) takes
// 2 * Vectorized<T>::size() elements at a time and leaves the rest to basic_loop, the kernel's
// scalar lambda. The one kernel whose two lambdas differ in the optimizers' ops, ufunc add with
// alpha on bf16/fp16, runs 32-byte vectors under both ATen capabilities AVX2 and AVX512 of the
// torch 2.11 wheel (measured: a 1,000-element bf16 add's tail is elements 992..999 under both).
// threads 0: at least as many threads as chunks (a tensor of at most 32768 * threads elements).
struct TorchCpuLoop {
  std::uint32_t vec_bytes = 32;  // the Vectorized<T> width of that kernel
  std::uint32_t threads = 0;     // at::get_num_threads(); 0 = not fewer than the chunks
};

// Whether element i of an n-element contiguous tensor of elem_bytes-byte values is computed by
// basic_loop (the scalar tail of its chunk) rather than the Vectorized lambda.
EXMY_HD bool torch_cpu_scalar_tail(std::size_t i, std::size_t n, std::size_t elem_bytes,
                                   TorchCpuLoop loop) {
  constexpr std::size_t kGrain = 32768;  // at::internal::GRAIN_SIZE
  std::size_t chunks = 1;
  if (n >= kGrain && loop.threads != 1) {
    chunks = (n + kGrain - 1) / kGrain;
    if (loop.threads != 0 && loop.threads < chunks) chunks = loop.threads;
  }
  const std::size_t chunk = (n + chunks - 1) / chunks;
  const std::size_t begin = i / chunk * chunk;
  const std::size_t len = (begin + chunk < n ? begin + chunk : n) - begin;
  const std::size_t step = 2 * (loop.vec_bytes / elem_bytes);
  return i - begin >= len / step * step;
}

// torch_cpu_scalar_tail with the tensor's quantities worked out once, for loops that test every
// element (the GPU kernels of `--compat torch-cpu`): two 64-bit divisions per element made the
// 16-bit Adam kernel 1.49x slower on an H200 (bench_optim_gpu, 2026-12-01). Every chunk but the
// last has `chunk` elements and the same vectorized prefix; the last is tested against its own
// end; the one division left is 32-bit where the indices fit. Equal to torch_cpu_scalar_tail for
// every element (tests/optim/test_torch_cpu_tail.cpp).
struct TorchCpuTails {
  std::size_t chunk = 1;         // elements per chunk (the last may be shorter)
  std::size_t full_vec = 0;      // vectorized elements of a full chunk
  std::size_t last_begin = 0;    // first element of the last chunk
  std::size_t last_vec_end = 0;  // end of the last chunk's vectorized elements
  EXMY_HD bool at(std::size_t i) const {
    if (i >= last_begin) return i >= last_vec_end;
    const std::size_t off = last_begin <= 0xFFFFFFFFu
                                ? static_cast<std::uint32_t>(i) % static_cast<std::uint32_t>(chunk)
                                : i % chunk;
    return off >= full_vec;
  }
};

EXMY_HD TorchCpuTails torch_cpu_tails(std::size_t n, std::size_t elem_bytes, TorchCpuLoop loop) {
  constexpr std::size_t kGrain = 32768;  // as torch_cpu_scalar_tail
  std::size_t chunks = 1;
  if (n >= kGrain && loop.threads != 1) {
    chunks = (n + kGrain - 1) / kGrain;
    if (loop.threads != 0 && loop.threads < chunks) chunks = loop.threads;
  }
  TorchCpuTails t;
  if (n == 0) return t;
  t.chunk = (n + chunks - 1) / chunks;
  const std::size_t step = 2 * (loop.vec_bytes / elem_bytes);
  t.full_vec = t.chunk / step * step;
  t.last_begin = (n - 1) / t.chunk * t.chunk;
  t.last_vec_end = t.last_begin + (n - t.last_begin) / step * step;
  return t;
}

}  // namespace exmy::native
