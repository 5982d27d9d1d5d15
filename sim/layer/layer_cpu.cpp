// The CPU reference of the layers' primitives (sim/layer/linear_layer.hpp): sim/quant (quantize,
// matmul, dequantize) and sim/gemm. The forms run_layer is written in read the inputs in place
// (mapped files): a prepared operand keeps only its group states (quant::PieceQuantizer) and
// computes each element where a product reads it, an int8 product quantizes tiles of its operands
// as it goes, and every product delivers its output a block of rows at a time (issue 36's memory
// bound, docs/SEMANTICS.md 11.0). Each element goes through the same steps as the vector
// primitives', so the bits are theirs.
#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <utility>

#include "sim/format/registry.hpp"
#include "sim/layer/linear_layer.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/mask.hpp"
#include "sim/quant/matmul.hpp"

namespace exmy::layer {

namespace {

using native::bits_of;
using native::float_of;

std::vector<float> to_dtype_all(std::vector<float> v, DType d) {
  for (float& x : v) x = to_dtype(x, d);
  return v;
}

float mask_value(float x, const LayerConfig& cfg) {
  return to_dtype(
      float_of(exmy::mask_fp32(bits_of(x), cfg.mask_e, cfg.mask_m, cfg.mask_outer, cfg.mask_inner)),
      cfg.dtype);
}

// The quantizer of a view: every row added in order (about 1 MiB of values at a time), then the
// states.
quant::PieceQuantizer quantizer_of(const MatView& x, const quant::Options& opt) {
  quant::PieceQuantizer q(opt, x.rows, x.cols);
  const std::size_t step =
      std::max<std::size_t>(1, (std::size_t{1} << 18) / std::max<std::size_t>(x.cols, 1));
  std::vector<float> buf;
  for (std::size_t r0 = 0; r0 < x.rows; r0 += step) {
    const std::size_t r1 = std::min(x.rows, r0 + step);
    buf.resize((r1 - r0) * x.cols);
    rows_f32(x, r0, r1, buf.data());
    q.add_rows(r0, r1, buf.data());
  }
  q.finish();
  return q;
}

// fake_float8 of one element: quantize's code, dequantize's value, rounded to the dtype.
class Float8Step final : public ElementStep {
 public:
  Float8Step(quant::PieceQuantizer q, DType d) : q_(std::move(q)), d_(d) {}
  float apply(float x, std::size_t r, std::size_t c) const override {
    return to_dtype(q_.value(r, c, q_.code(r, c, x)), d_);
  }

 private:
  quant::PieceQuantizer q_;
  DType d_;
};

// dequantize_int8_rows of one row-wise int8 code.
class Int8RowsStep final : public ElementStep {
 public:
  Int8RowsStep(quant::PieceQuantizer q, DType d) : q_(std::move(q)), d_(d) {}
  float apply(float x, std::size_t r, std::size_t c) const override {
    const auto code = static_cast<std::int8_t>(q_.code(r, c, x));
    return to_dtype(native::dequant_absmax(static_cast<float>(code), q_.state()[r],
                                           static_cast<float>(native::kInt8Max)),
                    d_);
  }

 private:
  quant::PieceQuantizer q_;
  DType d_;
};

class MaskStep final : public ElementStep {
 public:
  explicit MaskStep(const LayerConfig& cfg) : cfg_(cfg) {}
  float apply(float x, std::size_t, std::size_t) const override { return mask_value(x, cfg_); }

 private:
  LayerConfig cfg_;
};

// Codes of rows [i0, i1) x columns [k0, k1) of an int8 operand, (i1 - i0) x (k1 - k0) row-major:
// element (i, k) is the code of src (i, k), or of src (k, i) column-wise (read by rows of src).
void int8_tile(const Int8Operand& o, const quant::PieceQuantizer& q, std::size_t i0, std::size_t i1,
               std::size_t k0, std::size_t k1, std::int8_t* dst) {
  const std::size_t w = k1 - k0;
  if (o.gran == Gran::col) {
    for (std::size_t k = k0; k < k1; ++k)
      for (std::size_t i = i0; i < i1; ++i)
        dst[(i - i0) * w + (k - k0)] = static_cast<std::int8_t>(q.code(k, i, o.src.at(k, i)));
  } else {
    for (std::size_t i = i0; i < i1; ++i)
      for (std::size_t k = k0; k < k1; ++k)
        dst[(i - i0) * w + (k - k0)] = static_cast<std::int8_t>(q.code(i, k, o.src.at(i, k)));
  }
}

class CpuEngine final : public LayerEngine {
 public:
  Int8 quantize_int8(const std::vector<float>& x, std::size_t rows, std::size_t cols, Gran gran,
                     native::ScaleOrder order) override {
    return int8_of(quant::quantize(x, {rows, cols}, int8_options(gran, order)));
  }

  std::vector<float> int8_product(const Int8& a, std::size_t rows, const Int8& b, std::size_t cols,
                                  std::size_t k, native::DequantOrder order, DType d) override {
    const std::vector<std::int32_t> acc = quant::matmul_int8_nt(a.codes, b.codes, rows, cols, k);
    return to_dtype_all(quant::dequantize_product(acc, rows, cols, a.state, b.state, order), d);
  }

  std::vector<float> dequantize_int8_rows(const Int8& q, std::size_t rows, std::size_t cols,
                                          DType d) override {
    std::vector<float> v(rows * cols);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j)
        v[i * cols + j] =
            to_dtype(native::dequant_absmax(static_cast<float>(q.codes[i * cols + j]), q.state[i],
                                            static_cast<float>(native::kInt8Max)),
                     d);
    return v;
  }

  std::vector<float> fake_float8(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                                 Gran gran, const FloatFormat& f, DType d) override {
    const quant::Options opt = float8_options(gran, f);
    return to_dtype_all(quant::dequantize(quant::quantize(x, {rows, cols}, opt), opt), d);
  }

  std::vector<float> gemm(const std::vector<float>& a, std::size_t rows,
                          const std::vector<float>& b, std::size_t cols, std::size_t k,
                          const gemm::AccumModel& m, DType d) override {
    gemm::Operand A, B;
    gemm_operands(a, rows, b, cols, k, d, A, B);
    return decode_output(gemm::gemm(A, B, m, out_format(d)), d);
  }

  std::vector<float> mask(const std::vector<float>& v, const LayerConfig& cfg) override {
    std::vector<float> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) r[i] = mask_value(v[i], cfg);
    return r;
  }

  OpView prepare_float8(const MatView& x, Gran gran, const FloatFormat& f, DType d) override {
    OpView o = op_view(x);
    o.step = std::make_shared<Float8Step>(quantizer_of(x, float8_options(gran, f)), d);
    return o;
  }

  OpView prepare_int8_rows(const MatView& x, DType d) override {
    OpView o = op_view(x);
    o.step = std::make_shared<Int8RowsStep>(
        quantizer_of(x, int8_options(Gran::row, native::ScaleOrder::div_mul)), d);
    return o;
  }

  OpView prepare_mask(const MatView& x, const LayerConfig& cfg) override {
    OpView o = op_view(x);
    o.step = std::make_shared<MaskStep>(cfg);
    return o;
  }

  void gemm_rows(const OpView& a, const OpView& b, const gemm::AccumModel& m, DType d,
                 const RowSink& out) override {
    const gemm::Operand A = gemm_operand(a, d), B = gemm_operand(b, d);
    const std::size_t N = b.rows();
    std::vector<float> vals;
    gemm::gemm_rows(A, B, m, out_format(d), 1.0, nullptr,
                    [&](std::size_t i0, std::size_t i1, const std::uint32_t* c) {
                      vals.resize((i1 - i0) * N);
                      for (std::size_t t = 0; t < vals.size(); ++t) {
                        vals[t] = decode_output_code(c[t], d);
                      }
                      out(i0, i1, vals.data());
                    });
  }

  // quant::matmul_int8_nt and quant::dequantize_product a block of rows of A at a time: each
  // output's int64 sum over k (native::dot_int8's, added tile by tile: integers, exact), wrapped
  // to int32 as dot_int8 wraps it, then the epilogue; the operands' codes computed tile by tile.
  void int8_product_rows(const Int8Operand& a, const Int8Operand& b, native::DequantOrder order,
                         DType d, const RowSink& out) override {
    const quant::PieceQuantizer qa = quantizer_of(a.src, int8_options(a.gran, a.order));
    const quant::PieceQuantizer qb = quantizer_of(b.src, int8_options(b.gran, b.order));
    const std::size_t M = a.rows(), N = b.rows(), K = a.cols();
    const std::vector<float>&sa = qa.state(), &sb = qb.state();
    if (b.cols() != K || sa.size() != M || (sb.size() != N && sb.size() != 1)) {
      throw std::logic_error("int8_product_rows: operands or states do not match");
    }
    const auto one = [](std::size_t x) { return std::max<std::size_t>(x, 1); };
    const std::size_t TI = std::max<std::size_t>(
        1, std::min({M, (std::size_t{1} << 19) / one(N), (std::size_t{1} << 22) / one(K)}));
    const std::size_t TK = std::min(K, one((std::size_t{1} << 20) / one(N)));
    const std::size_t TJ = std::min(N, one((std::size_t{1} << 20) / one(TK)));
    std::vector<std::int8_t> at(std::min(TI, M) * K), bt(TJ * TK);
    std::vector<std::int64_t> acc(std::min(TI, M) * N);
    std::vector<float> vals;
    for (std::size_t i0 = 0; i0 < M; i0 += TI) {
      const std::size_t i1 = std::min(M, i0 + TI);
      int8_tile(a, qa, i0, i1, 0, K, at.data());
      std::fill(acc.begin(), acc.end(), 0);
      for (std::size_t k0 = 0; k0 < K; k0 += TK) {
        const std::size_t k1 = std::min(K, k0 + TK), w = k1 - k0;
        for (std::size_t j0 = 0; j0 < N; j0 += TJ) {
          const std::size_t j1 = std::min(N, j0 + TJ);
          int8_tile(b, qb, j0, j1, k0, k1, bt.data());
          for (std::size_t i = i0; i < i1; ++i) {
            const std::int8_t* ar = at.data() + (i - i0) * K + k0;
            for (std::size_t j = j0; j < j1; ++j) {
              const std::int8_t* br = bt.data() + (j - j0) * w;
              std::int64_t s = 0;
              for (std::size_t k = 0; k < w; ++k) s += std::int64_t{ar[k]} * std::int64_t{br[k]};
              acc[(i - i0) * N + j] += s;
            }
          }
        }
      }
      vals.resize((i1 - i0) * N);
      for (std::size_t i = i0; i < i1; ++i) {
        for (std::size_t j = 0; j < N; ++j) {
          const auto a32 = static_cast<std::int32_t>(
              static_cast<std::uint32_t>(static_cast<std::uint64_t>(acc[(i - i0) * N + j])));
          const float sc = sb.size() == 1 ? sb[0] : sb[j];
          vals[(i - i0) * N + j] = to_dtype(native::dequant_int8_product(a32, sa[i], sc, order), d);
        }
      }
      out(i0, i1, vals.data());
    }
  }

  void mask_values(float* v, std::size_t count, const LayerConfig& cfg) override {
    for (std::size_t i = 0; i < count; ++i) v[i] = mask_value(v[i], cfg);
  }
};

}  // namespace

LayerEngine& cpu_engine() {
  static CpuEngine engine;
  return engine;
}

}  // namespace exmy::layer
