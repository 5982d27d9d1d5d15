// Element-wise cast kernels (gpu/cast/cast.hpp). A thread handles groups of 16 input bytes (4 fp32
// or 8 bf16/fp16 elements each); the lanes of a warp take consecutive vectors, so each load and
// store instruction of a warp covers one contiguous span (coalesced), and all of a thread's loads
// are issued before its arithmetic (under sr on the hw path, a span ahead: for_each_span). The
// arithmetic is one of
//   - lean: the mode-fixed rne / rtz / sr:R cast of every float format of <= 16 bits
//     (native::fast_cast_fp32_lean, sign handling fixed per kernel), with the rare inputs outside
//     its domain (inf, NaN) redone per group by fast_cast_fp32_fixed_inline; the few
//     inputs that need the native engine (fp32 subnormals into formats reaching below fp32's
//     range, zero into formats without zero) set a flag, and a second kernel redoes them;
//     sr:8 codes of 8-bit formats take the hw path's span kernel with the hw formula read as an
//     integer (sr_span_kernel with LeanSrCodes, lean_codes_sr);
//   - hw: e4m3fn / e5m2 codes and fake quantization under rne (overflow none, sat or satfinite)
//     and sr:R by the fp8 conversion instructions (gpu/cast/hw_cvt.hpp, sm_89+), which equal the
//     lean cast under rne + satfinite on every non-NaN input; where the policy's overflow code
//     differs it is the instruction's plus one, added by a per-byte flag; sr:R rounds on the fp32
//     value first (hw_codes_sr, its own kernel sr_span_kernel); NaN (and inf where needed) inputs
//     are redone per group;
//   - fast: fast_cast_fp32 for the other modes on formats with a range inside fp32's;
//   - generic: native::convert with the runtime descriptor.
// No kernel of the first two calls a function: a call anywhere in these loops (even on a path
// never taken) or a dynamically indexed register array costs every element register spills
// (measured on an H200: 305 -> 870-2000 us for 2^28 fp32 -> e4m3fn, bench/results).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>

#include "gpu/cast/cast.hpp"
#include "gpu/cast/fast_cast.hpp"
#include "gpu/cast/hw_cast.hpp"
#include "gpu/cast/hw_cvt.hpp"
#include "gpu/cast/widen.hpp"
#include "gpu/common/launch.hpp"
#include "sim/common/error.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"

namespace exmy::gpu {
namespace {

// The engine flag of lean casts whose format has no engine inputs (never written).
__device__ unsigned g_unused_engine_flag;

constexpr int kGroups = 4;      // 16-byte input vectors per thread and step (fast, generic paths)
constexpr int kLeanElems = 32;  // elements per thread and step on the lean path (H200: 8 fp32
                                // vectors per thread gave 305 us against 330 for 4, 2^28 e4m3fn)

struct CastArgs {
  FastCastPlan plan;  // valid on the fast path
  FloatFormat from;
  FloatFormat to;
  Rounding r;
  native::PhiloxKeys keys;  // philox_keys(seed): the round keys, read from the constant bank
  std::uint64_t offset;
  std::uint32_t stream;
  bool vector_ok;         // 16-byte aligned pointers and index offset % 4 == 0 (see vector_ok())
  unsigned* engine_flag;  // lean path: set when an input needs the native engine (fix-up pass)
  // hw path: added to an input magnitude (to each 16-bit lane for 16-bit inputs), it sets the
  // top bit exactly where the code is the instruction's plus one (see hw_plan); 0: nowhere.
  std::uint32_t hw_ovf_add;
};

// 32-bit word i of a 16-byte vector (i a constant after unrolling).
__device__ __forceinline__ std::uint32_t word_of(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

template <CastInput In>
struct InputTraits;
// widen: the exact fp32 bits of an input element (NaN payloads kept). widen_lean: the same for
// every non-NaN input, and some NaN for a NaN (the lean path sends every NaN to the rare path,
// which widens again with widen): fp16 takes the hardware conversion (cvt.f32.f16, exact for
// every finite and infinite fp16 value, subnormals included) instead of the branchy software one.
// widen_lean_at: widen_lean of element g of a 16-byte vector, from the 32-bit word that holds it
// (for bf16 one mask or one shift; through a 16-bit lane the compiler spent a PRMT and a multiply
// on each high half).
template <>
struct InputTraits<CastInput::fp32> {
  using T = std::uint32_t;
  static __device__ __forceinline__ std::uint32_t widen(std::uint32_t x) { return x; }
  static __device__ __forceinline__ std::uint32_t widen_lean(std::uint32_t x) { return x; }
  static __device__ __forceinline__ std::uint32_t widen_lean_at(const uint4& v, int g) {
    return word_of(v, g);
  }
};
template <>
struct InputTraits<CastInput::bf16> {
  using T = std::uint16_t;
  static __device__ __forceinline__ std::uint32_t widen(std::uint32_t x) { return widen_bf16(x); }
  static __device__ __forceinline__ std::uint32_t widen_lean(std::uint32_t x) {
    return widen_bf16(x);
  }
  static __device__ __forceinline__ std::uint32_t widen_lean_at(const uint4& v, int g) {
    const std::uint32_t w = word_of(v, g / 2);
    return g % 2 == 0 ? w << 16 : w & 0xFFFF0000u;
  }
};
template <>
struct InputTraits<CastInput::fp16> {
  using T = std::uint16_t;
  static __device__ __forceinline__ std::uint32_t widen(std::uint32_t x) { return widen_fp16(x); }
  static __device__ __forceinline__ std::uint32_t widen_lean(std::uint32_t x) {
    return __float_as_uint(__half2float(__ushort_as_half(static_cast<unsigned short>(x))));
  }
  static __device__ __forceinline__ std::uint32_t widen_lean_at(const uint4& v, int g) {
    const std::uint32_t w = word_of(v, g / 2);
    return widen_lean(g % 2 == 0 ? w & 0xFFFFu : w >> 16);
  }
};

// The generic path: the native engine with the runtime descriptor.
__device__ __forceinline__ std::uint32_t generic_convert(FloatFormat from, FloatFormat to,
                                                         Rounding r, std::uint32_t x,
                                                         std::uint32_t rand) {
  return static_cast<std::uint32_t>(native::convert(from, to, r, x, rand).code);
}

// Which arithmetic a kernel runs: the native engine, fast_cast_fp32 (any mode), or the lean
// mode-fixed path.
enum class Path { generic, fast, lean, hw };

// The code of one element on the fast or generic path (every rounding, chosen at run time).
template <CastInput In, Path P>
__device__ __forceinline__ std::uint32_t cast_one(const CastArgs& a, std::uint32_t x,
                                                  std::uint32_t rand) {
  if constexpr (P == Path::fast) {
    return fast_cast_fp32(a.plan, a.r, InputTraits<In>::widen(x), rand);
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

// The lean path: rne / rtz / sr:R on every float format of <= 16 bits. Out: uint8_t / uint16_t
// codes, or float for fake quantization (formats with decode_fast only). Covers whole warp spans
// only ([0, n) with n a multiple of kLeanWarpSpan, 16-byte aligned pointers, offset % 4 == 0): no
// bounds test in the body; lean_tail_kernel does the rest.
template <CastInput In, typename Out, FastMode Mode, bool Signed, bool NegZero>
__global__ void __launch_bounds__(kThreads)
    lean_kernel(const void* __restrict__ in_, std::size_t n, Out* __restrict__ out, CastArgs a) {
  using T = typename InputTraits<In>::T;
  constexpr int G = 16 / sizeof(T);  // elements per 16-byte input vector
  constexpr int KG = kLeanElems / G;
  constexpr bool sr = Mode == FastMode::sr;
  const T* in = static_cast<const T*>(in_);
  for_each_span<T, KG, false>(in, n, [&](const uint4(&raw)[KG], std::size_t base) {
#pragma unroll
    for (int u = 0; u < KG; ++u) {
      const std::size_t idx = vector_index<T>(base, u);
      std::uint32_t words[G];
#pragma unroll
      for (int g = 0; g < G; g += 4) {
        // offset % 4 == 0: elements idx + g .. + 3 are one Philox block.
        native::Philox4 b{};
        if constexpr (sr) b = sr_block(a, idx + g, 0);
#pragma unroll
        for (int k = 0; k < 4; ++k) words[g + k] = sr ? native::sr_word(b.w[k], a.r.sr_bits) : 0u;
      }
      Out res[G];
      bool rare = false;
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const std::uint32_t x = InputTraits<In>::widen_lean(lane_of<T>(raw[u], g));
        res[g] = lean_one<In, Out, Mode, Signed, NegZero>(a, x, words[g]);
        rare |= !native::fast_lean_domain(a.plan, x);
      }
      if (rare) {
        // Inputs outside the lean domain (inf, NaN, engine inputs). Unrolled, so the register
        // arrays stay statically indexed; keeping raw[] live to here also makes the compiler
        // issue all KG loads first (without it, ptxas sank loads 5..8 below the first groups'
        // arithmetic).
#pragma unroll
        for (int g = 0; g < G; ++g) {
          const std::uint32_t x = InputTraits<In>::widen(lane_of<T>(raw[u], g));
          if (!native::fast_lean_domain(a.plan, x))
            res[g] = rare_one<In, Out, Mode>(a, x, words[g]);
        }
      }
      store_group(out + idx, res);
    }
  });
}

// The lean path element by element over [first, n): the tail past the last whole warp span, or
// every element when the pointers or the offset rule out the vector kernel.
template <CastInput In, typename Out, FastMode Mode>
__global__ void __launch_bounds__(kThreads)
    lean_tail_kernel(const void* __restrict__ in_, std::size_t first, std::size_t n,
                     Out* __restrict__ out, CastArgs a) {
  using T = typename InputTraits<In>::T;
  const T* in = static_cast<const T*>(in_);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = first + static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    std::uint32_t rand = 0;
    if constexpr (Mode == FastMode::sr) {
      rand = native::sr_word(sr_word_at(a, i), a.r.sr_bits);
    }
    out[i] = rare_one<In, Out, Mode>(a, InputTraits<In>::widen(in[i]), rand);
  }
}

// Stores the codes of one input vector: G bytes, packed four to a word in res.
template <int G, std::size_t N>
__device__ __forceinline__ void store_codes(std::uint8_t* dst, const std::uint32_t (&res)[N]) {
  if constexpr (G == 4) {
    *reinterpret_cast<std::uint32_t*>(dst) = res[0];
  } else {
    *reinterpret_cast<uint2*>(dst) = make_uint2(res[0], res[G / 4 - 1]);
  }
}

// prmt.b32 (default mode): byte k of the result is byte sel[4k+2:4k] of {b, a}; where bit 4k+3
// of sel is set, that byte's top bit is replicated over all eight bits.
__device__ __forceinline__ std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t sel) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}

// Packed 16-bit arithmetic on two halves of a word (sm_80+): the larger of each pair of bf16 or of
// fp16 values (no NaN operands here), and the bf16 product, rounded to nearest (a fused
// multiply-add of -0: exact where the product is, which is where it is used).
__device__ __forceinline__ std::uint32_t hmax2_bf16(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ std::uint32_t hmax2_fp16(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ std::uint32_t hmul2_bf16(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
  return d;
}

// The hw path's codes of one 16-byte input vector under rne (4 fp32 or 8 bf16 / fp16 elements,
// as 32-bit words w), one byte each, little-endian in res. The instruction gives the rne +
// satfinite code; s = |x| + ovf_add has its top bit (bit 31, or bit 15 of each 16-bit lane) set
// where the policy overflows, which prmt turns into a 0xFF byte, so the code gains one exactly
// there (no byte carries: the codes that gain one are +-max, 0x7E / 0xFE or 0x7B / 0xFB). rare
// collects |x| + (top - inf - 1), whose top bit is set for NaN inputs (redone by the rare path:
// the instruction drops their sign), and with InfRare also for inf inputs (fake quantization:
// under overflow `sat` an inf input gives the inf code, which fast_decode_fp32_lean does not
// decode).
template <CastInput In, HwFp8 F, bool InfRare>
__device__ __forceinline__ void hw_vector_rne(
    const std::uint32_t (&w)[4], std::uint32_t ovf_add,
    std::uint32_t (&res)[4 / sizeof(typename InputTraits<In>::T)], std::uint32_t& rare) {
  if constexpr (In == CastInput::fp32) {
    std::uint32_t s[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const std::uint32_t a = w[k] & 0x7FFFFFFFu;
      s[k] = a + ovf_add;
      rare |= a + (0x80000000u - (InfRare ? 0x7F800000u : 0x7F800001u));
    }
    const std::uint32_t c = cvt_f32x4<F>(__uint_as_float(w[0]), __uint_as_float(w[1]),
                                         __uint_as_float(w[2]), __uint_as_float(w[3]));
    // Bytes 3 and 7 of each pair, sign-replicated: the four flags as 0x00 / 0xFF bytes.
    const std::uint32_t f = prmt(prmt(s[0], s[1], 0xFBu), prmt(s[2], s[3], 0xFBu), 0x5410u);
    res[0] = c + (f & 0x01010101u);
  } else {
    constexpr std::uint32_t kInf = In == CastInput::bf16 ? 0x7F80u : 0x7C00u;
    constexpr std::uint32_t kNanAdd = (0x8000u - kInf - (InfRare ? 0u : 1u)) * 0x00010001u;
    std::uint32_t s[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const std::uint32_t a = w[k] & 0x7FFF7FFFu;  // lane sums stay below 2^16: no carry across
      s[k] = a + ovf_add;
      rare |= a + kNanAdd;
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const std::uint32_t p0 = w[2 * j], p1 = w[2 * j + 1];
      std::uint32_t c;
      if constexpr (In == CastInput::fp16) {
        c = cvt_f16x4<F>(p0, p1);
      } else {
        c = cvt_f32x4<F>(__uint_as_float(p0 << 16), __uint_as_float(p0 & 0xFFFF0000u),
                         __uint_as_float(p1 << 16), __uint_as_float(p1 & 0xFFFF0000u));
      }
      // Bytes 1, 3, 5, 7 of the two words (bits 15 and 31 of each), sign-replicated.
      const std::uint32_t f = prmt(s[2 * j], s[2 * j + 1], 0xFDB9u);
      res[j] = c + (f & 0x01010101u);
    }
  }
}

// The constants of the hw path's sr:R rounding (hw_codes_sr), uniform over the launch.
struct HwSr {
  std::uint32_t norm_min;  // fp32 bits of 2^emin, f's smallest normal magnitude
  float scale;             // 2^(23 - M - R)
  // 16-bit inputs (hw_sr_magic): 2^emin in both halves as bf16 and as fp16 (e4m3 and e5m2 have
  // emin >= -14, fp16's smallest normal exponent), 2^(23 - M - R) in both halves as bf16, and
  // the fp32 bits of 2^(23 - M - R - 15): added to an fp16 exponent field moved to bit 23, they
  // give mg.
  std::uint32_t norm_min2_bf16, norm_min2_fp16, scale2_bf16, mg_bias_fp16;
  std::uint32_t rand_mul;  // 2^R: the R-bit word is the high word of word * 2^R
  std::uint32_t keep;      // ~(2^R - 1)
  // Overflow none: added to the high halves of two rounded magnitudes, it sets bit 15 of a half
  // exactly where the magnitude is past f's max (0: sat, satfinite, the instruction's +-max).
  std::uint32_t ovf_add2;
};

__device__ __forceinline__ HwSr hw_sr_consts(const CastArgs& a) {
  const int R = a.r.sr_bits;
  HwSr c;
  c.norm_min = a.plan.norm_min;
  const int s = a.plan.normal_shift - R;  // 23 - M - R
  c.scale = __uint_as_float(static_cast<std::uint32_t>(127 + s) << 23);
  c.norm_min2_bf16 = (c.norm_min >> 16) * 0x00010001u;
  c.norm_min2_fp16 = (((c.norm_min >> 23) - 112u) << 10) * 0x00010001u;
  c.scale2_bf16 = (__float_as_uint(c.scale) >> 16) * 0x00010001u;
  c.mg_bias_fp16 = static_cast<std::uint32_t>(112 + s) << 23;
  c.rand_mul = 1u << R;
  c.keep = ~(c.rand_mul - 1u);
  // hw_plan's ovf_add puts f's max at 2^31 - ovf_add - 1; its low 16 bits are zero (M <= 3).
  const std::uint32_t max_hi = (0x80000000u - a.hw_ovf_add - 1u) >> 16;
  c.ovf_add2 = a.hw_ovf_add != 0 ? (0x8000u - (max_hi + 1u)) * 0x00010001u : 0u;
  return c;
}

// The fp32 bits x of elements 4j .. 4j + 3 of a 16-byte input vector and their magic numbers
// mg = 2^(max(exponent of |x|, emin) + 23 - M - R) (hw_codes_sr). fp32: e's bits by a mask and a
// max, mg by one multiplication (exact, or inf past fp32's range). 16-bit inputs take the
// exponent fields of two elements with one mask and one packed max (their exponent fields are
// exact 16-bit powers of two, or inf for inf and NaN), then
//   bf16: one packed bf16 multiplication by 2^(23 - M - R) (bf16 has fp32's exponent range: the
//         same power of two, or inf), and each half moved into an fp32 word;
//   fp16: the fp16 exponent field E moved to fp32's (bit 23) plus the bits of 2^(23 - M - R - 15)
//         (an fp32 power of two; for E = 31, inf and NaN, a finite one: t is then inf or NaN and
//         so is y, as in the fp32 case), one multiply-add for the low half (the shift drops the
//         high half) and a conversion and a multiplication for the high one.
// Against one mask, one max and one fp32 multiplication per element: two instructions less per
// two bf16 elements, one per two fp16 elements (H100 bf16 / fp16 -> e4m3fn sr:8 317 / 314 -> 312 /
// 309 us, bench/results/2026-11-26-h100-cast-sr16-magic.md). An fp32 vector is one block (j = 0).
template <CastInput In>
__device__ __forceinline__ void hw_sr_magic(const uint4& v, int j, const HwSr& c,
                                            std::uint32_t (&x)[4], float (&mg)[4]) {
  if constexpr (In == CastInput::fp32) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      x[k] = InputTraits<In>::widen_lean_at(v, k);
      const std::uint32_t e = max(x[k] & 0x7F800000u, c.norm_min);
      mg[k] = __fmul_rn(__uint_as_float(e), c.scale);
    }
  } else {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::uint32_t w = word_of(v, 2 * j + h);
      x[2 * h] = InputTraits<In>::widen_lean_at(v, 4 * j + 2 * h);
      x[2 * h + 1] = InputTraits<In>::widen_lean_at(v, 4 * j + 2 * h + 1);
      if constexpr (In == CastInput::bf16) {
        const std::uint32_t ep = hmax2_bf16(w & 0x7F807F80u, c.norm_min2_bf16);
        const std::uint32_t mgp = hmul2_bf16(ep, c.scale2_bf16);
        mg[2 * h] = __uint_as_float(mgp << 16);
        mg[2 * h + 1] = __uint_as_float(mgp & 0xFFFF0000u);
      } else {
        const std::uint32_t ep = hmax2_fp16(w & 0x7C007C00u, c.norm_min2_fp16);
        mg[2 * h] = __uint_as_float((ep << 13) + c.mg_bias_fp16);
        mg[2 * h + 1] = __fmul_rn(
            __half2float(__ushort_as_half(static_cast<unsigned short>(ep >> 16))), c.scale);
      }
    }
  }
}

// The hw path's codes of four elements (fp32 bits x, x[0] in the low byte) under sr:R
// (SEMANTICS 3.1), word[k] the 32-bit Philox word of element k. The rounding happens on the fp32
// value and gives y, which the format holds exactly, so the instruction only encodes it. One
// formula for f's normal range and below it: with e = max(exponent of |x|, emin), |x| < 2^(e+1),
// f's grid step there is g = 2^(e - M), and
//   mg = 2^(e + 23 - M - R)      (hw_sr_magic: by one multiplication of e's bits, or for 16-bit
//                                inputs on two elements at once);
//   t  = rz(mg + |x|)            lies in [mg, 2 mg) (R <= 21 - M puts 2^(e+1) below mg), where
//                                the ulp is u = g 2^-R: its bits are mg's plus floor(|x| / u),
//                                the residual truncated to R bits (section 3.1);
//   t' = t + (word >> (32 - R))  as integers (one LEA.HI for sr:8), inside mg's binade
//                                (floor(|x|/u) < 2^(M+R+1), + 2^R < 2^23); the carry out of the
//                                low R bits is the rounding up;
//   y  = (t' with the low R bits cleared) - mg, exactly T g.
// Inputs whose mg is not a finite fp32 number (|x| >= 2^(105 + M + R), inf, NaN) give y = NaN or
// inf (or a y with the sign bit set): top, the largest y seen, reaches 0x7F800000 and the caller
// redoes the vector on the rare path. A finite y past f's max saturates in the instruction, which
// is the policy's code under sat and satfinite; under overflow none the code gains one, flagged as
// in hw_vector_rne, here on the high halves of y (y's low 16 bits are zero, M <= 3): two per word.
// The instruction encodes |y|; the signs join the four codes at the end, `signs` holding each
// element's sign at bit 7 of its byte (sign_bytes: one PRMT per four 16-bit inputs, where one
// LOP3 per element put the sign on y before).
template <HwFp8 F, int RC>
__device__ __forceinline__ std::uint32_t hw_codes_sr(const std::uint32_t (&x)[4],
                                                     const float (&mg)[4],
                                                     const std::uint32_t (&word)[4],
                                                     std::uint32_t signs, const HwSr& c,
                                                     std::uint32_t& top) {
  float y[4];          // |y|
  std::uint32_t m[4];  // its bits
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float t = __fadd_rz(fabsf(__uint_as_float(x[k])), mg[k]);
    const std::uint32_t t1 =
        __float_as_uint(t) + (RC != 0 ? word[k] >> (32 - RC) : __umulhi(word[k], c.rand_mul));
    // R compiled in: the mask is an immediate (read from c, ptxas rebuilt it in every span).
    const std::uint32_t keep = RC != 0 ? ~((1u << RC) - 1u) : c.keep;
    const float ya = __fsub_rn(__uint_as_float(t1 & keep), mg[k]);
    m[k] = __float_as_uint(ya);
    top = max(top, m[k]);
    y[k] = ya;
  }
  const std::uint32_t c4 = cvt_f32x4<F>(y[0], y[1], y[2], y[3]);
  // The high halves of |y0|, |y1| and of |y2|, |y3| (below 0x7F80 unless top sends the vector to
  // the rare path: no carry across halves), plus ovf_add2; bits 15 and 31, sign-replicated.
  const std::uint32_t s01 = prmt(m[0], m[1], 0x7632u) + c.ovf_add2;
  const std::uint32_t s23 = prmt(m[2], m[3], 0x7632u) + c.ovf_add2;
  return (c4 + (prmt(s01, s23, 0xFDB9u) & 0x01010101u)) | (signs & 0x80808080u);
}

// The signs of elements 4j .. 4j + 3 of a 16-byte input vector at bit 7 of bytes 0..3 (the other
// bits are not cleared): the top byte of each fp32 lane, or the high byte of each 16-bit half.
template <CastInput In>
__device__ __forceinline__ std::uint32_t sign_bytes(const uint4& v, int j) {
  if constexpr (In == CastInput::fp32) {
    return prmt(prmt(v.x, v.y, 0x0073u), prmt(v.z, v.w, 0x0073u), 0x5410u);
  } else {
    return j == 0 ? prmt(v.x, v.y, 0x7531u) : prmt(v.z, v.w, 0x7531u);
  }
}

// The hw path under rne over whole warp spans (as lean_kernel; the tail takes lean_tail_kernel,
// whose results are the same). Out: uint8_t codes, or float for fake quantization (the codes
// decoded by fast_decode_fp32_lean, as the lean path does). Inputs outside the path's domain
// (NaN; inf in fake quantization) are redone per vector by rare_one.
template <CastInput In, HwFp8 F, typename Out>
__global__ void __launch_bounds__(kThreads)
    hw_kernel(const void* __restrict__ in_, std::size_t n, Out* __restrict__ out, CastArgs a) {
  using T = typename InputTraits<In>::T;
  constexpr int G = 16 / sizeof(T);  // elements per 16-byte input vector
  constexpr int KG = kLeanElems / G;
  constexpr bool fake = std::is_same_v<Out, float>;
  // The smallest |x| (fp32 bits) of the rare path: NaN, and inf in fake quantization.
  constexpr std::uint32_t kRareFrom = fake ? 0x7F800000u : 0x7F800001u;
  const T* in = static_cast<const T*>(in_);
  for_each_span<T, KG, false>(in, n, [&](const uint4(&raw)[KG], std::size_t base) {
#pragma unroll
    for (int u = 0; u < KG; ++u) {
      const std::size_t idx = vector_index<T>(base, u);
      const std::uint32_t w[4] = {raw[u].x, raw[u].y, raw[u].z, raw[u].w};
      std::uint32_t res[G / 4];
      std::uint32_t rare = 0;
      hw_vector_rne<In, F, fake>(w, a.hw_ovf_add, res, rare);
      constexpr std::uint32_t kTop = In == CastInput::fp32 ? 0x80000000u : 0x80008000u;
      const bool any_rare = (rare & kTop) != 0;
      if constexpr (fake) {
        float vals[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
          vals[g] = native::fast_decode_fp32_lean(a.plan, (res[g / 4] >> (8 * (g % 4))) & 0xFFu);
        }
        if (any_rare) {
#pragma unroll
          for (int g = 0; g < G; ++g) {
            const std::uint32_t x = InputTraits<In>::widen(lane_of<T>(raw[u], g));
            if ((x & 0x7FFFFFFFu) >= kRareFrom)
              vals[g] = rare_one<In, float, FastMode::rne>(a, x, 0u);
          }
        }
        store_group(out + idx, vals);
      } else {
        if (any_rare) {
#pragma unroll
          for (int g = 0; g < G; ++g) {
            const std::uint32_t x = InputTraits<In>::widen(lane_of<T>(raw[u], g));
            if ((x & 0x7FFFFFFFu) >= kRareFrom) {
              const std::uint32_t code = rare_one<In, std::uint8_t, FastMode::rne>(a, x, 0u);
              const int sh = 8 * (g % 4);
              res[g / 4] = (res[g / 4] & ~(0xFFu << sh)) | (code << sh);
            }
          }
        }
        store_codes<G>(out + idx, res);
      }
    }
  });
}

// sr_span_kernel's arithmetic on the hw path: hw_codes_sr, a vector rare where a rounded
// magnitude reached inf's bits (NaN, inf, |x| too large for the constants).
template <HwFp8 F, int RC>
struct HwSrCodes {
  using Consts = HwSr;
  static __device__ __forceinline__ Consts consts(const CastArgs& a) { return hw_sr_consts(a); }
  template <CastInput In>
  static __device__ __forceinline__ std::uint32_t codes(const CastArgs&, const uint4& v, int j,
                                                        const std::uint32_t (&word)[4],
                                                        const Consts& c, std::uint32_t& top) {
    std::uint32_t x[4];
    float mg[4];
    hw_sr_magic<In>(v, j, c, x, mg);
    return hw_codes_sr<F, RC>(x, mg, word, sign_bytes<In>(v, j), c, top);
  }
  static __device__ __forceinline__ bool rare(std::uint32_t top, const Consts&) {
    return top >= 0x7F800000u;
  }
};

// The constants of the lean path's sr:R span rounding (lean_codes_sr), uniform over the launch.
struct LeanSr {
  std::uint32_t norm_min;  // fp32 bits of 2^max(emin, -126) (FastCastPlan::norm_min)
  float scale;             // 2^(23 - M - R)
  int field_shift;         // 23 - M - R: (e - norm_min) >> it is f's exponent-field step, times 2^R
  std::uint32_t lean_lo;   // the lean domain's lowest |x| bits (0, or 2^-126 for e8m0fnu)
  std::uint32_t rare_hi;   // the largest |x| - lean_lo rounded here (the rest: rare_one)
};

__device__ __forceinline__ LeanSr lean_sr_consts(const CastArgs& a) {
  const int R = a.r.sr_bits;
  const int M = 23 - a.plan.normal_shift;
  LeanSr c;
  c.norm_min = a.plan.norm_min;
  c.field_shift = a.plan.normal_shift - R;
  c.scale = __uint_as_float(static_cast<std::uint32_t>(127 + c.field_shift) << 23);
  // mg = 2^(e + 23 - M - R) is a finite fp32 number for |x| < 2^(105 + M + R); the lean domain
  // is |x| - lean_lo <= lean_span.
  const std::uint32_t mg_finite = (static_cast<std::uint32_t>(127 + 105 + M + R) << 23) - 1u;
  c.lean_lo = a.plan.lean_lo;
  c.rare_hi = min(a.plan.lean_span, mg_finite - c.lean_lo);
  return c;
}

// The lean path's codes of four elements under sr:RC (x[0] in the low byte), for 8-bit formats
// with subnormals and a zero whose normal range starts inside fp32's (lean_sr_span_ok): the
// rounding of hw_codes_sr, which leaves in t' the sum of mg's bits and floor(|x| / u) plus the
// R-bit word (u = g 2^-R, g = 2^(e - M) the grid step at e = max(exponent of |x|, emin)), read
// as an integer instead of decoded: (t' - mg) >> R is T = floor(|x| / g) + carry, |x|'s rounded
// magnitude in steps of g, and f's magnitude code is T + (e - emin) 2^M, one formula for the
// normal range (T in [2^M, 2^(M+1)], the carry into the next binade included) and below it
// (e = emin, T in [0, 2^M]: the subnormal codes and the smallest normal). The (e - emin) 2^M
// term joins before the shift as (e's bits - norm_min) >> (23 - M - R). Overflow and the sign
// then follow native::fast_lean_finish. Where |x| - lean_lo > rare_hi the vector is redone by
// rare_one. Lo: the lean domain starts above 0 (e8m0fnu, whose normal range covers fp32's:
// norm_min is then 2^-126's bits and the term (e - 2^-126) 2^M is the code's, f's bias being
// fp32's; zero and fp32 subnormals go to rare_one, which flags them for the native engine).
template <bool Signed, bool NegZero, int RC, bool Lo>
__device__ __forceinline__ std::uint32_t lean_codes_sr(const CastArgs& a,
                                                       const std::uint32_t (&x)[4],
                                                       const std::uint32_t (&word)[4],
                                                       const LeanSr& c, std::uint32_t& top) {
  static_assert(RC > 0, "R compiled in");
  std::uint32_t codes = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const std::uint32_t ax = x[k] & 0x7FFFFFFFu;
    top = max(top, Lo ? ax - c.lean_lo : ax);
    const std::uint32_t e = max(x[k] & 0x7F800000u, c.norm_min);
    const float mg = __fmul_rn(__uint_as_float(e), c.scale);
    const std::uint32_t t =
        __float_as_uint(__fadd_rz(__uint_as_float(ax), mg)) + (word[k] >> (32 - RC));
    const std::uint32_t mag = (t - __float_as_uint(mg) + ((e - c.norm_min) >> c.field_shift)) >> RC;
    codes |= native::fast_lean_finish<Signed, NegZero>(a.plan, x[k], mag) << (8 * k);
  }
  return codes;
}

template <bool Signed, bool NegZero, int RC, bool Lo = false>
struct LeanSrCodes {
  using Consts = LeanSr;
  static __device__ __forceinline__ Consts consts(const CastArgs& a) { return lean_sr_consts(a); }
  template <CastInput In>
  static __device__ __forceinline__ std::uint32_t codes(const CastArgs& a, const uint4& v, int j,
                                                        const std::uint32_t (&word)[4],
                                                        const Consts& c, std::uint32_t& top) {
    std::uint32_t x[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) x[k] = InputTraits<In>::widen_lean_at(v, 4 * j + k);
    return lean_codes_sr<Signed, NegZero, RC, Lo>(a, x, word, c, top);
  }
  static __device__ __forceinline__ bool rare(std::uint32_t top, const Consts& c) {
    return top > c.rare_hi;
  }
};

// sr:R over whole warp spans (pipelined, for_each_span), the arithmetic from Codes: the hw path
// (HwSrCodes) or the lean path's 8-bit formats under sr:8 (LeanSrCodes). A span's codes are all
// computed before any is stored, with no branch in between, so that the compiler can overlap one
// vector's Philox rounds (multiplier pipe) with another's rounding (integer and fp32 pipes). The
// thread's Philox blocks (offset + base) / 4 + lane G/4 + 32 u G/4 + j share their high counter
// word unless the span crosses a multiple of 2^32 blocks, so one philox_prefix serves them all; a
// span that does cross, and a vector with a rare element (hw_codes_sr: NaN, inf, |x| too large
// for its constants), are redone by rare_one afterwards with the words drawn again in full.
// Codes::codes<In>(v, j) gives the four codes of elements 4j .. 4j + 3 of the 16-byte vector v
// (widening them itself: the hw path finds two 16-bit elements' magic numbers at once) and raises
// `top`; Codes::rare(top) sends the vector to the rare path. On the hw path R is compiled in (8,
// the common sr:8: the word's top byte is added by one LEA.HI) or read from the arguments (RC = 0).
// Out as for hw_kernel.
template <CastInput In, typename Codes, typename Out>
__global__ void __launch_bounds__(kThreads, 2)
    sr_span_kernel(const void* __restrict__ in_, std::size_t n, Out* __restrict__ out, CastArgs a) {
  using T = typename InputTraits<In>::T;
  constexpr int G = 16 / sizeof(T);  // elements per 16-byte input vector
  constexpr int KG = kLeanElems / G;
  constexpr int kBlocksPerVector = G / 4;
  constexpr bool fake = std::is_same_v<Out, float>;
  const typename Codes::Consts c = Codes::consts(a);
  const T* in = static_cast<const T*>(in_);
  const auto body_fn = [&](const uint4(&raw)[KG], std::size_t base) {
    const SpanWords<T> sw(a, base);
    std::uint32_t rare = sw.crosses ? ~0u : 0u;  // bit u: vector u is redone
    std::uint32_t res[KG][kBlocksPerVector];
#pragma unroll
    for (int u = 0; u < KG; ++u) {
      std::uint32_t top = 0;
#pragma unroll
      for (int j = 0; j < kBlocksPerVector; ++j) {
        const native::Philox4 b = sw.block(a, u, j);
        res[u][j] = Codes::template codes<In>(a, raw[u], j, b.w, c, top);
      }
      if (Codes::rare(top, c)) rare |= 1u << u;
    }
    // The rare path's result of element 4j + k of vector u at idx (a code, or its value). The
    // input is read again (keeping raw[] live through the span cost spills).
    const auto rare_elem = [&](std::size_t idx, int j, int k, const native::Philox4& b,
                               auto out_tag) {
      const std::uint32_t x = InputTraits<In>::widen(in[idx + 4 * j + k]);
      return rare_one<In, decltype(out_tag), FastMode::sr>(a, x,
                                                           native::sr_word(b.w[k], a.r.sr_bits));
    };
    if constexpr (fake) {
#pragma unroll
      for (int u = 0; u < KG; ++u) {
        const std::size_t idx = vector_index<T>(base, u);
        float vals[G];
        if ((rare >> u) & 1u) {
#pragma unroll
          for (int j = 0; j < kBlocksPerVector; ++j) {
            const native::Philox4 b = sr_block(a, idx, j);
#pragma unroll
            for (int k = 0; k < 4; ++k) vals[4 * j + k] = rare_elem(idx, j, k, b, float{});
          }
        } else {
#pragma unroll
          for (int g = 0; g < G; ++g) {
            vals[g] =
                native::fast_decode_fp32_lean(a.plan, (res[u][g / 4] >> (8 * (g % 4))) & 0xFFu);
          }
        }
        store_group(out + idx, vals);
      }
    } else {
      if (rare != 0) {
#pragma unroll
        for (int u = 0; u < KG; ++u) {
          if (((rare >> u) & 1u) == 0) continue;
          const std::size_t idx = vector_index<T>(base, u);
#pragma unroll
          for (int j = 0; j < kBlocksPerVector; ++j) {
            const native::Philox4 b = sr_block(a, idx, j);
            std::uint32_t w = 0;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
              w |= static_cast<std::uint32_t>(rare_elem(idx, j, k, b, std::uint8_t{})) << (8 * k);
            }
            res[u][j] = w;
          }
        }
      }
#pragma unroll
      for (int u = 0; u < KG; ++u) store_codes<G>(out + vector_index<T>(base, u), res[u]);
    }
  };
  for_each_span<T, KG, true>(in, n, body_fn);
}

// The lean path's second pass: when the first flagged an input that needs the native engine,
// every such input is converted again by native::convert (every block returns at once otherwise).
template <CastInput In, typename Out>
__global__ void __launch_bounds__(kThreads)
    engine_fixup_kernel(const void* __restrict__ in_, std::size_t n, Out* __restrict__ out,
                        CastArgs a) {
  if (*a.engine_flag == 0) return;
  using T = typename InputTraits<In>::T;
  const T* in = static_cast<const T*>(in_);
  const bool sr = a.r.mode == RoundMode::sr;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const std::uint32_t u = InputTraits<In>::widen(in[i]);
    if (!native::fast_needs_engine(a.plan, u)) continue;
    const std::uint32_t rand = sr ? native::sr_word(sr_word_at(a, i), a.r.sr_bits) : 0u;
    constexpr FloatFormat kFp32 = formats::fp32;  // a value: device code cannot bind the global
    const std::uint32_t code = generic_convert(kFp32, a.to, a.r, u, rand);
    if constexpr (std::is_same_v<Out, float>) {
      out[i] = native::to_float(a.to, code);
    } else {
      out[i] = static_cast<Out>(code);
    }
  }
}

// Out: uint8_t / uint16_t codes, or float for fake quantization (fast and generic paths).
template <CastInput In, typename Out, Path P>
__global__ void __launch_bounds__(kThreads)
    cast_kernel(const void* __restrict__ in_, std::size_t n, Out* __restrict__ out, CastArgs a) {
  using T = typename InputTraits<In>::T;
  constexpr int G = 16 / sizeof(T);  // elements per 16-byte input vector
  const T* in = static_cast<const T*>(in_);
  const bool sr = a.r.mode == RoundMode::sr;
  constexpr std::size_t kWarpSpan = 32 * kGroups * G;  // elements per warp and step
  const std::size_t lane = threadIdx.x % 32;
  const std::size_t tile = static_cast<std::size_t>(kThreads) * kGroups * G;
  for (std::size_t base =
           static_cast<std::size_t>(blockIdx.x) * tile + threadIdx.x / 32 * kWarpSpan;
       base < n; base += static_cast<std::size_t>(gridDim.x) * tile) {
    if (a.vector_ok && base + kWarpSpan <= n) {
      // The warp's whole span is in range: every group is one 16-byte load and one store.
      uint4 raw[kGroups];
#pragma unroll
      for (int u = 0; u < kGroups; ++u) {
        raw[u] = *reinterpret_cast<const uint4*>(in + base + (u * 32 + lane) * G);
      }
#pragma unroll
      for (int u = 0; u < kGroups; ++u) {
        const std::size_t idx = base + (u * 32 + lane) * G;
        const T* x = reinterpret_cast<const T*>(&raw[u]);
        Out res[G];
#pragma unroll
        for (int g = 0; g < G; g += 4) {
          // vector_ok includes offset % 4 == 0: elements idx + g .. + 3 are one Philox block.
          native::Philox4 b{};
          if (sr) b = native::philox_block(a.keys, a.stream, (a.offset + idx + g) >> 2);
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const std::uint32_t rand = sr ? native::sr_word(b.w[k], a.r.sr_bits) : 0u;
            const std::uint32_t code = cast_one<In, P>(a, x[g + k], rand);
            if constexpr (std::is_same_v<Out, float>) {
              res[g + k] = decode_one<P>(a, code);
            } else {
              res[g + k] = static_cast<Out>(code);
            }
          }
        }
        store_group(out + idx, res);
      }
    } else {
      // The ragged end (or unaligned pointers / offset): element by element, one copy of the
      // code so that the hot loop above stays small.
      const std::size_t end = base + kWarpSpan < n ? base + kWarpSpan : n;
#pragma unroll 1
      for (std::size_t i = base + lane; i < end; i += 32) {
        std::uint32_t rand = 0;
        if (sr) {
          rand = native::sr_word(sr_word_at(a, i), a.r.sr_bits);
        }
        const std::uint32_t code = cast_one<In, P>(a, in[i], rand);
        if constexpr (std::is_same_v<Out, float>) {
          out[i] = decode_one<P>(a, code);
        } else {
          out[i] = static_cast<Out>(code);
        }
      }
    }
  }
}

template <typename Code, Path P>
__global__ void __launch_bounds__(kThreads)
    decode_kernel(const Code* __restrict__ codes, std::size_t n, float* __restrict__ out,
                  CastArgs a) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = decode_one<P>(a, codes[i]);
  }
}

// The mode-fixed lean path serves rounding r on format f.
bool lean_serves(const FloatFormat& f, const Rounding& r) {
  return native::fast_fixed_supported(f) && fast_mode_for(f, r) != FastMode::any;
}

// The hw path's constants for input type t, when the fp8 instructions compute the cast of f
// under r: f is e4m3fn or e5m2, the device runs the instructions, and
//   - r is rne, and the policy's code equals the instruction's (rne + satfinite) on every
//     non-NaN input magnitude below some m0 and is that code plus one from m0 up to inf, both
//     signs (overflow none: m0 is the smallest magnitude whose rounding overflows, e4m3fn 0x7E ->
//     0x7F NaN, e5m2 0x7B -> 0x7C inf; sat: m0 = inf; satfinite: no m0); ovf_add sets the top bit
//     of |x| + ovf_add (of each 16-bit lane) exactly from m0 up (0 without m0). The search
//     assumes what it checks at m0 and inf (rounding is monotone in the magnitude);
//   - or r is sr:R with R <= 21 - M, and the overflow code is +-max (sat, satfinite: ovf_add 0)
//     or +-(max + 1) (none: 2^31 - ovf_add is the smallest rounded magnitude y past max, from
//     which hw_codes_sr sends a vector to the rare path); inf inputs take the rare path. Its other
//     constants come from the FastCastPlan.
// Returns ovf_add, or nothing when the path does not apply.
std::optional<std::uint32_t> hw_plan(const FloatFormat& f, const Rounding& r, CastInput t) {
  const bool e4m3 = f == formats::e4m3fn;
  if (!e4m3 && f != formats::e5m2) return std::nullopt;
  // sr: R <= 21 - M keeps hw_codes_sr's sums inside one binade (lean takes R up to 23 - M).
  const bool sr = fast_mode_for(f, r) == FastMode::sr && r.sr_bits <= 21 - f.man_bits;
  if (r.mode != RoundMode::rne && !sr) return std::nullopt;
  if (!hw_fp8_available()) return std::nullopt;
  const auto max = static_cast<std::uint32_t>(f.max_code());
  const auto sign_bit = static_cast<std::uint32_t>(f.sign_bit());
  if (sr) {
    const auto pos = static_cast<std::uint32_t>(native::overflow_result(f, r, false).code);
    const auto neg = static_cast<std::uint32_t>(native::overflow_result(f, r, true).code);
    if (pos == max + 1 && neg == ((max + 1) | sign_bit)) {
      return 0x80000000u - (native::bits_of(native::to_float(f, max)) + 1u);
    }
    if (pos == max && neg == (max | sign_bit)) return 0u;
    return std::nullopt;
  }
  const FloatFormat from = t == CastInput::fp32   ? formats::fp32
                           : t == CastInput::bf16 ? formats::bf16
                                                  : formats::fp16;
  const std::uint32_t inf = t == CastInput::fp32   ? 0x7F800000u
                            : t == CastInput::bf16 ? 0x7F80u
                                                   : 0x7C00u;
  const std::uint32_t sign = t == CastInput::fp32 ? 0x80000000u : 0x8000u;
  const Rounding sat{RoundMode::rne, 0, Overflow::satfinite};
  const auto code = [&](std::uint32_t x, const Rounding& rr) {
    return static_cast<std::uint32_t>(native::convert(from, f, rr, x).code);
  };
  const auto plus_one = [&](std::uint32_t m) {
    return code(m, r) == code(m, sat) + 1 && code(m | sign, r) == code(m | sign, sat) + 1;
  };
  if (code(inf, r) == code(inf, sat) && code(inf | sign, r) == code(inf | sign, sat)) {
    return 0u;  // satfinite: the instruction's codes throughout
  }
  if (!plus_one(inf)) return std::nullopt;
  std::uint32_t lo = 0, hi = inf;  // code(hi) differs, code(lo) = code(0) does not
  while (hi - lo > 1) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    (code(mid, r) != code(mid, sat) ? hi : lo) = mid;
  }
  if (!plus_one(hi)) return std::nullopt;
  return t == CastInput::fp32 ? 0x80000000u - hi : (0x8000u - hi) * 0x00010001u;
}

void check_params(const CastParams& p) {
  const Rounding& r = p.rounding;
  if (r.mode == RoundMode::sr && (r.sr_bits < 1 || r.sr_bits > 32)) {
    throw InputError("cast: sr_bits must be in 1..32 for stochastic rounding, got " +
                     std::to_string(r.sr_bits));
  }
  code_bytes(p.to);
  if (p.path == CastPath::fast && !fast_cast_supported(p.to) && !lean_serves(p.to, r)) {
    throw InputError(
        "cast: the fast path needs rne, rtz or sr:R with R <= 23 - M (any float format of at "
        "most 16 bits but signed formats without subnormals), or a signed format with "
        "subnormals and a range inside fp32's for the other modes");
  }
}

// The arithmetic of a cast: the lean path for rne / rtz / sr:R on every format it serves (fake
// quantization needs formats whose values are fp32 values), fast_cast_fp32 for the other modes
// on formats with a range inside fp32's, else (or when asked) the native engine.
// hw_ovf_add receives hw_plan's constant when the hw path is chosen (its bisection runs once).
Path choose_path(const CastParams& p, bool fake, CastInput t, std::uint32_t* hw_ovf_add = nullptr) {
  if (p.path == CastPath::generic) return Path::generic;
  if (const auto h = hw_plan(p.to, p.rounding, t)) {
    if (hw_ovf_add != nullptr) *hw_ovf_add = *h;
    return Path::hw;
  }
  if (lean_serves(p.to, p.rounding) && (!fake || fast_cast_supported(p.to))) return Path::lean;
  if (fast_cast_supported(p.to)) return Path::fast;
  return Path::generic;
}

CastArgs make_args(const CastParams& p, CastInput in_type, bool vector_ok, Path path,
                   std::uint32_t hw_ovf_add = 0) {
  CastArgs a{};
  a.plan = path != Path::generic ? make_fast_cast_plan(p.to, p.rounding) : FastCastPlan{};
  a.from = in_type == CastInput::fp32   ? formats::fp32
           : in_type == CastInput::bf16 ? formats::bf16
                                        : formats::fp16;
  a.to = p.to;
  a.r = p.rounding;
  a.keys = native::philox_keys(p.seed);
  a.offset = p.index_offset;
  a.stream = p.stream;
  a.vector_ok = vector_ok;
  a.hw_ovf_add = hw_ovf_add;
  return a;
}

// The vector path's preconditions: 16-byte aligned pointers, and an index offset that keeps
// each group of 4 elements on one Philox block.
bool vector_ok(const void* in, const void* out, const CastParams& p) {
  return aligned16(in, out) && p.index_offset % 4 == 0;
}

// Launches a lean or hw kernel over `body` elements (whole warp spans): a grid by size, or for a
// Pipelined kernel (for_each_span) its shared memory and a resident grid.
template <CastInput In, bool Pipelined, auto Kernel, typename Out>
void launch_spans(const void* in, std::size_t body, Out* out, const CastArgs& a, cudaStream_t s) {
  constexpr int KG = kLeanElems / (16 / sizeof(typename InputTraits<In>::T));
  unsigned grid = grid_for(body, kLeanElems);
  std::size_t smem = 0;
  if constexpr (Pipelined) {
    smem = span_stage_bytes<KG>();
    grid = resident_grid<Kernel>(smem, grid);
  }
  Kernel<<<grid, kThreads, smem, s>>>(in, body, out, a);
  cuda_check_launch("cast kernel launch");
}

// The elements [body, n) past the last whole warp span, element by element.
template <CastInput In, typename Out, FastMode Mode>
void launch_lean_tail(const void* in, std::size_t body, std::size_t n, Out* out, const CastArgs& a,
                      cudaStream_t s) {
  if (body < n) {
    lean_tail_kernel<In, Out, Mode><<<grid_for(n - body, 1), kThreads, 0, s>>>(in, body, n, out, a);
    cuda_check_launch("cast tail kernel launch");
  }
}

// Where the lean path's sr:8 goes through sr_span_kernel (lean_codes_sr): 8-bit formats whose
// inputs below the normal range round to subnormals inside fp32's normal range (below_round), with
// a zero (lean domain from 0) and no engine inputs; and unsigned formats whose normal range covers
// fp32's with fp32's bias (e8m0fnu: every fp32 normal input is a normal of f). The rest keeps
// lean_kernel.
bool lean_sr_span_ok(const CastArgs& a) {
  const FastCastPlan& p = a.plan;
  const FloatFormat& f = p.f;
  const bool below = p.below_round && p.lean_lo == 0 && p.slow_span == 0;
  const bool covers = !f.is_signed && f.emin() + 127 <= 0 && p.cbias == 0;
  // (8 bits hold M <= 7, so R = 8 <= 21 - M, lean_codes_sr's bound, always holds.)
  return a.r.mode == RoundMode::sr && a.r.sr_bits == 8 && f.total_bits() <= 8 && (below || covers);
}

template <CastInput In, typename Out, FastMode Mode>
void launch_lean_mode(const void* in, std::size_t n, Out* out, const CastArgs& a, cudaStream_t s) {
  const FloatFormat& f = a.plan.f;
  // Whole warp spans through the vector kernel where the pointers and offset allow it.
  const std::size_t body = a.vector_ok ? n / kLeanWarpSpan * kLeanWarpSpan : 0;
  if constexpr (Mode == FastMode::sr && std::is_same_v<Out, std::uint8_t>) {
    if (body > 0 && lean_sr_span_ok(a)) {
      if (a.plan.lean_lo != 0) {
        launch_spans<In, true, sr_span_kernel<In, LeanSrCodes<false, false, 8, true>, Out>>(
            in, body, out, a, s);
      } else if (!f.is_signed) {
        launch_spans<In, true, sr_span_kernel<In, LeanSrCodes<false, false, 8>, Out>>(in, body, out,
                                                                                      a, s);
      } else if (f.has_neg_zero()) {
        launch_spans<In, true, sr_span_kernel<In, LeanSrCodes<true, true, 8>, Out>>(in, body, out,
                                                                                    a, s);
      } else {
        launch_spans<In, true, sr_span_kernel<In, LeanSrCodes<true, false, 8>, Out>>(in, body, out,
                                                                                     a, s);
      }
      launch_lean_tail<In, Out, Mode>(in, body, n, out, a, s);
      return;
    }
  }
  if (body > 0) {
    if (!f.is_signed) {
      launch_spans<In, false, lean_kernel<In, Out, Mode, false, false>>(in, body, out, a, s);
    } else if (f.has_neg_zero()) {
      launch_spans<In, false, lean_kernel<In, Out, Mode, true, true>>(in, body, out, a, s);
    } else {
      launch_spans<In, false, lean_kernel<In, Out, Mode, true, false>>(in, body, out, a, s);
    }
  }
  launch_lean_tail<In, Out, Mode>(in, body, n, out, a, s);
}

// The lean path, with the engine fix-up pass where the format has engine inputs at all (a flag
// in stream-ordered scratch memory, so that concurrent casts on other streams do not share it).
template <CastInput In, typename Out>
void launch_lean(const void* in, std::size_t n, Out* out, CastArgs a, cudaStream_t s) {
  const bool engine = a.plan.slow_span != 0;
  unsigned* flag = nullptr;
  if (engine) {
    cuda_check(cudaMallocAsync(reinterpret_cast<void**>(&flag), sizeof(unsigned), s),
               "cast: engine flag");
    cuda_check(cudaMemsetAsync(flag, 0, sizeof(unsigned), s), "cast: engine flag");
  } else {
    // Never written: no input needs the engine. A valid address all the same.
    cuda_check(cudaGetSymbolAddress(reinterpret_cast<void**>(&flag), g_unused_engine_flag),
               "cast: flag symbol");
  }
  a.engine_flag = flag;
  switch (fast_mode_for(a.plan, a.r)) {
    case FastMode::rne:
      launch_lean_mode<In, Out, FastMode::rne>(in, n, out, a, s);
      break;
    case FastMode::rtz:
      launch_lean_mode<In, Out, FastMode::rtz>(in, n, out, a, s);
      break;
    default:
      launch_lean_mode<In, Out, FastMode::sr>(in, n, out, a, s);
      break;
  }
  if (engine) {
    // A one-wave grid: its blocks only read the flag when no input needed the engine (a grid
    // sized by n cost ~250 us of block launches for 2^28 elements on an H200).
    const unsigned fix_grid = static_cast<unsigned>(
        std::min<std::size_t>(grid_for(n, 4), static_cast<std::size_t>(sm_count()) * 8));
    engine_fixup_kernel<In, Out><<<fix_grid, kThreads, 0, s>>>(in, n, out, a);
    cuda_check_launch("cast engine fix-up launch");
    cuda_check(cudaFreeAsync(flag, s), "cast: engine flag");
  }
}

// The hw path: whole warp spans by hw_kernel, the rest by the lean path's tail kernel (the same
// results). e4m3fn and e5m2 have no engine inputs, so no fix-up pass.
template <CastInput In, typename Out>
void launch_hw(const void* in, std::size_t n, Out* out, CastArgs a, cudaStream_t s) {
  cuda_check(cudaGetSymbolAddress(reinterpret_cast<void**>(&a.engine_flag), g_unused_engine_flag),
             "cast: flag symbol");
  const bool sr = a.r.mode == RoundMode::sr;
  const std::size_t body = a.vector_ok ? n / kLeanWarpSpan * kLeanWarpSpan : 0;
  if (body > 0) {
    const bool e4m3 = a.plan.f == formats::e4m3fn;
    if (sr) {
      const bool r8 = a.r.sr_bits == 8;
      if (e4m3 && r8) {
        launch_spans<In, true, sr_span_kernel<In, HwSrCodes<HwFp8::e4m3, 8>, Out>>(in, body, out, a,
                                                                                   s);
      } else if (e4m3) {
        launch_spans<In, true, sr_span_kernel<In, HwSrCodes<HwFp8::e4m3, 0>, Out>>(in, body, out, a,
                                                                                   s);
      } else if (r8) {
        launch_spans<In, true, sr_span_kernel<In, HwSrCodes<HwFp8::e5m2, 8>, Out>>(in, body, out, a,
                                                                                   s);
      } else {
        launch_spans<In, true, sr_span_kernel<In, HwSrCodes<HwFp8::e5m2, 0>, Out>>(in, body, out, a,
                                                                                   s);
      }
    } else if (e4m3) {
      launch_spans<In, false, hw_kernel<In, HwFp8::e4m3, Out>>(in, body, out, a, s);
    } else {
      launch_spans<In, false, hw_kernel<In, HwFp8::e5m2, Out>>(in, body, out, a, s);
    }
  }
  if (body < n) {
    const unsigned grid = grid_for(n - body, 1);
    if (sr) {
      lean_tail_kernel<In, Out, FastMode::sr><<<grid, kThreads, 0, s>>>(in, body, n, out, a);
    } else {
      lean_tail_kernel<In, Out, FastMode::rne><<<grid, kThreads, 0, s>>>(in, body, n, out, a);
    }
    cuda_check_launch("cast tail kernel launch");
  }
}

template <CastInput In, typename Out>
void launch_cast(const void* in, std::size_t n, Out* out, const CastArgs& a, Path path,
                 cudaStream_t s) {
  if constexpr (!std::is_same_v<Out, std::uint16_t>) {
    if (path == Path::hw) {
      launch_hw<In>(in, n, out, a, s);
      return;
    }
  }
  if (path == Path::lean) {
    launch_lean<In>(in, n, out, a, s);
    return;
  }
  const unsigned grid = grid_for(n, kGroups * 16 / sizeof(typename InputTraits<In>::T));
  if (path == Path::generic) {
    cast_kernel<In, Out, Path::generic><<<grid, kThreads, 0, s>>>(in, n, out, a);
  } else {
    cast_kernel<In, Out, Path::fast><<<grid, kThreads, 0, s>>>(in, n, out, a);
  }
  cuda_check_launch("cast kernel launch");
}

template <typename Out>
void dispatch_input(const void* in, CastInput t, std::size_t n, Out* out, const CastArgs& a,
                    Path path, cudaStream_t s) {
  switch (t) {
    case CastInput::fp32:
      launch_cast<CastInput::fp32>(in, n, out, a, path, s);
      break;
    case CastInput::bf16:
      launch_cast<CastInput::bf16>(in, n, out, a, path, s);
      break;
    case CastInput::fp16:
      launch_cast<CastInput::fp16>(in, n, out, a, path, s);
      break;
  }
}

}  // namespace

std::size_t code_bytes(const FloatFormat& f) {
  const int bits = f.total_bits();
  if (bits <= 8) return 1;
  if (bits <= 16) return 2;
  throw InputError("cast: target format has " + std::to_string(bits) +
                   " bits; GPU casts produce codes of at most 16 bits");
}

std::size_t input_bytes(CastInput t) {
  return t == CastInput::fp32 ? 4 : 2;
}

bool cast_uses_fast_path(const CastParams& p) {
  return choose_path(p, false, CastInput::fp32) != Path::generic;
}

void cast_codes(const void* in, CastInput in_type, std::size_t n, void* codes,
                const CastParams& params, CUstream_st* stream) {
  check_params(params);
  if (n == 0) return;
  std::uint32_t hw_ovf_add = 0;
  const Path path = choose_path(params, false, in_type, &hw_ovf_add);
  const CastArgs a = make_args(params, in_type, vector_ok(in, codes, params), path, hw_ovf_add);
  if (code_bytes(params.to) == 1) {
    dispatch_input(in, in_type, n, static_cast<std::uint8_t*>(codes), a, path, stream);
  } else {
    dispatch_input(in, in_type, n, static_cast<std::uint16_t*>(codes), a, path, stream);
  }
}

void cast_fake_quant(const void* in, CastInput in_type, std::size_t n, float* out,
                     const CastParams& params, CUstream_st* stream) {
  check_params(params);
  if (n == 0) return;
  std::uint32_t hw_ovf_add = 0;
  const Path path = choose_path(params, true, in_type, &hw_ovf_add);
  const CastArgs a = make_args(params, in_type, vector_ok(in, out, params), path, hw_ovf_add);
  dispatch_input(in, in_type, n, out, a, path, stream);
}

void decode_codes(const void* codes, const FloatFormat& f, std::size_t n, float* out,
                  CUstream_st* stream) {
  CastParams p;
  p.to = f;
  const std::size_t bytes = code_bytes(f);
  if (n == 0) return;
  // Field moves where every value of f is an fp32 value, else native::to_float.
  const bool fast = fast_cast_supported(f);
  const CastArgs a = make_args(p, CastInput::fp32, false, fast ? Path::fast : Path::generic);
  const unsigned grid = grid_for(n, 1);
  if (bytes == 1) {
    const auto* c = static_cast<const std::uint8_t*>(codes);
    if (fast) {
      decode_kernel<std::uint8_t, Path::fast><<<grid, kThreads, 0, stream>>>(c, n, out, a);
    } else {
      decode_kernel<std::uint8_t, Path::generic><<<grid, kThreads, 0, stream>>>(c, n, out, a);
    }
  } else {
    const auto* c = static_cast<const std::uint16_t*>(codes);
    if (fast) {
      decode_kernel<std::uint16_t, Path::fast><<<grid, kThreads, 0, stream>>>(c, n, out, a);
    } else {
      decode_kernel<std::uint16_t, Path::generic><<<grid, kThreads, 0, stream>>>(c, n, out, a);
    }
  }
  cuda_check_launch("decode kernel launch");
}

}  // namespace exmy::gpu
