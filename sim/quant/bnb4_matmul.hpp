// bitsandbytes' QLoRA matmul, `bnb.matmul_4bit(A, W.t(), quant_state, bias)` on CUDA, the CPU
// reference (docs/SEMANTICS.md 7.17). bitsandbytes 0.50 sends every call to the op
// bitsandbytes::gemm_4bit, whose CUDA dispatch (bitsandbytes/backends/cuda/ops.py, then
// csrc/gemm_4bit.cu) takes one of three paths for M = A.numel() / K rows:
//   simt            csrc/gemm_4bit_simt.cu's gemm_4bit_simt<T, min(M, 8)>: one warp per output
//                   column, 32 codes per lane per 1024-element step, fp32 per-lane sums folded
//                   by a shfl_down tree (bnb4_gemm_simt below)
//   mma_sm80        gemm_4bit_sm80_m16n8k16: B dequantized to T per element (bnb4_mma_weight),
//                   mma.sync.m16n8k16 over K in order from +0, the bias added in fp32 (the CLI
//                   runs exmy's tensor-core model, sm90's by default)
//   dequant_linear  dequantize_4bit to A's dtype, then torch.nn.functional.linear (cuBLAS; the
//                   CLI runs exmy's GEMM model on the dequantized weight)
// bnb4_matmul_path reproduces the choice for a GPU given by its SM count and compute capability.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/quant/bnb4bit.hpp"

namespace exmy::quant {

enum class Bnb4MatmulPath : std::uint8_t { simt, mma_sm80, mma_sm75, dequant_linear };
const char* bnb4_path_name(Bnb4MatmulPath p);

// The device properties the dispatch reads (cudaDevAttrMultiProcessorCount, compute capability).
// Default: an H100 SXM / H200 (132 SMs, sm_90).
struct Bnb4Gpu {
  int sms = 132, cc_major = 9, cc_minor = 0;
};

// The path bitsandbytes 0.50.2 takes for an A of M rows of K elements (dtype dt) times the N x K
// weight quantized with `block` (ops.py: M > 1536 or K % block != 0 -> dequant_linear, else
// _gemm_4bit_use_custom_cuda; then gemm_4bit.cu's SIMT / MMA rule). M >= 1.
Bnb4MatmulPath bnb4_matmul_path(std::size_t M, std::size_t N, std::size_t K, native::Bnb4Dtype dt,
                                std::size_t block, const Bnb4Gpu& gpu);

// The quantized weight: N x K elements (row-major, as quantize_4bit flattened them).
struct Bnb4Weight {
  std::size_t N = 0, K = 0;
  Bnb4Quantized q;
  Bnb4Options opt;
};

// Checks the weight's arrays against N, K, the block and the double quantization (InputError).
void check_bnb4_weight(const Bnb4Weight& w);

// gemm_4bit_simt: out (M x N codes of dt: fp32 bits, or fp16/bf16 codes in the low 16 bits) from
// A (M x K codes of dt, same encoding) and an optional bias (N codes of dt; empty = none).
// K must be a multiple of the block (bitsandbytes dispatches other K to dequant_linear).
std::vector<std::uint32_t> bnb4_gemm_simt(std::span<const std::uint32_t> a, std::size_t M,
                                          const Bnb4Weight& w, native::Bnb4Dtype dt,
                                          std::span<const std::uint32_t> bias);

// gemm_4bit_sm80_m16n8k16's shared-memory B: code (N x K, row-major, T codes) of
// make_vec2<T>(lut[c] ⊗ scale) — one rounding from the fp32 product (⊗ = FMUL.FTZ), the scale
// bnb4_simt_scales'. dt is bf16 or fp16.
std::vector<std::uint16_t> bnb4_mma_weight(const Bnb4Weight& w, native::Bnb4Dtype dt);

// The epilogue of both kernels: Y = cvt.rn(acc ⊕ bias) with ⊕ = FADD.FTZ (bias 0.0f when absent).
std::uint32_t bnb4_kernel_store(float acc, float bias, native::Bnb4Dtype dt);

// F.gemv_4bit (kgemm_4bit_inference_naive<T, 128, 16|32>, csrc/kernels.cu), no longer on
// matmul_4bit's path: one row of A (K codes of dt) times W, N outputs. The absmax is
// gemv_4bit's (nested: dequantize_blockwise + offset, 7.14.4); per lane, 32 consecutive k per
// 1024-step with the absmax of the chunk's first element, T products (bf16/fp16: absmax and
// centroid in T, b = c ⊗_T s, p = a ⊗_T b, acc ⊕= p in k order; fp32: fma), then CUB's warp sum
// (shfl_down with offsets 1, 2, 4, 8, 16), Y = T(acc). Rows are read at (K + 1) / 2 bytes each.
std::vector<std::uint32_t> bnb4_gemv_naive(std::span<const std::uint32_t> a, const Bnb4Weight& w,
                                           native::Bnb4Dtype dt);

// The kernel's per-block fp32 scale: absmax[b], or with double quantization
// fma.rn.ftz(code[q_b], absmax2[b >> 8], offset) (nvcc contracts `code * absmax2 + offset`).
std::vector<float> bnb4_simt_scales(const Bnb4Weight& w);

}  // namespace exmy::quant
