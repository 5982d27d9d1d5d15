// bitsandbytes' nearest-code searches, transcribed as independent test references: the CUDA
// kernels' dQuantize (codebook quantization), the optimizer kernels' quantize_2D (8-bit state
// requantization) and the CPU path's quantize_block step. The two CUDA kernels share their pivot
// search (written once below); they differ after it (end-pivot handling, the unsigned lower
// bound), and those differences are kept as upstream has them.
#pragma once

#include <cmath>
#include <cstdint>

namespace exmy::bnb_ref {

// The 7-step pivot search both CUDA kernels share (pivot 127, steps 64..1, strict x > val):
// the last probed code and the pivots/values bracketing it; `lower` starts at lower0 (-1 for
// signed maps; quantize_2D starts unsigned maps at 0).
struct PivotSearch {
  int pivot = 127, upper_pivot = 255, lower_pivot = 0;
  float lower = -1.0f, upper = 1.0f, val = 0.0f;
};

inline PivotSearch bnb_pivot_search(const float* code, float x, float lower0) {
  PivotSearch s;
  s.lower = lower0;
  s.val = code[s.pivot];
  for (int i = 64; i > 0; i >>= 1) {
    if (x > s.val) {
      s.lower_pivot = s.pivot;
      s.lower = s.val;
      s.pivot += i;
    } else {
      s.upper_pivot = s.pivot;
      s.upper = s.val;
      s.pivot -= i;
    }
    s.val = code[s.pivot];
  }
  return s;
}

// bitsandbytes csrc/kernels.cu dQuantize<STOCHASTIC>, transcribed as the reference (the pivot
// search above, then end-pivot values, strict comparisons, midpoints (a + b) * 0.5f).
inline std::uint8_t bnb_cuda_dquantize(const float* code, float rand, float x, bool stochastic) {
  const PivotSearch s = bnb_pivot_search(code, x, -1.0f);
  const int pivot = s.pivot, upper_pivot = s.upper_pivot, lower_pivot = s.lower_pivot;
  const float val = s.val;
  float lower = s.lower, upper = s.upper;
  if (upper_pivot == 255) upper = code[upper_pivot];
  if (lower_pivot == 0) lower = code[lower_pivot];
  if (!stochastic) {
    if (x > val) {
      const float midpoint = (upper + val) * 0.5f;
      return static_cast<std::uint8_t>(x > midpoint ? upper_pivot : pivot);
    }
    const float midpoint = (lower + val) * 0.5f;
    return static_cast<std::uint8_t>(x < midpoint ? lower_pivot : pivot);
  }
  if (x > val) {
    const float dist_to_upper = std::fabs(upper - x);
    const float dist_full = upper - val;
    return static_cast<std::uint8_t>(rand >= dist_to_upper / dist_full ? upper_pivot : pivot);
  }
  const float dist_to_lower = std::fabs(lower - x);
  const float dist_full = val - lower;
  return static_cast<std::uint8_t>(rand >= dist_to_lower / dist_full ? lower_pivot : pivot);
}

// bitsandbytes csrc/common.cpp quantize_block's per-value step: a linear scan stands in for the
// BinSearch "last code <= x" (0 below code[0]), then the rounded-distance comparison.
inline std::uint8_t bnb_cpu_quantize(const float* code, float x) {
  int idx = 0;
  for (int i = 0; i < 256; ++i) {
    if (code[i] <= x) idx = i;
  }
  if (idx < 255) {
    const float dist_left = std::fabs(x - code[idx]);
    const float dist_right = std::fabs(x - code[idx + 1]);
    if (dist_right < dist_left) idx += 1;
  }
  return static_cast<std::uint8_t>(idx);
}

// bitsandbytes quantize_2D<SIGNED> transcribed (the pivot search above, fp32 midpoints).
inline int quantize_2d(const float* code, float x, bool is_signed) {
  const PivotSearch s = bnb_pivot_search(code, x, is_signed ? -1.0f : 0.0f);
  if (x > s.val) return x > (s.upper + s.val) * 0.5f ? s.upper_pivot : s.pivot;
  return x < (s.lower + s.val) * 0.5f ? s.lower_pivot : s.pivot;
}

}  // namespace exmy::bnb_ref
