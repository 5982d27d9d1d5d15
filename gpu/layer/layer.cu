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

// The kernels' output selector: 0 fp32, 1 bf16, 2 fp16 (gemm::OutFormat's values).
int out_code(DType d) {
  return static_cast<int>(exmy::layer::out_format(d));
}

class GpuEngine final : public exmy::layer::LayerEngine {
 public:
  Int8 quantize_int8(const std::vector<float>& x, std::size_t rows, std::size_t cols, Gran gran,
                     native::ScaleOrder order) override {
    return exmy::layer::int8_of(quantize_host(x.data(), CastInput::fp32, rows, cols,
                                              exmy::layer::int8_options(gran, order)));
  }

  std::vector<float> int8_product(const Int8& a, std::size_t rows, const Int8& b, std::size_t cols,
                                  std::size_t k, native::DequantOrder order, DType d) override {
    return gpu::int8_product(a.codes, a.state, rows, b.codes, b.state, cols, k, order, out_code(d));
  }

  std::vector<float> dequantize_int8_rows(const Int8& q, std::size_t rows, std::size_t cols,
                                          DType d) override {
    quant::Quantized qq;
    qq.shape = {rows, cols};
    qq.state_shape = {rows};
    qq.codes.resize(q.codes.size());
    std::memcpy(qq.codes.data(), q.codes.data(), q.codes.size());
    qq.state = q.state;
    const std::vector<float> v = dequantize_host(
        qq, rows, cols, exmy::layer::int8_options(Gran::row, native::ScaleOrder::div_mul));
    return mask_round(v, 0, 0, MaskOuter::clamp, MaskInner::min, out_code(d));
  }

  std::vector<float> fake_float8(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                                 Gran gran, const FloatFormat& f, DType d) override {
    const quant::Options opt = exmy::layer::float8_options(gran, f);
    const quant::Quantized q = quantize_host(x.data(), CastInput::fp32, rows, cols, opt);
    return mask_round(dequantize_host(q, rows, cols, opt), 0, 0, MaskOuter::clamp, MaskInner::min,
                      out_code(d));
  }

  std::vector<float> gemm(const std::vector<float>& a, std::size_t rows,
                          const std::vector<float>& b, std::size_t cols, std::size_t k,
                          const gemm::AccumModel& m, DType d) override {
    gemm::Operand A, B;
    exmy::layer::gemm_operands(a, rows, b, cols, k, d, A, B);
    return exmy::layer::decode_output(gemm_emulate(A, B, m, exmy::layer::out_format(d)), d);
  }

  // The view form of gemm: the operands read through their views and staged a block of rows
  // at a time, C handed back a block of rows at a time (gpu::gemm_emulate_rows), so the host
  // holds no contiguous fp32 copy of X (or of a transpose) and no double copy of it (issue 36).
  // The kernel reads the same doubles as gemm() on contiguous copies: the same bits.
  void gemm_rows(const exmy::layer::OpView& a, const exmy::layer::OpView& b,
                 const gemm::AccumModel& m, DType d, const exmy::layer::RowSink& out) override {
    const gemm::Operand A = exmy::layer::gemm_operand(a, d), B = exmy::layer::gemm_operand(b, d);
    const std::size_t N = b.rows();
    std::vector<float> vals;
    gemm_emulate_rows(A, B, m, exmy::layer::out_format(d), 1.0, nullptr,
                      [&](std::size_t i0, std::size_t i1, const std::uint32_t* c) {
                        vals.resize((i1 - i0) * N);
                        for (std::size_t t = 0; t < vals.size(); ++t) {
                          vals[t] = exmy::layer::decode_output_code(c[t], d);
                        }
                        out(i0, i1, vals.data());
                      });
  }

  std::vector<float> mask(const std::vector<float>& v,
                          const exmy::layer::LayerConfig& cfg) override {
    return mask_round(v, cfg.mask_e, cfg.mask_m, cfg.mask_outer, cfg.mask_inner,
                      out_code(cfg.dtype));
  }
};

}  // namespace

exmy::layer::LayerResult run_layer(const exmy::layer::LayerConfig& cfg,
                                   const exmy::layer::LayerShape& s, const std::vector<float>& x,
                                   const std::vector<float>& w, const std::vector<float>& g) {
  GpuEngine engine;
  return exmy::layer::run_layer(cfg, s, x, w, g, engine);
}

void run_layer_rows(const exmy::layer::LayerConfig& cfg, const exmy::layer::LayerShape& s,
                    const exmy::layer::MatView& x, const exmy::layer::MatView& w,
                    const exmy::layer::MatView& g, const exmy::layer::LayerSinks& out) {
  GpuEngine engine;
  exmy::layer::run_layer_rows(cfg, s, x, w, g, out, engine);
}

}  // namespace exmy::gpu::layer
