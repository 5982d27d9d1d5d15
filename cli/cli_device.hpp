// `--device cpu|cuda` for the array subcommands (cast, quantize, dequantize): which engine runs,
// and the element type of an .npy input array. The CUDA path runs the kernels of gpu/ on host
// arrays (gpu/host_arrays.hpp); its bits equal the CPU reference's (tests/gpu, properties/gpu).
#pragma once

#include <string>
#include <string_view>

#include "gpu/cast/cast.hpp"
#include "sim/io/npy.hpp"

namespace exmy::cli {

enum class Device { cpu, cuda };

// "cpu" or "cuda"; for cuda, InputError unless this build has CUDA and a GPU is present.
Device parse_device(std::string_view text);

// The element type of an fp32/fp16/bf16 input array, for the CPU and GPU paths alike: fp32
// ('<f4'), fp16 ('<f2'), or bf16 ('<u2' bit patterns, only with --in-format bf16).
gpu::CastInput input_type(const io::NpyArray& a, const std::string& path, bool bf16);

}  // namespace exmy::cli
