// Tensor quantization on the GPU: every scheme of sim/quant/quantize.hpp (tensor-, row-, column-,
// block-wise with int8 / float / codebook targets, MX E8M0 block-32, fused quantize+transpose)
// and its dequantizer, bit for bit equal to quant::quantize / quant::dequantize on the same fp32
// values (bf16 and fp16 inputs are widened to fp32 exactly first). Each element goes through the
// same native:: functions as the CPU reference; absmax reductions are max over |x| bit patterns
// (exact and order-independent, NaN per Options::nan), so the state is the same bits too.
//
// Device pointers; asynchronous on `stream`. Throws exmy::InputError as quant::quantize does for
// bad option combinations, exmy::gpu::CudaError for CUDA failures.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/cast/cast.hpp"
#include "sim/quant/quantize.hpp"

struct CUstream_st;

namespace exmy::gpu {

// Where quantize writes. codes: rows*cols bytes (int8 as two's complement; 4-bit codes one per
// byte), in the input layout, or cols x rows when opt.transpose. state: quant::group_count floats
// (absmax, or the te/torchao scale); unused (may be null) for the byte-scale schemes.
// scale_codes: group_count E8M0 (mx) or E4M3 (nvfp4) codes. tensor_scale: one float, the NVFP4
// two-level per-tensor scale (quant::nvfp4_stored_scale), only with opt.two_level.
struct QuantizedOut {
  std::uint8_t* codes = nullptr;
  float* state = nullptr;
  std::uint8_t* scale_codes = nullptr;
  float* tensor_scale = nullptr;
  // Codes of a format of at most 4 bits two per byte (element 2i in the low nibble; the layout of
  // sim/native/pack4.hpp, PyTorch's float4_e2m1fn_x2): codes then holds (n + 1) / 2 bytes.
  bool packed4 = false;
};

// x is the row-major matrix view (rows x cols) of the tensor, as quant::matrix_view gives.
void quantize(const void* x, CastInput in_type, std::size_t rows, std::size_t cols,
              const quant::Options& opt, const QuantizedOut& out, CUstream_st* stream = nullptr);

// out (rows x cols fp32, the input layout) = dequantize of codes/state/scale_codes under opt;
// tensor_scale is the NVFP4 two-level per-tensor scale (a host value).
void dequantize(const std::uint8_t* codes, const float* state, const std::uint8_t* scale_codes,
                std::size_t rows, std::size_t cols, const quant::Options& opt, float* out,
                CUstream_st* stream = nullptr, float tensor_scale = 1.0f);

// amax[g] = the absmax of group g (the fold of native::absmax_combine from kAbsmaxInit).
void group_absmax(const void* x, CastInput in_type, std::size_t rows, std::size_t cols,
                  const quant::Scheme& scheme, native::NanPolicy nan, float* amax,
                  CUstream_st* stream = nullptr);

// True when quantize(rows, cols, opt) runs the single-pass kernel (one read of x): contiguous
// groups (row / block / mx) whose size is 16 * 2^k <= 4096, without transpose.
bool quantize_is_single_pass(std::size_t rows, std::size_t cols, const quant::Options& opt);

}  // namespace exmy::gpu
