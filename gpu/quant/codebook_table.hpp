// Direct lookup of codebook_nearest (sim/native/codebook_lookup.hpp) for the midpoint tie rules
// (even_index, lower_index): the GPU's block-wise codebook quantizer replaces the 8-step binary
// search over the 255 midpoints by one table read and one integer comparison per element.
//
// Buckets. The magnitude bits of a finite fp32 n are monotone in |n|, so the top bits of
// mag = bits(n) & 0x7FFFFFFF cut [0, inf] into contiguous intervals: bucket j holds the
// magnitudes with (mag >> kCbLowBits) == j + kCbBucketOffset, i.e. binade e (biased exponent,
// kCbFirstExp <= e <= 127) split into 2^kCbMantBits equal parts by the top mantissa bits. Bucket
// 0 also takes every smaller magnitude (down to +-0) and the last bucket every larger one (up to
// inf and NaN): those two are "clamped". With the sign, 2 * kCbBuckets value intervals tile the
// fp32 line in order (sign 1 reverses the order).
//
// Entry of a bucket with value interval [vmin, vmax]: L = #{k : m_k < vmin}, H = #{k : m_k <=
// vmax}. Midpoints are non-decreasing in k (m_k = RN32(c_k + c_{k+1}) * 0.5f is monotone in sorted
// c), so for every n in the bucket #{k : m_k < n} = L + #{k in [L, H) : m_k < n}, and a tie m_c ==
// n can only involve a midpoint in [L, H). When H - L <= 1 and the bucket is not clamped, that one
// midpoint has the bucket's top bits, so comparing n with it is comparing the low kCbLowBits of the
// magnitudes (reversed for sign 1): code = L + (n > m_L) + (n == m_L ? tie step : 0), which is
// codebook_nearest's count plus its tie rule, folded into one threshold comparison (below). Every
// other bucket (several midpoints, or a clamped bucket holding a midpoint, or the last bucket,
// which holds inf and NaN) is marked `slow` and the caller runs codebook_nearest itself.
// tests/quant/test_codebook_table.cpp compares the lookup with codebook_nearest near every
// midpoint and bucket edge plus a stride walk over 2^32 for the four built-in tables (CI), and over
// every fp32 bit pattern in [-1, 1] for dynamic and dynamic-unsigned (hidden case [.exhaustive];
// run recorded in bench/results/2026-11-22-h200-quant-schemes.md).
#pragma once

#include <cstdint>

#include "sim/native/codebook_lookup.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"

namespace exmy::gpu {

inline constexpr int kCbMantBits = 7;  // 128 buckets per binade: <= 1 midpoint for every built-in
inline constexpr int kCbBinades = 32;  // binades 2^-31 .. 2^0 ([2^-31, 2))
inline constexpr int kCbLowBits = 23 - kCbMantBits;
inline constexpr std::uint32_t kCbFirstExp = 127 - kCbBinades + 1;  // 96: 2^-31
inline constexpr std::int32_t kCbBucketOffset = static_cast<std::int32_t>(kCbFirstExp)
                                                << kCbMantBits;
inline constexpr int kCbBuckets = kCbBinades << kCbMantBits;  // per sign: 4096
inline constexpr int kCbEntries = 2 * kCbBuckets;             // 8192 32-bit words (32 KiB)
inline constexpr std::uint32_t kCbLowMask = (1u << kCbLowBits) - 1;

// Entry layout: bits 0..7 L; bit 9 slow; bits 15..31 the threshold t (17 bits) on the key:
// code = L + (key >= t). With the bucket's midpoint key mk, t = mk + 1 when a tie stays at L
// (n == m_L gives L, n > m_L gives L + 1) and t = mk when a tie goes up (even_index with L odd);
// t = kCbNoMid + 1 when the bucket has no midpoint, which no 16-bit key reaches. The sum never
// carries out of the low byte: L + 1 <= H <= 255.
inline constexpr std::uint32_t kCbSlow = 1u << 9;
inline constexpr int kCbKeyShift = 15;
inline constexpr std::uint32_t kCbNoMid = 1u << kCbLowBits;

// Bucket of a magnitude (bits of |n|), clamped to [0, kCbBuckets).
EXMY_HD int codebook_bucket(std::uint32_t mag) {
  // Clamping the magnitude below first keeps the index non-negative (max, shift, min).
  constexpr std::uint32_t kLowest = static_cast<std::uint32_t>(kCbBucketOffset) << kCbLowBits;
  const std::uint32_t m = mag > kLowest ? mag : kLowest;
  const int j = static_cast<int>(m >> kCbLowBits) - kCbBucketOffset;
  return j < kCbBuckets ? j : kCbBuckets - 1;
}

// The comparison key of a magnitude within its bucket: the low bits, complemented for negative
// values so that a larger key is a larger value on both sides.
EXMY_HD std::uint32_t codebook_key(std::uint32_t mag, bool neg) {
  return (neg ? ~mag : mag) & kCbLowMask;
}

// Entry `index` (sign = index >= kCbBuckets) of the table of `values256` under `tie` (even_index
// or lower_index); `mids` are the 255 midpoints native::codebook_midpoint(values256, k).
EXMY_HD std::uint32_t codebook_table_entry(const float* mids, TieRule tie, int index) {
  const bool neg = index >= kCbBuckets;
  const int j = neg ? index - kCbBuckets : index;
  const bool clamped = j == 0 || j == kCbBuckets - 1;
  const std::uint32_t top = static_cast<std::uint32_t>(j + kCbBucketOffset) << kCbLowBits;
  const std::uint32_t mag_lo = j == 0 ? 0u : top;
  const std::uint32_t mag_hi = j == kCbBuckets - 1 ? 0x7F800000u : top + kCbLowMask;
  const float vmin = native::float_of(neg ? (mag_hi | 0x80000000u) : mag_lo);
  const float vmax = native::float_of(neg ? (mag_lo | 0x80000000u) : mag_hi);
  int L = 0, H = 0;
  for (int k = 0; k < 255; ++k) {
    L += mids[k] < vmin ? 1 : 0;
    H += mids[k] <= vmax ? 1 : 0;
  }
  const std::uint32_t base = static_cast<std::uint32_t>(L);
  // The last bucket holds inf and NaN: always slow, so a NaN never reaches the integer comparison
  // (codebook_nearest gives it code 0) and inputs beyond the table's range keep their exact path.
  if (j == kCbBuckets - 1) return base | kCbSlow;
  if (H == L) return base | ((kCbNoMid + 1) << kCbKeyShift);
  if (H - L > 1 || clamped) return base | kCbSlow;
  const std::uint32_t m = native::bits_of(mids[L]) & 0x7FFFFFFFu;
  // codebook_nearest on n == m_L: the count is L; even_index takes the even one of L, L + 1.
  const bool tie_up = tie == TieRule::even_index && (L & 1) != 0;
  return base | ((codebook_key(m, neg) + (tie_up ? 0u : 1u)) << kCbKeyShift);
}

// The code of n (bits) from its table entry e (e must not be slow) in the low byte:
// codebook_nearest(values256, n, tie) == (codebook_code_from_entry(e, nbits) & 0xFF).
EXMY_HD std::uint32_t codebook_code_from_entry(std::uint32_t e, std::uint32_t nbits) {
  const std::uint32_t key = codebook_key(nbits & 0x7FFFFFFFu, (nbits >> 31) != 0);
  return e + (key >= (e >> kCbKeyShift) ? 1u : 0u);
}

// Table index of n (bits).
EXMY_HD int codebook_table_index(std::uint32_t nbits) {
  return codebook_bucket(nbits & 0x7FFFFFFFu) + ((nbits >> 31) != 0 ? kCbBuckets : 0);
}

// The whole lookup, for host tests and cold callers: the table entry, else codebook_nearest.
EXMY_HD std::uint8_t codebook_lookup_table(const std::uint32_t* table, const float* values256,
                                           float n, TieRule tie) {
  const std::uint32_t b = native::bits_of(n);
  const std::uint32_t e = table[codebook_table_index(b)];
  if ((e & kCbSlow) != 0) return codebook_nearest(values256, n, tie);
  return static_cast<std::uint8_t>(codebook_code_from_entry(e, b) & 0xFFu);
}

// True for the tie rules the table implements.
EXMY_HD bool codebook_table_supports(TieRule tie) {
  return tie == TieRule::even_index || tie == TieRule::lower_index;
}

}  // namespace exmy::gpu
