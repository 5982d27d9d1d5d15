// The summation orders of the ATen CPU reductions torch.optim.Adafactor runs (torch 2.11 on x86-64,
// docs/SEMANTICS.md 9.2.8): linalg.vector_norm(x, 2) over the last dimension (the vectorised
// "lastdim" kernel of aten/src/ATen/native/cpu/ReduceOpsKernel.cpp), over another dimension (the
// generic binary_kernel_reduce with NormTwoOps), and sum (SumKernel.cpp's cascade_sum), which CPU
// mean() runs before dividing. Host and device (the GPU kernels of `--compat torch-cpu` replay
// them one output per thread).
//
// The norm and sum stubs are registered with REGISTER_DISPATCH, which leaves the AVX512 slot
// empty: an AVX512 host runs the AVX2 kernels, so Vectorized<float> has 8 lanes under both ATen
// capabilities (measured on this repository's AVX512 host: 3,000 fp32 vectors, 0 differing).
// Every accumulator is fp32 (opmath for bf16/fp16); x holds the input values as fp32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/native/fp32_ops.hpp"
#include "sim/native/hd.hpp"

namespace exmy::native {

inline constexpr int kTorchCpuFloatLanes = 8;  // Vectorized<float>::size() of the AVX2 kernels

// linalg.vector_norm(x, 2, dim) of one output whose n inputs x[i*stride] lie along a dimension the
// vectorised lastdim kernel takes (fp32 and bf16 inputs, stride 1 after TensorIterator coalesces):
//   8 fp32 accumulators; fp32 inputs: per 8-element vector acc[j] = acc[j] + RN(x*x) (the
//   Vectorized operators: no FMA); bf16 inputs: per 16-element vector the lower 8 then the upper 8
//   (convert_bfloat16_float, two `acc += d*d`); then b = acc[0] + acc[1] + ... + acc[7] in order;
//   then the tail elements in order, `b += x*x`, which GCC vectorises in groups of 4 (the products
//   rounded, the adds in order) and contracts into an FMA for the last m % 4 of the m tail
//   elements (inferred from 3,000 random fp32 vectors of 1..300 elements against torch: 0
//   differing; the plain and the all-FMA tails differ in 19 and 16). bf16 products are exact in
//   fp32, so there only the order matters.
// Returns sqrt(b) in fp32 (the caller rounds it to the output dtype).
EXMY_HD float torch_cpu_norm2_lastdim(const float* x, std::size_t n, std::size_t stride,
                                      bool bf16) {
  constexpr int L = kTorchCpuFloatLanes;
  const std::size_t vec = bf16 ? 2 * L : L;
  float acc[L] = {};
  std::size_t d = 0;
  for (; d + vec <= n; d += vec) {
    for (std::size_t h = 0; h < vec; h += L) {
      for (int j = 0; j < L; ++j) {
        const float v = x[(d + h + j) * stride];
        acc[j] = rn_add(acc[j], rn_mul(v, v));
      }
    }
  }
  float b = acc[0];
  for (int j = 1; j < L; ++j) b = rn_add(b, acc[j]);
  const std::size_t m = n - d, grouped = m / 4 * 4;
  for (std::size_t k = 0; k < m; ++k) {
    const float v = x[(d + k) * stride];
    b = k < grouped ? rn_add(b, rn_mul(v, v)) : rn_fma(v, v, b);
  }
  return rn_sqrt(b);
}

// The generic path (fp16 inputs at any dimension, every dtype along a strided dimension):
// binary_kernel_reduce's serial loop, acc = acc + RN(x*x) from 0 (NormTwoOps::reduce, no FMA:
// measured, 600 fp32 column norms), then sqrt. `chunks` > 1: the one-output case with n >= 32768
// elements and several threads, where at::parallel_for hands thread k the k-th of `chunks`
// contiguous ranges of ceil(n / chunks) elements, each reduced from 0, and the partial sums are
// combined in thread order from 0 (binary_kernel_reduce's buffer; `chunks` as torch_cpu_chunks).
EXMY_HD float torch_cpu_norm2_serial(const float* x, std::size_t n, std::size_t stride,
                                     std::size_t chunks = 1) {
  const std::size_t chunk = chunks > 1 ? (n + chunks - 1) / chunks : n;
  float total = 0.0f;
  for (std::size_t b0 = 0; b0 < n || b0 == 0; b0 += chunk) {
    float acc = 0.0f;
    const std::size_t e = b0 + chunk < n ? b0 + chunk : n;
    for (std::size_t i = b0; i < e; ++i) {
      const float v = x[i * stride];
      acc = rn_add(acc, rn_mul(v, v));
    }
    total = rn_add(total, acc);
    if (chunk == 0) break;
  }
  return rn_sqrt(total);
}

// How many ranges at::parallel_for splits one n-element reduction into: one below
// GRAIN_SIZE (32768) or on one thread, else min(threads, ceil(n / 32768)); threads 0: as many
// as the ranges (TorchCpuLoop::threads).
EXMY_HD std::size_t torch_cpu_chunks(std::size_t n, std::uint32_t threads) {
  constexpr std::size_t kGrain = 32768;
  if (n < kGrain || threads == 1) return 1;
  const std::size_t c = (n + kGrain - 1) / kGrain;
  return threads != 0 && threads < c ? threads : c;
}

namespace detail {
// utils::CeilLog2 of aten/src/ATen/native/cpu/utils.h: 1 for x <= 2, else ceil(log2(x)).
EXMY_HD std::int64_t torch_ceil_log2(std::int64_t x) {
  if (x <= 2) return 1;
  std::int64_t r = 0;
  std::uint64_t v = static_cast<std::uint64_t>(x) - 1;
  while (v != 0) {
    ++r;
    v >>= 1;
  }
  return r;
}

// multi_row_sum of SumKernel.cpp for W lanes and 4 rows: row i, lane group k (0..3), lane l is
// load(i, k, l); four levels of accumulators, level_power = max(4, CeilLog2(size) / 4).
template <int W, typename Load>
EXMY_HD void torch_multi_row_sum4(std::int64_t size, const Load& load, float (&out)[4][W]) {
  constexpr int kLevels = 4;
  const std::int64_t lp_raw = torch_ceil_log2(size) / kLevels;
  const std::int64_t lp = lp_raw > 4 ? lp_raw : 4;
  const std::int64_t step = std::int64_t{1} << lp, mask = step - 1;
  float acc[kLevels][4][W] = {};
  std::int64_t i = 0;
  for (; i + step <= size;) {
    for (std::int64_t j = 0; j < step; ++j, ++i) {
      for (int k = 0; k < 4; ++k) {
        for (int l = 0; l < W; ++l) acc[0][k][l] = rn_add(acc[0][k][l], load(i, k, l));
      }
    }
    for (int j = 1; j < kLevels; ++j) {
      for (int k = 0; k < 4; ++k) {
        for (int l = 0; l < W; ++l) {
          acc[j][k][l] = rn_add(acc[j][k][l], acc[j - 1][k][l]);
          acc[j - 1][k][l] = 0.0f;
        }
      }
      if ((i & (mask << (j * lp))) != 0) break;
    }
  }
  for (; i < size; ++i) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < W; ++l) acc[0][k][l] = rn_add(acc[0][k][l], load(i, k, l));
    }
  }
  for (int j = 1; j < kLevels; ++j) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < W; ++l) acc[0][k][l] = rn_add(acc[0][k][l], acc[j][k][l]);
    }
  }
  for (int k = 0; k < 4; ++k) {
    for (int l = 0; l < W; ++l) out[k][l] = acc[0][k][l];
  }
}

// row_sum of SumKernel.cpp: the row as a (-1, 4) array of W-lane items (item v is load(v, l)),
// multi_row_sum's four partial sums, the items past size / 4 * 4 added to partial 0, then
// partial 0 + 1, + 2, + 3.
template <int W, typename Item>
EXMY_HD void torch_row_sum(std::int64_t size, const Item& item, float (&out)[W]) {
  const std::int64_t rows = size / 4;
  float ps[4][W];
  torch_multi_row_sum4<W>(
      rows, [&](std::int64_t i, int k, int l) { return item(4 * i + k, l); }, ps);
  for (std::int64_t v = rows * 4; v < size; ++v) {
    for (int l = 0; l < W; ++l) ps[0][l] = rn_add(ps[0][l], item(v, l));
  }
  for (int k = 1; k < 4; ++k) {
    for (int l = 0; l < W; ++l) ps[0][l] = rn_add(ps[0][l], ps[k][l]);
  }
  for (int l = 0; l < W; ++l) out[l] = ps[0][l];
}
}  // namespace detail

// sum() of one output over n contiguous fp32 values (cascade_sum, the CPU mean's first step;
// bf16/fp16 inputs are cast to fp32 first, make_reduction_from_out_ty): n >= 8 takes
// vectorized_inner_sum (8-lane items, row_sum over n / 8 of them; the last n % 8 elements summed
// from 0 in order; then each lane added in order), n < 8 row_sum over the elements; the output
// starts at 0 and gets the result added (0 + s). 0 differing sums against torch over 1,800 random
// lengths below 32768; above, `chunks` ranges (torch_cpu_chunks) are summed this way from their
// own first element and the per-thread results folded in thread order (two_pass_reduction).
EXMY_HD float torch_cpu_sum_contiguous(const float* x, std::size_t n) {
  constexpr int L = kTorchCpuFloatLanes;
  const auto sn = static_cast<std::int64_t>(n);
  if (sn < L) {
    float r[1];
    detail::torch_row_sum<1>(
        sn, [&](std::int64_t v, int) { return x[v]; }, r);
    return rn_add(0.0f, r[0]);
  }
  const std::int64_t nv = sn / L;
  float lanes[L];
  detail::torch_row_sum<L>(
      nv, [&](std::int64_t v, int l) { return x[v * L + l]; }, lanes);
  float fin = 0.0f;
  for (std::int64_t k = nv * L; k < sn; ++k) fin = rn_add(fin, x[k]);
  for (int l = 0; l < L; ++l) fin = rn_add(fin, lanes[l]);
  return rn_add(0.0f, fin);
}

EXMY_HD float torch_cpu_sum(const float* x, std::size_t n, std::size_t chunks = 1) {
  if (chunks <= 1) return torch_cpu_sum_contiguous(x, n);
  const std::size_t chunk = (n + chunks - 1) / chunks;
  // two_pass_reduction: buffer[k] = 0 + (the k-th range's sum); then the final reduce over the
  // buffer's `chunks` entries (fewer than 8: row_sum of scalars) added to the output's 0.
  float buf[64] = {};
  std::size_t used = 0;
  for (std::size_t b0 = 0; b0 < n && used < 64; b0 += chunk, ++used) {
    const std::size_t e = b0 + chunk < n ? b0 + chunk : n;
    buf[used] = rn_add(0.0f, torch_cpu_sum_contiguous(x + b0, e - b0));
  }
  return torch_cpu_sum_contiguous(buf, chunks < 64 ? chunks : 64);
}

}  // namespace exmy::native
