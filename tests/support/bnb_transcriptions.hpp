// bitsandbytes' nearest-code searches, transcribed as independent test references: the CUDA
// kernels' dQuantize (codebook quantization), the optimizer kernels' quantize_2D (8-bit state
// requantization) and the CPU path's quantize_block step. They are separate upstream functions
// with small differences (end-pivot handling, the unsigned lower bound), kept apart on purpose.
#pragma once

#include <cmath>
#include <cstdint>

namespace exmy::bnb_ref {

// bitsandbytes csrc/kernels.cu dQuantize<STOCHASTIC>, transcribed as the reference (pivot 127,
// steps 64..1, strict comparisons, midpoints (a + b) * 0.5f).
inline std::uint8_t bnb_cuda_dquantize(const float* code, float rand, float x, bool stochastic) {
  int pivot = 127, upper_pivot = 255, lower_pivot = 0;
  float lower = -1.0f, upper = 1.0f;
  float val = code[pivot];
  for (int i = 64; i > 0; i >>= 1) {
    if (x > val) {
      lower_pivot = pivot;
      lower = val;
      pivot += i;
    } else {
      upper_pivot = pivot;
      upper = val;
      pivot -= i;
    }
    val = code[pivot];
  }
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

// bitsandbytes quantize_2D<SIGNED> transcribed (pivot 127, steps 64..1, fp32 midpoints).
inline int quantize_2d(const float* code, float x, bool is_signed) {
  int pivot = 127, upper_pivot = 255, lower_pivot = 0;
  float lower = is_signed ? -1.0f : 0.0f, upper = 1.0f, val = code[127];
  for (int i = 64; i > 0; i >>= 1) {
    if (x > val) {
      lower_pivot = pivot;
      lower = val;
      pivot += i;
    } else {
      upper_pivot = pivot;
      upper = val;
      pivot -= i;
    }
    val = code[pivot];
  }
  if (x > val) return x > (upper + val) * 0.5f ? upper_pivot : pivot;
  return x < (lower + val) * 0.5f ? lower_pivot : pivot;
}

}  // namespace exmy::bnb_ref
