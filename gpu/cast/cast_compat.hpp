// The compat casts (`--compat NAME`, sim/format/compat.hpp) on the GPU: fp32 / bf16 / fp16
// tensors in device memory to the one-byte codes of a compat rule (sim/native/compat_e8m0.hpp),
// the same function as on the host, element by element. Kept apart from the rounding kernels of
// gpu/cast/cast.cu: a compat rule is a fixed bit recipe with no rounding mode or random words.
// Declared without CUDA headers so host-only code can include it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/cast/cast.hpp"
#include "sim/native/compat_e8m0.hpp"

namespace exmy::gpu {

// codes[i] = native::compat_cast_fp32(rule, widened in[i]); device pointers, asynchronous on
// `stream`.
void cast_compat_codes(const void* in, CastInput in_type, std::size_t n, std::uint8_t* codes,
                       native::CompatCast rule, CUstream_st* stream = nullptr);

}  // namespace exmy::gpu
