// Element-wise cast kernels (gpu/cast/cast.hpp). A thread handles kGroups vectors of 16 input bytes
// (4 fp32 or 8 bf16/fp16 elements each); the lanes of a warp take consecutive vectors, so each
// load and store instruction of a warp covers one contiguous span (coalesced), and all of a
// thread's loads are issued before its arithmetic. The arithmetic is native::convert (generic
// path) or its proven-equal 32-bit specialisation gpu/cast/fast_cast.hpp (fast path).
#include <cuda_runtime.h>

#include <string>

#include "gpu/cast/cast.hpp"
#include "gpu/cast/fast_cast.hpp"
#include "gpu/cast/widen.hpp"
#include "gpu/common/launch.hpp"
#include "sim/common/error.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"

namespace exmy::gpu {
namespace {

constexpr int kGroups = 4;  // 16-byte input vectors per thread and grid-stride step

struct CastArgs {
  FastCastPlan plan;  // valid on the fast path
  FloatFormat from;
  FloatFormat to;
  Rounding r;
  std::uint64_t seed;
  std::uint64_t offset;
  std::uint32_t stream;
  bool vector_ok;  // 16-byte aligned pointers and index offset % 4 == 0 (see vector_ok())
};

template <CastInput In>
struct InputTraits;
template <>
struct InputTraits<CastInput::fp32> {
  using T = std::uint32_t;
  static __device__ __forceinline__ std::uint32_t widen(std::uint32_t x) { return x; }
};
template <>
struct InputTraits<CastInput::bf16> {
  using T = std::uint16_t;
  static __device__ __forceinline__ std::uint32_t widen(std::uint32_t x) { return widen_bf16(x); }
};
template <>
struct InputTraits<CastInput::fp16> {
  using T = std::uint16_t;
  static __device__ __forceinline__ std::uint32_t widen(std::uint32_t x) { return widen_fp16(x); }
};

// The generic path: the native engine with the runtime descriptor.
__device__ __forceinline__ std::uint32_t generic_convert(FloatFormat from, FloatFormat to,
                                                         Rounding r, std::uint32_t x,
                                                         std::uint32_t rand) {
  return static_cast<std::uint32_t>(native::convert(from, to, r, x, rand).code);
}

// Which arithmetic a kernel runs: the native engine, the fast path, or the e8m0 path.
enum class Path { generic, fast, e8m0 };

// The code of one element under path P specialised for Mode.
template <CastInput In, Path P, FastMode Mode>
__device__ __forceinline__ std::uint32_t cast_one(const CastArgs& a, std::uint32_t x,
                                                  std::uint32_t rand) {
  if constexpr (P == Path::fast) {
    return fast_cast_fp32_as<Mode>(a.plan, a.r, InputTraits<In>::widen(x), rand);
  } else if constexpr (P == Path::e8m0) {
    return fast_cast_fp32_e8m0<Mode>(a.plan, a.r, InputTraits<In>::widen(x), rand);
  } else {
    return generic_convert(a.from, a.to, a.r, x, rand);
  }
}

template <Path P>
__device__ __forceinline__ float decode_one(const CastArgs& a, std::uint32_t code) {
  if constexpr (P == Path::fast) {
    return fast_decode_fp32_finite(a.plan, code);
  } else {
    return native::to_float(a.to, code);
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

// Out: uint8_t / uint16_t codes, or float for fake quantization.
template <CastInput In, typename Out, Path P, FastMode Mode>
__global__ void __launch_bounds__(kThreads)
    cast_kernel(const void* __restrict__ in_, std::size_t n, Out* __restrict__ out, CastArgs a) {
  using T = typename InputTraits<In>::T;
  constexpr int G = 16 / sizeof(T);  // elements per 16-byte input vector
  const T* in = static_cast<const T*>(in_);
  const bool sr = Mode == FastMode::sr || (Mode == FastMode::any && a.r.mode == RoundMode::sr);
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
          if (sr) b = native::philox_block(a.seed, a.stream, (a.offset + idx + g) >> 2);
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const std::uint32_t rand = sr ? native::sr_word(b.w[k], a.r.sr_bits) : 0u;
            const std::uint32_t code = cast_one<In, P, Mode>(a, x[g + k], rand);
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
          rand = native::sr_word(native::philox_word(a.seed, a.stream, a.offset + i), a.r.sr_bits);
        }
        const std::uint32_t code = cast_one<In, P, Mode>(a, in[i], rand);
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

void check_params(const CastParams& p) {
  const Rounding& r = p.rounding;
  if (r.mode == RoundMode::sr && (r.sr_bits < 1 || r.sr_bits > 32)) {
    throw InputError("cast: sr_bits must be in 1..32 for stochastic rounding, got " +
                     std::to_string(r.sr_bits));
  }
  code_bytes(p.to);
  const bool e8m0_fast =
      fast_e8m0_supported(p.to) && fast_e8m0_mode_for(p.rounding) != FastMode::any;
  if (p.path == CastPath::fast && !fast_cast_supported(p.to) && !e8m0_fast) {
    throw InputError(
        "cast: the fast path needs a signed format with subnormals, 1..14 mantissa bits and a "
        "range inside fp32's, or e8m0fnu under rne, rtz or sr:1..23");
  }
}

// The arithmetic of a cast: the fast path where the format has one, the e8m0 path for
// e8m0fnu under rne / rtz / sr:R (R <= 23), else (or when asked) the native engine.
Path choose_path(const CastParams& p) {
  if (p.path == CastPath::generic) return Path::generic;
  if (fast_cast_supported(p.to)) return Path::fast;
  if (fast_e8m0_supported(p.to) && fast_e8m0_mode_for(p.rounding) != FastMode::any) {
    return Path::e8m0;
  }
  return Path::generic;
}

bool use_fast(const CastParams& p) {
  return choose_path(p) == Path::fast;
}

CastArgs make_args(const CastParams& p, CastInput in_type, bool vector_ok) {
  CastArgs a{};
  a.plan = choose_path(p) != Path::generic ? make_fast_cast_plan(p.to, p.rounding) : FastCastPlan{};
  a.from = in_type == CastInput::fp32   ? formats::fp32
           : in_type == CastInput::bf16 ? formats::bf16
                                        : formats::fp16;
  a.to = p.to;
  a.r = p.rounding;
  a.seed = p.seed;
  a.offset = p.index_offset;
  a.stream = p.stream;
  a.vector_ok = vector_ok;
  return a;
}

// The vector path's preconditions: 16-byte aligned pointers, and an index offset that keeps
// each group of 4 elements on one Philox block.
bool vector_ok(const void* in, const void* out, const CastParams& p) {
  return aligned16(in, out) && p.index_offset % 4 == 0;
}

template <CastInput In, typename Out>
void launch_cast(const void* in, std::size_t n, Out* out, const CastArgs& a, Path path,
                 cudaStream_t s) {
  const unsigned grid = grid_for(n, kGroups * 16 / sizeof(typename InputTraits<In>::T));
  if (path == Path::e8m0) {
    // e8m0fnu codes are one byte: only uint8 codes and fake-quantized floats reach here.
    if constexpr (sizeof(Out) != 2) {
      switch (fast_e8m0_mode_for(a.r)) {
        case FastMode::rne:
          cast_kernel<In, Out, Path::e8m0, FastMode::rne><<<grid, kThreads, 0, s>>>(in, n, out, a);
          break;
        case FastMode::rtz:
          cast_kernel<In, Out, Path::e8m0, FastMode::rtz><<<grid, kThreads, 0, s>>>(in, n, out, a);
          break;
        default:
          cast_kernel<In, Out, Path::e8m0, FastMode::sr><<<grid, kThreads, 0, s>>>(in, n, out, a);
          break;
      }
    }
  } else if (path == Path::generic) {
    cast_kernel<In, Out, Path::generic, FastMode::any><<<grid, kThreads, 0, s>>>(in, n, out, a);
  } else {
    switch (fast_mode_for(a.plan, a.r)) {
      case FastMode::rne:
        cast_kernel<In, Out, Path::fast, FastMode::rne><<<grid, kThreads, 0, s>>>(in, n, out, a);
        break;
      case FastMode::rtz:
        cast_kernel<In, Out, Path::fast, FastMode::rtz><<<grid, kThreads, 0, s>>>(in, n, out, a);
        break;
      case FastMode::sr:
        cast_kernel<In, Out, Path::fast, FastMode::sr><<<grid, kThreads, 0, s>>>(in, n, out, a);
        break;
      case FastMode::any:
        cast_kernel<In, Out, Path::fast, FastMode::any><<<grid, kThreads, 0, s>>>(in, n, out, a);
        break;
    }
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
  return choose_path(p) != Path::generic;
}

void cast_codes(const void* in, CastInput in_type, std::size_t n, void* codes,
                const CastParams& params, CUstream_st* stream) {
  check_params(params);
  if (n == 0) return;
  const Path path = choose_path(params);
  const CastArgs a = make_args(params, in_type, vector_ok(in, codes, params));
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
  const CastArgs a = make_args(params, in_type, vector_ok(in, out, params));
  dispatch_input(in, in_type, n, out, a, choose_path(params), stream);
}

void decode_codes(const void* codes, const FloatFormat& f, std::size_t n, float* out,
                  CUstream_st* stream) {
  CastParams p;
  p.to = f;
  const std::size_t bytes = code_bytes(f);
  if (n == 0) return;
  const bool fast = use_fast(p);
  const CastArgs a = make_args(p, CastInput::fp32, false);
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
