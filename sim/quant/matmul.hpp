// Quantized matmuls, the CPU reference (docs/SEMANTICS.md 8). Layout is SwitchBack's: both
// operands row-major with K contiguous, out = A * B^T (A: M x K, B: N x K), out row-major M x N.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/native/mask.hpp"
#include "sim/native/quant_matmul.hpp"

namespace exmy::quant {

// Exact int32 products (SEMANTICS 8.1).
std::vector<std::int32_t> matmul_int8_nt(const std::vector<std::int8_t>& a,
                                         const std::vector<std::int8_t>& b, std::size_t M,
                                         std::size_t N, std::size_t K);

// SwitchBack eq. 2 / eq. 4 epilogue (SEMANTICS 8.2): state_row has M entries (row-wise state of A);
// state_col has N entries (row-wise state of B = column-wise of B^T) or 1 (tensor-wise).
std::vector<float> dequantize_product(const std::vector<std::int32_t>& acc, std::size_t M,
                                      std::size_t N, const std::vector<float>& state_row,
                                      const std::vector<float>& state_col,
                                      native::DequantOrder order);

// fp32-accumulated product of fp32 operands (decoded FP8 codes, or masked values), in the given
// order (SEMANTICS 8.3).
std::vector<float> matmul_fp32_nt(const std::vector<float>& a, const std::vector<float>& b,
                                  std::size_t M, std::size_t N, std::size_t K,
                                  native::AccumOrder order);

// Seed 003's "reduced-precision inputs, high-precision accumulator" emulation (SEMANTICS 8.4):
// every element of A and B is masked onto the ExMy grid (SEMANTICS 2.1, native::mask_fp32 with
// E, M, outer, inner), then multiplied with fp32 accumulation in `order`.
std::vector<float> matmul_masked_nt(const std::vector<float>& a, const std::vector<float>& b,
                                    std::size_t M, std::size_t N, std::size_t K, int mask_e,
                                    int mask_m, MaskOuter outer, MaskInner inner,
                                    native::AccumOrder order);

}  // namespace exmy::quant
