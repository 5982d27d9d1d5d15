// The GPU kernels' names for the shared fast cast (sim/native/fast_cast.hpp): the same
// __host__ __device__ functions serve the CUDA kernels and the host fast path (sim/fast).
#pragma once

#include "sim/native/fast_cast.hpp"

namespace exmy::gpu {

using native::fast_cast_fp32;
using native::fast_cast_fp32_as;
using native::fast_cast_fp32_e8m0;
using native::fast_cast_fp32_fixed;
using native::fast_cast_fp32_fixed_inline;
using native::fast_cast_fp32_lean;
using native::fast_cast_supported;
using native::fast_decode_fp32;
using native::fast_decode_fp32_finite;
using native::fast_decode_fp32_lean;
using native::fast_e8m0_mode_for;
using native::fast_e8m0_supported;
using native::fast_fixed_supported;
using native::fast_lean_domain;
using native::fast_mode_for;
using native::fast_needs_engine;
using native::FastCastPlan;
using native::FastMode;
using native::make_fast_cast_plan;

}  // namespace exmy::gpu
