// Which kernels gpu::quantize runs for the 2-D tile schemes (block:RxC, docs/SEMANTICS.md 7.15):
// the fast path of gpu/quant/quantize_tile.cu where it covers the call, or the generic per-tile
// plan kernel always. Both give the CPU reference's bits; the switch exists so that tests can run
// both on the same input and compare them byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/cast/cast.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::gpu {

enum class TilePath : std::uint8_t { automatic, generic };

// The path this host thread's gpu::quantize calls take from now on (default automatic).
void set_tile_path(TilePath path);

// True when gpu::quantize(x, in, rows, cols, opt) on the automatic path codes whole tiles on the
// fast path, given 16-byte aligned x and 8-byte aligned codes (cudaMalloc's alignment).
bool tile_fast_path_covers(CastInput in, std::size_t rows, std::size_t cols,
                           const quant::Options& opt);

}  // namespace exmy::gpu
