// Internal to gpu/quant/quantize_float.cu: tensor-wise e4m3fn / e5m2 codes under sr:8 by the fp8
// instruction, laid out as the cast kernels' sr span kernel (gpu/cast/cast_span_paths.cu,
// sr_span_kernel), which reaches 380 us for the bytes whose code pass took ~540 us in
// tensor_element_kernel (bench/results/2026-12-02-h200-quant-roofline-s7.md):
//   - warp spans: lane l's 16-byte vector u of a span at `base` holds elements base + 32 G u + G l
//     .. + G - 1 (G = 4 fp32 or 8 16-bit elements), so every load and store of a warp is one
//     contiguous segment, and a vector is one (fp32) or two (16-bit) whole Philox blocks;
//   - the next span is copied into shared memory (cp.async) while this one is rounded, so the
//     Philox rounds cover the memory latency (cast_detail::for_each_span, pipelined);
//   - one philox_prefix per lane and span (its blocks share the high counter word);
//   - R = 8 compiled in: the word's top byte is added by a shift (or one LEA.HI), where
//     flt_hw_run's runtime R took an IMAD.HI per element on the pipe the Philox multiplications
//     use;
//   - the form of y (YForm) is chosen once per kernel, outside the span loop.
// The random words are those of docs/SEMANTICS.md 3.2 (element i: word i mod 4 of block i / 4 of
// stream 16): only how the kernel obtains them changes. The codes are flt_hw_run's (sr): y =
// flt_y_raw, rounded on the fp32 value by hw_codes_sr's formula, encoded by the instruction, the
// sign at bit 7; a vector with a NaN or inf y (or an |y| past the constants' range), and every
// vector of a span whose blocks cross a multiple of 2^32, is redone element by element by the
// software path (fast_flt<sr>, the reference's code), as are the elements past the last whole
// span. Needs 16-byte aligned input and codes (the caller checks; else tensor_element_kernel).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cast/detail_cast_elements.cuh"
#include "gpu/cast/hw_cvt.hpp"
#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/detail_element.cuh"
#include "gpu/quant/detail_fast_element.cuh"
#include "sim/native/philox.hpp"

namespace exmy::gpu::quant_detail {
namespace {

constexpr int kSr8Bits = 8;
constexpr int kSr8Elems = cast_detail::kLeanElems;  // elements per lane and span (32)
constexpr std::uint64_t kSr8WarpSpan = 32u * kSr8Elems;

// Vectors per lane and span for input In.
template <CastInput In>
constexpr int sr8_vectors() {
  return kSr8Elems / static_cast<int>(16 / sizeof(InputElem<In>));
}

// Dynamic shared memory of tensor_sr8_kernel<In>: the pipeline's span stages.
template <CastInput In>
constexpr std::size_t sr8_smem_bytes() {
  return cast_detail::span_stage_bytes<sr8_vectors<In>()>();
}

// Element g (< G) of a 16-byte vector of In, as exact fp32 bits (widen_input: NaN kept).
template <CastInput In>
__device__ __forceinline__ std::uint32_t sr8_element(const uint4& v, int g) {
  if constexpr (In == CastInput::fp32) {
    return cast_detail::word_of(v, g);
  } else {
    const std::uint32_t w = cast_detail::word_of(v, g / 2);
    return widen_input<In>(g % 2 == 0 ? w & 0xFFFFu : w >> 16);
  }
}

// The codes of the four elements xb (x[0] in the low byte) under sr:8 with words rw: flt_hw_run's
// arithmetic for one group of four, R = 8. `top` takes the largest rounded |y| bits.
template <HwFp8 T, YForm Y>
__device__ __forceinline__ std::uint32_t sr8_codes4(const QArgs& a, const FastCastPlan& p,
                                                    const GroupOperands& g,
                                                    const std::uint32_t (&xb)[4],
                                                    const std::uint32_t (&rw)[4], float scale,
                                                    std::uint32_t& top) {
  float y[4];
  std::uint32_t yb[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    yb[k] = native::bits_of(flt_y_raw<Y>(a, g, xb[k]));
    const float mg = __fmul_rn(native::float_of(max(yb[k] & 0x7F800000u, p.norm_min)), scale);
    const float t = __fadd_rz(native::float_of(yb[k] & 0x7FFFFFFFu), mg);
    const std::uint32_t t1 = native::bits_of(t) + (rw[k] >> (32 - kSr8Bits));
    y[k] = __fsub_rn(native::float_of(t1 & ~((1u << kSr8Bits) - 1u)), mg);  // |y| rounded
    top = max(top, native::bits_of(y[k]));
  }
#if defined(EXMY_HW_FP8)
  const std::uint32_t v = cvt_f32x4<T>(y[0], y[1], y[2], y[3]);
#else
  const std::uint32_t v = 0;  // below sm_89 the caller redoes every vector (software path)
#endif
  return v | (prmt_b32(prmt_b32(yb[0], yb[1], 0x0073u), prmt_b32(yb[2], yb[3], 0x0073u), 0x5410u) &
              0x80808080u);
}

// The software path's code of element i (flat index) with its exact fp32 bits xb: flt_sr_run's
// element (fast_flt<sr>), the word drawn in full.
template <YForm Y>
__device__ __forceinline__ std::uint8_t sr8_software(const QArgs& a, const FastCastPlan& p,
                                                     const GroupOperands& g, std::uint32_t xb,
                                                     std::uint64_t i) {
  return fast_flt<FastMode::sr, Y>(a, p, g, xb, word_of(a, i));
}

// The span loop of one form of y over the elements [0, body) (whole warp spans), then the
// elements [body, n) one per thread.
template <CastInput In, HwFp8 T, YForm Y>
__device__ __forceinline__ void tensor_sr8_spans(const QArgs& a, const GroupOperands& g,
                                                 const void* x_, std::uint64_t body,
                                                 std::uint8_t* __restrict__ codes) {
  using E = InputElem<In>;
  constexpr int G = 16 / sizeof(E);  // elements per vector
  constexpr int KG = sr8_vectors<In>();
  constexpr int kBlocks = G / 4;  // Philox blocks per vector
  const FastCastPlan& p = a.plan;
  const E* x = static_cast<const E*>(x_);
  const std::uint32_t stream = stream_of(a);
  // 2^(23 - M - R): mg = 2^(max(e, emin) + 23 - M - R) by one multiplication (flt_hw_run).
  const float scale =
      native::float_of(static_cast<std::uint32_t>(127 + p.normal_shift - kSr8Bits) << 23);
  cast_detail::for_each_span<E, KG, true>(x, body, [&](const uint4(&raw)[KG], std::size_t base) {
    const std::uint64_t b0 = cast_detail::vector_index<E>(base, 0) >> 2;
    const std::uint32_t lo0 = static_cast<std::uint32_t>(b0);
    const native::PhiloxPrefix pre =
        native::philox_prefix(a.keys, stream, static_cast<std::uint32_t>(b0 >> 32));
    // The span's blocks past lo0 reach lo0 + 32 (KG - 1) kBlocks + kBlocks - 1 < lo0 + 32 KG
    // kBlocks: past 2^32 the high word changes, and the span goes to the software path.
    std::uint32_t rare = lo0 > 0xFFFFFFFFu - 32u * KG * kBlocks ? ~0u : 0u;
#if !defined(EXMY_HW_FP8)
    rare = ~0u;  // no instruction below sm_89: every vector by the software path
#endif
    std::uint32_t res[KG][kBlocks];
#pragma unroll
    for (int u = 0; u < KG; ++u) {
      std::uint32_t top = 0;
#pragma unroll
      for (int j = 0; j < kBlocks; ++j) {
        const native::Philox4 b = native::philox_block(a.keys, pre, lo0 + (32u * u * kBlocks + j));
        std::uint32_t xb[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) xb[k] = sr8_element<In>(raw[u], 4 * j + k);
        res[u][j] = sr8_codes4<T, Y>(a, p, g, xb, b.w, scale, top);
      }
      if (top >= 0x7F800000u) rare |= 1u << u;
    }
#pragma unroll
    for (int u = 0; u < KG; ++u) {
      std::uint8_t* dst = codes + cast_detail::vector_index<E>(base, u);
      if constexpr (kBlocks == 1) {
        *reinterpret_cast<std::uint32_t*>(dst) = res[u][0];
      } else {
        *reinterpret_cast<uint2*>(dst) = make_uint2(res[u][0], res[u][1]);
      }
    }
    if (rare != 0) {
      // Rolled, the input read again: the rare vectors' codes over the stored ones.
#pragma unroll 1
      for (int u = 0; u < KG; ++u) {
        if (((rare >> u) & 1u) == 0) continue;
        const std::uint64_t idx = cast_detail::vector_index<E>(base, u);
#pragma unroll 1
        for (int e = 0; e < G; ++e) {
          codes[idx + e] = sr8_software<Y>(a, p, g, widen_input<In>(x[idx + e]), idx + e);
        }
      }
    }
  });
  const std::uint64_t threads = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = body + static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < a.n; i += threads) {
    codes[i] = sr8_software<Y>(a, p, g, widen_input<In>(x[i]), i);
  }
}

// Tensor-wise sr:8 codes by the instruction T over a.n elements, state[0] the tensor's state; a
// resident grid (each block loops over many spans) with sr8_smem_bytes<In>() of dynamic shared
// memory, held to 2 blocks per SM as sr_span_kernel.
template <CastInput In, HwFp8 T>
__global__ void __launch_bounds__(kThreads, 2)
    tensor_sr8_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                      const float* __restrict__ state, const __grid_constant__ QArgs a) {
  const GroupOperands g = group_operands<Kind::flt>(a, state[0], 0);
  const std::uint64_t body = a.n / kSr8WarpSpan * kSr8WarpSpan;
  switch (yform_of(a, g)) {  // uniform: one form for the whole tensor
    case YForm::div_mul:
      tensor_sr8_spans<In, T, YForm::div_mul>(a, g, x, body, codes);
      break;
    case YForm::recip_mul:
      tensor_sr8_spans<In, T, YForm::recip_mul>(a, g, x, body, codes);
      break;
    case YForm::mul_recip:
      tensor_sr8_spans<In, T, YForm::mul_recip>(a, g, x, body, codes);
      break;
    case YForm::unscaled:
      tensor_sr8_spans<In, T, YForm::unscaled>(a, g, x, body, codes);
      break;
    default:
      tensor_sr8_spans<In, T, YForm::scale_mul>(a, g, x, body, codes);
      break;
  }
}

// Whether tensor_sr8_kernel runs the tensor-wise codes of a: the instruction's sr path (FltHw)
// with R = 8, and 16-byte aligned input and codes (`vec`).
inline bool tensor_sr8_ok(const QArgs& a, bool vec) {
  return vec && flt_hw_sr(a.flt_hw) && a.p.sr_bits == kSr8Bits && !a.packed4;
}

// Launches tensor_sr8_kernel for input In (tensor_sr8_ok holds).
template <CastInput In>
void launch_tensor_sr8(const void* x, const QArgs& a, std::uint8_t* codes, const float* state,
                       cudaStream_t s) {
  constexpr std::size_t smem = sr8_smem_bytes<In>();
  const unsigned want = grid_for(a.n, kSr8Elems);
  if (flt_hw_e4m3(a.flt_hw)) {
    constexpr auto kernel = tensor_sr8_kernel<In, HwFp8::e4m3>;
    kernel<<<resident_grid<kernel>(smem, want), kThreads, smem, s>>>(x, codes, state, a);
  } else {
    constexpr auto kernel = tensor_sr8_kernel<In, HwFp8::e5m2>;
    kernel<<<resident_grid<kernel>(smem, want), kThreads, smem, s>>>(x, codes, state, a);
  }
}

}  // namespace
}  // namespace exmy::gpu::quant_detail
