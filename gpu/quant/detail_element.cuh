// Internal to gpu/quant/*.cu: the generic element path, the CPU reference's loop body
// (sim/quant/quantize.cpp) on the same native:: functions: the per-group state from the absmax
// (native::group_state, the MX E8M0 and NVFP4 E4M3 scale codes), one element's code
// (quant_one) and its Philox words. The heavy native calls stay out of line (cold_*).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cast/hw_cvt.hpp"
#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/fast_int8.hpp"
#include "sim/native/codebook_lookup.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_codebook.hpp"
#include "sim/native/quant_int8.hpp"
#include "sim/native/quant_mx.hpp"
#include "sim/native/quant_plan.hpp"
#include "sim/native/quant_scaled_cast.hpp"

namespace exmy::gpu::quant_detail {
namespace {

// The per-group state (native::group_state): fp32 for int8 / flt / codebook, a byte code for the
// block-scaled rules (Kind::mx: MX and NVFP4).
// The plan's functions out of line: every kernel instantiation calls the same one body (the
// generic paths are the cold ones; inlining the whole dispatch into each template instance
// multiplied the compile time and the register pressure of the fast paths).
__device__ __noinline__ std::uint32_t cold_group_state(const native::QuantPlan& p, float amax) {
  return native::group_state(p, amax);
}
// `cb` is the codebook in shared memory (kernels with codebook targets copy it there): reading
// the plan's own copy in parameter space with divergent indices would serialize.
__device__ __noinline__ std::uint8_t cold_quant_element(const native::QuantPlan& p, const float* cb,
                                                        float x, std::uint32_t state,
                                                        std::uint32_t word) {
  return static_cast<std::uint8_t>(native::quant_element(p, cb, x, state, word).code);
}
__device__ __noinline__ float cold_dequant_element(const native::QuantPlan& p, const float* cb,
                                                   std::uint32_t code, std::uint32_t state) {
  return native::dequant_element(p, cb, code, state);
}
__device__ __forceinline__ float state_of(const QArgs& a, float amax) {
  return native::float_of(cold_group_state(a.p, amax));
}

// NVFP4 block scales with the fp8 instructions (gpu/cast/hw_cvt.hpp), sm_89+: the code is the
// instruction's e4m3 cast of the native scale value (a non-NaN value in [-448, 448] casts as
// e4m3_from_clamped does; the value's only NaN is CUDA's 0x7FFFFFFF, whose torch code 0x7F is the
// instruction's), and the element factor is the native factor of the instruction's decode of the
// code (exact for every non-NaN code; a NaN scale gives CUDA's NaN factor whatever the NaN's bits).
// `t` is the per-tensor level (a.p.tensor, or the device-measured one of QArgs::tensor_dev);
// without the instruction, the native scale code and factor of native::group_state and
// native::nvfp4_element_scale under that level.
// Te: the te rule, else torchao's (the NVFP4 kernel of detail_nvfp4.cuh fixes it at compile
// time; the other kernels dispatch on the plan's rule below).
template <bool Te>
__device__ __forceinline__ std::uint8_t nvfp4_scale_code_as(float amax,
                                                            const native::Nvfp4Tensor& t) {
#if defined(EXMY_HW_FP8)
  const float v =
      Te ? native::nvfp4_te_scale_value(amax, t) : native::nvfp4_torchao_scale_value(amax, t);
  return static_cast<std::uint8_t>(cvt_f32x2<HwFp8::e4m3>(v, 0.0f));
#else
  return Te ? native::nvfp4_te_scale_code(amax, t) : native::nvfp4_torchao_scale_code(amax, t);
#endif
}
template <bool Te>
__device__ __forceinline__ float nvfp4_factor_as(std::uint8_t code, const native::Nvfp4Tensor& t) {
#if defined(EXMY_HW_FP8)
  const std::uint16_t h = static_cast<std::uint16_t>(cvt_to_f16x2<HwFp8::e4m3>(code));
  const float s = __half2float(__ushort_as_half(h));
  return Te ? native::nvfp4_te_factor(s, t) : native::nvfp4_torchao_factor(s, t);
#else
  return Te ? native::nvfp4_te_element_scale(code, t)
            : native::nvfp4_torchao_element_scale(code, t);
#endif
}
__device__ __forceinline__ std::uint8_t nvfp4_scale_code(const QArgs& a, float amax,
                                                         const native::Nvfp4Tensor& t) {
  return a.p.rule == native::ScaleRule::nvfp4_te ? nvfp4_scale_code_as<true>(amax, t)
                                                 : nvfp4_scale_code_as<false>(amax, t);
}
__device__ __forceinline__ float nvfp4_factor(const QArgs& a, std::uint8_t code,
                                              const native::Nvfp4Tensor& t) {
  return a.p.rule == native::ScaleRule::nvfp4_te ? nvfp4_factor_as<true>(code, t)
                                                 : nvfp4_factor_as<false>(code, t);
}

__device__ __forceinline__ std::uint8_t scale_code_of(const QArgs& a, float amax,
                                                      const native::Nvfp4Tensor& t) {
  if (nvfp4_rule(a)) return nvfp4_scale_code(a, amax, t);
  return static_cast<std::uint8_t>(cold_group_state(a.p, amax));
}
__device__ __forceinline__ std::uint8_t scale_code_of(const QArgs& a, float amax) {
  return scale_code_of(a, amax, a.p.tensor);
}

// The heavy native paths, by name (mx elements, generic casts).
__device__ __forceinline__ std::uint8_t cold_mx_element(FloatFormat f, float x, std::uint8_t scale,
                                                        RoundMode mode, int sr_bits,
                                                        std::uint32_t rand) {
  return static_cast<std::uint8_t>(native::mx_element(f, x, scale, mode, sr_bits, rand).code);
}
__device__ __noinline__ std::uint8_t cold_codebook_nearest(const float* cb, float n, TieRule tie) {
  return codebook_nearest(cb, n, tie);
}

__device__ __forceinline__ std::uint32_t stream_of(const QArgs& a) {
  return a.p.stream();
}

// The code of element i (flat input index) given its group's state; `word` is the element's
// 32-bit Philox word of stream_of(a) (unused unless a.p.mode is sr). quant::quantize's loop body,
// for the target kind K.
template <Kind K>
__device__ __forceinline__ std::uint8_t quant_one(const QArgs& a, const float* cb, float x,
                                                  float st, std::uint8_t mxs, std::uint32_t word) {
  if constexpr (K == Kind::int8) {
    // The integer rounding of native::round_to_int8 by one cvt (gpu/quant/fast_int8.hpp).
    if (st == 0.0f) return 0;
    if (int8_fast_mode(a.p.mode)) {
      return static_cast<std::uint8_t>(
          fast_round_to_int8(native::absmax_scale(x, st, kInt8Q, a.p.order, a.p.sfu), a.p.mode));
    }
  }
  const std::uint32_t state = K == Kind::mx ? std::uint32_t{mxs} : native::bits_of(st);
  return cold_quant_element(a.p, cb, x, state, word);
}

// The Philox block b of stream_of(a) (elements 4b .. 4b + 3), the key schedule from a.keys.
__device__ __forceinline__ native::Philox4 block_of(const QArgs& a, std::uint64_t b) {
  return native::philox_block(a.keys, stream_of(a), b);
}

// The 32-bit Philox word of element i of stream_of(a) (native::philox_word with a.keys).
__device__ __forceinline__ std::uint32_t word_of(const QArgs& a, std::uint64_t i) {
  return block_of(a, i >> 2).w[i & 3];
}

// The words of the kRun / 4 Philox blocks b0 .. b0 + kRun / 4 - 1 (elements 4 b0 .. 4 b0 + kRun
// - 1), as native::philox_block(seed, stream, b) gives them: the key schedule comes from a.keys
// and, where the blocks share their high counter word (b0's low word leaves room for the last
// one; always so for b0 a multiple of kRun / 4), rounds 1-2 of that word and the stream once
// (native::philox_prefix, as the sr cast kernels draw theirs).
__device__ __forceinline__ void words_of_blocks(const QArgs& a, std::uint64_t b0,
                                                std::uint32_t w[kRun]) {
  const std::uint32_t s = stream_of(a);
  const std::uint32_t lo = static_cast<std::uint32_t>(b0);
  if (lo <= 0xFFFFFFFFu - (kRun / 4 - 1)) {
    const native::PhiloxPrefix pre =
        native::philox_prefix(a.keys, s, static_cast<std::uint32_t>(b0 >> 32));
#pragma unroll
    for (int q = 0; q < kRun / 4; ++q) {
      const native::Philox4 b = native::philox_block(a.keys, pre, lo + q);
#pragma unroll
      for (int k = 0; k < 4; ++k) w[4 * q + k] = b.w[k];
    }
  } else {
#pragma unroll
    for (int q = 0; q < kRun / 4; ++q) {
      const native::Philox4 b = block_of(a, b0 + q);
#pragma unroll
      for (int k = 0; k < 4; ++k) w[4 * q + k] = b.w[k];
    }
  }
}

// The 32-bit Philox words of stream_of(a) for elements base .. base + kRun - 1.
__device__ __forceinline__ void words_for_run(const QArgs& a, std::uint64_t base,
                                              std::uint32_t w[kRun]) {
  if ((base & 3u) == 0) {
    words_of_blocks(a, base >> 2, w);
  } else {
#pragma unroll
    for (int k = 0; k < kRun; ++k) w[k] = word_of(a, base + k);
  }
}

}  // namespace
}  // namespace exmy::gpu::quant_detail
