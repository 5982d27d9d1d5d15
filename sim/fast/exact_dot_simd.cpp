#include "sim/fast/exact_dot_simd.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "sim/fast/simd.hpp"

namespace exmy::fast {

namespace {

// The unit exponents (of the significand's last bit: e - 150, -149 for subnormals) of the
// nonzero elements of x span [lo, hi]; lo > hi when every element is +-0.
struct Span {
  int lo, hi;
};
template <int W>
EXMY_SIMD_INLINE Span unit_span_body(const float* x, std::size_t n) {
  // On the biased exponent fields, W lanes: per lane the extremes of max(e, 1) over the nonzero
  // elements (a zero lane keeps its extremes).
  using I = typename simd::Vec<W>::i32;
  constexpr std::int32_t kBig = 1 << 20;
  I vlo = I{} + kBig, vhi = I{} - kBig;
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    const I b = simd::load<I>(x + i);
    const I e = (b >> 23) & 0xFF;
    const I u = e > 1 ? e : I{} + 1;
    const auto nz = (b & 0x7FFFFFFF) != 0;
    vlo = nz && u < vlo ? u : vlo;
    vhi = nz && u > vhi ? u : vhi;
  }
  int lo = kBig, hi = -kBig;
  for (int l = 0; l < W; ++l) {
    lo = std::min(lo, static_cast<int>(vlo[l]));
    hi = std::max(hi, static_cast<int>(vhi[l]));
  }
  for (; i < n; ++i) {
    std::int32_t b;
    std::memcpy(&b, &x[i], 4);
    const std::int32_t e = (b >> 23) & 0xFF;
    const std::int32_t u = e > 1 ? e : 1;
    if ((b & 0x7FFFFFFF) == 0) continue;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  return lo > hi ? Span{lo, hi} : Span{lo - 150, hi - 150};
}
Span unit_span_sse2(const float* x, std::size_t n) {
  return unit_span_body<4>(x, n);
}
#if defined(__x86_64__)
EXMY_TARGET_AVX2 Span unit_span_avx2(const float* x, std::size_t n) {
  return unit_span_body<8>(x, n);
}
#endif
Span unit_span(bool avx2, const float* x, std::size_t n) {
#if defined(__x86_64__)
  if (avx2) return unit_span_avx2(x, n);
#endif
  (void)avx2;
  return unit_span_sse2(x, n);
}

constexpr int kLanes = 4;
constexpr int kMaxLevels = 4;

// The levels of one pair of rows: `levels` sums a lane, the first levels - 1 of them split by
// sigma[j] (header comment).
struct Plan {
  int levels = 0;
  double sigma[kMaxLevels - 1] = {};
};

Plan plan_for(Span a, Span b, std::size_t k) {
  Plan p;
  if (a.lo > a.hi || b.lo > b.hi) {
    p.levels = -1;
    return p;
  }
  // An infinity or NaN (exponent field 255, unit 105): add_product's reading of it, bit for bit.
  if (a.hi > 104 || b.hi > 104) return p;
  const std::size_t n = (k + kLanes - 1) / kLanes;  // terms summed by one lane
  int L = 1;
  while ((std::size_t{1} << L) < n) ++L;
  const int lo = a.lo + b.lo;
  const int T = a.hi + b.hi + 48;  // |product| < 2^T
  // Residuals below 2^R (R = T for the products themselves) sum exactly when R + L - lo <= 53:
  // multiples of 2^lo, any n of them below 2^(R+L).
  int R = T, M = T + L;
  for (int m = 0; m < kMaxLevels; ++m) {
    if (R + L - lo <= 53) {
      p.levels = m + 1;
      return p;
    }
    if (m == kMaxLevels - 1) break;
    p.sigma[m] = std::ldexp(1.5, M);
    const int G = M - 52;  // grid of this level's q; residual |r| <= 2^(G-1)
    R = G - 1;
    M = G + L;
  }
  p.levels = 0;
  return p;
}

typedef double f64x4 __attribute__((vector_size(32), aligned(8)));

// One pair's lane sums, carried from one column block to the next.
struct LaneSums {
  double s[kMaxLevels][kLanes] = {};
};

template <int J>
EXMY_SIMD_INLINE void dot_body(const Plan& p, const float* a, const float* b, std::size_t k,
                               LaneSums& sums) {
  using f32 = simd::Vec<4>::f32;
  f64x4 acc[J];
  f64x4 sig[J > 1 ? J - 1 : 1];
  for (int j = 0; j < J; ++j) std::memcpy(&acc[j], sums.s[j], sizeof(f64x4));
  for (int j = 0; j + 1 < J; ++j) sig[j] = f64x4{p.sigma[j], p.sigma[j], p.sigma[j], p.sigma[j]};
  const auto step = [&](f32 fa, f32 fb) {
    f64x4 x = __builtin_convertvector(fa, f64x4) * __builtin_convertvector(fb, f64x4);
    for (int j = 0; j + 1 < J; ++j) {
      const f64x4 q = (sig[j] + x) - sig[j];
      x = x - q;
      acc[j] += q;
    }
    acc[J - 1] += x;
  };
  std::size_t c = 0;
  for (; c + kLanes <= k; c += kLanes) step(simd::load<f32>(a + c), simd::load<f32>(b + c));
  if (c < k) {
    float ta[kLanes] = {0, 0, 0, 0}, tb[kLanes] = {0, 0, 0, 0};
    std::memcpy(ta, a + c, (k - c) * sizeof(float));
    std::memcpy(tb, b + c, (k - c) * sizeof(float));
    step(simd::load<f32>(ta), simd::load<f32>(tb));
  }
  for (int j = 0; j < J; ++j) std::memcpy(sums.s[j], &acc[j], sizeof(f64x4));
}

template <int J>
void dot_sse2(const Plan& p, const float* a, const float* b, std::size_t k, LaneSums& sums) {
  dot_body<J>(p, a, b, k, sums);
}
#if defined(__x86_64__)
template <int J>
EXMY_TARGET_AVX2 void dot_avx2(const Plan& p, const float* a, const float* b, std::size_t k,
                               LaneSums& sums) {
  dot_body<J>(p, a, b, k, sums);
}
#endif

template <int J>
void dot_levels(bool avx2, const Plan& p, const float* a, const float* b, std::size_t k,
                LaneSums& sums) {
#if defined(__x86_64__)
  if (avx2) return dot_avx2<J>(p, a, b, k, sums);
#endif
  (void)avx2;
  dot_sse2<J>(p, a, b, k, sums);
}

void dot_block(bool avx2, const Plan& p, const float* a, const float* b, std::size_t k,
               LaneSums& sums) {
  switch (p.levels) {
    case 1:
      return dot_levels<1>(avx2, p, a, b, k, sums);
    case 2:
      return dot_levels<2>(avx2, p, a, b, k, sums);
    case 3:
      return dot_levels<3>(avx2, p, a, b, k, sums);
    default:
      return dot_levels<4>(avx2, p, a, b, k, sums);
  }
}

// Columns a block: the rows' slices of every pair stay in L1 while all the pairs use them (8
// rows of 4 KiB for the report's 4 x 4 products).
constexpr std::size_t kBlock = 1024;

}  // namespace

void exact_dots(const float* u, std::size_t ru, const float* v, std::size_t rv, std::size_t k,
                native::ExactDot32* out) {
#if defined(__x86_64__)
  const bool avx2 = simd::active_isa() >= simd::Isa::avx2;
#else
  const bool avx2 = false;
#endif
  std::vector<Span> su(ru), sv(rv);
  for (std::size_t i = 0; i < ru; ++i) su[i] = unit_span(avx2, u + i * k, k);
  for (std::size_t j = 0; j < rv; ++j) sv[j] = unit_span(avx2, v + j * k, k);
  std::vector<Plan> plan(ru * rv);
  std::vector<LaneSums> sums(ru * rv);
  bool any = false;
  for (std::size_t i = 0; i < ru; ++i) {
    for (std::size_t j = 0; j < rv; ++j) {
      Plan& p = plan[i * rv + j];
      p = plan_for(su[i], sv[j], k);
      any = any || p.levels > 0;
      if (p.levels != 0) continue;  // outside the fp64 levels: the limbs take every product
      const float* a = u + i * k;
      const float* b = v + j * k;
      for (std::size_t c = 0; c < k; ++c) out[i * rv + j].add_product(a[c], b[c]);
    }
  }
  if (!any) return;
  // Each lane sums its columns in the same ascending order whatever the blocking (exact sums:
  // the order would not matter either).
  for (std::size_t c0 = 0; c0 < k; c0 += kBlock) {
    const std::size_t len = std::min(kBlock, k - c0);
    for (std::size_t i = 0; i < ru; ++i) {
      for (std::size_t j = 0; j < rv; ++j) {
        const Plan& p = plan[i * rv + j];
        if (p.levels <= 0) continue;  // a row of +-0 adds nothing
        dot_block(avx2, p, u + i * k + c0, v + j * k + c0, len, sums[i * rv + j]);
      }
    }
  }
  for (std::size_t q = 0; q < ru * rv; ++q) {
    for (int j = 0; j < plan[q].levels; ++j) {
      for (int l = 0; l < kLanes; ++l) out[q].add_double(sums[q].s[j][l]);
    }
  }
}

int exact_dot_levels(const float* a, const float* b, std::size_t k) {
  return plan_for(unit_span(false, a, k), unit_span(false, b, k), k).levels;
}

}  // namespace exmy::fast
