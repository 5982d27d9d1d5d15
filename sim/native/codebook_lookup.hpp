// Nearest-code lookup in a 256-entry ascending fp32 codebook (bitsandbytes' dynamic/linear maps or
// a user table). Host and device; the GPU kernels keep `values` in shared memory.
//
// The decision threshold between codes k and k+1 is the fp32 midpoint
//   m_k = RN32(c_k + c_{k+1}) * 0.5f
// exactly as bitsandbytes' CUDA dQuantize computes it ((upper + val) * 0.5f); the halving is exact
// for every table in [-1, 1] whose neighbours sum to at least 2^-125. x < m_k picks k, x > m_k
// picks k+1, and x == m_k is decided by the TieRule. docs/SEMANTICS.md section 5 gives the proof
// that bitsandbytes' CUDA binary search (pivot 127, steps 64..1) always ends on an even index and
// so resolves every exact midpoint to the even code: TieRule::even_index is that behaviour.
#pragma once

#include <cstdint>

#include "sim/native/hd.hpp"

namespace exmy {

enum class TieRule : std::uint8_t {
  even_index,   // x == m_k -> whichever of k, k+1 is even (bitsandbytes CUDA dQuantize<0>)
  lower_index,  // x == m_k -> k
  // bitsandbytes' CPU quantize_block: k = the last code <= x (0 below c_0), then k+1 only if
  // |RN32(x - c_{k+1})| < |RN32(x - c_k)|: a comparison of rounded distances, not of midpoints.
  bnb_cpu,
};

namespace native {

EXMY_HD float codebook_midpoint(const float* values256, int k) {
  return (values256[k] + values256[k + 1]) * 0.5f;
}

// Number of codes strictly below x (0..256); NaN compares false, so it counts 0.
EXMY_HD int codebook_count_below(const float* values256, float x) {
  int lo = 0, hi = 256;  // invariant: values[0..lo) < x, values[hi..256) >= x
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (values256[mid] < x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace native

// The code nearest to x under `rule`. x outside [c_0, c_255] goes to 0 / 255; NaN gives code 0
// (bitsandbytes' CUDA search, whose comparisons are all false for NaN, also ends on 0).
EXMY_HD std::uint8_t codebook_nearest(const float* values256, float x, TieRule rule) {
  if (rule == TieRule::bnb_cpu) {
    // Last code <= x: the count of codes <= x, minus one, clamped to 0.
    int lo = 0, hi = 256;
    while (lo < hi) {
      const int mid = (lo + hi) >> 1;
      if (values256[mid] <= x) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    int k = lo > 0 ? lo - 1 : 0;
    if (k < 255) {
      const float dl = x - values256[k];
      const float dr = x - values256[k + 1];
      const float adl = dl < 0.0f ? -dl : dl;
      const float adr = dr < 0.0f ? -dr : dr;
      if (adr < adl) ++k;
    }
    return static_cast<std::uint8_t>(k);
  }
  // Count the midpoints strictly below x: that is the code unless x sits exactly on the next one.
  int lo = 0, hi = 255;  // midpoints m_0..m_254
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (native::codebook_midpoint(values256, mid) < x) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < 255 && native::codebook_midpoint(values256, lo) == x) {
    if (rule == TieRule::even_index) return static_cast<std::uint8_t>((lo & 1) ? lo + 1 : lo);
    return static_cast<std::uint8_t>(lo);
  }
  return static_cast<std::uint8_t>(lo);
}

// Stochastic rounding onto the codebook, as bitsandbytes' CUDA dQuantize<1> does it: the binary
// search ends on the even index p = min(2*floor(j/2), 254), j = #codes < x. If x > c_p the pair
// is (c_p, c_{p+1}) and the result is p+1 when u >= RN32(|c_{p+1} - x| / RN32(c_{p+1} - c_p)),
// else p; otherwise the pair is (c_{p-1}, c_p) (c_0 twice at p = 0) and the result is p-1 when
// u >= RN32(|c_{p-1} - x| / RN32(c_p - c_{p-1})), else p. u is a uniform fp32 in [0, 1).
// A code value never moves; NaN x gives 0.
EXMY_HD std::uint8_t codebook_stochastic(const float* values256, float x, float u) {
  const int j = native::codebook_count_below(values256, x);
  int p = (j / 2) * 2;
  if (p > 254) p = 254;
  const float val = values256[p];
  if (x > val) {
    const float upper = values256[p + 1];
    const float d = upper - x;
    const float dist = d < 0.0f ? -d : d;
    return static_cast<std::uint8_t>(u >= dist / (upper - val) ? p + 1 : p);
  }
  const float lower = values256[p > 0 ? p - 1 : 0];
  const float d = lower - x;
  const float dist = d < 0.0f ? -d : d;
  const int lower_pivot = p > 0 ? p - 1 : 0;
  return static_cast<std::uint8_t>(u >= dist / (val - lower) ? lower_pivot : p);
}

// The uniform fp32 that exmy feeds codebook_stochastic from a 32-bit Philox word: the top 24
// bits scaled by 2^-24, exact in fp32, in [0, 1 - 2^-24].
EXMY_HD float uniform_from_word(std::uint32_t word) {
  return static_cast<float>(word >> 8) * 5.9604644775390625e-8f;  // 2^-24
}

}  // namespace exmy
