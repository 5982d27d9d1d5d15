// Host-array entry points to the GPU kernels, for the CLI's `--device cuda` and for callers that
// hold their tensors in host memory: each call uploads its inputs, runs the device-pointer API
// (gpu/cast/cast.hpp, gpu/quant/quantize.hpp) on the default stream, and downloads the results
// (synchronous). Bits are those of the device-pointer API, which equal the CPU reference's.
// Defined only in CUDA builds (gpu/host_arrays.cu); throws gpu::CudaError on CUDA failures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/cast/cast.hpp"
#include "gpu/cast/cast_compat.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::gpu {

// n elements of `in_type` at `in` -> n codes of code_bytes(params.to) bytes each.
std::vector<std::uint8_t> cast_codes_host(const void* in, CastInput in_type, std::size_t n,
                                          const CastParams& params);
// n elements -> n fake-quantized fp32 values.
std::vector<float> cast_fake_quant_host(const void* in, CastInput in_type, std::size_t n,
                                        const CastParams& params);

// n elements -> n one-byte codes of the compat rule (gpu/cast/cast_compat.hpp).
std::vector<std::uint8_t> cast_compat_codes_host(const void* in, CastInput in_type, std::size_t n,
                                                 native::CompatCast rule);

// The rows x cols matrix at x (row-major) quantized under opt (shape and state_shape are the
// matrix view's; the caller sets the tensor's own). Codes one per byte (unpacked).
quant::Quantized quantize_host(const void* x, CastInput in_type, std::size_t rows, std::size_t cols,
                               const quant::Options& opt);
// The inverse: rows x cols fp32 values in the input layout.
std::vector<float> dequantize_host(const quant::Quantized& q, std::size_t rows, std::size_t cols,
                                   const quant::Options& opt);

}  // namespace exmy::gpu
