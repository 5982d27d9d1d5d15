// The GPU kernels' names for the exact bf16 / fp16 widening (sim/native/widen.hpp), shared with
// the host's array casts.
#pragma once

#include "sim/native/widen.hpp"

namespace exmy::gpu {

using native::widen_bf16;
using native::widen_fp16;

}  // namespace exmy::gpu
