// Internal to gpu/quant/*.cu: how the quantize kernels read their input. Runs of kRun
// consecutive elements (or kColRun columns of one row) as 32-bit words, the elements widened to
// fp32 (gpu/cast/widen.hpp), and absmax reductions in the input's own bit domain (the file comment
// of gpu/quant/quantize.cu says why the max of |x| bit patterns is the reference's fold).
// Device helpers in an anonymous namespace: each kernel's translation unit inlines its own copy.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cast/cast.hpp"
#include "gpu/cast/widen.hpp"
#include "gpu/quant/detail_args.cuh"
#include "sim/native/quant_absmax.hpp"

namespace exmy::gpu::quant_detail {
namespace {

// ---- input runs: kRun consecutive elements as 32-bit words (fp32: one element per word;
// bf16 / fp16: two, the lower index in the low half) ----
template <CastInput In>
struct InT {
  using T = std::uint16_t;
  static constexpr int kWords = kRun / 2;
};
template <>
struct InT<CastInput::fp32> {
  using T = std::uint32_t;
  static constexpr int kWords = kRun;
};

template <CastInput In>
__device__ __forceinline__ void load_words(const void* x_, std::uint64_t base, std::uint64_t n,
                                           bool vec, std::uint32_t* w) {
  using T = typename InT<In>::T;
  const T* x = static_cast<const T*>(x_);
  if (vec && base + kRun <= n) {
    const uint4* q = reinterpret_cast<const uint4*>(x + base);
#pragma unroll
    for (int k = 0; k < InT<In>::kWords / 4; ++k) {
      const uint4 r = q[k];
      w[4 * k] = r.x;
      w[4 * k + 1] = r.y;
      w[4 * k + 2] = r.z;
      w[4 * k + 3] = r.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      const std::uint32_t e = base + k < n ? static_cast<std::uint32_t>(x[base + k]) : 0u;
      if constexpr (sizeof(T) == 4) {
        w[k] = e;
      } else if (k & 1) {
        w[k >> 1] |= e << 16;
      } else {
        w[k >> 1] = e;
      }
    }
  }
}

template <CastInput In>
__device__ __forceinline__ std::uint32_t half_at(const std::uint32_t* w, int k) {
  return (k & 1) ? w[k >> 1] >> 16 : w[k >> 1] & 0xFFFFu;
}

// Element k of a run as fp32 bits: the word itself (fp32) or its 16-bit half.
template <CastInput In>
__device__ __forceinline__ std::uint32_t element_at(const std::uint32_t* w, int k) {
  if constexpr (In == CastInput::fp32) {
    return w[k];
  } else {
    return half_at<In>(w, k);
  }
}

// Element k as fp32 bits, widened exactly (NaN sign and payload kept).
template <CastInput In>
__device__ __forceinline__ std::uint32_t exact_bits(const std::uint32_t* w, int k) {
  return widen_input<In>(element_at<In>(w, k));
}

// Element k as an fp32 value whose NaN bits may differ from the exact widening (only for targets
// whose code ignores a NaN's bits): widen_input_nan_free (gpu/cast/widen.hpp).
template <CastInput In>
__device__ __forceinline__ float value_nan_free(const std::uint32_t* w, int k) {
  return native::float_of(widen_input_nan_free<In>(element_at<In>(w, k)));
}

// ---- absmax of words, in the input's own bit domain ----
// fp32: the max of |x| bits (NaN above +inf: canonicalized by absmax_finish); bf16 / fp16: two
// 16-bit magnitude maxima per word. Ignore drops NaN magnitudes (above the format's inf).
template <CastInput In, bool Ignore>
__device__ __forceinline__ std::uint32_t absmax_word(std::uint32_t acc, std::uint32_t w) {
  if constexpr (In == CastInput::fp32) {
    std::uint32_t b = w & 0x7FFFFFFFu;
    if (Ignore) b = b > 0x7F800000u ? 0u : b;
    return max(acc, b);
  } else {
    constexpr std::uint32_t kInf2 = In == CastInput::bf16 ? 0x7F807F80u : 0x7C007C00u;
    std::uint32_t p = w & 0x7FFF7FFFu;
    if (Ignore) p &= ~__vcmpgtu2(p, kInf2);
    return __vmaxu2(acc, p);
  }
}

// A magnitude of the input format (fp32 bits, or a 16-bit pattern) -> absmax bits of fp32.
template <CastInput In>
__device__ __forceinline__ std::uint32_t absmax_finish(std::uint32_t m) {
  if constexpr (In == CastInput::fp32) {
    return m > 0x7F800000u ? kNanAbsBits : m;
  } else if constexpr (In == CastInput::bf16) {
    return m > 0x7F80u ? kNanAbsBits : widen_bf16(m);
  } else {
    return m > 0x7C00u ? kNanAbsBits : widen_fp16(m);
  }
}

// Absmax bits of one run under the NaN policy.
template <CastInput In, bool Ignore>
__device__ __forceinline__ std::uint32_t run_absmax_as(const std::uint32_t* w) {
  std::uint32_t acc = 0;
#pragma unroll
  for (int k = 0; k < InT<In>::kWords; ++k) acc = absmax_word<In, Ignore>(acc, w[k]);
  if constexpr (In != CastInput::fp32) acc = max(acc & 0xFFFFu, acc >> 16);
  return absmax_finish<In>(acc);
}
template <CastInput In>
__device__ __forceinline__ std::uint32_t run_absmax(const std::uint32_t* w, native::NanPolicy p) {
  // ignore_ftz reduces as ignore; the flush of a subnormal maximum is native::group_state's.
  return p != native::NanPolicy::propagate ? run_absmax_as<In, true>(w)
                                           : run_absmax_as<In, false>(w);
}

__device__ __forceinline__ std::uint32_t abs_bits(float x, native::NanPolicy p) {
  const std::uint32_t b = native::bits_of(x) & 0x7FFFFFFFu;
  if (b > 0x7F800000u) return p == native::NanPolicy::propagate ? kNanAbsBits : 0u;
  return b;
}

// ---- 2-d column-wise kernels: a thread owns kColRun consecutive columns (one or two 16-byte
// loads per row) over a strip of rows; needs cols % kColRun == 0 and 16-byte aligned rows ----
template <CastInput In>
struct ColT {
  static constexpr int kWords = kColRun * sizeof(typename InT<In>::T) / 4;
};

// Rows whose loads a column-wise kernel issues together: 64 bytes per thread for fp32 (two
// 16-byte loads a row), 128 for the 16-bit inputs (one load a row), so that enough bytes are in
// flight per SM to cover DRAM latency at full bandwidth.
template <CastInput In>
constexpr int kColBatchOf = In == CastInput::fp32 ? kColBatch : 2 * kColBatch;

template <CastInput In>
__device__ __forceinline__ void load_col_words(const void* x_, std::uint64_t off,
                                               std::uint32_t* w) {
  using T = typename InT<In>::T;
  const uint4* q = reinterpret_cast<const uint4*>(static_cast<const T*>(x_) + off);
#pragma unroll
  for (int k = 0; k < ColT<In>::kWords / 4; ++k) {
    const uint4 r = q[k];
    w[4 * k] = r.x;
    w[4 * k + 1] = r.y;
    w[4 * k + 2] = r.z;
    w[4 * k + 3] = r.w;
  }
}

}  // namespace
}  // namespace exmy::gpu::quant_detail
