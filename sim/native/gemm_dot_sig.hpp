// The hw (fused k-group) accumulation model of gemm_dot.hpp on operands whose significands and
// exponents were taken apart once per element (DotSigRow) instead of once per product and pass:
// dot_fused_group calls dot_sig twice per operand per k (the exponent pass and the sum pass), so
// an M x N x K GEMM took apart each element 2N (or 2M) times; here each element is taken apart
// once per decoded row. Host only (the CPU reference's fast path, sim/gemm/gemm.cpp).
//
// Every step is dot_model_fp32's for DotModel::Kind::hw without block or tile scales, in the same
// order (split-K parts, promotion chunks, k-tiles, k-groups, the running fp32 c of each group);
// only where dot_sig is evaluated changes. The caller uses it only when every element of both
// rows is finite (the specials' NaN/infinity rules are dot_fused_group's, left to it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/native/gemm_dot.hpp"

namespace exmy::native {

// A zero element's exponent: any sum of two of them, or of one with a real exponent (at least
// -300 or so), stays below kDotSigNoProduct, so the exponent pass needs no branch on zeros and
// the sum pass shifts their (zero) significands out.
constexpr std::int32_t kDotSigZeroE = -(1 << 24);
constexpr std::int32_t kDotSigNoProduct = -(1 << 22);

// One operand row: element k is |x| = m[k] 2^(e[k] - 23) (dot_sig(x, emin)) with sign s[k]
// (0 or 1); x = +-0 has m 0 and e kDotSigZeroE.
struct DotSigRow {
  const std::uint32_t* m = nullptr;
  const std::int32_t* e = nullptr;
  const std::uint32_t* s = nullptr;
};

// Rows of values taken apart: rows x cols, row-major, and per row whether it is all finite.
struct DotSigBlock {
  std::vector<std::uint32_t> m, s;
  std::vector<std::int32_t> e;
  std::vector<std::uint8_t> finite;
  std::size_t cols = 0;

  void assign(const double* v, std::size_t rows, std::size_t n, int emin) {
    cols = n;
    m.resize(rows * n);
    e.resize(rows * n);
    s.resize(rows * n);
    finite.assign(rows, 1);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t t = r * n + k;
        const double x = v[t];
        s[t] = dot_sign(x) ? 1u : 0u;
        if (dot_is_nan(x) || dot_is_inf(x)) finite[r] = 0;
        if (dot_is_zero(x) || dot_is_nan(x) || dot_is_inf(x)) {
          m[t] = 0;
          e[t] = kDotSigZeroE;
        } else {
          const DotSig d = dot_sig(x, emin);
          m[t] = static_cast<std::uint32_t>(d.m);
          e[t] = d.e;
        }
      }
    }
  }
  DotSigRow row(std::size_t r) const {
    const std::size_t o = r * cols;
    return {m.data() + o, e.data() + o, s.data() + o};
  }
};

// dot_fused_group(c, a, 1, b, 1, k0, k1, emin_a, emin_b, m, nullptr) for finite a and b.
inline float dot_fused_group_sig(float c, const DotSigRow& a, const DotSigRow& b, std::size_t k0,
                                 std::size_t k1, const DotModel& m) {
  const std::uint32_t cb = f32_bits(c);
  // Finite operands: no product is NaN or infinite, so the specials come from c alone.
  if ((cb & 0x7FFFFFFFu) > 0x7F800000u) return f32_from_bits(0x7FC00000u);
  if ((cb & 0x7FFFFFFFu) == 0x7F800000u) return c;
  // The largest product exponent (below kDotSigNoProduct: every product is zero) and whether
  // every product is negative (read only when every product is a zero).
  std::int32_t pmax = 2 * kDotSigZeroE;
  std::uint32_t all_neg = 1;
  for (std::size_t k = k0; k < k1; ++k) {
    const std::int32_t e = a.e[k] + b.e[k];
    pmax = e > pmax ? e : pmax;
    all_neg &= a.s[k] ^ b.s[k];
  }
  const bool c_zero = (cb & 0x7FFFFFFFu) == 0;
  if (pmax < kDotSigNoProduct && c_zero) {
    // Every term is zero: IEEE's sign of an exact zero sum (+0 unless every term is -0).
    return cb == 0x80000000u && all_neg != 0 ? -0.0f : 0.0f;
  }
  int emax = pmax;
  std::int64_t sum = 0;
  if (!c_zero) {
    const DotSig s = dot_sig(static_cast<double>(c), -126);
    if (pmax < kDotSigNoProduct || s.e > emax) emax = s.e;
    const int r = 46 - (m.frac_bits + s.e - emax);
    const std::uint64_t t = r >= 64 ? 0 : (s.m << 23) >> r;
    sum += (cb >> 31) != 0 ? -static_cast<std::int64_t>(t) : static_cast<std::int64_t>(t);
  }
  // A product of significands m_a m_b, times the scale significands 8 x 8 = 64 (block scales of
  // 1), truncated toward zero to frac_bits below 2^emax; zeros shift out (r is huge).
  const int base = 52 - m.frac_bits + emax;
  for (std::size_t k = k0; k < k1; ++k) {
    const int r = base - (a.e[k] + b.e[k]);
    const std::uint64_t p = static_cast<std::uint64_t>(a.m[k]) * b.m[k] * 64u;
    const std::uint64_t t = r >= 64 ? 0 : p >> r;
    const std::uint64_t neg = 0ull - static_cast<std::uint64_t>(a.s[k] ^ b.s[k]);
    sum += static_cast<std::int64_t>((t ^ neg) - neg);
  }
  if (sum == 0) return 0.0f;
  return dot_normalise(sum, emax - m.frac_bits, m.inter_bits, m.inter_rne);
}

// dot_chunk's hw branch over [k0, k1) from +0.
inline float dot_chunk_sig(const DotSigRow& a, const DotSigRow& b, std::size_t k0, std::size_t k1,
                           const DotModel& m) {
  float c = 0.0f;
  const std::size_t g = static_cast<std::size_t>(m.k_group);
  const std::size_t r = m.ktile > 0 ? (k1 - k0) % static_cast<std::size_t>(m.ktile) : 0;
  for (std::size_t k = k0; k < k1;) {
    const std::size_t lim = k < k0 + r ? k0 + r : k1;
    const std::size_t e = k + g < lim ? k + g : lim;
    c = dot_fused_group_sig(c, a, b, k, e, m);
    k = e;
  }
  return c;
}

// dot_part without tile scales.
inline float dot_part_sig(const DotSigRow& a, const DotSigRow& b, std::size_t k0, std::size_t k1,
                          const DotModel& m) {
  if (m.chunk <= 0) return dot_chunk_sig(a, b, k0, k1, m);
  const std::size_t len = static_cast<std::size_t>(m.chunk);
  float total = 0.0f;
  for (std::size_t c = k0; c < k1; c += len) {
    total = rn_add(total, dot_chunk_sig(a, b, c, c + len < k1 ? c + len : k1, m));
  }
  return total;
}

// True when dot_model_fp32_sig computes dot_model_fp32 for this model (hw, no sub-groups; the
// caller passes no block or tile scales).
inline bool dot_sig_applies(const DotModel& m) {
  return m.kind == DotModel::Kind::hw && m.sub_group == 0;
}

// dot_model_fp32(a, 1, b, 1, k, emin_a, emin_b, m) for rows taken apart at emin_a / emin_b, every
// element finite, dot_sig_applies(m).
inline float dot_model_fp32_sig(const DotSigRow& a, const DotSigRow& b, std::size_t k,
                                const DotModel& m) {
  if (m.split_k <= 1) return dot_part_sig(a, b, 0, k, m);
  std::size_t parts = 0;
  while (parts < static_cast<std::size_t>(m.split_k) &&
         dot_part_start(parts, k, m) < dot_part_start(parts + 1, k, m)) {
    ++parts;
  }
  auto part = [&](std::size_t p) {
    return dot_part_sig(a, b, dot_part_start(p, k, m), dot_part_start(p + 1, k, m), m);
  };
  if (m.reduce_tree) return dot_tree_sum(parts, part);
  float total = 0.0f;
  for (std::size_t p = 0; p < parts; ++p) total = rn_add(total, part(p));
  return total;
}

}  // namespace exmy::native
