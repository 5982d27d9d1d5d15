// bitsandbytes' 4-bit quantization on the GPU (docs/SEMANTICS.md 7.14): the same bits as
// quant::bnb4_quantize / quant::bnb4_dequantize, every element through sim/native/bnb_4bit.hpp.
// The double quantization's offset (torch's mean, a host model of its reduction) is computed on
// the host from the downloaded absmax; its 8-bit second level runs on the device through
// gpu::quantize / gpu::dequantize under the bnb-cuda profile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpu/cast/cast.hpp"
#include "sim/quant/bnb4bit.hpp"

struct CUstream_st;

namespace exmy::gpu {

// Device pointers. packed: (n + 1) / 2 bytes; absmax: ceil(n / block) floats (plain absmax).
void bnb4_quantize(const void* x, CastInput in_type, std::size_t n, const quant::Bnb4Options& opt,
                   std::uint8_t* packed, float* absmax, CUstream_st* stream = nullptr);
// out: n values of dtype d (fp32 words or 16-bit halves) from the plain fp32 absmax.
void bnb4_dequantize(const std::uint8_t* packed, const float* absmax, std::size_t n,
                     native::Bnb4Type type, std::size_t block, native::Bnb4Dtype d, void* out,
                     CUstream_st* stream = nullptr);

// The fused quantizer's cell table (sim/native/bnb_4bit_cells.hpp) on the device's FMA against
// the reference tree: mismatches over every fp32 pattern of its domain (|n| <= kBnb4Reach and
// every NaN); *checked, when given, receives how many patterns it compared.
std::uint64_t bnb4_cells_mismatches(native::Bnb4Type type, std::uint64_t* checked = nullptr);

// Host arrays in and out (upload, launch, download); double quantization included.
quant::Bnb4Quantized bnb4_quantize_host(const void* x, CastInput in_type, std::size_t n,
                                        const quant::Bnb4Options& opt);
std::vector<std::uint32_t> bnb4_dequantize_host(const quant::Bnb4Quantized& q, std::size_t n,
                                                native::Bnb4Dtype d, const quant::Bnb4Options& opt);

}  // namespace exmy::gpu
