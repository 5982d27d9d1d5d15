// Bucketed form of bnb_nearest (sim/native/optim_bnb8.hpp) for the 8-bit optimizer kernels: one
// table load and one midpoint compare instead of an 8-probe binary search. The result is the
// same function of x for every fp32 input; tests/optim/test_bnb8_search_exhaustive.cpp checks
// that over all 2^32 bit patterns for both dynamic maps (docs/SEMANTICS.md 9.4).
//
// Buckets partition the fp32 line by the bit pattern, which orders magnitudes: per sign, bucket 0
// holds |x| < 2^(kBucketExpLo-127) (zeros, subnormals, tiny normals), the last bucket |x| >= 1
// (including inf and NaN patterns), and bucket 1 + j between them the |x| whose pattern shifted
// right by 23 - kBucketMantBits is (kBucketExpLo << kBucketMantBits) + j, i.e. the binade split
// into 2^kBucketMantBits equal slices. start[b] = count of midpoints strictly below the smallest
// value of bucket b. Because that count is monotone in x, it is exact for every x of the bucket
// once the count at the bucket's largest value exceeds start[b] by at most 1 (the "spread",
// checked when the table is built): the count is start + (mids[start] < x).
#pragma once

#include <cstdint>

#include "sim/native/fp32_ops.hpp"

namespace exmy::native {

inline constexpr int kBucketMantBits = 7;      // spread <= 1 for both dynamic maps (built: 0..1)
inline constexpr int kBucketExpLo = 127 - 24;  // |x| < 2^-24 shares one bucket per sign
inline constexpr int kBucketsPerSign = 2 + (127 - kBucketExpLo) * (1 << kBucketMantBits);
inline constexpr int kBucketTable = 2 * kBucketsPerSign;  // entries: positive half, then negative
inline constexpr int kBucketMids = 257;  // 255 midpoints, +inf at 255 and 256 (start + 1 <= 256)

// Bucket of x (any pattern; NaN patterns fall in the last bucket of their sign).
EXMY_HD int bnb_bucket(std::uint32_t u) {
  const int mag_slice = static_cast<int>((u & 0x7FFFFFFFu) >> (23 - kBucketMantBits));
  int b = mag_slice - (kBucketExpLo << kBucketMantBits) + 1;
  b = b < 0 ? 0 : b;
  b = b > kBucketsPerSign - 1 ? kBucketsPerSign - 1 : b;
  return static_cast<int>(u >> 31) * kBucketsPerSign + b;
}

// Smallest and largest fp32 value (by the real order, -0 below +0 being irrelevant: they compare
// equal) of bucket `idx`.
inline void bnb_bucket_range(int idx, float& lo, float& hi) {
  const bool neg = idx >= kBucketsPerSign;
  const int b = neg ? idx - kBucketsPerSign : idx;
  std::uint32_t lo_mag, hi_mag;
  if (b == 0) {
    lo_mag = 0;
    hi_mag = (static_cast<std::uint32_t>(kBucketExpLo) << 23) - 1;
  } else if (b == kBucketsPerSign - 1) {
    lo_mag = 127u << 23;
    hi_mag = 0x7F800000u;  // +inf; NaN patterns are handled before the table
  } else {
    lo_mag = static_cast<std::uint32_t>(b - 1 + (kBucketExpLo << kBucketMantBits))
             << (23 - kBucketMantBits);
    hi_mag = lo_mag + (1u << (23 - kBucketMantBits)) - 1;
  }
  lo = neg ? f32_from_bits(hi_mag | 0x80000000u) : f32_from_bits(lo_mag);
  hi = neg ? f32_from_bits(lo_mag | 0x80000000u) : f32_from_bits(hi_mag);
}

// Count of the midpoints m_0..m_254 strictly below x (NaN: 0).
inline int bnb_count_below(const float* mids, float x) {
  int c = 0;
  for (int k = 0; k < 255; ++k) c += mids[k] < x ? 1 : 0;
  return c;
}

// Builds start[kBucketTable] from the midpoint table of bnb_midpoints (mids[255] = +inf) and
// returns the largest spread (the search below is exact iff it is <= 1).
inline int bnb_bucket_build(const float* mids256, std::uint8_t* start) {
  int worst = 0;
  for (int idx = 0; idx < kBucketTable; ++idx) {
    float lo, hi;
    bnb_bucket_range(idx, lo, hi);
    const int c_lo = bnb_count_below(mids256, lo);
    const int spread = bnb_count_below(mids256, hi) - c_lo;
    worst = spread > worst ? spread : worst;
    start[idx] = static_cast<std::uint8_t>(c_lo);
  }
  return worst;
}

// bnb_nearest(mids, x): mids has kBucketMids entries (the last two +inf), start is the table of
// bnb_bucket_build. NaN gives 0; an exact midpoint goes to the even index.
EXMY_HD std::uint8_t bnb_nearest_bucketed(const float* mids, const std::uint8_t* start, float x) {
  const std::uint32_t u = f32_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0;
  const int c = start[bnb_bucket(u)];
  const float m0 = mids[c], m1 = mids[c + 1];
  int lo = c + (m0 < x ? 1 : 0);
  const float at = m0 < x ? m1 : m0;  // mids[lo]
  if (lo < 255 && at == x && (lo & 1) != 0) ++lo;
  return static_cast<std::uint8_t>(lo);
}

// bnb_quant_signed / bnb_quant_unsigned with the bucketed search (same results).
EXMY_HD std::uint8_t bnb_quant_signed_bucketed(const float* code, const float* mids,
                                               const std::uint8_t* start, float s, float absmax) {
  std::uint8_t c = bnb_nearest_bucketed(mids, start, rn_div(s, absmax));
  if (f32_signbit(code[c]) != f32_signbit(s)) {
    c = static_cast<std::uint8_t>(s > 0.0f ? c + 1 : c - 1);
  }
  return c;
}
EXMY_HD std::uint8_t bnb_quant_unsigned_bucketed(const float* mids, const std::uint8_t* start,
                                                 float s, float absmax) {
  return bnb_nearest_bucketed(mids, start, rn_div(s, absmax));
}

}  // namespace exmy::native
