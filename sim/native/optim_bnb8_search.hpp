// Bucketed form of bnb_nearest (sim/native/optim_bnb8.hpp) for the 8-bit optimizer kernels: one
// table load and one threshold compare instead of an 8-probe binary search and a tie test. The
// result is the same function of x for every fp32 input;
// tests/optim/test_bnb8_search_exhaustive.cpp checks that over all 2^32 bit patterns for both
// dynamic maps (docs/SEMANTICS.md 9.4).
//
// Ties folded into thresholds: bnb_nearest counts the midpoints m_k < x and moves an exact
// midpoint x == m_k to the even index, i.e. for odd k the midpoint counts when m_k <= x. For a
// float x that is pred(m_k) < x (no float lies between pred(m_k) and m_k), so with thresholds
// t_k = m_k (k even) and pred(m_k) (k odd) the code is #{k < 255 : t_k < x} for every non-NaN x
// (NaN: 0). The t_k stay nondecreasing because the midpoints increase strictly.
//
// Buckets partition the fp32 line by the bit pattern, which orders magnitudes: per sign, bucket 0
// holds |x| < 2^(kBucketExpLo-127) (zeros, subnormals, tiny normals), the last bucket |x| >= 1
// (including inf and NaN patterns), and bucket 1 + j between them the |x| whose pattern shifted
// right by 23 - kBucketMantBits is (kBucketExpLo << kBucketMantBits) + j, i.e. the binade split
// into 2^kBucketMantBits equal slices. start[b] = count of thresholds strictly below the smallest
// value of bucket b. Because that count is monotone in x, it is exact for every x of the bucket
// once the count at the bucket's largest value exceeds start[b] by at most 1 (the "spread",
// checked when the table is built): the code is start + (t[start] < x).
//
// Sign guard without a code lookup: in an ascending map the codes with the sign bit set are a
// prefix 0..z-1 (checked when built), so signbit(code[c]) is c < z.
#pragma once

#include <cstdint>

#include "sim/native/fp32_ops.hpp"
#include "sim/native/optim_bnb8.hpp"

namespace exmy::native {

inline constexpr int kBucketMantBits = 7;      // spread <= 1 for both dynamic maps (built: 0..1)
inline constexpr int kBucketExpLo = 127 - 24;  // |x| < 2^-24 shares one bucket per sign
inline constexpr int kBucketsPerSign = 2 + (127 - kBucketExpLo) * (1 << kBucketMantBits);
inline constexpr int kBucketTable = 2 * kBucketsPerSign;  // entries: positive half, then negative
// 255 thresholds and a +inf sentinel at 255: start <= 255 (a count of 255 thresholds), and the
// search reads only t[start].
inline constexpr int kBucketMids = 256;

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

// The next float below m (finite m; -0 and +0 both go to the negative subnormal -2^-149).
inline float bnb_pred(float m) {
  const std::uint32_t u = f32_bits(m);
  if ((u & 0x7FFFFFFFu) == 0) return f32_from_bits(0x80000001u);
  return f32_from_bits((u >> 31) != 0 ? u + 1 : u - 1);
}

// Thresholds t[kBucketMids] from the midpoint table of bnb_midpoints (mids256[255] = +inf); false
// when the midpoints do not increase strictly (the tie folding needs it).
inline bool bnb_thresholds(const float* mids256, float* t) {
  for (int k = 0; k < kBucketMids; ++k) {
    if (k >= 255) {
      t[k] = mids256[255];
    } else {
      if (k > 0 && !(mids256[k - 1] < mids256[k])) return false;
      t[k] = (k & 1) != 0 ? bnb_pred(mids256[k]) : mids256[k];
    }
  }
  return true;
}

// Count of the thresholds t_0..t_254 strictly below x (NaN: 0).
inline int bnb_count_below(const float* t, float x) {
  int c = 0;
  for (int k = 0; k < 255; ++k) c += t[k] < x ? 1 : 0;
  return c;
}

// Builds start[kBucketTable] from the thresholds and returns the largest spread (the search
// below is exact iff it is <= 1).
inline int bnb_bucket_build(const float* t, std::uint8_t* start) {
  int worst = 0;
  for (int idx = 0; idx < kBucketTable; ++idx) {
    float lo, hi;
    bnb_bucket_range(idx, lo, hi);
    const int c_lo = bnb_count_below(t, lo);
    const int spread = bnb_count_below(t, hi) - c_lo;
    worst = spread > worst ? spread : worst;
    start[idx] = static_cast<std::uint8_t>(c_lo);
  }
  return worst;
}

// z such that exactly the codes 0..z-1 have the sign bit set, or -1 if they are not a prefix.
inline int bnb_negative_prefix(const float* code) {
  int z = 0;
  while (z < 256 && f32_signbit(code[z])) ++z;
  for (int k = z; k < 256; ++k) {
    if (f32_signbit(code[k])) return -1;
  }
  return z;
}

// bnb_nearest(mids, x), given t (kBucketMids thresholds) and start from the builders above.
EXMY_HD std::uint8_t bnb_nearest_bucketed(const float* t, const std::uint8_t* start, float x) {
  const std::uint32_t u = f32_bits(x);
  const int c = start[bnb_bucket(u)];
  const int code = c + (t[c] < x ? 1 : 0);
  return static_cast<std::uint8_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? 0 : code);
}

// bnb_quant_signed / bnb_quant_unsigned with the bucketed search (same results); z from
// bnb_negative_prefix of the signed map.
// The block's normalisation comes in as a BnbNorm (bnb_norm of its absmax, computed once).
EXMY_HD std::uint8_t bnb_quant_signed_bucketed(const BnbNorm& n, int z, const float* t,
                                               const std::uint8_t* start, float s) {
  std::uint8_t c = bnb_nearest_bucketed(t, start, bnb_ratio(n, s));
  if ((c < z) != f32_signbit(s)) c = static_cast<std::uint8_t>(s > 0.0f ? c + 1 : c - 1);
  return c;
}
EXMY_HD std::uint8_t bnb_quant_unsigned_bucketed(const BnbNorm& n, const float* t,
                                                 const std::uint8_t* start, float s) {
  return bnb_nearest_bucketed(t, start, bnb_ratio(n, s));
}

}  // namespace exmy::native
