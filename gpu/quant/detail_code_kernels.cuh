// Internal to gpu/quant/*.cu: the kernels that write codes (templates on the input type, the
// target kind and the fast path), instantiated by the launcher of each target kind
// (gpu/quant/quantize_<kind>.cu through detail_run_quantize.cuh): the single-pass kernel
// (fused_group_kernel), and after the absmax and state kernels (gpu/quant/absmax.cu) the
// tensor-wise, column-wise, general and transposing element kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cast/fast_cast.hpp"
#include "gpu/quant/codebook_table.hpp"
#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/detail_element.cuh"
#include "gpu/quant/detail_fast_element.cuh"
#include "gpu/quant/detail_input_words.cuh"
#include "sim/native/pack4.hpp"
#include "sim/native/philox.hpp"

namespace exmy::gpu::quant_detail {
namespace {

// Packed 4-bit codes of a run at element base (even): 8 bytes, element 2i in the low nibble.
__device__ __forceinline__ void store_run_packed4(std::uint8_t* out, std::uint64_t base,
                                                  std::uint64_t n, bool vec,
                                                  const std::uint8_t c[kRun]) {
  if (vec && base + kRun <= n) {
    uint2 v;
    v.x = 0;
    v.y = 0;
#pragma unroll
    for (int k = 0; k < kRun / 2; ++k) v.x |= static_cast<std::uint32_t>(c[k] & 0xFu) << (4 * k);
#pragma unroll
    for (int k = 0; k < kRun / 2; ++k) {
      v.y |= static_cast<std::uint32_t>(c[kRun / 2 + k] & 0xFu) << (4 * k);
    }
    *reinterpret_cast<uint2*>(out + base / 2) = v;
  } else {
    for (int k = 0; k < kRun; k += 2) {
      if (base + k < n) {
        out[(base + k) / 2] = native::pack4_pair(c[k], base + k + 1 < n ? c[k + 1] : 0);
      }
    }
  }
}

__device__ __forceinline__ void store_run(std::uint8_t* out, std::uint64_t base, std::uint64_t n,
                                          bool vec, const std::uint8_t c[kRun]) {
  if (vec && base + kRun <= n) {
    uint4 v;
    v.x = c[0] | (c[1] << 8) | (c[2] << 16) | (static_cast<std::uint32_t>(c[3]) << 24);
    v.y = c[4] | (c[5] << 8) | (c[6] << 16) | (static_cast<std::uint32_t>(c[7]) << 24);
    v.z = c[8] | (c[9] << 8) | (c[10] << 16) | (static_cast<std::uint32_t>(c[11]) << 24);
    v.w = c[12] | (c[13] << 8) | (c[14] << 16) | (static_cast<std::uint32_t>(c[15]) << 24);
    *reinterpret_cast<uint4*>(out + base) = v;
  } else {
    for (int k = 0; k < kRun; ++k) {
      if (base + k < n) out[base + k] = c[k];
    }
  }
}

// Shared-memory tables: the codebook values (generic path and the table's slow buckets) and, for
// the fast codebook path, the bucket table built by cb_table_kernel.
template <Kind K, bool Fast>
struct SharedTables {
  static constexpr int kTab = K == Kind::codebook && Fast ? kCbEntries : 1;
  float cb[K == Kind::codebook ? 256 : 1];
  std::uint32_t tab[kTab];
};

template <Kind K, bool Fast>
__device__ __forceinline__ void load_tables(const QArgs& a, const std::uint32_t* tab_g,
                                            SharedTables<K, Fast>& t) {
  if constexpr (K == Kind::codebook) {
    for (int k = threadIdx.x; k < 256; k += blockDim.x) t.cb[k] = a.p.codebook[k];
    if constexpr (Fast) {
      const uint4* src = reinterpret_cast<const uint4*>(tab_g);
      uint4* dst = reinterpret_cast<uint4*>(t.tab);
      for (int k = threadIdx.x; k < kCbEntries / 4; k += blockDim.x) dst[k] = src[k];
    }
    __syncthreads();
  }
}

// The absmax bits of a group of S threads' runs (S = 2^k, the group aligned to S threads):
// xor shuffles inside a warp, and for S > 32 (the group spans S / 32 whole warps of the block)
// one exchange through shared memory. Two slots alternate by tile, so one barrier per tile
// suffices: a warp rewrites a slot only after the next barrier, which every warp reaches after
// reading it. Every thread of the block must call it once per tile (the barrier), and gets its
// group's maximum.
__device__ __forceinline__ std::uint32_t group_absmax(std::uint32_t acc, int S, int lane, int warp,
                                                      std::uint32_t (&warp_max)[2][kThreads / 32],
                                                      int& parity) {
  for (int off = 1; off < S && off < 32; off <<= 1) {
    acc = max(acc, __shfl_xor_sync(0xFFFFFFFFu, acc, off));
  }
  if (S > 32) {
    std::uint32_t* slot = warp_max[parity];
    parity ^= 1;
    if (lane == 0) slot[warp] = acc;
    __syncthreads();
    const int w0 = warp & ~(S / 32 - 1);
    for (int v = w0; v < w0 + S / 32; ++v) acc = max(acc, slot[v]);
  }
  return acc;
}

// ---- single pass: contiguous groups of G = 16 * S elements, S = 2^k <= 256 threads ----
// Lean: NVFP4 and MX under torchao's arithmetic, whose blocks are held to 64 registers (4 resident
// blocks per SM instead of 3 at 78): their element work is short and a block waits on its loads,
// so occupancy hides the latency (H200, same call: NVFP4 477 -> 448 us, MX torchao 496 -> 448 us).
// The others keep the compiler's choice: held to 64, OCP MX ran 483 -> 522 us (its inlined
// native fallback; out of line it ran 600 us) and the codebook path spilled (516 -> 1151 us).
// R (block-scaled targets): the element paths compiled in (MxRun); lean is the 64-register one.
// OCP MX (fp32, bf16 inputs) held to 3 resident blocks per SM (85 registers): the kernel of its
// own path took 83 for bf16, 2 blocks per SM, and ran MX bf16 e4m3fn 465 -> 582 us (H200); fp16
// inputs (111-117 registers either way) keep the compiler's choice.
template <CastInput In, Kind K, bool Fast, bool Pipe, MxRun R = MxRun::any>
__global__ void __launch_bounds__(kThreads, R == MxRun::lean ? 4
                                            : (R == MxRun::ocp_hw || R == MxRun::ocp_sw) &&
                                                    In != CastInput::fp16
                                                ? 3
                                                : 1)
    fused_group_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                       float* __restrict__ state, std::uint8_t* __restrict__ mx_scales,
                       const std::uint32_t* __restrict__ tab_g, bool vec,
                       const __grid_constant__ QArgs a) {
  __shared__ SharedTables<K, Fast> t;
  __shared__ std::uint32_t warp_max[2][kThreads / 32];
  // NVFP4: the per-tensor level, from the device (two-level, measured there) or the plan. As
  // words: a __shared__ variable cannot have Nvfp4Tensor's initializers.
  __shared__ std::uint32_t level_w[4];
  int parity = 0;
  if constexpr (K == Kind::mx) {
    if (threadIdx.x == 0) {
      const native::Nvfp4Tensor l = a.tensor_dev != nullptr ? *a.tensor_dev : a.p.tensor;
      level_w[0] = l.two_level ? 1u : 0u;
      level_w[1] = native::bits_of(l.per_tensor_scale);
      level_w[2] = native::bits_of(l.global_encode);
      level_w[3] = native::bits_of(l.global_decode);
    }
    __syncthreads();
  }
  load_tables<K, Fast>(a, tab_g, t);
  const FastCastPlan& p = a.plan;
  const int S = static_cast<int>(a.G / kRun);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * kTile;
  const std::uint64_t mine = static_cast<std::uint64_t>(threadIdx.x) * kRun;
  // Pipe: the next tile's words are loaded before this tile is reduced and quantized, so a block
  // keeps a load in flight while it computes (one-wave grid, several tiles per block).
  std::uint32_t next[InT<In>::kWords];
  std::uint64_t tile = static_cast<std::uint64_t>(blockIdx.x) * kTile;
  if (Pipe && tile < a.n) load_words<In>(x, tile + mine, a.n, vec, next);
  for (; tile < a.n; tile += stride) {
    const std::uint64_t base = tile + mine;
    std::uint32_t w[InT<In>::kWords];
    if constexpr (Pipe) {
#pragma unroll
      for (int k = 0; k < InT<In>::kWords; ++k) w[k] = next[k];
      if (tile + stride < a.n) load_words<In>(x, base + stride, a.n, vec, next);
    } else {
      load_words<In>(x, base, a.n, vec, w);
    }
    const std::uint32_t acc =
        group_absmax(run_absmax<In>(w, a.p.nan), S, lane, warp, warp_max, parity);
    const float amax = native::float_of(acc);
    float st = 0.0f;
    std::uint8_t mxs = 0;
    native::Nvfp4Tensor level;
    if constexpr (K == Kind::mx) {
      level.two_level = level_w[0] != 0;
      level.per_tensor_scale = native::float_of(level_w[1]);
      level.global_encode = native::float_of(level_w[2]);
      level.global_decode = native::float_of(level_w[3]);
      mxs = scale_code_of(a, amax, level);
    } else if constexpr (K == Kind::flt) {
      st = state_of(a, amax);
    } else {
      st = amax;
    }
    if (base < a.n && (threadIdx.x & (S - 1)) == 0) {
      const std::uint64_t g = base >> a.G_shift;  // single pass: G = 16 * 2^k
      if constexpr (K == Kind::mx) {
        mx_scales[g] = mxs;
      } else {
        state[g] = st;
      }
    }
    if (base < a.n) {
      std::uint8_t c[kRun];
      std::uint32_t cold = 0;
      if constexpr (Fast) {
        cold =
            fast_run<In, K, R>(a, p, t.cb, t.tab, group_operands<K>(a, st, mxs, level), base, w, c);
      } else {
        generic_run<In, K>(a, t.cb, st, mxs, base, w, c);
      }
      // Packed codes are 4-bit element formats: MX / NVFP4 (K == mx) or float targets.
      if ((K == Kind::mx || K == Kind::flt) && a.packed4) {
        store_run_packed4(codes, base, a.n, vec, c);
      } else {
        store_run(codes, base, a.n, vec, c);
      }
      if constexpr (K == Kind::mx) {
        if (cold != 0) mx_fixup<In>(a, x, codes, base, mxs, cold);
      }
    }
  }
}

// Tensor-wise codes: one state for every element. H: float targets by the fp8 instruction (sr:
// held to 2 resident blocks per SM, as the cast kernels' sr span kernel).
template <CastInput In, Kind K, bool Fast, FltHw H = FltHw::none>
__global__ void __launch_bounds__(kThreads, flt_hw_sr(H) ? 2 : 1)
    tensor_element_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                          const float* __restrict__ state, const std::uint32_t* __restrict__ tab_g,
                          bool vec, const __grid_constant__ QArgs a) {
  __shared__ SharedTables<K, Fast> t;
  load_tables<K, Fast>(a, tab_g, t);
  const FastCastPlan& p = a.plan;
  const GroupOperands g = group_operands<K>(a, state[0], 0);
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * kTile;
  std::uint64_t base = (static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x) * kRun;
  std::uint32_t next[InT<In>::kWords];  // the next run, loaded while this one is quantized
  if (base < a.n) load_words<In>(x, base, a.n, vec, next);
  for (; base < a.n; base += stride) {
    std::uint32_t w[InT<In>::kWords];
#pragma unroll
    for (int k = 0; k < InT<In>::kWords; ++k) w[k] = next[k];
    if (base + stride < a.n) load_words<In>(x, base + stride, a.n, vec, next);
    std::uint8_t c[kRun];
    if constexpr (Fast) {
      fast_run<In, K, MxRun::any, H>(a, p, t.cb, t.tab, g, base, w, c);
    } else {
      generic_run<In, K>(a, t.cb, g.st, g.mxs, base, w, c);
    }
    store_run(codes, base, a.n, vec, c);
  }
}

// int8 codes of kColRun consecutive elements under the scaling order O, packed little-endian:
// the order is chosen once per 8 elements, not per element.
template <CastInput In, native::ScaleOrder O>
__device__ __forceinline__ uint2 int8_codes8(const GroupOperands* gs, const std::uint32_t* w) {
  std::uint32_t lo = 0, hi = 0;
#pragma unroll
  for (int k = 0; k < kColRun; ++k) {
    const std::uint32_t c = fast_int8<O>(gs[k], value_nan_free<In>(w, k));
    if (k < 4) {
      lo |= c << (8 * k);
    } else {
      hi |= c << (8 * (k - 4));
    }
  }
  return make_uint2(lo, hi);
}

// Codes of kColRun consecutive elements starting at flat index i0 (a multiple of kColRun), fast
// path, each with its own group state gs[k], packed little-endian into 8 bytes.
template <CastInput In, Kind K>
__device__ __forceinline__ uint2 fast_codes8(const QArgs& a, const FastCastPlan& p,
                                             const SharedTables<K, true>& t,
                                             const GroupOperands* gs, std::uint64_t i0,
                                             const std::uint32_t* w) {
  if constexpr (K == Kind::int8) {
    switch (a.p.order) {
      case native::ScaleOrder::div_mul:
        return int8_codes8<In, native::ScaleOrder::div_mul>(gs, w);
      case native::ScaleOrder::recip_mul:
        return int8_codes8<In, native::ScaleOrder::recip_mul>(gs, w);
      case native::ScaleOrder::div_full_mul:
        return int8_codes8<In, native::ScaleOrder::div_full_mul>(gs, w);
      case native::ScaleOrder::fdividef_mul:
        return int8_codes8<In, native::ScaleOrder::fdividef_mul>(gs, w);
      default:
        return int8_codes8<In, native::ScaleOrder::mul_recip>(gs, w);
    }
  }
  std::uint32_t rw[kColRun] = {};
  if (K == Kind::flt && a.p.mode == RoundMode::sr) {
    // i0 is a multiple of kColRun = 8: two whole Philox blocks.
#pragma unroll
    for (int q = 0; q < kColRun / 4; ++q) {
      const native::Philox4 b = block_of(a, (i0 >> 2) + q);
#pragma unroll
      for (int k = 0; k < 4; ++k) rw[4 * q + k] = b.w[k];
    }
  }
  std::uint32_t lo = 0, hi = 0;
#pragma unroll
  for (int k = 0; k < kColRun; ++k) {
    std::uint32_t c;
    if constexpr (K == Kind::flt) {
      c = a.p.mode == RoundMode::sr
              ? fast_flt<FastMode::sr>(a, p, gs[k], exact_bits<In>(w, k), rw[k])
              : fast_flt<FastMode::rne>(a, p, gs[k], exact_bits<In>(w, k), 0u);
    } else {
      const float n = fast_normalize(a, gs[k], value_nan_free<In>(w, k));
      const std::uint32_t e = t.tab[codebook_table_index(native::bits_of(n))];
      c = (e & kCbSlow) ? cold_codebook_nearest(t.cb, n, a.p.tie)
                        : codebook_code_from_entry(e, native::bits_of(n)) & 0xFFu;
    }
    if (k < 4) {
      lo |= c << (8 * k);
    } else {
      hi |= c << (8 * (k - 4));
    }
  }
  return make_uint2(lo, hi);
}

// Column-wise codes, fast path: the thread's kColRun column states stay in registers.
template <CastInput In, Kind K>
__global__ void __launch_bounds__(kThreads)
    col_element_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                       const float* __restrict__ state, const std::uint32_t* __restrict__ tab_g,
                       std::uint64_t rows_per_block, const __grid_constant__ QArgs a) {
  __shared__ SharedTables<K, true> t;
  load_tables<K, true>(a, tab_g, t);
  const std::uint64_t c0 =
      (static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x) * kColRun;
  if (c0 >= a.cols) return;
  const FastCastPlan& p = a.plan;
  GroupOperands gs[kColRun];
#pragma unroll
  for (int k = 0; k < kColRun; ++k) gs[k] = group_operands<K>(a, state[c0 + k], 0);
  const std::uint64_t r0 = static_cast<std::uint64_t>(blockIdx.y) * rows_per_block;
  const std::uint64_t r1 = r0 + rows_per_block < a.rows ? r0 + rows_per_block : a.rows;
  std::uint64_t r = r0;
  // kColBatchOf<In> rows at a time: their loads issued together, before any of their codes (one
  // load in flight per thread left the column pass latency-bound: H200 column-wise int8 at 0.36
  // of copy, row-wise 0.57).
  constexpr int kB = kColBatchOf<In>;
  for (; r + kB <= r1; r += kB) {
    std::uint32_t w[kB][ColT<In>::kWords];
#pragma unroll
    for (int b = 0; b < kB; ++b) load_col_words<In>(x, (r + b) * a.cols + c0, w[b]);
#pragma unroll
    for (int b = 0; b < kB; ++b) {
      const std::uint64_t i0 = (r + b) * a.cols + c0;
      *reinterpret_cast<uint2*>(codes + i0) = fast_codes8<In, K>(a, p, t, gs, i0, w[b]);
    }
  }
  for (; r < r1; ++r) {
    std::uint32_t w[ColT<In>::kWords];
    load_col_words<In>(x, r * a.cols + c0, w);
    *reinterpret_cast<uint2*>(codes + r * a.cols + c0) =
        fast_codes8<In, K>(a, p, t, gs, r * a.cols + c0, w);
  }
}

// Fused quantize + transpose, fast path, for tensor-, row- and column-wise groups with
// cols % 8 == 0, rows % 16 == 0 and 16-byte aligned x and codes: tiles of kTT = 64 columns by
// kTR = 128 rows. A thread quantizes 8 consecutive elements (one or two 16-byte loads) in each of
// kTP = 4 consecutive rows, the loads of all four issued first; the 4 codes of one column then
// go into shared memory as one word, already transposed, and each column's 128 rows leave as
// eight 16-byte stores (128 contiguous bytes). With 64 x 64 tiles, two loads per thread and
// 64-byte output segments the transpose ran at 0.33 of copy (H200, fp16 rows of 4096 to int8).
constexpr int kTT = 64;
constexpr int kTP = 4;                   // consecutive rows per thread
constexpr int kTR = kThreads / 8 * kTP;  // 128 rows per tile (8 threads per tile row)
constexpr int kTTStride = kTR / 4 + 1;   // words per transposed tile row (33: fewer bank conflicts)

template <CastInput In, Kind K>
__global__ void __launch_bounds__(kThreads)
    transpose_fast_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                          const float* __restrict__ state, const std::uint32_t* __restrict__ tab_g,
                          const __grid_constant__ QArgs a) {
  __shared__ SharedTables<K, true> t;
  __shared__ std::uint32_t tileT[kTT * kTTStride];  // tileT word [c][q]: rows 4q .. 4q + 3
  load_tables<K, true>(a, tab_g, t);
  const std::uint64_t r0 = static_cast<std::uint64_t>(blockIdx.y) * kTR;
  const std::uint64_t c0 = static_cast<std::uint64_t>(blockIdx.x) * kTT;
  const int cc = (threadIdx.x & 7) * kColRun;
  const int q = threadIdx.x >> 3;  // this thread's rows: r0 + kTP q + p, p < kTP
  const std::uint64_t c = c0 + cc;
  if (c < a.cols) {
    const FastCastPlan& p = a.plan;
    GroupOperands gs[kColRun];
    if (a.col) {
#pragma unroll
      for (int k = 0; k < kColRun; ++k) gs[k] = group_operands<K>(a, state[c + k], 0);
    } else if (a.groups == 1) {
      const GroupOperands g = group_operands<K>(a, state[0], 0);
#pragma unroll
      for (int k = 0; k < kColRun; ++k) gs[k] = g;
    }
    std::uint32_t w[kTP][ColT<In>::kWords];
#pragma unroll
    for (int rp = 0; rp < kTP; ++rp) {
      const std::uint64_t r = r0 + kTP * q + rp;
      if (r < a.rows) load_col_words<In>(x, r * a.cols + c, w[rp]);
    }
    std::uint32_t col[kColRun] = {};  // col[k]: the codes of rows 4q .. 4q + 3 of column c + k
#pragma unroll
    for (int rp = 0; rp < kTP; ++rp) {
      const std::uint64_t r = r0 + kTP * q + rp;
      if (r < a.rows) {
        if (!a.col && a.groups != 1) {  // row-wise: one state for the 8 elements
          const GroupOperands g = group_operands<K>(a, state[r], 0);
#pragma unroll
          for (int k = 0; k < kColRun; ++k) gs[k] = g;
        }
        const uint2 v = fast_codes8<In, K>(a, p, t, gs, r * a.cols + c, w[rp]);
#pragma unroll
        for (int k = 0; k < kColRun; ++k) {
          col[k] |= (((k < 4 ? v.x : v.y) >> (8 * (k & 3))) & 0xFFu) << (8 * rp);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kColRun; ++k) tileT[(cc + k) * kTTStride + q] = col[k];
  }
  __syncthreads();
  // kTT columns x kTR / 16 segments of 16 rows: two per thread.
#pragma unroll
  for (int it = 0; it < kTT * (kTR / 16) / kThreads; ++it) {
    const int idx = it * kThreads + threadIdx.x;
    const int j = idx / (kTR / 16), seg = (idx % (kTR / 16)) * 16;
    const std::uint64_t oc = c0 + j, orow = r0 + seg;
    if (oc < a.cols && orow < a.rows) {
      const std::uint32_t* src = tileT + j * kTTStride + seg / 4;
      *reinterpret_cast<uint4*>(codes + oc * a.rows + orow) =
          make_uint4(src[0], src[1], src[2], src[3]);
    }
  }
}

// General codes: any contiguous G or column-wise groups, the state read per element. The group
// of the run's first element costs one division; later elements step (group, position).
template <CastInput In, Kind K>
__global__ void __launch_bounds__(kThreads)
    element_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                   const float* __restrict__ state, const std::uint8_t* __restrict__ mx_scales,
                   bool vec, const __grid_constant__ QArgs a) {
  __shared__ SharedTables<K, false> t;
  load_tables<K, false>(a, nullptr, t);
  const std::uint64_t P = a.col ? a.cols : a.G;  // the period of the group pattern
  for (std::uint64_t base =
           (static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x) * kRun;
       base < a.n; base += static_cast<std::uint64_t>(gridDim.x) * kTile) {
    std::uint32_t w[InT<In>::kWords];
    load_words<In>(x, base, a.n, vec, w);
    std::uint32_t rw[kRun];
    if (a.p.mode == RoundMode::sr) words_for_run(a, base, rw);
    std::uint64_t q = base / P, r = base - q * P;
    std::uint8_t c[kRun];
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      c[k] = 0;
      if (base + k < a.n) {
        const std::uint64_t g = a.col ? r : q;
        const float st = K == Kind::mx ? 0.0f : state[g];
        const std::uint8_t mxs = K == Kind::mx ? mx_scales[g] : 0;
        c[k] = quant_one<K>(a, t.cb, native::float_of(exact_bits<In>(w, k)), st, mxs,
                            a.p.mode == RoundMode::sr ? rw[k] : 0u);
      }
      if (++r == P) {
        r = 0;
        ++q;
      }
    }
    store_run(codes, base, a.n, vec, c);
  }
}

__device__ __forceinline__ std::uint64_t group_of_rc(const QArgs& a, std::uint64_t r,
                                                     std::uint64_t c, std::uint64_t i) {
  if (a.col) return c;
  if (a.groups == 1) return 0;
  if (a.G == a.cols) return r;
  return i / a.G;
}

// Fused quantize + transpose: 32 x 32 tiles through shared memory; codes are cols x rows.
template <CastInput In, Kind K>
__global__ void __launch_bounds__(kThreads)
    transpose_kernel(const void* __restrict__ x_, std::uint8_t* __restrict__ codes,
                     const float* __restrict__ state, const std::uint8_t* __restrict__ mx_scales,
                     const __grid_constant__ QArgs a) {
  __shared__ SharedTables<K, false> t;
  __shared__ std::uint8_t tile[32][33];
  load_tables<K, false>(a, nullptr, t);
  const auto* x = static_cast<const InputElem<In>*>(x_);
  const std::uint64_t r0 = static_cast<std::uint64_t>(blockIdx.y) * 32;
  const std::uint64_t c0 = static_cast<std::uint64_t>(blockIdx.x) * 32;
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;  // 32 x 8 threads
  for (int k = 0; k < 4; ++k) {
    const std::uint64_t r = r0 + ty + 8 * k, c = c0 + tx;
    std::uint8_t code = 0;
    if (r < a.rows && c < a.cols) {
      const std::uint64_t i = r * a.cols + c;
      const std::uint64_t g = group_of_rc(a, r, c, i);
      const std::uint32_t w = a.p.mode == RoundMode::sr ? word_of(a, i) : 0u;
      code = quant_one<K>(a, t.cb, native::float_of(widen_input<In>(x[i])),
                          K == Kind::mx ? 0.0f : state[g], K == Kind::mx ? mx_scales[g] : 0, w);
    }
    tile[ty + 8 * k][tx] = code;
  }
  __syncthreads();
  for (int k = 0; k < 4; ++k) {
    const std::uint64_t c = c0 + ty + 8 * k, r = r0 + tx;
    if (r < a.rows && c < a.cols) codes[c * a.rows + r] = tile[tx][ty + 8 * k];
  }
}

}  // namespace
}  // namespace exmy::gpu::quant_detail
