// quantize / dequantize for 2-D block (tile) schemes, block:RxC (docs/SEMANTICS.md 7.15) and
// nvfp4:16x16 (7.16, whose tile states are E4M3 codes in scale_codes).
//
// Fast path (the library rules block_deepgemm / block_te / block_torchao, 1x128 and 128x128
// tiles, fp8 targets e4m3fn / e5m2, every input type): each tile is read once, 8 consecutive
// elements per thread by 16-byte loads, held in registers between the absmax and the coding. A
// 1x128 tile is 16 lanes (a 4-step xor-shuffle max), each 16-lane group holding 8 (16-bit) or 2
// (fp32) tiles at a time, whose states are computed in as many lanes at once and shuffled to the
// rest; a 128x128 tile is one block of 256 threads (16 rows of 16 lanes, 8 rows per thread, a
// warp max then a shared-memory max). The tile's state is native::block_group_state (group_state
// of the library rules) of the absmax and the element multiplier is hoisted out of the element
// loop, computed once per tile as the reference does per element (deepgemm: RN32(1/sf); te,
// torchao: s); fp16 elements are widened by cvt.f32.f16 (exact but for NaN, whose y goes to
// tile_fixup below); the code of y = RN32(x * multiplier) is the fp8
// instruction's (gpu/cast/hw_cvt.hpp: rn + satfinite equals the reference's RNE satfinite cast
// on every non-NaN y), which is each rule's element function wherever that does not treat y
// specially: te's clamp to +-fmax and torchao's min.xorsign.abs are satfinite, and the rules
// part from the instruction only at a NaN y (te: 0x7F | sign; torchao: +fmax) or, for deepgemm's
// unclamped torch cast, at |y| >= 480 (0x7F | sign). A thread whose 8 values hold such a y
// recomputes those elements by native::quant_element (tile_fixup). Absmax: the max of |x| bit
// patterns in the input's own domain (detail_input_words.cuh; gpu/quant/quantize.cu says why that
// is the fold of native::absmax_combine), with ignore_ftz's flush of a subnormal maximum applied
// after the max as absmax_combine's per-element flush amounts to.
//
// Generic path (everything else, and the partial tiles at the right and bottom edges of a fast
// call): one warp per R×C tile, grid-stride over the tiles of a rectangle of the tile grid. The
// warp folds native::absmax_combine over its lanes' elements and takes the max of the lanes' bit
// patterns, then every lane computes the tile's state with native::group_state and its codes with
// native::quant_element, the CPU reference's loop body (sim/quant/quantize.cpp). Tiles are read
// twice there (absmax, then codes), the second read served by L2.
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cast/hw_cvt.hpp"
#include "gpu/cast/widen.hpp"
#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/detail_input_words.cuh"
#include "gpu/quant/detail_launch.cuh"
#include "gpu/quant/tile_path.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_plan.hpp"

namespace exmy::gpu::quant_detail {
namespace {

constexpr int kWarpsPerBlock = kThreads / 32;

struct TileGeom {
  std::uint64_t rows, cols, tr, tc, tiles;  // tr x tc tiles of tile_rows x tile_cols
  // The rectangle of the tile grid a generic launch covers: sub_tiles tiles, sub_tc per tile row,
  // from tile (r_first, c_first). The whole grid unless the fast path took the whole tiles.
  std::uint64_t r_first = 0, c_first = 0, sub_tc = 0, sub_tiles = 0;
};

template <CastInput In>
__global__ void __launch_bounds__(kThreads)
    tile_quant_kernel(const void* __restrict__ x_, std::uint8_t* __restrict__ codes,
                      float* __restrict__ state, std::uint8_t* __restrict__ scale_codes,
                      const TileGeom g, const __grid_constant__ native::QuantPlan p) {
  const auto* x = static_cast<const InputElem<In>*>(x_);
  const int lane = threadIdx.x & 31;
  const std::uint64_t warps = static_cast<std::uint64_t>(gridDim.x) * kWarpsPerBlock;
  const bool sr = p.mode == RoundMode::sr;
  for (std::uint64_t u =
           static_cast<std::uint64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
       u < g.sub_tiles; u += warps) {
    const std::uint64_t tile_r = g.r_first + u / g.sub_tc, tile_c = g.c_first + u % g.sub_tc;
    const std::uint64_t t = tile_r * g.tc + tile_c;  // the tile's state index
    const std::uint64_t r0 = tile_r * p.tile_rows, c0 = tile_c * p.tile_cols;
    const std::uint64_t h = r0 + p.tile_rows <= g.rows ? p.tile_rows : g.rows - r0;
    const std::uint64_t w = c0 + p.tile_cols <= g.cols ? p.tile_cols : g.cols - c0;
    const std::uint64_t n = h * w;
    float acc = native::kAbsmaxInit;
    for (std::uint64_t k = lane; k < n; k += 32) {
      const std::uint64_t i = (r0 + k / w) * g.cols + c0 + k % w;
      acc = native::absmax_combine(acc, native::float_of(widen_input<In>(x[i])), p.nan);
    }
    const float amax = native::float_of(__reduce_max_sync(0xFFFFFFFFu, native::bits_of(acc)));
    const std::uint32_t st = native::group_state(p, amax);
    if (lane == 0) {
      if (p.byte_scales()) {
        scale_codes[t] = static_cast<std::uint8_t>(st);  // E4M3 / E8M0 code (nvfp4:16x16)
      } else {
        state[t] = native::stored_state(p, st);
      }
    }
    for (std::uint64_t k = lane; k < n; k += 32) {
      const std::uint64_t i = (r0 + k / w) * g.cols + c0 + k % w;
      const std::uint32_t word = sr ? native::philox_word(p.seed, p.stream(), i) : 0u;
      const float v = native::float_of(widen_input<In>(x[i]));
      codes[i] = static_cast<std::uint8_t>(native::quant_element(p, v, st, word).code);
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    tile_dequant_kernel(const std::uint8_t* __restrict__ codes, const float* __restrict__ state,
                        const std::uint8_t* __restrict__ scale_codes, float* __restrict__ out,
                        const TileGeom g, const __grid_constant__ native::QuantPlan p) {
  const std::uint64_t n = g.rows * g.cols;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * kThreads) {
    const std::uint64_t r = i / g.cols, c = i % g.cols;
    const std::uint64_t t = (r / p.tile_rows) * g.tc + c / p.tile_cols;
    const std::uint32_t st = p.byte_scales() ? scale_codes[t] : native::bits_of(state[t]);
    out[i] = native::dequant_element(p, codes[i], st);
  }
}

TileGeom geom(const QArgs& a) {
  TileGeom g{};
  g.rows = a.rows;
  g.cols = a.cols;
  g.tr = (a.rows + a.p.tile_rows - 1) / a.p.tile_rows;
  g.tc = (a.cols + a.p.tile_cols - 1) / a.p.tile_cols;
  g.tiles = g.tr * g.tc;
  g.sub_tc = g.tc;
  g.sub_tiles = g.tiles;
  return g;
}

// ---- fast path ----
constexpr int kFastCols = 128;                     // the tile width the fast kernels cover
constexpr int kLanesPerRow = kFastCols / kColRun;  // 16 lanes of kColRun = 8 elements
constexpr int kSquareRowsPerThread = kFastCols * kLanesPerRow / kThreads;  // 128x128: 8 rows

thread_local TilePath g_tile_path = TilePath::automatic;

// The whole tiles of a fast call: trf x tcf tiles from the top left, tc tiles per state row, rem =
// cols - 128 tcf the columns of the partial right tile (tc = tcf + (rem != 0)).
struct FastGeom {
  std::uint64_t cols;
  std::uint32_t tcf, tc, tiles, rem;
};

// The per-tile element multiplier, as the reference's element function forms it from the state
// (native::deepgemm_element: RN32(1 / sf); te_block_element, torchao_block_element: s).
__device__ __forceinline__ float tile_multiplier(const native::QuantPlan& p, std::uint32_t st) {
  return p.rule == native::ScaleRule::block_deepgemm ? native::rn32_div(1.0f, native::float_of(st))
                                                     : native::float_of(st);
}

// The smallest |y| bits whose code is not the instruction's (the file comment): deepgemm's
// |y| >= 480 (inf and NaN included), else NaN.
__device__ __forceinline__ std::uint32_t tile_cold_from(const native::QuantPlan& p) {
  return p.rule == native::ScaleRule::block_deepgemm ? 0x43F00000u : 0x7F800001u;
}

// The largest magnitude of one thread's 8 elements (words w) in the input's own domain (fp32 bits
// or a 16-bit pattern; absmax_finish makes it fp32 absmax bits), NaN magnitudes dropped when
// `ignore` (--nan ignore / ignore_ftz): absmax_word's max with the policy as a mask, not a choice
// between absmax_word<In, true> and <In, false> per word, which compiled to a branch per word.
template <CastInput In>
__device__ __forceinline__ std::uint32_t magnitude8(const std::uint32_t* w, bool ignore) {
  std::uint32_t acc = 0;
#pragma unroll
  for (int k = 0; k < ColT<In>::kWords; ++k) {
    if constexpr (In == CastInput::fp32) {
      const std::uint32_t b = w[k] & 0x7FFFFFFFu;
      acc = max(acc, ignore && b > 0x7F800000u ? 0u : b);
    } else {
      constexpr std::uint32_t kInf2 = In == CastInput::bf16 ? 0x7F807F80u : 0x7C007C00u;
      const std::uint32_t m = w[k] & 0x7FFF7FFFu;
      acc = __vmaxu2(acc, m & ~(__vcmpgtu2(m, kInf2) & (ignore ? ~0u : 0u)));
    }
  }
  if constexpr (In != CastInput::fp32) acc = max(acc & 0xFFFFu, acc >> 16);
  return acc;
}

// The tile's amax from the max of its absmax bits: ignore_ftz flushes a subnormal maximum, as
// absmax_combine's flush of every subnormal |x| leaves the max of the rest (0 if none is normal).
__device__ __forceinline__ float tile_amax(const native::QuantPlan& p, std::uint32_t m) {
  if (p.nan == native::NanPolicy::ignore_ftz && (m & 0x7F800000u) == 0) m = 0;
  return native::float_of(m);
}

// The codes of 8 elements (words w) at multiplier mul, x0 in the low byte of .x; top gets the
// largest |y| bits.
template <CastInput In, HwFp8 T>
__device__ __forceinline__ uint2 codes8(const native::QuantPlan& p, const std::uint32_t* w,
                                        float mul, std::uint32_t st, std::uint32_t& top) {
  float y[kColRun];
#pragma unroll
  for (int k = 0; k < kColRun; ++k) {
    // value_nan_free: fp16 by cvt.f32.f16, exact for every non-NaN fp16 (subnormals included). A
    // NaN x gives a NaN y whatever its bits, which is >= tile_cold_from: tile_fixup recodes it
    // from the exact widening, so the codes keep the reference's NaN sign / payload handling.
    y[k] = __fmul_rn(value_nan_free<In>(w, k), mul);
    top = max(top, native::bits_of(y[k]) & 0x7FFFFFFFu);
  }
#if defined(EXMY_HW_FP8)
  return make_uint2(cvt_f32x4<T>(y[0], y[1], y[2], y[3]), cvt_f32x4<T>(y[4], y[5], y[6], y[7]));
#else  // no instruction below sm_89: the reference's element function, the definition
  std::uint32_t c[2] = {0, 0};
#pragma unroll
  for (int k = 0; k < kColRun; ++k) {
    const float x = native::float_of(exact_bits<In>(w, k));
    c[k / 4] |= static_cast<std::uint32_t>(native::quant_element(p, x, st, 0u).code)
                << (8 * (k % 4));
  }
  return make_uint2(c[0], c[1]);
#endif
}

// The reference's codes of the 8 elements at off (the rare thread whose y met tile_cold_from):
// the input is read again rather than indexing the registers by a loop variable (which would move
// them to local memory), one element per iteration.
template <CastInput In>
__device__ __noinline__ void tile_fixup(const native::QuantPlan& p, const void* x,
                                        std::uint8_t* codes, std::uint64_t off, std::uint32_t st) {
  const auto* xs = static_cast<const InputElem<In>*>(x);
#pragma unroll 1
  for (int k = 0; k < kColRun; ++k) {
    const float v = native::float_of(widen_input<In>(xs[off + k]));
    codes[off + k] = static_cast<std::uint8_t>(native::quant_element(p, v, st, 0u).code);
  }
}

// The state of the 1x128 tile starting at tile_off, recomputed from the input as
// tile_row_fast_kernel computes it (the max of magnitude8 over the tile's 16 runs, absmax_finish,
// tile_amax, block_group_state): the row kernel's fix-up derives it here rather than keep every
// tile's state live across its hot path for the rare call.
template <CastInput In>
__device__ __forceinline__ std::uint32_t row_tile_state_of(const native::QuantPlan& p,
                                                           const void* x, std::uint64_t tile_off) {
  const bool ignore = p.nan != native::NanPolicy::propagate;
  std::uint32_t m = 0;
#pragma unroll 1
  for (int l = 0; l < kLanesPerRow; ++l) {
    std::uint32_t w[ColT<In>::kWords];
    load_col_words<In>(x, tile_off + static_cast<std::uint64_t>(l) * kColRun, w);
    m = max(m, magnitude8<In>(w, ignore));
  }
  return native::block_group_state(p, tile_amax(p, absmax_finish<In>(m)));
}

template <CastInput In, HwFp8 T>
__device__ __forceinline__ void code_and_store(const native::QuantPlan& p, const void* x,
                                               std::uint8_t* codes, std::uint64_t off,
                                               const std::uint32_t* w, float mul, std::uint32_t st,
                                               std::uint32_t cold_from) {
  std::uint32_t top = 0;
  const uint2 c = codes8<In, T>(p, w, mul, st, top);
  *reinterpret_cast<uint2*>(codes + off) = c;
  if (top >= cold_from) tile_fixup<In>(p, x, codes, off, st);
}

// Where 1x128 tile t (row-major over the whole tiles) starts in x: row r = t / tcf, column tile
// c = t - r tcf at r cols + 128 c = 128 t + r rem. kRem: whether rem != 0; else 128 t, in 64
// bits from a 64-bit t so that a pass's tile offsets are one base plus constants (no register
// per tile across the pass). t < 2^31 (fast_covers).
template <bool kRem>
__device__ __forceinline__ std::uint64_t row_tile_offset(const FastGeom& g, std::uint64_t t) {
  const std::uint64_t o = t * kFastCols;
  if constexpr (!kRem) return o;
  return o + static_cast<std::uint64_t>(static_cast<std::uint32_t>(t) / g.tcf) * g.rem;
}

constexpr int kRowGroups = kThreads / kLanesPerRow;  // 16-lane groups per block

// The row kernel's fix-up, after a pass's stores (so that no value of the pass lives across the
// call): the reference's codes (tile_fixup) of the thread's 8 elements at `lane` in each tile j of
// the pass, first + 16 j, whose bit j of `cold` is set (codes8's top met tile_cold_from), with the
// tile's state recomputed (row_tile_state_of).
template <CastInput In, bool kRem>
__device__ __noinline__ void row_tiles_fixup(const native::QuantPlan& p, const FastGeom g,
                                             const void* x, std::uint8_t* codes,
                                             std::uint64_t first, int lane, std::uint32_t cold) {
#pragma unroll 1
  for (; cold != 0; cold &= cold - 1) {
    const std::uint64_t j = static_cast<std::uint64_t>(__ffs(static_cast<int>(cold)) - 1);
    const std::uint64_t tile_off = row_tile_offset<kRem>(g, first + j * kRowGroups);
    tile_fixup<In>(p, x, codes, tile_off + static_cast<std::uint64_t>(lane) * kColRun,
                   row_tile_state_of<In>(p, x, tile_off));
  }
}

// Tile t's state index r tc + c = t + r (tc - tcf).
template <bool kRem>
__device__ __forceinline__ std::uint64_t row_tile_state(const FastGeom& g, std::uint32_t t) {
  if constexpr (!kRem) return t;
  return static_cast<std::uint64_t>(t) + t / g.tcf;
}

// The absmax bits of the thread's kK tiles (words w[j]), each the max over its 16 lanes (xor
// shuffles of distance < 16 stay in a 16-lane half). 16-bit inputs reduce two tiles per shuffle,
// their 16-bit magnitudes packed in one word, and widen after the max (absmax_finish is monotone:
// the max of finished magnitudes is the finished max).
template <CastInput In, int kK>
__device__ __forceinline__ void row_tile_absmax(const std::uint32_t (&w)[kK][ColT<In>::kWords],
                                                bool ignore, std::uint32_t (&m)[kK]) {
  if constexpr (In == CastInput::fp32) {
#pragma unroll
    for (int j = 0; j < kK; ++j) {
      std::uint32_t v = magnitude8<In>(w[j], ignore);
#pragma unroll
      for (int d = kLanesPerRow / 2; d >= 1; d /= 2) v = max(v, __shfl_xor_sync(~0u, v, d));
      m[j] = absmax_finish<In>(v);
    }
  } else {
    static_assert(kK % 2 == 0, "16-bit inputs pair their tiles");
#pragma unroll
    for (int j = 0; j < kK; j += 2) {
      std::uint32_t v = magnitude8<In>(w[j], ignore) | magnitude8<In>(w[j + 1], ignore) << 16;
#pragma unroll
      for (int d = kLanesPerRow / 2; d >= 1; d /= 2) v = __vmaxu2(v, __shfl_xor_sync(~0u, v, d));
      m[j] = absmax_finish<In>(v & 0xFFFFu);
      m[j + 1] = absmax_finish<In>(v >> 16);
    }
  }
}

// Whether codes8 reads the tile state: only on the software path (no fp8 instruction).
#if defined(EXMY_HW_FP8)
constexpr bool kElementsNeedState = false;
#else
constexpr bool kElementsNeedState = true;
#endif

// Blocks per SM the row kernel is compiled for (a cap of 64K / (256 b) registers): 4 when rows are
// whole tiles (62-64 registers, no spills, 128 KB of loads in flight an SM at 8 tiles per 16-bit
// group), 3 otherwise (80; at 64 the per-tile divisions by tcf spill).
template <bool kRem>
constexpr int kRowMinBlocks = kRem ? 3 : 4;

// 1x128 tiles: 16 lanes per tile, kK tiles per 16-lane group (kK * 32 B of fp32, kK * 16 B of
// 16-bit loads in flight per thread), tile j of group grp the block's tile j * 16 + grp. The
// per-tile work (the state's divisions, native::stored_state, the multiplier) is done once per
// tile, not once per lane: lane j < kK of a group computes its tile j's, then the state and the
// multiplier (and, on the software path, the state) are shuffled to the group's lanes. The
// element path is codes8's; a thread's tiles that need tile_fixup are flagged and re-coded after
// the pass's stores (row_tiles_fixup, which recomputes their states), so the pass keeps no value
// live across a call and has no spills.
template <CastInput In, HwFp8 T, int kK, bool kRem>
__global__ void __launch_bounds__(kThreads, kRowMinBlocks<kRem>)
    tile_row_fast_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                         float* __restrict__ state, const FastGeom g,
                         const __grid_constant__ native::QuantPlan p) {
  static_assert(kK <= kLanesPerRow, "one lane per tile of the group");
  constexpr int kGroups = kRowGroups;
  const int lane = threadIdx.x % kLanesPerRow, grp = threadIdx.x / kLanesPerRow;
  const std::uint32_t cold_from = tile_cold_from(p);
  const bool ignore = p.nan != native::NanPolicy::propagate;
  const std::uint32_t per_block = kGroups * kK;
  for (std::uint32_t b0 = blockIdx.x * per_block; b0 < g.tiles; b0 += gridDim.x * per_block) {
    std::uint32_t w[kK][ColT<In>::kWords];
    std::uint64_t off[kK];
    const std::uint64_t first = static_cast<std::uint64_t>(b0) + static_cast<std::uint64_t>(grp);
#pragma unroll
    for (int j = 0; j < kK; ++j) {
      const std::uint32_t t = b0 + static_cast<std::uint32_t>(j * kGroups + grp);
      off[j] = row_tile_offset<kRem>(g, first + static_cast<std::uint64_t>(j) * kGroups) +
               static_cast<std::uint64_t>(lane) * kColRun;
      if (t < g.tiles) {
        load_col_words<In>(x, off[j], w[j]);
      } else {
#pragma unroll
        for (int k = 0; k < ColT<In>::kWords; ++k) w[j][k] = 0;
      }
    }
    std::uint32_t m[kK];
    row_tile_absmax<In, kK>(w, ignore, m);
    // This lane's tile (lane < kK; the other lanes compute tile 0's again, unused).
    std::uint32_t mine = m[0];
#pragma unroll
    for (int j = 1; j < kK; ++j) mine = lane == j ? m[j] : mine;
    const std::uint32_t st_mine = native::block_group_state(p, tile_amax(p, mine));
    const float mul_mine = tile_multiplier(p, st_mine);
    const std::uint32_t t_mine = b0 + static_cast<std::uint32_t>(lane * kGroups + grp);
    if (lane < kK && t_mine < g.tiles) {
      state[row_tile_state<kRem>(g, t_mine)] = native::stored_state(p, st_mine);
    }
    std::uint32_t st[kK];
    float mul[kK];
#pragma unroll
    for (int j = 0; j < kK; ++j) {
      st[j] = kElementsNeedState ? __shfl_sync(~0u, st_mine, j, kLanesPerRow) : 0u;
      mul[j] = __shfl_sync(~0u, mul_mine, j, kLanesPerRow);
    }
    std::uint32_t cold = 0;  // bit j: tile j's codes need row_tiles_fixup
#pragma unroll
    for (int j = 0; j < kK; ++j) {
      if (b0 + static_cast<std::uint32_t>(j * kGroups + grp) >= g.tiles) continue;
      std::uint32_t top = 0;
      *reinterpret_cast<uint2*>(codes + off[j]) = codes8<In, T>(p, w[j], mul[j], st[j], top);
      cold |= top >= cold_from ? 1u << j : 0u;
    }
    if (cold != 0) row_tiles_fixup<In, kRem>(p, g, x, codes, first, lane, cold);
  }
}

// 128x128 tiles: one block per tile, thread (grp, lane) holds rows grp + 16 k (k < 8), columns
// 8 lane .. 8 lane + 7.
template <CastInput In, HwFp8 T>
__global__ void __launch_bounds__(kThreads)
    tile_square_fast_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                            float* __restrict__ state, const FastGeom g,
                            const __grid_constant__ native::QuantPlan p) {
  constexpr int kR = kSquareRowsPerThread;
  constexpr int kRowStep = kThreads / kLanesPerRow;  // 16
  __shared__ std::uint32_t warp_max[kThreads / 32];
  const int lane = threadIdx.x % kLanesPerRow, grp = threadIdx.x / kLanesPerRow;
  const std::uint32_t cold_from = tile_cold_from(p);
  for (std::uint32_t t = blockIdx.x; t < g.tiles; t += gridDim.x) {
    const std::uint32_t tr = t / g.tcf, tcol = t - tr * g.tcf;
    const std::uint64_t base = static_cast<std::uint64_t>(tr) * kFastCols * g.cols +
                               static_cast<std::uint64_t>(tcol) * kFastCols + lane * kColRun;
    std::uint32_t w[kR][ColT<In>::kWords];
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      load_col_words<In>(x, base + static_cast<std::uint64_t>(grp + kRowStep * k) * g.cols, w[k]);
    }
    // The max of the rows' magnitudes in the input's domain, finished once (absmax_finish is
    // monotone; for fp16 it is the software widening, once per thread rather than once a row).
    std::uint32_t m = 0;
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      m = max(m, magnitude8<In>(w[k], p.nan != native::NanPolicy::propagate));
    }
    m = __reduce_max_sync(~0u, absmax_finish<In>(m));
    if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x / 32] = m;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kThreads / 32; ++k) m = max(m, warp_max[k]);
    __syncthreads();  // warp_max is rewritten by the next tile
    const std::uint32_t st = native::block_group_state(p, tile_amax(p, m));
    if (threadIdx.x == 0)
      state[static_cast<std::uint64_t>(tr) * g.tc + tcol] = native::stored_state(p, st);
    const float mul = tile_multiplier(p, st);
#pragma unroll
    for (int k = 0; k < kR; ++k) {
      code_and_store<In, T>(p, x, codes,
                            base + static_cast<std::uint64_t>(grp + kRowStep * k) * g.cols, w[k],
                            mul, st, cold_from);
    }
  }
}

// Whether the fast path covers the call's whole tiles (pointers checked by the caller).
bool fast_covers(const QArgs& a) {
  const native::QuantPlan& p = a.p;
  const bool rule = p.rule == native::ScaleRule::block_deepgemm ||
                    p.rule == native::ScaleRule::block_te ||
                    p.rule == native::ScaleRule::block_torchao;
  // deepgemm's element function is e4m3fn whatever the target (native::deepgemm_element).
  const bool fp8 = p.rule == native::ScaleRule::block_deepgemm || p.fmt == formats::e4m3fn ||
                   p.fmt == formats::e5m2;
  const bool shape = p.tile_cols == kFastCols && (p.tile_rows == 1 || p.tile_rows == kFastCols);
  if (!rule || !fp8 || !shape || a.cols % kColRun != 0) return false;
  const std::uint64_t tiles = (a.rows / p.tile_rows) * (a.cols / kFastCols);
  return tiles >= 1 && tiles < (std::uint64_t{1} << 31);
}

HwFp8 fast_target(const QArgs& a) {
  return a.p.rule == native::ScaleRule::block_deepgemm || a.p.fmt == formats::e4m3fn ? HwFp8::e4m3
                                                                                     : HwFp8::e5m2;
}

template <CastInput In, HwFp8 T>
void launch_fast(const void* x, const QArgs& a, const QuantizedOut& o, cudaStream_t s) {
  FastGeom g{};
  g.cols = a.cols;
  g.tcf = static_cast<std::uint32_t>(a.cols / kFastCols);
  g.tc = static_cast<std::uint32_t>((a.cols + kFastCols - 1) / kFastCols);
  g.tiles = static_cast<std::uint32_t>((a.rows / a.p.tile_rows) * g.tcf);
  g.rem = static_cast<std::uint32_t>(a.cols % kFastCols);
  if (a.p.tile_rows == 1) {
    // 64 B (fp32) or 128 B (16-bit: as the 128x128 kernel, which reaches copy bandwidth) of loads
    // per thread, 2 or 8 tiles' states per pass of a group, in as many lanes.
    constexpr int kK = In == CastInput::fp32 ? 2 : 8;
    const unsigned blocks = blocks_for(g.tiles, (kThreads / kLanesPerRow) * kK);
    if (g.rem == 0) {
      tile_row_fast_kernel<In, T, kK, false>
          <<<blocks, kThreads, 0, s>>>(x, o.codes, o.state, g, a.p);
    } else {
      tile_row_fast_kernel<In, T, kK, true>
          <<<blocks, kThreads, 0, s>>>(x, o.codes, o.state, g, a.p);
    }
  } else {
    tile_square_fast_kernel<In, T>
        <<<blocks_for(g.tiles, 1), kThreads, 0, s>>>(x, o.codes, o.state, g, a.p);
  }
  cuda_check_launch("tile fast quantize kernel launch");
}

template <CastInput In>
void launch_generic(const void* x, const QArgs& a, const QuantizedOut& o, const TileGeom& g,
                    cudaStream_t s) {
  if (g.sub_tiles == 0) return;
  const unsigned blocks = blocks_for((g.sub_tiles + kWarpsPerBlock - 1) / kWarpsPerBlock, 1);
  tile_quant_kernel<In><<<blocks, kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, g, a.p);
  cuda_check_launch("tile quantize kernel launch");
}

// The fast kernel on the whole tiles, the generic one on the right strip (the partial last tile
// column, every tile row) and the bottom strip (the partial last tile row, the whole columns).
template <CastInput In>
void run_tiles(const void* x, const QArgs& a, const QuantizedOut& o, cudaStream_t s) {
  const TileGeom g = geom(a);
  const bool fast = g_tile_path == TilePath::automatic && fast_covers(a) && is_aligned(x, 16) &&
                    is_aligned(o.codes, 8);
  if (!fast) {
    launch_generic<In>(x, a, o, g, s);
    return;
  }
  if (fast_target(a) == HwFp8::e4m3) {
    launch_fast<In, HwFp8::e4m3>(x, a, o, s);
  } else {
    launch_fast<In, HwFp8::e5m2>(x, a, o, s);
  }
  const std::uint64_t trf = a.rows / a.p.tile_rows, tcf = a.cols / kFastCols;
  TileGeom right = g, bottom = g;
  right.c_first = tcf;
  right.sub_tc = g.tc - tcf;
  right.sub_tiles = g.tr * right.sub_tc;
  bottom.r_first = trf;
  bottom.sub_tc = tcf;
  bottom.sub_tiles = (g.tr - trf) * tcf;
  if (right.sub_tc == 0) right.sub_tc = 1;  // no tiles; keeps the kernel's division defined
  launch_generic<In>(x, a, o, right, s);
  launch_generic<In>(x, a, o, bottom, s);
}

}  // namespace

void run_quantize_tile(const void* x, CastInput in, const QArgs& a, const quant::Options& /*opt*/,
                       const QuantizedOut& o, cudaStream_t s) {
  if (a.n == 0) return;  // shape rules: check_options (quantize.cu)
  switch (in) {
    case CastInput::fp32:
      run_tiles<CastInput::fp32>(x, a, o, s);
      break;
    case CastInput::bf16:
      run_tiles<CastInput::bf16>(x, a, o, s);
      break;
    case CastInput::fp16:
      run_tiles<CastInput::fp16>(x, a, o, s);
      break;
  }
}

void run_dequantize_tile(const std::uint8_t* codes, const float* state,
                         const std::uint8_t* scale_codes, const QArgs& a, float* out,
                         cudaStream_t s) {
  if (a.n == 0) return;
  const std::uint64_t blocks = (a.n + kThreads - 1) / kThreads;
  tile_dequant_kernel<<<blocks_for(blocks, 1), kThreads, 0, s>>>(codes, state, scale_codes, out,
                                                                 geom(a), a.p);
  cuda_check_launch("tile dequantize kernel launch");
}

}  // namespace exmy::gpu::quant_detail

namespace exmy::gpu {

void set_tile_path(TilePath path) {
  quant_detail::g_tile_path = path;
}

bool tile_fast_path_covers(CastInput in, std::size_t rows, std::size_t cols,
                           const quant::Options& opt_in) {
  quant::Options opt = opt_in;  // the source dtype is part of the plan, as in gpu::quantize
  opt.source = in == CastInput::bf16   ? native::Storage::bf16
               : in == CastInput::fp16 ? native::Storage::f16
                                       : native::Storage::f32;
  quant_detail::check_options(rows, cols, opt);
  const quant_detail::QArgs a = quant_detail::make_args(rows, cols, opt);
  return a.p.groups == native::GroupShape::tile && quant_detail::fast_covers(a);
}

}  // namespace exmy::gpu
