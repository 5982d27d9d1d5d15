// quantize / dequantize for 2-D block (tile) schemes, block:RxC (docs/SEMANTICS.md 7.15) and
// nvfp4:16x16 (7.16, whose tile states are E4M3 codes in scale_codes): one
// warp per R×C tile of the row-major matrix, grid-stride over tiles. The warp folds
// native::absmax_combine over its lanes' elements and takes the max of the lanes' bit patterns
// (the fold's results are non-negative or the canonical NaN, so the unsigned max is the fold's
// value in any order), then every lane computes the tile's state with native::group_state and
// its codes with native::quant_element, the CPU reference's loop body (sim/quant/quantize.cpp).
// Lanes walk the tile's flattened index, so for C >= 32 consecutive lanes read consecutive
// columns. Tiles are read twice (absmax, then codes); the second read is served by L2 for the
// tile sizes in use (a 128×128 bf16 tile is 32 KiB).
#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cast/widen.hpp"
#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/detail_launch.cuh"
#include "sim/native/philox.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_plan.hpp"

namespace exmy::gpu::quant_detail {
namespace {

constexpr int kWarpsPerBlock = kThreads / 32;

struct TileGeom {
  std::uint64_t rows, cols, tr, tc, tiles;  // tr x tc tiles of tile_rows x tile_cols
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
  for (std::uint64_t t =
           static_cast<std::uint64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
       t < g.tiles; t += warps) {
    const std::uint64_t r0 = (t / g.tc) * p.tile_rows, c0 = (t % g.tc) * p.tile_cols;
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
  return g;
}

}  // namespace

void run_quantize_tile(const void* x, CastInput in, const QArgs& a, const quant::Options& /*opt*/,
                       const QuantizedOut& o, cudaStream_t s) {
  if (a.n == 0) return;  // shape rules: check_options (quantize.cu)
  const TileGeom g = geom(a);
  const unsigned blocks = blocks_for((g.tiles + kWarpsPerBlock - 1) / kWarpsPerBlock, 1);
  switch (in) {
    case CastInput::fp32:
      tile_quant_kernel<CastInput::fp32>
          <<<blocks, kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, g, a.p);
      break;
    case CastInput::bf16:
      tile_quant_kernel<CastInput::bf16>
          <<<blocks, kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, g, a.p);
      break;
    case CastInput::fp16:
      tile_quant_kernel<CastInput::fp16>
          <<<blocks, kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, g, a.p);
      break;
  }
  cuda_check_launch("tile quantize kernel launch");
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
