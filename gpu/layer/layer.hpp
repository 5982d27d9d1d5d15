// The layers of sim/layer/linear_layer.hpp on the GPU: the same algorithm (layer::run_layer)
// on an engine whose primitives are CUDA kernels (quantizers of gpu/quant/quantize.hpp, the int8
// product and the GEMM emulation of gpu/gemm/). Bits equal the CPU reference's
// (tests/gpu/gemm_layer_test.cpp).
#pragma once

#include <vector>

#include "sim/layer/linear_layer.hpp"

namespace exmy::gpu::layer {

exmy::layer::LayerResult run_layer(const exmy::layer::LayerConfig& cfg,
                                   const exmy::layer::LayerShape& s, const std::vector<float>& x,
                                   const std::vector<float>& w, const std::vector<float>& g);

}  // namespace exmy::gpu::layer
