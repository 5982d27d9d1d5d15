// The absmax pass of the two-pass quantize path and gpu::group_absmax: per-group absmax as the max
// of |x| bit patterns (tensor-wise, contiguous groups, columns; atomicMax per block or group),
// then the per-group state kernel (native::group_state, or the MX / NVFP4 scale code).
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/detail_element.cuh"
#include "gpu/quant/detail_input_words.cuh"
#include "gpu/quant/detail_launch.cuh"
#include "gpu/quant/quantize.hpp"

namespace exmy::gpu::quant_detail {
namespace {

// ---- two-pass path ----
// Tensor-wise absmax: runs of kRun elements with 16-byte loads, a max in the input's bit domain,
// a warp reduction and one atomicMax per block.
template <CastInput In, bool Ignore>
__global__ void __launch_bounds__(kThreads)
    amax_tensor_kernel(const void* __restrict__ x, std::uint32_t* __restrict__ amax,
                       std::uint64_t n, bool vec) {
  __shared__ std::uint32_t red[kThreads / 32];
  std::uint32_t acc = 0;
  for (std::uint64_t base =
           (static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x) * kRun;
       base < n; base += static_cast<std::uint64_t>(gridDim.x) * kTile) {
    std::uint32_t w[InT<In>::kWords];
    load_words<In>(x, base, n, vec, w);
#pragma unroll
    for (int k = 0; k < InT<In>::kWords; ++k) acc = absmax_word<In, Ignore>(acc, w[k]);
  }
  if constexpr (In != CastInput::fp32) acc = max(acc & 0xFFFFu, acc >> 16);
  acc = __reduce_max_sync(0xFFFFFFFFu, absmax_finish<In>(acc));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int v = 1; v < kThreads / 32; ++v) acc = max(acc, red[v]);
    if (acc != 0) atomicMax(amax, acc);
  }
}

// absmax of contiguous groups of G, G a multiple of kTile (rows of 4096 * k elements, block:4096
// * k): every tile lies inside one group, so a block reduces its tile (the bit-domain max of the
// single pass's runs, equal to the per-element fold: the file comment of quantize.cu) and makes
// one atomicMax per tile. amax_contig_kernel's per-element group test and per-thread atomics per
// group cost the transposing row-wise path (H200, 2^28 fp16 elements in rows of 4096) more than
// its reads.
template <CastInput In, bool Ignore>
__global__ void __launch_bounds__(kThreads)
    amax_tiles_kernel(const void* __restrict__ x, std::uint32_t* __restrict__ amax, bool vec,
                      const __grid_constant__ QArgs a) {
  __shared__ std::uint32_t red[kThreads / 32];
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * kTile;
  for (std::uint64_t tile = static_cast<std::uint64_t>(blockIdx.x) * kTile; tile < a.n;
       tile += stride) {
    std::uint32_t w[InT<In>::kWords];
    // Past n the words are 0, magnitude 0: the identity of the max.
    load_words<In>(x, tile + static_cast<std::uint64_t>(threadIdx.x) * kRun, a.n, vec, w);
    std::uint32_t acc = __reduce_max_sync(0xFFFFFFFFu, run_absmax_as<In, Ignore>(w));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int v = 1; v < kThreads / 32; ++v) acc = max(acc, red[v]);
      if (acc != 0) atomicMax(amax + tile / a.G, acc);
    }
    __syncthreads();  // red is rewritten by the next tile
  }
}

// The same groups with whole tiles only (n % kTile == 0) and a 16-byte aligned x: one warp per
// tile, 16-byte loads, kTileWarpLoads per lane in flight (8 KiB of a 16-bit tile per warp at once:
// amax_tiles_kernel keeps 8 KiB in flight per block of 8 warps and a barrier per tile), a warp max
// and one atomicMax per tile; a one-wave grid strides over the tiles. Rows of 4096 are the
// transposing row-wise path's groups: its first read of x, before transpose_fast_kernel's.
constexpr int kTileWarpLoads = 8;

template <CastInput In, bool Ignore>
__global__ void __launch_bounds__(kThreads)
    amax_tile_warp_kernel(const void* __restrict__ x, std::uint32_t* __restrict__ amax,
                          const __grid_constant__ QArgs a) {
  constexpr int kVecs = kTile * static_cast<int>(sizeof(typename InT<In>::T)) / 16 / 32;
  const int lane = threadIdx.x & 31;
  const std::uint64_t warps = static_cast<std::uint64_t>(gridDim.x) * (kThreads / 32);
  const std::uint64_t tiles = a.n / kTile;
  for (std::uint64_t t =
           static_cast<std::uint64_t>(blockIdx.x) * (kThreads / 32) + (threadIdx.x >> 5);
       t < tiles; t += warps) {
    const uint4* q =
        reinterpret_cast<const uint4*>(static_cast<const typename InT<In>::T*>(x) + t * kTile);
    std::uint32_t acc = 0;
#pragma unroll
    for (int j = 0; j < kVecs; j += kTileWarpLoads) {
      uint4 v[kTileWarpLoads];
#pragma unroll
      for (int k = 0; k < kTileWarpLoads; ++k) v[k] = q[(j + k) * 32 + lane];
#pragma unroll
      for (int k = 0; k < kTileWarpLoads; ++k) {
        acc = absmax_word<In, Ignore>(acc, v[k].x);
        acc = absmax_word<In, Ignore>(acc, v[k].y);
        acc = absmax_word<In, Ignore>(acc, v[k].z);
        acc = absmax_word<In, Ignore>(acc, v[k].w);
      }
    }
    if constexpr (In != CastInput::fp32) acc = max(acc & 0xFFFFu, acc >> 16);
    acc = __reduce_max_sync(0xFFFFFFFFu, absmax_finish<In>(acc));
    if (lane == 0 && acc != 0) atomicMax(amax + t * kTile / a.G, acc);
  }
}

// absmax of contiguous groups of G: each block owns a contiguous span of whole tiles; a thread
// carries (group, max) along its runs and flushes with atomicMax when the group changes.
template <CastInput In>
__global__ void __launch_bounds__(kThreads)
    amax_contig_kernel(const void* __restrict__ x_, std::uint32_t* __restrict__ amax, bool vec,
                       std::uint64_t tiles_per_block, const __grid_constant__ QArgs a) {
  std::uint64_t cur = ~std::uint64_t{0};
  std::uint32_t acc = 0;
  const std::uint64_t t0 = static_cast<std::uint64_t>(blockIdx.x) * tiles_per_block;
  for (std::uint64_t t = t0; t < t0 + tiles_per_block; ++t) {
    const std::uint64_t base = t * kTile + static_cast<std::uint64_t>(threadIdx.x) * kRun;
    if (base >= a.n) break;
    std::uint32_t w[InT<In>::kWords];
    load_words<In>(x_, base, a.n, vec, w);
    std::uint64_t g = base / a.G, r = base - g * a.G;
#pragma unroll
    for (int k = 0; k < kRun; ++k) {
      if (base + k < a.n) {
        if (g != cur) {
          if (acc != 0) atomicMax(amax + cur, acc);
          cur = g;
          acc = 0;
        }
        acc = max(acc, abs_bits(native::float_of(exact_bits<In>(w, k)), a.p.nan));
      }
      if (++r == a.G) {
        r = 0;
        ++g;
      }
    }
  }
  if (acc != 0) atomicMax(amax + cur, acc);
}

// absmax per column, scalar: thread = column, each block a strip of rows.
template <CastInput In>
__global__ void __launch_bounds__(kThreads)
    amax_col_kernel(const void* __restrict__ x_, std::uint32_t* __restrict__ amax,
                    std::uint64_t rows_per_block, const __grid_constant__ QArgs a) {
  const auto* x = static_cast<const InputElem<In>*>(x_);
  const std::uint64_t c = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (c >= a.cols) return;
  const std::uint64_t r0 = static_cast<std::uint64_t>(blockIdx.y) * rows_per_block;
  const std::uint64_t r1 = r0 + rows_per_block < a.rows ? r0 + rows_per_block : a.rows;
  std::uint32_t acc = 0;
  for (std::uint64_t r = r0; r < r1; ++r) {
    acc = max(acc, abs_bits(native::float_of(widen_input<In>(x[r * a.cols + c])), a.p.nan));
  }
  if (acc != 0) atomicMax(amax + c, acc);
}

// Column absmax, vectorized (cols % kColRun == 0, 16-byte aligned rows): the first of the
// column-wise path's two reads of x. A column's scale depends on all of its rows and x does not
// fit on chip (2^28 fp16 elements: 512 MiB against the H200's 50 MB L2), so the code pass reads x
// from DRAM again: 5 B per fp16 element in all (2 + 2 in, 1 out), the two-read roofline (2^28 *
// 5 B over copy bandwidth) rather than the benchmark's 3 B count. This pass is a pure streaming
// read: a block owns kColStripe columns (a warp's kColRun columns per lane, 16-byte loads, 512
// contiguous bytes a row for fp16) over a stripe of rows, its 8 warps on interleaved rows with
// kColBatchOf<In> rows' loads in flight each, then one max across the warps in shared memory and
// one atomicMax per column per block (the max of non-negative bit patterns: order-independent).
// With one thread per 8 columns over strips of 16-64 rows and one atomic per column per thread
// (amax_col_vec_kernel, before) the 4096 columns of the benchmark took about 1000 atomics each.
constexpr int kColStripe = 32 * kColRun;  // columns per block
constexpr int kColWarps = kThreads / 32;  // warps per block, each on every kColWarps-th row

template <CastInput In, bool Ignore>
__global__ void __launch_bounds__(kThreads)
    amax_col_stripe_kernel(const void* __restrict__ x, std::uint32_t* __restrict__ amax,
                           std::uint64_t rows, std::uint64_t cols, std::uint64_t rows_per_block) {
  __shared__ std::uint32_t red[kColWarps][kColStripe];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::uint64_t cb = static_cast<std::uint64_t>(blockIdx.x) * kColStripe;
  const std::uint64_t c0 = cb + static_cast<std::uint64_t>(lane) * kColRun;
  const std::uint64_t r0 = static_cast<std::uint64_t>(blockIdx.y) * rows_per_block;
  const std::uint64_t r1 = r0 + rows_per_block < rows ? r0 + rows_per_block : rows;
  std::uint32_t acc[ColT<In>::kWords] = {};
  if (c0 < cols) {
    constexpr int kB = kColBatchOf<In>;
    std::uint64_t r = r0 + warp;
    for (; r + (kB - 1) * kColWarps < r1; r += kB * kColWarps) {
      std::uint32_t w[kB][ColT<In>::kWords];
#pragma unroll
      for (int b = 0; b < kB; ++b) load_col_words<In>(x, (r + b * kColWarps) * cols + c0, w[b]);
#pragma unroll
      for (int b = 0; b < kB; ++b) {
#pragma unroll
        for (int k = 0; k < ColT<In>::kWords; ++k) {
          acc[k] = absmax_word<In, Ignore>(acc[k], w[b][k]);
        }
      }
    }
    for (; r < r1; r += kColWarps) {
      std::uint32_t w[ColT<In>::kWords];
      load_col_words<In>(x, r * cols + c0, w);
#pragma unroll
      for (int k = 0; k < ColT<In>::kWords; ++k) acc[k] = absmax_word<In, Ignore>(acc[k], w[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < kColRun; ++k) {
    const std::uint32_t m = In == CastInput::fp32 ? acc[k] : half_at<In>(acc, k);
    red[warp][lane * kColRun + k] = absmax_finish<In>(m);  // monotone: max commutes with it
  }
  __syncthreads();
  const std::uint64_t c = cb + threadIdx.x;
  if (threadIdx.x < kColStripe && c < cols) {
    std::uint32_t b = red[0][threadIdx.x];
#pragma unroll
    for (int v = 1; v < kColWarps; ++v) b = max(b, red[v][threadIdx.x]);
    if (b != 0) atomicMax(amax + c, b);
  }
}

// amax (as bits, in place) -> state / MX scale code.
__global__ void state_kernel(std::uint32_t* amax_bits, float* state, std::uint8_t* mx_scales,
                             const __grid_constant__ QArgs a) {
  const std::uint64_t g = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= a.groups) return;
  const float amax = native::float_of(amax_bits[g]);
  if (a.kind == Kind::mx) {
    mx_scales[g] = scale_code_of(a, amax);
  } else {
    state[g] = state_of(a, amax);
  }
}

template <CastInput In>
void run_amax(const void* x, std::uint32_t* amax_bits, const QArgs& a, cudaStream_t s) {
  cuda_check(cudaMemsetAsync(amax_bits, 0, a.groups * 4, s), "cudaMemsetAsync");
  if (a.n == 0) return;
  const bool ignore = a.p.nan != native::NanPolicy::propagate;
  const std::uint64_t tiles = tile_count(a);
  if (a.col && col_vec_ok(a, x)) {
    // About 8 blocks per SM in all: the stripes as long as one wave allows (fewest atomics), in
    // whole kColWarps-row steps.
    const std::uint64_t chunks = (a.cols + kColStripe - 1) / kColStripe;
    const std::uint64_t want = static_cast<std::uint64_t>(sm_count()) * 8;
    const std::uint64_t stripes = (want + chunks - 1) / chunks;
    std::uint64_t rpb = (a.rows + stripes - 1) / stripes;
    rpb = (rpb + kColWarps - 1) / kColWarps * kColWarps;
    const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>((a.rows + rpb - 1) / rpb));
    if (ignore) {
      amax_col_stripe_kernel<In, true><<<grid, kThreads, 0, s>>>(x, amax_bits, a.rows, a.cols, rpb);
    } else {
      amax_col_stripe_kernel<In, false>
          <<<grid, kThreads, 0, s>>>(x, amax_bits, a.rows, a.cols, rpb);
    }
  } else if (a.col) {
    const std::uint64_t rows_per_block = 64;
    const dim3 grid(static_cast<unsigned>((a.cols + kThreads - 1) / kThreads),
                    static_cast<unsigned>((a.rows + rows_per_block - 1) / rows_per_block));
    amax_col_kernel<In><<<grid, kThreads, 0, s>>>(x, amax_bits, rows_per_block, a);
  } else if (a.groups == 1) {
    if (ignore) {
      amax_tensor_kernel<In, true>
          <<<persistent_blocks(amax_tensor_kernel<In, true>, tiles), kThreads, 0, s>>>(
              x, amax_bits, a.n, aligned16(x));
    } else {
      amax_tensor_kernel<In, false>
          <<<persistent_blocks(amax_tensor_kernel<In, false>, tiles), kThreads, 0, s>>>(
              x, amax_bits, a.n, aligned16(x));
    }
  } else if (a.G % kTile == 0 && a.n % kTile == 0 && aligned16(x)) {
    if (ignore) {
      amax_tile_warp_kernel<In, true>
          <<<persistent_blocks(amax_tile_warp_kernel<In, true>, tiles), kThreads, 0, s>>>(
              x, amax_bits, a);
    } else {
      amax_tile_warp_kernel<In, false>
          <<<persistent_blocks(amax_tile_warp_kernel<In, false>, tiles), kThreads, 0, s>>>(
              x, amax_bits, a);
    }
  } else if (a.G % kTile == 0) {
    if (ignore) {
      amax_tiles_kernel<In, true>
          <<<blocks_for(tiles, 1), kThreads, 0, s>>>(x, amax_bits, aligned16(x), a);
    } else {
      amax_tiles_kernel<In, false>
          <<<blocks_for(tiles, 1), kThreads, 0, s>>>(x, amax_bits, aligned16(x), a);
    }
  } else {
    // About 8 tiles (32K elements) per block: few atomics for big groups, enough blocks to fill
    // the GPU.
    const std::uint64_t per = 8;
    const unsigned grid = static_cast<unsigned>((tiles + per - 1) / per);
    amax_contig_kernel<In><<<grid, kThreads, 0, s>>>(x, amax_bits, aligned16(x), per, a);
  }
  cuda_check_launch("absmax kernel launch");
}

}  // namespace

void run_amax(const void* x, CastInput in, std::uint32_t* amax_bits, const QArgs& a,
              cudaStream_t s) {
  switch (in) {
    case CastInput::fp32:
      run_amax<CastInput::fp32>(x, amax_bits, a, s);
      break;
    case CastInput::bf16:
      run_amax<CastInput::bf16>(x, amax_bits, a, s);
      break;
    case CastInput::fp16:
      run_amax<CastInput::fp16>(x, amax_bits, a, s);
      break;
  }
}

void run_state(std::uint32_t* amax_bits, float* state, std::uint8_t* scale_codes, const QArgs& a,
               cudaStream_t s) {
  state_kernel<<<static_cast<unsigned>((a.groups + kThreads - 1) / kThreads), kThreads, 0, s>>>(
      amax_bits, state, scale_codes, a);
  cuda_check_launch("state kernel launch");
}

}  // namespace exmy::gpu::quant_detail

namespace exmy::gpu {

void group_absmax(const void* x, CastInput in_type, std::size_t rows, std::size_t cols,
                  const quant::Scheme& scheme, native::NanPolicy nan, float* amax,
                  CUstream_st* stream) {
  quant::Options opt;
  opt.scheme = scheme;
  opt.nan = nan;
  const quant_detail::QArgs a = quant_detail::make_args(rows, cols, opt);
  auto* bits = reinterpret_cast<std::uint32_t*>(amax);
  quant_detail::run_amax(x, in_type, bits, a, stream);
}

}  // namespace exmy::gpu
