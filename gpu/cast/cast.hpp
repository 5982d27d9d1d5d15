// Element-wise casts on the GPU: fp32 / bf16 / fp16 tensors in device memory to any FloatFormat of
// at most 16 bits, in any rounding mode (sr:R with the Philox words of docs/SEMANTICS.md 3.2),
// as codes (uint8 for <= 8-bit formats, uint16 for 9..16 bits) or fake-quantized (the rounded
// value decoded back to fp32). Results equal native::convert element by element, bit for bit.
//
// Pointers are device pointers; calls are asynchronous on `stream` (a cudaStream_t; nullptr is
// the legacy default stream). Throws exmy::InputError for bad arguments and exmy::gpu::CudaError
// when a CUDA call fails. Declared without CUDA headers so host-only code can include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"

struct CUstream_st;  // cudaStream_t is CUstream_st*

namespace exmy::gpu {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class CastInput : std::uint8_t { fp32, bf16, fp16 };

// Which kernel computes the cast. Both compute the same function; `automatic` takes the fast
// path (gpu/cast/fast_cast.hpp) where the target format allows it, `generic` always calls
// native::convert with the runtime descriptor.
enum class CastPath : std::uint8_t { automatic, generic, fast };

struct CastParams {
  FloatFormat to = formats::e4m3fn;
  Rounding rounding{};
  std::uint64_t seed = 0;          // Philox key, for sr:R
  std::uint32_t stream = 0;        // Philox stream: 0 for element-wise casts (SEMANTICS 3.2)
  std::uint64_t index_offset = 0;  // flat index of element 0 (a chunk of a larger tensor)
  CastPath path = CastPath::automatic;
};

// Bytes per output code: 1 for <= 8-bit formats, 2 for 9..16 bits; InputError otherwise.
std::size_t code_bytes(const FloatFormat& f);
std::size_t input_bytes(CastInput t);

// codes[i] = code of in[i] in params.to. `codes` holds n elements of code_bytes(params.to).
void cast_codes(const void* in, CastInput in_type, std::size_t n, void* codes,
                const CastParams& params, CUstream_st* stream = nullptr);
// out[i] = decode(code of in[i]) as fp32 (exact where params.to's values are fp32 values, which
// holds for every preset of at most 16 bits; otherwise rounded to nearest even).
void cast_fake_quant(const void* in, CastInput in_type, std::size_t n, float* out,
                     const CastParams& params, CUstream_st* stream = nullptr);
// out[i] = decode of codes[i] (code_bytes(f) each) as fp32: the dequantizer of cast_codes.
void decode_codes(const void* codes, const FloatFormat& f, std::size_t n, float* out,
                  CUstream_st* stream = nullptr);

// True when params would run the fast path.
bool cast_uses_fast_path(const CastParams& params);

}  // namespace exmy::gpu
