// Tensor quantization kernels (gpu/quantize.hpp). The per-element work is the body of the CPU
// reference's loop (sim/quant/quantize.cpp) on the same native:: functions; what differs is only
// how groups are reduced and how elements are assigned to threads:
//   - single pass: contiguous groups of 16 * 2^k <= 4096 elements (row-wise with such rows,
//     block-wise, MX): a thread holds 16 consecutive elements in registers, the group's absmax is
//     a shuffle / shared-memory max over the group's 2^k threads, then codes are written;
//   - otherwise: absmax kernel (atomicMax on |x| bit patterns), a per-group state kernel, then an
//     element kernel (or the tiled transpose kernel).
// absmax as the max of |x| bit patterns: for non-negative fp32 values the unsigned order of the
// codes is the numeric order, +0 and -0 both map to 0, and a NaN maps to 0x7FC00000 (propagate:
// above +inf 0x7F800000, and every NaN maps to the same code) or to 0 (ignore, the identity).
// So the max over any order or tree equals the fold of native::absmax_combine, bit for bit.
#include <cuda_runtime.h>

#include <string>

#include "gpu/cuda_check.hpp"
#include "gpu/fast_cast.hpp"
#include "gpu/fast_int8.hpp"
#include "gpu/quantize.hpp"
#include "gpu/widen.hpp"
#include "sim/common/error.hpp"
#include "sim/native/codebook_lookup.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_codebook.hpp"
#include "sim/native/quant_int8.hpp"
#include "sim/native/quant_mx.hpp"
#include "sim/native/quant_scaled_cast.hpp"

namespace exmy::gpu {
namespace {

static_assert(native::kAbsmaxInit == 0.0f, "absmax identity must be +0 (bit pattern 0)");

constexpr int kThreads = 256;
constexpr int kRun = 16;                // consecutive elements per thread
constexpr int kTile = kThreads * kRun;  // 4096 elements per block per step
constexpr std::uint32_t kNanAbsBits = 0x7FC00000u;

enum class Kind : std::uint8_t { int8, flt, codebook, mx };

struct QArgs {
  Kind kind;
  bool col;  // column-wise groups (g = c); otherwise contiguous groups of G
  bool transpose;
  std::uint64_t rows, cols, n, G, groups;
  FloatFormat fmt;
  FastCastPlan plan;  // for flt targets where fast_cast_supported(fmt)
  bool fast;
  float fmax;
  native::CastVariant variant;
  native::ScaleOrder order;
  native::NanPolicy nan;
  RoundMode mode;
  int sr_bits;
  std::uint64_t seed;
  int te_margin;
  float te_prev;
  bool fp16src;
  bool pow2;     // torchao / te_current power-of-two scales
  float te_eps;  // te_current amax epsilon
  bool given;    // te / te_current / torchao: given_scale replaces the computed scale
  float given_scale;
  native::NormOrder norm;
  TieRule tie;
  float cb[256];
};

template <CastInput In>
struct In_;
template <>
struct In_<CastInput::fp32> {
  using T = std::uint32_t;
  static __device__ __forceinline__ float get(std::uint32_t x) { return native::float_of(x); }
};
template <>
struct In_<CastInput::bf16> {
  using T = std::uint16_t;
  static __device__ __forceinline__ float get(std::uint32_t x) {
    return native::float_of(widen_bf16(x));
  }
};
template <>
struct In_<CastInput::fp16> {
  using T = std::uint16_t;
  static __device__ __forceinline__ float get(std::uint32_t x) {
    return native::float_of(widen_fp16(x));
  }
};

// 16 consecutive elements starting at base, with 16-byte loads when possible.
template <CastInput In>
__device__ __forceinline__ void load_run(const typename In_<In>::T* x, std::uint64_t base,
                                         std::uint64_t n, bool vec, float v[kRun]) {
  using T = typename In_<In>::T;
  if (vec && base + kRun <= n) {
    constexpr int kVec = kRun * sizeof(T) / 16;
    uint4 raw[kVec];
#pragma unroll
    for (int k = 0; k < kVec; ++k) raw[k] = reinterpret_cast<const uint4*>(x + base)[k];
    const T* e = reinterpret_cast<const T*>(raw);
#pragma unroll
    for (int k = 0; k < kRun; ++k) v[k] = In_<In>::get(e[k]);
  } else {
#pragma unroll
    for (int k = 0; k < kRun; ++k) v[k] = base + k < n ? In_<In>::get(x[base + k]) : 0.0f;
  }
}

__device__ __forceinline__ std::uint32_t abs_bits(float x, native::NanPolicy p) {
  const std::uint32_t b = native::bits_of(x) & 0x7FFFFFFFu;
  if (b > 0x7F800000u) return p == native::NanPolicy::propagate ? kNanAbsBits : 0u;
  return b;
}

// The per-group state (SEMANTICS 7; quant::quantize's state loop).
__device__ __forceinline__ float state_of(const QArgs& a, float amax) {
  if (a.kind != Kind::flt) return amax;
  switch (a.variant) {
    case native::CastVariant::te:
      return a.given ? a.given_scale : native::te_scale(amax, a.fmax, a.te_margin, a.te_prev);
    case native::CastVariant::te_current:
      return a.given ? a.given_scale : native::te_current_scale(amax, a.fmax, a.pow2, a.te_eps);
    case native::CastVariant::torchao:
      return a.given ? a.given_scale : native::torchao_scale(amax, a.fmax, a.fp16src, a.pow2);
    default:
      return amax;
  }
}

// The heavy native paths, by name (mx elements, generic casts).
__device__ __forceinline__ std::uint8_t cold_mx_element(FloatFormat f, float x, std::uint8_t scale,
                                                        RoundMode mode, int sr_bits,
                                                        std::uint32_t rand) {
  return static_cast<std::uint8_t>(native::mx_element(f, x, scale, mode, sr_bits, rand).code);
}
__device__ __forceinline__ std::uint8_t cold_cast_fp32(FloatFormat f, float y, Rounding r,
                                                       std::uint32_t rand) {
  return static_cast<std::uint8_t>(native::cast_fp32(f, y, r, rand).code);
}
__device__ __forceinline__ std::uint8_t cold_scaled_cast_mul(FloatFormat f, float x, float s,
                                                             RoundMode mode, int sr_bits,
                                                             std::uint32_t rand) {
  return static_cast<std::uint8_t>(native::scaled_cast_mul(f, x, s, mode, sr_bits, rand).code);
}
__device__ __forceinline__ float cold_mx_dequant(FloatFormat f, std::uint8_t code,
                                                 std::uint8_t scale) {
  return native::mx_dequant(f, code, scale);
}

__device__ __forceinline__ std::uint32_t stream_of(const QArgs& a) {
  return a.kind == Kind::codebook ? quant::kStreamQuantCodebook : quant::kStreamQuantCast;
}

// The code of element i (flat input index) given its group's state; `word` is the element's
// 32-bit Philox word of stream_of(a) (unused unless a.mode is sr). quant::quantize's loop body,
// for the target kind K.
template <Kind K>
__device__ __forceinline__ std::uint8_t quant_one(const QArgs& a, const float* cb, float x,
                                                  float st, std::uint8_t mxs, std::uint32_t word) {
  const bool sr = a.mode == RoundMode::sr;
  const std::uint32_t rand = sr ? native::sr_word(word, a.sr_bits) : 0u;
  if constexpr (K == Kind::mx) {
    return cold_mx_element(a.fmt, x, mxs, a.mode, a.sr_bits, rand);
  } else if constexpr (K == Kind::int8) {
    if (st == 0.0f) return 0;
    if (int8_fast_mode(a.mode)) {
      return static_cast<std::uint8_t>(
          fast_round_to_int8(native::absmax_scale(x, st, 127.0f, a.order), a.mode));
    }
    const Rounding r{a.mode, a.sr_bits};
    return static_cast<std::uint8_t>(
        native::round_to_int8(native::absmax_scale(x, st, 127.0f, a.order), r, rand).code);
  } else if constexpr (K == Kind::flt) {
    const Rounding r{a.mode, a.sr_bits, Overflow::satfinite};
    float y;
    if (a.variant == native::CastVariant::absmax) {
      y = st == 0.0f ? x : native::absmax_scale(x, st, a.fmax, a.order);
      if (!a.fast) return cold_cast_fp32(a.fmt, y, r, rand);
    } else {
      // native::scaled_cast_mul(fmt, x, s, ...) is cast_fp32(fmt, RN32(x * s), satfinite).
      if (!a.fast) return cold_scaled_cast_mul(a.fmt, x, st, a.mode, a.sr_bits, rand);
      y = native::rn32_mul(x, st);
    }
    return static_cast<std::uint8_t>(fast_cast_fp32(a.plan, r, native::bits_of(y), rand));
  } else {
    const float nv = native::codebook_normalize(x, st, a.norm);
    if (sr) return codebook_stochastic(cb, nv, uniform_from_word(word));
    return codebook_nearest(cb, nv, a.tie);
  }
}

__device__ __forceinline__ void words_for_run(const QArgs& a, std::uint64_t base,
                                              std::uint32_t w[kRun]) {
  const std::uint32_t s = stream_of(a);
  if ((base & 3u) == 0) {
#pragma unroll
    for (int q = 0; q < kRun / 4; ++q) {
      const native::Philox4 b = native::philox_block(a.seed, s, (base >> 2) + q);
#pragma unroll
      for (int k = 0; k < 4; ++k) w[4 * q + k] = b.w[k];
    }
  } else {
#pragma unroll
    for (int k = 0; k < kRun; ++k) w[k] = native::philox_word(a.seed, s, base + k);
  }
}

__device__ __forceinline__ void store_run(std::uint8_t* out, std::uint64_t base, std::uint64_t n,
                                          bool vec, const std::uint8_t c[kRun]) {
  if (vec && base + kRun <= n) {
    *reinterpret_cast<uint4*>(out + base) = *reinterpret_cast<const uint4*>(c);
  } else {
    for (int k = 0; k < kRun; ++k) {
      if (base + k < n) out[base + k] = c[k];
    }
  }
}

__device__ __forceinline__ void load_codebook(const QArgs& a, float* sm) {
  if (a.kind != Kind::codebook) return;
  for (int k = threadIdx.x; k < 256; k += blockDim.x) sm[k] = a.cb[k];
  __syncthreads();
}

// ---- single pass: contiguous groups of G = 16 * S elements, S = 2^k <= 256 threads ----
template <CastInput In, Kind K>
__global__ void __launch_bounds__(kThreads)
    fused_group_kernel(const void* __restrict__ x_, std::uint8_t* __restrict__ codes,
                       float* __restrict__ state, std::uint8_t* __restrict__ mx_scales, bool vec,
                       const __grid_constant__ QArgs a) {
  __shared__ float cb[256];
  __shared__ std::uint32_t warp_max[kThreads / 32];
  load_codebook(a, cb);
  const auto* x = static_cast<const typename In_<In>::T*>(x_);
  const int S = static_cast<int>(a.G / kRun);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (std::uint64_t tile = static_cast<std::uint64_t>(blockIdx.x) * kTile; tile < a.n;
       tile += static_cast<std::uint64_t>(gridDim.x) * kTile) {
    const std::uint64_t base = tile + static_cast<std::uint64_t>(threadIdx.x) * kRun;
    float v[kRun];
    load_run<In>(x, base, a.n, vec, v);
    std::uint32_t acc = 0;
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      if (base + k < a.n) acc = max(acc, abs_bits(v[k], a.nan));
    }
    for (int off = 1; off < S && off < 32; off <<= 1) {
      acc = max(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, off));
    }
    if (S > 32) {  // the group spans S / 32 whole warps of this block
      if (lane == 0) warp_max[warp] = acc;
      __syncthreads();
      const int w0 = warp & ~(S / 32 - 1);
      for (int w = w0; w < w0 + S / 32; ++w) acc = max(acc, warp_max[w]);
      __syncthreads();
    }
    const std::uint64_t g = base / a.G;
    const float amax = native::float_of(acc);
    float st = 0.0f;
    std::uint8_t mxs = 0;
    if (a.kind == Kind::mx) {
      mxs = native::mx_scale_code(amax, a.fmt);
    } else {
      st = state_of(a, amax);
    }
    if (base < a.n && (threadIdx.x & (S - 1)) == 0) {
      if (a.kind == Kind::mx) {
        mx_scales[g] = mxs;
      } else {
        state[g] = st;
      }
    }
    if (base < a.n) {
      std::uint32_t w[kRun];
      if (a.mode == RoundMode::sr) words_for_run(a, base, w);
      std::uint8_t c[kRun];
#pragma unroll
      for (int k = 0; k < kRun; ++k) {
        c[k] = quant_one<K>(a, cb, v[k], st, mxs, a.mode == RoundMode::sr ? w[k] : 0u);
      }
      store_run(codes, base, a.n, vec, c);
    }
  }
}

// ---- two-pass path ----
// absmax of contiguous groups of G: each block owns a contiguous span of whole tiles; a thread
// carries (group, max) along its runs and flushes with atomicMax when the group changes; the last
// flush is one atomic per block when the whole block ends in one group (tensor-wise).
template <CastInput In>
__global__ void __launch_bounds__(kThreads)
    amax_contig_kernel(const void* __restrict__ x_, std::uint32_t* __restrict__ amax, bool vec,
                       std::uint64_t tiles_per_block, const __grid_constant__ QArgs a) {
  __shared__ std::uint32_t red[kThreads];
  __shared__ unsigned long long lead_g;
  const auto* x = static_cast<const typename In_<In>::T*>(x_);
  std::uint64_t cur = ~std::uint64_t{0};
  std::uint32_t acc = 0;
  const std::uint64_t t0 = static_cast<std::uint64_t>(blockIdx.x) * tiles_per_block;
  for (std::uint64_t t = t0; t < t0 + tiles_per_block; ++t) {
    const std::uint64_t base = t * kTile + static_cast<std::uint64_t>(threadIdx.x) * kRun;
    if (base >= a.n) break;
    float v[kRun];
    load_run<In>(x, base, a.n, vec, v);
    std::uint64_t g = base / a.G, next = (g + 1) * a.G;
    for (int k = 0; k < kRun && base + k < a.n; ++k) {
      if (base + k == next) {
        ++g;
        next += a.G;
      }
      if (g != cur) {
        if (acc != 0) atomicMax(amax + cur, acc);
        cur = g;
        acc = 0;
      }
      acc = max(acc, abs_bits(v[k], a.nan));
    }
  }
  if (threadIdx.x == 0) lead_g = cur;
  __syncthreads();
  const bool same = __syncthreads_and(cur == lead_g || acc == 0);
  if (same && lead_g != ~0ull) {
    red[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) red[threadIdx.x] = max(red[threadIdx.x], red[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0 && red[0] != 0) atomicMax(amax + lead_g, red[0]);
  } else if (acc != 0) {
    atomicMax(amax + cur, acc);
  }
}

// absmax per column: thread = column, each block a strip of rows.
template <CastInput In>
__global__ void __launch_bounds__(kThreads)
    amax_col_kernel(const void* __restrict__ x_, std::uint32_t* __restrict__ amax,
                    std::uint64_t rows_per_block, const __grid_constant__ QArgs a) {
  const auto* x = static_cast<const typename In_<In>::T*>(x_);
  const std::uint64_t c = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= a.cols) return;
  const std::uint64_t r0 = static_cast<std::uint64_t>(blockIdx.y) * rows_per_block;
  const std::uint64_t r1 = r0 + rows_per_block < a.rows ? r0 + rows_per_block : a.rows;
  std::uint32_t acc = 0;
  for (std::uint64_t r = r0; r < r1; ++r) {
    acc = max(acc, abs_bits(In_<In>::get(x[r * a.cols + c]), a.nan));
  }
  if (acc != 0) atomicMax(amax + c, acc);
}

// amax (as bits, in place) -> state / MX scale code.
__global__ void state_kernel(std::uint32_t* amax_bits, float* state, std::uint8_t* mx_scales,
                             const __grid_constant__ QArgs a) {
  const std::uint64_t g = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= a.groups) return;
  const float amax = native::float_of(amax_bits[g]);
  if (a.kind == Kind::mx) {
    mx_scales[g] = native::mx_scale_code(amax, a.fmt);
  } else {
    state[g] = state_of(a, amax);
  }
}

__device__ __forceinline__ std::uint64_t group_of_elem(const QArgs& a, std::uint64_t i) {
  return a.col ? i % a.cols : i / a.G;
}

template <CastInput In, Kind K>
__global__ void __launch_bounds__(kThreads)
    element_kernel(const void* __restrict__ x_, std::uint8_t* __restrict__ codes,
                   const float* __restrict__ state, const std::uint8_t* __restrict__ mx_scales,
                   bool vec, const __grid_constant__ QArgs a) {
  __shared__ float cb[256];
  load_codebook(a, cb);
  const auto* x = static_cast<const typename In_<In>::T*>(x_);
  for (std::uint64_t base =
           (static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x) * kRun;
       base < a.n; base += static_cast<std::uint64_t>(gridDim.x) * kTile) {
    float v[kRun];
    load_run<In>(x, base, a.n, vec, v);
    std::uint32_t w[kRun];
    if (a.mode == RoundMode::sr) words_for_run(a, base, w);
    std::uint8_t c[kRun];
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      const std::uint64_t i = base + k;
      c[k] = 0;
      if (i < a.n) {
        const std::uint64_t g = group_of_elem(a, i);
        const float st = a.kind == Kind::mx ? 0.0f : state[g];
        const std::uint8_t mxs = a.kind == Kind::mx ? mx_scales[g] : 0;
        c[k] = quant_one<K>(a, cb, v[k], st, mxs, a.mode == RoundMode::sr ? w[k] : 0u);
      }
    }
    store_run(codes, base, a.n, vec, c);
  }
}

// Fused quantize + transpose: 32 x 32 tiles through shared memory; codes are cols x rows.
template <CastInput In, Kind K>
__global__ void __launch_bounds__(kThreads)
    transpose_kernel(const void* __restrict__ x_, std::uint8_t* __restrict__ codes,
                     const float* __restrict__ state, const std::uint8_t* __restrict__ mx_scales,
                     const __grid_constant__ QArgs a) {
  __shared__ float cb[256];
  __shared__ std::uint8_t tile[32][33];
  load_codebook(a, cb);
  const auto* x = static_cast<const typename In_<In>::T*>(x_);
  const std::uint64_t r0 = static_cast<std::uint64_t>(blockIdx.y) * 32;
  const std::uint64_t c0 = static_cast<std::uint64_t>(blockIdx.x) * 32;
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;  // 32 x 8 threads
  for (int k = 0; k < 4; ++k) {
    const std::uint64_t r = r0 + ty + 8 * k, c = c0 + tx;
    std::uint8_t code = 0;
    if (r < a.rows && c < a.cols) {
      const std::uint64_t i = r * a.cols + c;
      const std::uint64_t g = group_of_elem(a, i);
      const std::uint32_t w =
          a.mode == RoundMode::sr ? native::philox_word(a.seed, stream_of(a), i) : 0u;
      code = quant_one<K>(a, cb, In_<In>::get(x[i]), a.kind == Kind::mx ? 0.0f : state[g],
                          a.kind == Kind::mx ? mx_scales[g] : 0, w);
    }
    tile[ty + 8 * k][tx] = code;
  }
  __syncthreads();
  for (int k = 0; k < 4; ++k) {
    const std::uint64_t c = c0 + ty + 8 * k, r = r0 + tx;
    if (r < a.rows && c < a.cols) codes[c * a.rows + r] = tile[tx][ty + 8 * k];
  }
}

__global__ void __launch_bounds__(kThreads)
    dequant_kernel(const std::uint8_t* __restrict__ codes, const float* __restrict__ state,
                   const std::uint8_t* __restrict__ mx_scales, float* __restrict__ out,
                   const __grid_constant__ QArgs a) {
  __shared__ float cb[256];
  load_codebook(a, cb);
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < a.n;
       i += static_cast<std::uint64_t>(gridDim.x) * kThreads) {
    const std::uint64_t r = i / a.cols, c = i % a.cols;
    const std::uint8_t code = codes[a.transpose ? c * a.rows + r : i];
    const std::uint64_t g = group_of_elem(a, i);
    float v;
    switch (a.kind) {
      case Kind::mx:
        v = cold_mx_dequant(a.fmt, code, mx_scales[g]);
        break;
      case Kind::int8:
        v = native::dequant_absmax(static_cast<float>(static_cast<std::int8_t>(code)), state[g],
                                   127.0f);
        break;
      case Kind::flt: {
        const float cv = a.fast ? fast_decode_fp32(a.plan, code) : native::to_float(a.fmt, code);
        switch (a.variant) {
          case native::CastVariant::absmax:
            v = native::dequant_absmax(cv, state[g], a.fmax);
            break;
          case native::CastVariant::te:
          case native::CastVariant::te_current:
            v = native::dequant_te(cv, state[g]);
            break;
          default:
            v = native::dequant_torchao(cv, state[g]);
            break;
        }
        break;
      }
      default:
        v = native::codebook_dequant(cb, code, state[g]);
        break;
    }
    out[i] = v;
  }
}

// ---- host side ----

void check_options(std::size_t rows, std::size_t cols, const quant::Options& opt) {
  using quant::Granularity;
  using quant::TargetKind;
  quant::validate_options(opt);  // the checks the CPU path makes, then the GPU path's own
  if ((opt.scheme.kind == Granularity::block || opt.scheme.kind == Granularity::mx) &&
      opt.scheme.block == 0) {
    throw InputError("scheme block: expected a block size B >= 1");
  }
  if (opt.target.kind == TargetKind::float_format && opt.target.fmt.total_bits() > 8) {
    throw InputError("target format: expected at most 8 bits (codes are bytes)");
  }
  (void)rows;
  (void)cols;
}

QArgs make_args(std::size_t rows, std::size_t cols, const quant::Options& opt) {
  using quant::Granularity;
  using quant::TargetKind;
  QArgs a{};
  const quant::Scheme& s = opt.scheme;
  a.kind = s.kind == Granularity::mx                     ? Kind::mx
           : opt.target.kind == TargetKind::int8         ? Kind::int8
           : opt.target.kind == TargetKind::float_format ? Kind::flt
                                                         : Kind::codebook;
  a.col = s.kind == Granularity::col;
  a.transpose = opt.transpose;
  a.rows = rows;
  a.cols = cols;
  a.n = static_cast<std::uint64_t>(rows) * cols;
  a.G = s.kind == Granularity::tensor ? (a.n > 0 ? a.n : 1)
        : s.kind == Granularity::row  ? cols
        : s.kind == Granularity::col  ? 1
                                      : s.block;
  a.groups = quant::group_count(s, rows, cols);
  if (opt.target.kind == TargetKind::float_format) {
    a.fmt = opt.target.fmt;
    a.fmax = native::format_max32(a.fmt);
    a.fast = a.kind == Kind::flt && fast_cast_supported(a.fmt);
    if (a.fast)
      a.plan = make_fast_cast_plan(a.fmt, Rounding{opt.mode, opt.sr_bits, Overflow::satfinite});
  }
  a.variant = opt.variant;
  a.order = opt.order;
  a.nan = opt.nan;
  a.mode = opt.mode;
  a.sr_bits = opt.sr_bits;
  a.seed = opt.seed;
  a.te_margin = opt.te_margin;
  a.te_prev = opt.te_prev_scale;
  a.fp16src = opt.torchao_fp16_source;
  a.pow2 = opt.pow2_scale;
  a.te_eps = opt.te_amax_epsilon;
  a.given = opt.given_scale == opt.given_scale;  // not NaN
  a.given_scale = opt.given_scale;
  a.norm = opt.norm;
  a.tie = opt.tie;
  if (opt.target.kind == TargetKind::codebook) {
    for (int k = 0; k < 256; ++k) a.cb[k] = opt.target.codebook.values[k];
  }
  return a;
}

bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

bool single_pass(const QArgs& a, const quant::Options& opt) {
  using quant::Granularity;
  const auto k = opt.scheme.kind;
  if (a.transpose || a.n == 0) return false;
  if (k != Granularity::row && k != Granularity::block && k != Granularity::mx) return false;
  const std::uint64_t G = a.G;
  if (G < kRun || G > kTile || G % kRun != 0) return false;
  const std::uint64_t S = G / kRun;
  return (S & (S - 1)) == 0;
}

unsigned blocks_for(std::uint64_t tiles) {
  const std::uint64_t cap = std::uint64_t{1} << 20;
  return static_cast<unsigned>(tiles == 0 ? 1 : (tiles < cap ? tiles : cap));
}

template <CastInput In>
void run_amax(const void* x, std::uint32_t* amax_bits, const QArgs& a, cudaStream_t s) {
  cuda_check(cudaMemsetAsync(amax_bits, 0, a.groups * 4, s), "cudaMemsetAsync");
  if (a.n == 0) return;
  if (a.col) {
    const std::uint64_t rows_per_block = 64;
    const dim3 grid(static_cast<unsigned>((a.cols + kThreads - 1) / kThreads),
                    static_cast<unsigned>((a.rows + rows_per_block - 1) / rows_per_block));
    amax_col_kernel<In><<<grid, kThreads, 0, s>>>(x, amax_bits, rows_per_block, a);
  } else {
    const std::uint64_t tiles = (a.n + kTile - 1) / kTile;
    // About 8 tiles (32K elements) per block: few atomics for big groups, enough blocks to fill
    // the GPU.
    const std::uint64_t per = 8;
    const unsigned grid = static_cast<unsigned>((tiles + per - 1) / per);
    amax_contig_kernel<In><<<grid, kThreads, 0, s>>>(x, amax_bits, aligned16(x), per, a);
  }
  cuda_check_launch("absmax kernel launch");
}

template <CastInput In, Kind K>
void run_quantize(const void* x, const QArgs& a, const quant::Options& opt, const QuantizedOut& o,
                  cudaStream_t s) {
  if (a.n == 0) return;
  const bool vec = aligned16(x) && aligned16(o.codes);
  const std::uint64_t tiles = (a.n + kTile - 1) / kTile;
  if (single_pass(a, opt)) {
    fused_group_kernel<In, K>
        <<<blocks_for(tiles), kThreads, 0, s>>>(x, o.codes, o.state, o.mx_scales, vec, a);
    cuda_check_launch("quantize kernel launch");
    return;
  }
  // amax into the state array (as bits), or into scratch for mx.
  std::uint32_t* amax = reinterpret_cast<std::uint32_t*>(o.state);
  void* scratch = nullptr;
  if (a.kind == Kind::mx) {
    cuda_check(cudaMallocAsync(&scratch, a.groups * 4, s), "cudaMallocAsync");
    amax = static_cast<std::uint32_t*>(scratch);
  }
  run_amax<In>(x, amax, a, s);
  state_kernel<<<static_cast<unsigned>((a.groups + kThreads - 1) / kThreads), kThreads, 0, s>>>(
      amax, o.state, o.mx_scales, a);
  cuda_check_launch("state kernel launch");
  if (a.transpose) {
    const dim3 grid(static_cast<unsigned>((a.cols + 31) / 32),
                    static_cast<unsigned>((a.rows + 31) / 32));
    transpose_kernel<In, K><<<grid, kThreads, 0, s>>>(x, o.codes, o.state, o.mx_scales, a);
  } else {
    element_kernel<In, K>
        <<<blocks_for(tiles), kThreads, 0, s>>>(x, o.codes, o.state, o.mx_scales, vec, a);
  }
  cuda_check_launch("quantize kernel launch");
  if (scratch != nullptr) cuda_check(cudaFreeAsync(scratch, s), "cudaFreeAsync");
}

template <CastInput In>
void run_kind(const void* x, const QArgs& a, const quant::Options& opt, const QuantizedOut& o,
              cudaStream_t s) {
  switch (a.kind) {
    case Kind::int8:
      run_quantize<In, Kind::int8>(x, a, opt, o, s);
      break;
    case Kind::flt:
      run_quantize<In, Kind::flt>(x, a, opt, o, s);
      break;
    case Kind::codebook:
      run_quantize<In, Kind::codebook>(x, a, opt, o, s);
      break;
    case Kind::mx:
      run_quantize<In, Kind::mx>(x, a, opt, o, s);
      break;
  }
}

}  // namespace

bool quantize_is_single_pass(std::size_t rows, std::size_t cols, const quant::Options& opt) {
  return single_pass(make_args(rows, cols, opt), opt);
}

void quantize(const void* x, CastInput in_type, std::size_t rows, std::size_t cols,
              const quant::Options& opt, const QuantizedOut& out, CUstream_st* stream) {
  check_options(rows, cols, opt);
  if (out.codes == nullptr || (opt.scheme.kind == quant::Granularity::mx ? out.mx_scales == nullptr
                                                                         : out.state == nullptr)) {
    throw InputError("quantize: output pointers for codes and state (or mx_scales) are required");
  }
  const QArgs a = make_args(rows, cols, opt);
  switch (in_type) {
    case CastInput::fp32:
      run_kind<CastInput::fp32>(x, a, opt, out, stream);
      break;
    case CastInput::bf16:
      run_kind<CastInput::bf16>(x, a, opt, out, stream);
      break;
    case CastInput::fp16:
      run_kind<CastInput::fp16>(x, a, opt, out, stream);
      break;
  }
}

void dequantize(const std::uint8_t* codes, const float* state, const std::uint8_t* mx_scales,
                std::size_t rows, std::size_t cols, const quant::Options& opt, float* out,
                CUstream_st* stream) {
  check_options(rows, cols, opt);
  const QArgs a = make_args(rows, cols, opt);
  if (a.n == 0) return;
  const std::uint64_t blocks = (a.n + kThreads - 1) / kThreads;
  dequant_kernel<<<blocks_for(blocks), kThreads, 0, stream>>>(codes, state, mx_scales, out, a);
  cuda_check_launch("dequantize kernel launch");
}

void group_absmax(const void* x, CastInput in_type, std::size_t rows, std::size_t cols,
                  const quant::Scheme& scheme, native::NanPolicy nan, float* amax,
                  CUstream_st* stream) {
  quant::Options opt;
  opt.scheme = scheme;
  opt.nan = nan;
  const QArgs a = make_args(rows, cols, opt);
  auto* bits = reinterpret_cast<std::uint32_t*>(amax);
  switch (in_type) {
    case CastInput::fp32:
      run_amax<CastInput::fp32>(x, bits, a, stream);
      break;
    case CastInput::bf16:
      run_amax<CastInput::bf16>(x, bits, a, stream);
      break;
    case CastInput::fp16:
      run_amax<CastInput::fp16>(x, bits, a, stream);
      break;
  }
}

}  // namespace exmy::gpu
