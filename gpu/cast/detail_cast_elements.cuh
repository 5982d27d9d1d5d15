// Internal to gpu/cast/cast*.cu: the per-element and per-span device helpers every cast kernel
// shares: input widening by type (InputTraits), one element on the generic / fast / lean paths
// and on the rare path, the warp-span loads (direct, or pipelined through cp.async) and the
// Philox words of an element or span. The file comment of gpu/cast/cast.cu describes the paths.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gpu/cast/cast.hpp"
#include "gpu/cast/detail_cast_args.cuh"
#include "gpu/cast/fast_cast.hpp"
#include "gpu/cast/widen.hpp"
#include "gpu/common/launch.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"

namespace exmy::gpu::cast_detail {
namespace {

// 32-bit word i of a 16-byte vector (i a constant after unrolling).
__device__ __forceinline__ std::uint32_t word_of(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

template <CastInput In>
struct InputTraits;
// T: the element in memory. widen_lean_at: widen_input_nan_free (gpu/cast/widen.hpp) of element
// g of a 16-byte vector, from the 32-bit word that holds it (for bf16 one mask or one shift;
// through a 16-bit lane the compiler spent a PRMT and a multiply on each high half). The lean path
// sends every NaN to the rare path, which widens again with widen_input.
template <>
struct InputTraits<CastInput::fp32> {
  using T = InputElem<CastInput::fp32>;
  static __device__ __forceinline__ std::uint32_t widen_lean_at(const uint4& v, int g) {
    return word_of(v, g);
  }
};
template <>
struct InputTraits<CastInput::bf16> {
  using T = InputElem<CastInput::bf16>;
  static __device__ __forceinline__ std::uint32_t widen_lean_at(const uint4& v, int g) {
    const std::uint32_t w = word_of(v, g / 2);
    return g % 2 == 0 ? w << 16 : w & 0xFFFF0000u;
  }
};
template <>
struct InputTraits<CastInput::fp16> {
  using T = InputElem<CastInput::fp16>;
  static __device__ __forceinline__ std::uint32_t widen_lean_at(const uint4& v, int g) {
    const std::uint32_t w = word_of(v, g / 2);
    return widen_input_nan_free<CastInput::fp16>(g % 2 == 0 ? w & 0xFFFFu : w >> 16);
  }
};

// The generic path: the native engine with the runtime descriptor.
__device__ __forceinline__ std::uint32_t generic_convert(FloatFormat from, FloatFormat to,
                                                         Rounding r, std::uint32_t x,
                                                         std::uint32_t rand) {
  return static_cast<std::uint32_t>(native::convert(from, to, r, x, rand).code);
}

// The code of one element on the fast or generic path (every rounding, chosen at run time).
template <CastInput In, Path P>
__device__ __forceinline__ std::uint32_t cast_one(const CastArgs& a, std::uint32_t x,
                                                  std::uint32_t rand) {
  if constexpr (P == Path::fast) {
    return fast_cast_fp32(a.plan, a.r, widen_input<In>(x), rand);
  } else {
    return generic_convert(a.from, a.to, a.r, x, rand);
  }
}

template <Path P>
__device__ __forceinline__ float decode_one(const CastArgs& a, std::uint32_t code) {
  if constexpr (P == Path::generic) {
    return native::to_float(a.to, code);
  } else {
    return fast_decode_fp32_finite(a.plan, code);
  }
}

// Stores the G results of one input vector: G * sizeof(Out) bytes (4 to 32) at an address
// aligned to that size.
template <typename Out, int G>
__device__ __forceinline__ void store_group(Out* dst, const Out (&res)[G]) {
  constexpr int kBytes = G * static_cast<int>(sizeof(Out));
  if constexpr (kBytes == 4) {
    *reinterpret_cast<std::uint32_t*>(dst) = *reinterpret_cast<const std::uint32_t*>(res);
  } else if constexpr (kBytes == 8) {
    *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(res);
  } else {
#pragma unroll
    for (int v = 0; v < kBytes / 16; ++v) {
      reinterpret_cast<uint4*>(dst)[v] = reinterpret_cast<const uint4*>(res)[v];
    }
  }
}

// Element g of a 16-byte vector of T.
template <typename T>
__device__ __forceinline__ std::uint32_t lane_of(const uint4& v, int g) {
  return reinterpret_cast<const T*>(&v)[g];
}

// The lean path's result for one element: code, or its decoded value for fake quantization.
template <CastInput In, typename Out, FastMode Mode, bool Signed, bool NegZero>
__device__ __forceinline__ Out lean_one(const CastArgs& a, std::uint32_t u, std::uint32_t rand) {
  const std::uint32_t c =
      native::fast_cast_fp32_lean<Mode, Signed, NegZero>(a.plan, u, rand, a.r.sr_bits);
  if constexpr (std::is_same_v<Out, float>) {
    return native::fast_decode_fp32_lean(a.plan, c);
  } else {
    return static_cast<Out>(c);
  }
}

// The same element outside the lean domain (inf, NaN, engine inputs: the latter flagged).
template <CastInput In, typename Out, FastMode Mode>
__device__ __forceinline__ Out rare_one(const CastArgs& a, std::uint32_t u, std::uint32_t rand) {
  if (native::fast_needs_engine(a.plan, u)) *a.engine_flag = 1u;
  const std::uint32_t c = native::fast_cast_fp32_fixed_inline<Mode>(a.plan, u, rand, a.r.sr_bits);
  if constexpr (std::is_same_v<Out, float>) {
    return fast_decode_fp32_finite(a.plan, c);
  } else {
    return static_cast<Out>(c);
  }
}

// Elements per warp and step of the lean kernel: 32 lanes x kLeanElems.
constexpr std::size_t kLeanWarpSpan = 32 * kLeanElems;

// The warp spans of the lean and hw kernels: this warp's first span and the grid's stride (a
// block takes kThreads * kLeanElems elements per step, each warp one span), the flat index of a
// lane's vector u, and the loads of the KG vectors of a lane, all issued before any arithmetic.
__device__ __forceinline__ std::size_t span_first() {
  return static_cast<std::size_t>(blockIdx.x) * kThreads * kLeanElems +
         threadIdx.x / 32 * kLeanWarpSpan;
}
__device__ __forceinline__ std::size_t span_stride() {
  return static_cast<std::size_t>(gridDim.x) * kThreads * kLeanElems;
}
template <typename T>
__device__ __forceinline__ std::size_t vector_index(std::size_t base, int u) {
  // In 64 bits throughout, so that base + lane G is common to a lane's vectors and u 32 G folds
  // into the load and store offsets (as a 32-bit product it cost each vector its own address).
  constexpr std::size_t G = 16 / sizeof(T);
  return base + static_cast<std::size_t>(threadIdx.x % 32) * G +
         static_cast<std::size_t>(u) * 32 * G;
}
template <typename T, int KG>
__device__ __forceinline__ void load_span(const T* in, std::size_t base, uint4 (&raw)[KG]) {
#pragma unroll
  for (int u = 0; u < KG; ++u)
    raw[u] = *reinterpret_cast<const uint4*>(in + vector_index<T>(base, u));
}

// cp.async (sm_80 and newer): 16 bytes from global to shared memory without passing through
// registers (L1 bypassed); a thread commits its copies in groups and waits for all but the newest
// N groups. Each thread reads back only what it copied itself, so no barrier is needed.
__device__ __forceinline__ void cp_async16(uint4* dst, const void* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src) : "memory");
#else
  *dst = *static_cast<const uint4*>(src);
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

// Spans in flight per thread on the pipelined loop (the one being worked on included).
// (H100, 16-bit sr:8: three stages measured no faster than two, bench/results.)
constexpr int kStages = 2;

// Dynamic shared memory of a pipelined kernel: kStages spans of KG 16-byte vectors per thread.
template <int KG>
constexpr std::size_t span_stage_bytes() {
  return static_cast<std::size_t>(kStages) * KG * kThreads * sizeof(uint4);
}

// The lean and hw kernels' loop over this warp's spans: body(raw, base) for each, raw the KG
// 16-byte input vectors of this lane in the span at element base.
//   - Direct: a span's loads are issued at once, then its arithmetic; the warps of an SM overlap
//     one another's memory waits. Enough where the arithmetic is light (rne, rtz).
//   - Pipelined (sr): each thread copies its next span into shared memory (cp.async) before it
//     works on the current one, so the Philox and rounding work of one span covers the memory
//     latency of the next. Needs span_stage_bytes<KG>() of dynamic shared memory and a grid
//     that fits on the device at once (resident_grid), each block looping over many spans.
template <typename T, int KG, bool Pipelined, typename Body>
__device__ __forceinline__ void for_each_span(const T* in, std::size_t n, Body&& body) {
  if constexpr (!Pipelined) {
    for (std::size_t base = span_first(); base < n; base += span_stride()) {
      uint4 raw[KG];
      load_span(in, base, raw);
      body(raw, base);
    }
  } else {
    extern __shared__ uint4 span_stages[];  // [kStages][KG][kThreads]
    const auto slot = [&](int stage, int u) {
      return &span_stages[(stage * KG + u) * kThreads + threadIdx.x];
    };
    const auto prefetch = [&](std::size_t b, int stage) {
      if (b < n) {
#pragma unroll
        for (int u = 0; u < KG; ++u) cp_async16(slot(stage, u), in + vector_index<T>(b, u));
      }
      cp_async_commit();  // an empty group past the end keeps the wait count uniform
    };
    const std::size_t stride = span_stride();
    std::size_t base = span_first();
#pragma unroll
    for (int st = 0; st < kStages - 1; ++st) prefetch(base + st * stride, st);
    for (int stage = 0; base < n; base += stride, stage = (stage + 1) % kStages) {
      prefetch(base + (kStages - 1) * stride, (stage + kStages - 1) % kStages);
      cp_async_wait<kStages - 1>();
      uint4 raw[KG];
#pragma unroll
      for (int u = 0; u < KG; ++u) raw[u] = *slot(stage, u);
      body(raw, base);
    }
  }
}

// The 32-bit Philox word of element i (flat index offset + i), from the launch's key schedule.
__device__ __forceinline__ std::uint32_t sr_word_at(const CastArgs& a, std::size_t i) {
  const std::uint64_t g = a.offset + i;
  return native::philox_block(a.keys, a.stream, g >> 2).w[g & 3];
}

// The Philox block of the elements idx + 4j .. + 3 (offset % 4 == 0 puts them in one block).
__device__ __forceinline__ native::Philox4 sr_block(const CastArgs& a, std::size_t idx, int j) {
  return native::philox_block(a.keys, a.stream, (a.offset + idx + 4 * j) >> 2);
}

// The Philox blocks of a lane's span in sr_span_kernel: (offset + base) / 4 + lane G/4 + 32 u G/4
// + j for vector u, part j. They share their high counter word unless the span crosses a
// multiple of 2^32 blocks (`crosses`: the caller then redoes the span with sr_block), so one
// philox_prefix serves them all.
template <typename T>
struct SpanWords {
  static constexpr std::uint32_t kPerVector = 16 / sizeof(T) / 4;  // blocks per 16-byte vector
  native::PhiloxPrefix prefix;
  std::uint32_t lo0;
  bool crosses;

  __device__ __forceinline__ SpanWords(const CastArgs& a, std::size_t base) {
    const std::uint64_t b0 = (a.offset + vector_index<T>(base, 0)) >> 2;
    lo0 = static_cast<std::uint32_t>(b0);
    prefix = native::philox_prefix(a.keys, a.stream, static_cast<std::uint32_t>(b0 >> 32));
    crosses = lo0 > 0xFFFFFFFFu - 32u * (kLeanElems / 4);  // the span's blocks past lo0
  }
  __device__ __forceinline__ native::Philox4 block(const CastArgs& a, int u, int j) const {
    return native::philox_block(a.keys, prefix, lo0 + (32u * u * kPerVector + j));
  }
};

}  // namespace
}  // namespace exmy::gpu::cast_detail
