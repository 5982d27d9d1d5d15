// Which bitsandbytes kernels an 8-bit optimizer step models (host and device; `--compat`).
#pragma once

#include <cstdint>

namespace exmy::native {

// `exact`: the kernels' operation order with every operation correctly rounded (exmy's default,
// docs/SEMANTICS.md 9.4). `cuda_sm90`: the kernels as nvcc --use_fast_math compiled them for
// sm_90 in bitsandbytes 0.50.2 (`--compat bnb-cuda`: FTZ, FMA contraction, MUFU approximations;
// SEMANTICS 9.4 and 17).
enum class BnbKernels : std::uint8_t { exact, cuda_sm90 };

}  // namespace exmy::native
