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

// The same layer on views of the inputs (read in place: mapped files), each output delivered to
// its sink as the products return it (exmy layer --device cuda; layer::run_layer_rows on the GPU
// engine). The plain kind's products hold no copy of X's size on the host (issue 36); the
// prepared operands of the other kinds are still held whole by the engine's vector primitives.
void run_layer_rows(const exmy::layer::LayerConfig& cfg, const exmy::layer::LayerShape& s,
                    const exmy::layer::MatView& x, const exmy::layer::MatView& w,
                    const exmy::layer::MatView& g, const exmy::layer::LayerSinks& out);

}  // namespace exmy::gpu::layer
