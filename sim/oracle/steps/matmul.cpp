// docs/SEMANTICS.md 8.1 (exact int8 products wrapped to int32), 8.2 (SwitchBack's dequantization
// of the int32 product, eq. 2 and eq. 4, in its two orders) and 8.3 (fp32 accumulation of fp32
// products, sequential and pairwise).
#include <functional>

#include "sim/oracle/steps/quant_detail.hpp"

namespace exmy::oracle::steps::quant {
using namespace detail;

std::vector<std::int32_t> matmul_int8(const std::vector<std::int8_t>& a,
                                      const std::vector<std::int8_t>& b, std::size_t M,
                                      std::size_t N, std::size_t K) {
  std::vector<std::int32_t> out(M * N);
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t n = 0; n < N; ++n) {
      std::int64_t s = 0;  // exact: |s| ≤ K·128² fits easily
      for (std::size_t k = 0; k < K; ++k) {
        s += static_cast<std::int64_t>(a[m * K + k]) * b[n * K + k];
      }
      // Two's complement wrap to 32 bits, as the IMMA/DP4A accumulators do.
      out[m * N + n] = static_cast<std::int32_t>(static_cast<std::uint32_t>(s));
    }
  }
  return out;
}

Tensor dequantize_product(const std::vector<std::int32_t>& acc, std::size_t M, std::size_t N,
                          const Tensor& sr, const Tensor& sc, Epilogue order) {
  using detail::R;
  const Real d = div32(R(1.0), R(16129.0));  // RN32(1/(127·127)): SwitchBack's divfactor
  Tensor out(M * N);
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t n = 0; n < N; ++n) {
      const Real a = round(F32, R(static_cast<double>(acc[m * N + n])));  // int32 → fp32, RNE
      const Real& c = sc.size() == 1 ? sc[0] : sc[n];
      out[m * N + n] = order == Epilogue::switchback ? mul32(c, mul32(sr[m], mul32(a, d)))
                                                     : mul32(a, mul32(mul32(sr[m], c), d));
    }
  }
  return out;
}

Tensor matmul_fp32(const Tensor& a, const Tensor& b, std::size_t M, std::size_t N, std::size_t K,
                   Accum order) {
  Tensor out(M * N);
  Tensor p(K);
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t n = 0; n < N; ++n) {
      for (std::size_t k = 0; k < K; ++k) p[k] = mul32(a[m * K + k], b[n * K + k]);
      Real s;  // +0
      if (order == Accum::sequential) {
        for (std::size_t k = 0; k < K; ++k) s = add32(s, p[k]);
      } else if (K > 0) {
        // S(lo, hi) = p_lo when hi − lo = 1, else S(lo, h) ⊕ S(h, hi), h = lo + ⌈(hi − lo)/2⌉.
        std::function<Real(std::size_t, std::size_t)> S = [&](std::size_t lo, std::size_t hi) {
          if (hi - lo == 1) return p[lo];
          const std::size_t h = lo + (hi - lo + 1) / 2;
          return add32(S(lo, h), S(h, hi));
        };
        s = S(0, K);
      }
      out[m * N + n] = s;
    }
  }
  return out;
}

}  // namespace exmy::oracle::steps::quant
