// bitsandbytes' 4-bit quantization (quantize_4bit / dequantize_4bit, QLoRA's NF4 and bitsandbytes'
// FP4) with its optional double quantization, the CPU reference (docs/SEMANTICS.md 7.14). The
// element steps are sim/native/bnb_4bit.hpp's; the second level is this folder's 8-bit block-wise
// codebook quantization under --compat bnb-cuda; the offset is sim/native/torch_mean_cuda.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "sim/native/bnb_4bit.hpp"
#include "sim/native/torch_mean_cuda.hpp"
#include "sim/quant/values.hpp"

namespace exmy::quant {

struct Bnb4Options {
  native::Bnb4Type type = native::Bnb4Type::nf4;
  std::size_t block = 64;                  // 32, 64, ..., 4096 (bitsandbytes' 4-bit instantiations)
  bool double_quant = false;               // compress_statistics=True
  int sms = native::kTorchMeanDefaultSms;  // the GPU's SM count (the offset's reduction)
};

// The second level of double quantization: quantize_blockwise(absmax - offset, blocksize=256)
// with the signed dynamic map.
inline constexpr std::size_t kBnb4StatsBlock = 256;

struct Bnb4Quantized {
  std::vector<std::uint8_t> packed;  // (n + 1) / 2 bytes, element 2i in the high nibble
  std::vector<float> absmax;         // plain: one fp32 absmax per block
  // double quantization: the absmax codes (one per block), the fp32 absmax of each group of 256
  // of them, and the offset (torch's mean of the absmax).
  std::vector<std::uint8_t> absmax_codes;
  std::vector<float> absmax2;
  float offset = 0.0f;
};

// "nf4" or "fp4" (InputError otherwise).
native::Bnb4Type parse_bnb4_type(std::string_view s);
const char* bnb4_type_name(native::Bnb4Type t);
// Checks the block size (InputError naming the accepted ones).
void check_bnb4_block(std::size_t block);

// The 4-bit absmax of every block of x (plain, before any double quantization).
std::vector<float> bnb4_block_absmax(const Values& x, std::size_t block);

// quantize_4bit(x, blocksize, compress_statistics, quant_type) on the flattened x (fp32 values;
// bf16 and fp16 inputs widened exactly, as Values reads their codes: the kernels read them as
// (float)vals[j]).
Bnb4Quantized bnb4_quantize(const Values& x, const Bnb4Options& opt);
inline Bnb4Quantized bnb4_quantize(const std::vector<float>& x, const Bnb4Options& opt) {
  return bnb4_quantize(Values(x), opt);
}

// The fp32 absmax dequantize_4bit uses: the plain absmax, or for double quantization
// dequantize_blockwise(codes, absmax2) then `absmax += offset` (torch, RN32).
std::vector<float> bnb4_dequant_absmax(const Bnb4Quantized& q, std::size_t blocks,
                                       const Bnb4Options& opt);

// dequantize_4bit: n values in dtype `d` (bits: fp32 words, or fp16/bf16 in the low 16 bits).
std::vector<std::uint32_t> bnb4_dequantize(const Bnb4Quantized& q, std::size_t n,
                                           native::Bnb4Dtype d, const Bnb4Options& opt);
// bnb4_dequantize a piece at a time (the CLI writes its output as it goes: issue 36's memory
// bound): bnb4_dequantize's checks, in its order, for n values whose codes are `packed_bytes`
// bytes (q.packed is not read), and the absmax it uses; then values [i0, i1) from the packed
// codes (read in place) and that absmax.
std::vector<float> bnb4_dequantize_absmax(const Bnb4Quantized& q, std::size_t packed_bytes,
                                          std::size_t n, const Bnb4Options& opt);
void bnb4_dequantize_values(const std::uint8_t* packed, const std::vector<float>& absmax,
                            std::size_t i0, std::size_t i1, native::Bnb4Dtype d,
                            const Bnb4Options& opt, std::uint32_t* out);

}  // namespace exmy::quant
