// Quantized matmuls, the CPU reference (docs/SEMANTICS.md 8).
#include "sim/quant/matmul.hpp"

#include <string>

#include "sim/common/error.hpp"
#include "sim/native/convert.hpp"

namespace exmy::quant {

namespace {
void check_sizes(std::size_t a, std::size_t b, std::size_t M, std::size_t N, std::size_t K) {
  if (a != M * K || b != N * K) {
    throw InputError("matmul: expected A of " + std::to_string(M * K) + " and B of " +
                     std::to_string(N * K) + " elements, got " + std::to_string(a) + " and " +
                     std::to_string(b));
  }
}
}  // namespace

std::vector<std::int32_t> matmul_int8_nt(const std::vector<std::int8_t>& a,
                                         const std::vector<std::int8_t>& b, std::size_t M,
                                         std::size_t N, std::size_t K) {
  check_sizes(a.size(), b.size(), M, N, K);
  std::vector<std::int32_t> out(M * N);
  const auto k = static_cast<std::int64_t>(K);
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t n = 0; n < N; ++n) {
      out[m * N + n] = native::dot_int8(a.data() + m * K, 1, b.data() + n * K, 1, k);
    }
  }
  return out;
}

std::vector<float> dequantize_product(const std::vector<std::int32_t>& acc, std::size_t M,
                                      std::size_t N, const std::vector<float>& state_row,
                                      const std::vector<float>& state_col,
                                      native::DequantOrder order) {
  if (acc.size() != M * N || state_row.size() != M ||
      (state_col.size() != N && state_col.size() != 1)) {
    throw InputError("dequantize_product: expected " + std::to_string(M * N) + " accumulators, " +
                     std::to_string(M) + " row states and " + std::to_string(N) +
                     " (or 1) column states");
  }
  std::vector<float> out(M * N);
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t n = 0; n < N; ++n) {
      const float sc = state_col.size() == 1 ? state_col[0] : state_col[n];
      out[m * N + n] = native::dequant_int8_product(acc[m * N + n], state_row[m], sc, order);
    }
  }
  return out;
}

std::vector<float> matmul_fp32_nt(const std::vector<float>& a, const std::vector<float>& b,
                                  std::size_t M, std::size_t N, std::size_t K,
                                  native::AccumOrder order) {
  check_sizes(a.size(), b.size(), M, N, K);
  std::vector<float> out(M * N);
  const auto k = static_cast<std::int64_t>(K);
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t n = 0; n < N; ++n) {
      const float* pa = a.data() + m * K;
      const float* pb = b.data() + n * K;
      out[m * N + n] = order == native::AccumOrder::pairwise
                           ? native::dot_fp32_pairwise(pa, 1, pb, 1, k)
                           : native::dot_fp32_sequential(pa, 1, pb, 1, k);
    }
  }
  return out;
}

std::vector<float> matmul_masked_nt(const std::vector<float>& a, const std::vector<float>& b,
                                    std::size_t M, std::size_t N, std::size_t K, int mask_e,
                                    int mask_m, MaskOuter outer, MaskInner inner,
                                    native::AccumOrder order) {
  if (mask_e < 2 || mask_e > 8 || mask_m < 0 || mask_m > 23) {
    throw InputError("mask e" + std::to_string(mask_e) + "m" + std::to_string(mask_m) +
                     ": expected E in 2..8 and M in 0..23");
  }
  auto masked = [&](const std::vector<float>& v) {
    std::vector<float> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      out[i] = native::float_of(mask_fp32(native::bits_of(v[i]), mask_e, mask_m, outer, inner));
    }
    return out;
  };
  return matmul_fp32_nt(masked(a), masked(b), M, N, K, order);
}

}  // namespace exmy::quant
