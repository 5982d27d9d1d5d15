// The GPU quantization kernels (gpu/quant/*.cu: the state kernels, the single-pass and generic
// element paths, the dequantizers) against the quantization oracle (sim/oracle/steps/quant.hpp)
// directly: no native-engine code on the reference side, so a wrong order, rounding or tie rule in
// the shared EXMY_HD functions fails here although the GPU-vs-CPU tests (both sides compile the
// same source) would pass. Small shrinkable matrices with weighted boundary values: zeros,
// fp32 subnormals, values near fp32's max, powers of two, exact ties of the target after an exact
// scaling, inf and NaN. docs/SEMANTICS.md 13.6.
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include "gpu/host_arrays.hpp"
#include "tests/quant/quant_oracle_gen.hpp"

using namespace exmy;
using namespace exmy::props;

namespace {
QuantEngine gpu_engine() {
  return {
      [](const std::vector<float>& x, std::size_t rows, std::size_t cols, const quant::Options& o) {
        return gpu::quantize_host(x.data(), gpu::CastInput::fp32, rows, cols, o);
      },
      [](const quant::Quantized& q, std::size_t rows, std::size_t cols, const quant::Options& o) {
        return gpu::dequantize_host(q, rows, cols, o);
      }};
}
}  // namespace

TEST_CASE("GPU int8 and scaled-cast quantization equal the quantization oracle",
          "[gpu][quant][prop][oracle]") {
  rc::prop(
      "gpu::quantize / dequantize (int8, e4m3fn, e5m2, e4m3fnuz, e2m1fn; every variant, "
      "order, mode) vs oracle::steps::quant",
      [] { check_family(Family::int8_and_casts, gpu_engine()); });
}

TEST_CASE("GPU codebook quantization equals the quantization oracle",
          "[gpu][quant][prop][oracle]") {
  rc::prop("gpu::quantize / dequantize (dynamic, linear; each norm, tie rule, sr) vs oracle",
           [] { check_family(Family::codebook, gpu_engine()); });
}

TEST_CASE("GPU MX and NVFP4 quantization equal the quantization oracle",
          "[gpu][quant][prop][oracle]") {
  rc::prop(
      "gpu::quantize / dequantize (mx ocp/torchao in every scale mode, nvfp4 torchao/te) "
      "vs oracle",
      [] { check_family(Family::mx_nvfp4, gpu_engine()); });
}
#endif
