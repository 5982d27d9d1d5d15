// Internal to gpu/quant/*.cu: the host side shared by the launchers. The options check and the
// launch arguments (quantize.cu), the absmax and state passes (absmax.cu), the codebook bucket
// table (quantize_codebook.cu), one launcher per target kind (quantize_<kind>.cu), and the grid
// geometry every launcher uses.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gpu/cast/cast.hpp"
#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/quantize.hpp"
#include "sim/quant/quantize.hpp"
#include "sim/quant/scheme_registry.hpp"

namespace exmy::gpu::quant_detail {

// quant::validate_options, then what the GPU path needs beside it (InputError otherwise).
void check_options(std::size_t rows, std::size_t cols, const quant::Options& opt);

// The launch arguments of a rows x cols tensor under opt (level: the NVFP4 per-tensor level).
QArgs make_args(std::size_t rows, std::size_t cols, const quant::Options& opt,
                const native::Nvfp4Tensor& level = {});

// Whether the element work of the target kind runs on its fast path (see quantize.cu).
bool fast_path(const QArgs& a);

// Whether quantize runs the single-pass kernel (contiguous groups of 16 * 2^k <= kTile).
bool single_pass(const QArgs& a, const quant::Options& opt);

// amax_bits[g] = the absmax bits of group g of x (absmax.cu).
void run_amax(const void* x, CastInput in, std::uint32_t* amax_bits, const QArgs& a,
              cudaStream_t s);

// amax_bits (in place) -> state (fp32 kinds) or scale_codes (Kind::mx), per group (absmax.cu).
void run_state(std::uint32_t* amax_bits, float* state, std::uint8_t* scale_codes, const QArgs& a,
               cudaStream_t s);

// The codebook bucket table in stream-ordered scratch, freed by the caller
// (quantize_codebook.cu).
std::uint32_t* build_cb_table(const QArgs& a, cudaStream_t s);

// The codes (and state) of x for one target kind, every input type (quantize_<kind>.cu).
using RunQuantize = void(const void* x, CastInput in, const QArgs& a, const quant::Options& opt,
                         const QuantizedOut& o, cudaStream_t s);
RunQuantize run_quantize_int8;
RunQuantize run_quantize_float;
RunQuantize run_quantize_codebook;
RunQuantize run_quantize_block_scaled;

// The launchers a scheme's registry entry names (quant::GpuLauncher): quantize (codes, state,
// scale codes of every target kind and input type) and dequantize (out = fp32 in the input
// layout; state or scale_codes per the plan's scale format).
using RunDequantize = void(const std::uint8_t* codes, const float* state,
                           const std::uint8_t* scale_codes, const QArgs& a, float* out,
                           cudaStream_t s);
// Contiguous groups: the launcher of the target kind (quantize.cu), the element-wise
// dequantizer (dequantize.cu).
RunQuantize run_quantize_contiguous;
RunDequantize run_dequantize_contiguous;
// 2-d tiles: one warp per tile (quantize_tile.cu).
RunQuantize run_quantize_tile;
RunDequantize run_dequantize_tile;

struct Launcher {
  RunQuantize* quantize;
  RunDequantize* dequantize;
};
// The launcher of an id, the one table gpu::quantize and gpu::dequantize dispatch through.
inline const Launcher& launcher(quant::GpuLauncher id) {
  static constexpr Launcher kTable[] = {
      {run_quantize_contiguous, run_dequantize_contiguous},  // GpuLauncher::contiguous
      {run_quantize_tile, run_dequantize_tile},              // GpuLauncher::tile
  };
  return kTable[static_cast<int>(id)];
}

// The number of kTile-element tiles covering the tensor.
inline std::uint64_t tile_count(const QArgs& a) {
  return (a.n + kTile - 1) / kTile;
}

// A grid-stride grid of one wave: as many blocks of `kernel` as are resident at once (kernels
// whose blocks carry set-up work, or that reduce per block), at most one per tile.
template <class Kernel>
unsigned persistent_blocks(Kernel kernel, std::uint64_t tiles) {
  static int per_sm = 0;  // one cache per kernel instantiation
  if (per_sm == 0) {
    int v = 0;
    cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, kernel, kThreads, 0), "occupancy");
    per_sm = v > 0 ? v : 1;
  }
  const std::uint64_t cap = static_cast<std::uint64_t>(sm_count()) * per_sm;
  return static_cast<unsigned>(tiles == 0 ? 1 : (tiles < cap ? tiles : cap));
}

inline bool col_vec_ok(const QArgs& a, const void* x) {
  return a.col && a.cols % kColRun == 0 && aligned16(x) && (a.cols * (a.rows > 0 ? 1 : 0)) > 0;
}

// The tiled fast transpose: tensor-, row- or column-wise groups, whole 8-column chunks and
// 16-row output segments, 16-byte aligned input and codes.
inline bool transpose_fast_ok(const QArgs& a, const void* x, const void* codes) {
  const bool groups_ok = a.col || a.groups == 1 || a.G == a.cols;
  return groups_ok && a.cols % kColRun == 0 && a.rows % 16 == 0 && aligned16(x) && aligned16(codes);
}

// Blocks across the columns of the vectorized column kernels: one thread per kColRun columns.
inline std::uint64_t col_vec_blocks(const QArgs& a) {
  return (a.cols / kColRun + kThreads - 1) / kThreads;
}

inline std::uint64_t col_rows_per_block(const QArgs& a) {
  const std::uint64_t col_blocks = col_vec_blocks(a);
  // Enough blocks to fill the device several times over, each a strip of >= 16 rows.
  const std::uint64_t want = static_cast<std::uint64_t>(sm_count()) * 16;
  std::uint64_t strips = (want + col_blocks - 1) / col_blocks;
  std::uint64_t rpb = (a.rows + strips - 1) / (strips > 0 ? strips : 1);
  return rpb < 16 ? 16 : rpb;
}

// The grid of the vectorized column kernels: column blocks by strips of rpb rows.
inline dim3 col_vec_grid(const QArgs& a, std::uint64_t rpb) {
  return dim3(static_cast<unsigned>(col_vec_blocks(a)),
              static_cast<unsigned>((a.rows + rpb - 1) / rpb));
}

}  // namespace exmy::gpu::quant_detail
