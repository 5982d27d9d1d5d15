// Internal to gpu/cast/cast*.cu: the cast kernels' launch arguments (CastArgs), the arithmetic a
// launch runs (Path), and the span path's launchers that cast.cu calls (cast_span_paths.cu). A
// named namespace: CastArgs crosses translation units.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gpu/cast/cast.hpp"
#include "gpu/cast/fast_cast.hpp"
#include "sim/native/philox.hpp"

namespace exmy::gpu::cast_detail {

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

// Which arithmetic a kernel runs: the native engine, fast_cast_fp32 (any mode), or the lean
// mode-fixed path.
enum class Path { generic, fast, lean, hw };

// The lean path (lean_kernel, sr_span_kernel with LeanSrCodes, the tail and the engine fix-up) of
// n elements of input type t; Out: uint8_t / uint16_t codes, or float for fake quantization.
void launch_lean_path(const void* in, CastInput t, std::size_t n, std::uint8_t* out,
                      const CastArgs& a, cudaStream_t s);
void launch_lean_path(const void* in, CastInput t, std::size_t n, std::uint16_t* out,
                      const CastArgs& a, cudaStream_t s);
void launch_lean_path(const void* in, CastInput t, std::size_t n, float* out, const CastArgs& a,
                      cudaStream_t s);

// The hw path (hw_kernel, sr_span_kernel with HwSrCodes, the lean tail): e4m3fn / e5m2 codes or
// their fake quantization.
void launch_hw_path(const void* in, CastInput t, std::size_t n, std::uint8_t* out,
                    const CastArgs& a, cudaStream_t s);
void launch_hw_path(const void* in, CastInput t, std::size_t n, float* out, const CastArgs& a,
                    cudaStream_t s);

}  // namespace exmy::gpu::cast_detail
