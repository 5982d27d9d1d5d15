// The CPU reference's quantization (sim/quant, on the EXMY_HD functions of sim/native that the
// CUDA kernels call too) against the quantization oracle (sim/oracle/steps/quant.hpp), as a
// shrinking property: where the steps campaign reports counts per input class, this reduces a
// disagreement to a minimal matrix. The GPU twin is properties/gpu/quant_oracle_props.cpp.
// docs/SEMANTICS.md 13.6.
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <catch2/catch.hpp>

#include "tests/quant/quant_oracle_gen.hpp"

using namespace exmy;
using namespace exmy::props;

namespace {
QuantEngine cpu_engine() {
  return {
      [](const std::vector<float>& x, std::size_t rows, std::size_t cols, const quant::Options& o) {
        return quant::quantize(x, {rows, cols}, o);
      },
      [](const quant::Quantized& q, std::size_t rows, std::size_t cols, const quant::Options& o) {
        return quant::dequantize(q, o);
      }};
}
}  // namespace

TEST_CASE("CPU int8 and scaled-cast quantization equal the quantization oracle",
          "[quant][prop][oracle]") {
  rc::prop(
      "quant::quantize / dequantize (int8, e4m3fn, e5m2, e4m3fnuz, e2m1fn; every variant, "
      "order, mode) vs oracle::steps::quant",
      [] { check_family(Family::int8_and_casts, cpu_engine()); });
}

TEST_CASE("CPU codebook quantization equals the quantization oracle", "[quant][prop][oracle]") {
  rc::prop("quant::quantize / dequantize (dynamic, linear; each norm, tie rule, sr) vs oracle",
           [] { check_family(Family::codebook, cpu_engine()); });
}

TEST_CASE("CPU MX and NVFP4 quantization equal the quantization oracle", "[quant][prop][oracle]") {
  rc::prop(
      "quant::quantize / dequantize (mx ocp/torchao in every scale mode, nvfp4 torchao/te) "
      "vs oracle",
      [] { check_family(Family::mx_nvfp4, cpu_engine()); });
}
