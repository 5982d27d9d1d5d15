// The GPU engine of the layers (gpu/layer/layer.hpp): each primitive of layer::LayerEngine as
// CUDA kernels; layer::run_layer (sim/layer/linear_layer.cpp) is the algorithm, run unchanged.
#include <cstring>

#include "gpu/gemm/gemm_emulation.hpp"
#include "gpu/host_arrays.hpp"
#include "gpu/layer/layer.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::gpu::layer {

namespace {

using exmy::layer::DType;
using exmy::layer::Gran;
using exmy::layer::Int8;

int out_format(DType d) {
  return d == DType::fp32 ? 0 : d == DType::bf16 ? 1 : 2;
}

quant::Granularity granularity(Gran g) {
  return g == Gran::tensor ? quant::Granularity::tensor
         : g == Gran::row  ? quant::Granularity::row
                           : quant::Granularity::col;
}

quant::Options int8_options(Gran gran, native::ScaleOrder order) {
  quant::Options opt;
  opt.scheme = {granularity(gran), 0};
  opt.target = quant::parse_target("int8");
  opt.order = order;
  opt.transpose = gran == Gran::col;
  return opt;
}

class GpuEngine final : public exmy::layer::LayerEngine {
 public:
  Int8 quantize_int8(const std::vector<float>& x, std::size_t rows, std::size_t cols, Gran gran,
                     native::ScaleOrder order) override {
    const quant::Quantized q =
        quantize_host(x.data(), CastInput::fp32, rows, cols, int8_options(gran, order));
    Int8 r;
    r.codes.resize(q.codes.size());
    std::memcpy(r.codes.data(), q.codes.data(), q.codes.size());
    r.state = q.state;
    return r;
  }

  std::vector<float> int8_product(const Int8& a, std::size_t rows, const Int8& b,
                                  std::size_t cols, std::size_t k, native::DequantOrder order,
                                  DType d) override {
    return gpu::int8_product(a.codes, a.state, rows, b.codes, b.state, cols, k, order,
                             out_format(d));
  }

  std::vector<float> dequantize_int8_rows(const Int8& q, std::size_t rows, std::size_t cols,
                                          DType d) override {
    quant::Quantized qq;
    qq.shape = {rows, cols};
    qq.state_shape = {rows};
    qq.codes.resize(q.codes.size());
    std::memcpy(qq.codes.data(), q.codes.data(), q.codes.size());
    qq.state = q.state;
    const std::vector<float> v =
        dequantize_host(qq, rows, cols, int8_options(Gran::row, native::ScaleOrder::div_mul));
    return mask_round(v, 0, 0, MaskOuter::clamp, MaskInner::min, out_format(d));
  }

  std::vector<float> fake_float8(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                                 Gran gran, const FloatFormat& f, DType d) override {
    quant::Options opt;
    opt.scheme = {granularity(gran), 0};
    opt.target = quant::float_target(f);
    const quant::Quantized q = quantize_host(x.data(), CastInput::fp32, rows, cols, opt);
    return mask_round(dequantize_host(q, rows, cols, opt), 0, 0, MaskOuter::clamp,
                      MaskInner::min, out_format(d));
  }

  std::vector<float> gemm(const std::vector<float>& a, std::size_t rows,
                          const std::vector<float>& b, std::size_t cols, std::size_t k,
                          const gemm::AccumModel& m, DType d) override {
    gemm::Operand A, B;
    A.rows = rows;
    B.rows = cols;
    A.cols = B.cols = k;
    A.v.assign(a.begin(), a.end());
    B.v.assign(b.begin(), b.end());
    const FloatFormat& f = exmy::layer::dtype_format(d);
    A.emin = B.emin = 1 - f.bias;
    A.type = B.type = exmy::layer::dtype_name(d);
    A.code_bits = B.code_bits = exmy::layer::dtype_bits(d);
    const auto of = static_cast<gemm::OutFormat>(out_format(d));
    const std::vector<std::uint32_t> c = gemm_emulate(A, B, m, of);
    std::vector<float> out(c.size());
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (of == gemm::OutFormat::fp32) {
        std::memcpy(&out[i], &c[i], 4);
      } else {
        out[i] = static_cast<float>(native::to_double(f, c[i]));  // decoding the kernel's codes
      }
    }
    return out;
  }

  std::vector<float> mask(const std::vector<float>& v,
                          const exmy::layer::LayerConfig& cfg) override {
    return mask_round(v, cfg.mask_e, cfg.mask_m, cfg.mask_outer, cfg.mask_inner,
                      out_format(cfg.dtype));
  }
};

}  // namespace

exmy::layer::LayerResult run_layer(const exmy::layer::LayerConfig& cfg,
                                   const exmy::layer::LayerShape& s, const std::vector<float>& x,
                                   const std::vector<float>& w, const std::vector<float>& g) {
  GpuEngine engine;
  return exmy::layer::run_layer(cfg, s, x, w, g, engine);
}

}  // namespace exmy::gpu::layer
