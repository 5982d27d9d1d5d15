// TransformerEngine's NVFP4BlockScaling training pieces beyond plain te quantization
// (docs/SEMANTICS.md 7.18-7.20), read from NVIDIA/TransformerEngine at commit d0067d0d
// (2.20.0.dev0):
// - the 16x16 random Hadamard transform of the columnwise (wgrad) copy, as a bf16 GEMM with
//   R = diag(s) H16 / 4 through exmy's GEMM model of a named accumulation (7.18);
// - "4over6" adaptive block scaling (Cook et al., "Four Over Six: More Accurate NVFP4
//   Quantization with Adaptive Block Scaling", 2025): map-to-4 and map-to-6 candidates per block,
//   the one of smaller MAE/MSE kept, as TE's reference computes it (7.19);
// - the stochastic rounding of gradients: cvt.rs.satfinite.e2m1x4 with the Philox4x32-10 words
//   of TE's tuned 1-D quantize kernel, a model of which word and byte each element uses (7.20).
// CPU only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/native/cvt_rs.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::layer {

// TE's get_wgrad_sign_vector (transformer_engine/pytorch/tensor/nvfp4_tensor.py).
inline constexpr int kTeRhtSigns[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
// get_sign_from_vector of it: bit i set where sign i is -1 (the kernels' random_sign_mask).
std::uint16_t te_rht_sign_mask();
// R = diag(s) H16 / sqrt(16) with H16 Sylvester's Hadamard matrix (H[i][j] = (-1)^popcount(i & j)),
// s the sign vector or all ones: bf16 codes, R[16 i + j] (every entry +-0.25).
std::array<std::uint16_t, 256> te_rht_matrix_bf16(bool with_signs);

// The RHT of each run of 16 consecutive elements along the last dimension of a rows x cols
// matrix of bf16 codes (cols % 16 == 0): y[r, 16b + j] = bf16_RNE(acc_j), acc_j the fp32
// accumulator that exmy's GEMM model `accum` computes for sum_i x[r, 16b + i] R[i][j], i.e.
// gemm(A = x viewed as (rows cols / 16) x 16, B = R^T, out bf16). InputError for a model string
// that does not parse.
std::vector<std::uint16_t> te_rht_apply(const std::vector<std::uint16_t>& x, std::size_t rows,
                                        std::size_t cols, const std::string& accum,
                                        bool with_signs);

// TE's curanddx Philox4x32-10 (transformer_engine/common/util/curanddx.hpp): the thread's state
// after init(seed, subsequence, offset) is the counter (lo(offset), hi(offset), lo(subsequence),
// hi(subsequence)), key (lo(seed), hi(seed)); its n-th random word (get_rbits, counting from 0)
// is word n mod 4 of the block at that counter plus floor(n / 4) (a 128-bit increment).
std::uint32_t te_philox_word(std::uint64_t seed, std::uint64_t offset, std::uint64_t subsequence,
                             std::uint64_t n);

// Where the random bits of an element come from in TE's tuned 1-D NVFP4 kernel
// (cast/nvfp4/specialized/quantize_transpose_nvfp4_tuned_1D.cuh, not persistent: 128 x 128
// chunks, 128 threads, four 64 x 64 stages): the thread's Philox subsequence (its global thread
// index), the word's index n in that thread's stream, and the element's slot (0..3) in its
// cvt.rs.satfinite.e2m1x4 group.
struct TeSrWord {
  std::uint64_t subsequence = 0;
  std::uint64_t n = 0;
  int slot = 0;
};
// Element (r, c) of the rows x cols bf16 input of the launch (rows, cols multiples of 32).
// transposed_too: the launch wrote the columnwise copy as well (RETURN_TRANSPOSE), whose words
// follow the rowwise ones in each stage; columnwise_output: the word of (r, c) in that copy.
TeSrWord te_tuned_1d_word(std::size_t rows, std::size_t cols, std::size_t r, std::size_t c,
                          bool transposed_too, bool columnwise_output);

// The training options of `exmy quantize --scheme nvfp4[:16x16] --variant te --two-level`.
struct Nvfp4TrainOptions {
  bool columnwise = false;  // quantize X^T (TE's columnwise copy, data_t / scale_t)
  bool rht = false;         // RHT before quantization (columnwise only, bf16 input only)
  bool rht_signs = true;    // TE's sign vector (with_random_sign_mask); false: plain H16 / 4
  std::string rht_accum = "sm100";  // the GEMM model of the RHT's MMA
  bool sr = false;                  // TE's stochastic rounding (cvt.rs, tuned 1-D kernel words)
  std::uint64_t seed = 0, philox_offset = 0;  // rng_state[0], rng_state[1]
  bool sr_transposed_too = false;             // the launch wrote both copies
  native::CvtRsArch arch = native::CvtRsArch::sm100a;
  bool four_over_six = false;
  bool mse = false;  // 4over6 error: MSE instead of MAE
  bool err_fast =
      false;  // 4over6 error in the E4M3-scaled domain (NVTE_NVFP4_4OVER6_ERR_USE_FAST_MATH)
  int e4m3_max = 256;  // 4over6 global scale bound (NVFP4BlockScaling's default: 256)
  bool any() const { return columnwise || rht || sr || four_over_six; }
  // Any option of these set (a stray one is refused by check_train_options).
  bool given() const {
    return any() || !rht_signs || rht_accum != "sm100" || philox_offset != 0 || sr_transposed_too ||
           arch != native::CvtRsArch::sm100a || mse || e4m3_max != 256;
  }
};

// InputError naming the combination that TE does not run or exmy does not model.
void check_train_options(const quant::Options& opt, const Nvfp4TrainOptions& t, bool bf16_input);

// Quantizes x (rows x cols after quant::matrix_view; `x_bf16` its bf16 codes when the input is
// bf16, else empty; neither is copied) under opt (nvfp4 or nvfp4:16x16, variant te, two-level)
// and t. The result's shape is the quantized tensor's (cols x rows with t.columnwise); codes
// unpacked, or two per byte (native::pack4's order) with pack_codes. With t.rht, rht_out (when
// given) receives RHT(X^T), the bf16 codes the quantizer read (cols x rows). The tensor is made
// and quantized a block of rows at a time (no fp32 copy of it: docs/SEMANTICS.md 11.0's bound).
quant::Quantized nvfp4_train_quantize(const quant::Values& x, std::span<const std::uint16_t> x_bf16,
                                      const std::vector<std::size_t>& shape,
                                      const quant::Options& opt, const Nvfp4TrainOptions& t,
                                      std::vector<std::uint16_t>* rht_out = nullptr,
                                      bool pack_codes = false);

namespace detail {
// nvfp4_train_quantize with blocks of about block_elements elements (tests: many small blocks
// must give the codes of one block).
quant::Quantized nvfp4_train_quantize_blocked(const quant::Values& x,
                                              std::span<const std::uint16_t> x_bf16,
                                              const std::vector<std::size_t>& shape,
                                              const quant::Options& opt, const Nvfp4TrainOptions& t,
                                              std::vector<std::uint16_t>* rht_out, bool pack_codes,
                                              std::size_t block_elements);
}  // namespace detail

}  // namespace exmy::layer
