#include "sim/layer/linear_layer.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/mask.hpp"
#include "sim/quant/matmul.hpp"

namespace exmy::layer {

namespace {

using native::bits_of;
using native::float_of;

quant::Granularity granularity(Gran g) {
  return g == Gran::tensor ? quant::Granularity::tensor
         : g == Gran::row  ? quant::Granularity::row
                           : quant::Granularity::col;
}

void check_count(const std::vector<float>& v, std::size_t want, const char* name) {
  if (v.size() != want) {
    throw InputError(std::string(name) + ": " + std::to_string(v.size()) + " values (expected " +
                     std::to_string(want) + ")");
  }
}

void check_values(const MatView& v, DType d, const char* name) {
  if (v.table != nullptr) return;  // codes of the dtype: its values by construction
  for (std::size_t r = 0; r < v.rows; ++r) {
    for (std::size_t c = 0; c < v.cols; ++c) {
      const float x = v.at(r, c);
      if (x == x && bits_of(to_dtype(x, d)) != bits_of(x)) {
        throw InputError(std::string(name) + ": value at index " + std::to_string(r * v.cols + c) +
                         " is not a " + dtype_name(d) + " value");
      }
    }
  }
}

// An operand computed by the vector primitives, held as values.
OpView held(std::vector<float> v, std::size_t rows, std::size_t cols) {
  auto p = std::make_shared<const std::vector<float>>(std::move(v));
  OpView o = op_view(view_of(p->data(), rows, cols));
  o.keep = p;
  return o;
}

// A sink into a rows x cols vector.
RowSink collect(std::vector<float>& into, std::size_t rows, std::size_t cols) {
  into.assign(rows * cols, 0.0f);
  return [&into, cols](std::size_t i0, std::size_t i1, const float* v) {
    std::copy(v, v + (i1 - i0) * cols, into.begin() + static_cast<std::ptrdiff_t>(i0 * cols));
  };
}

}  // namespace

void parse_kind(const std::string& text, LayerConfig& cfg) {
  static const std::pair<const char*, Kind> kNames[] = {{"plain", Kind::plain},
                                                        {"switchback", Kind::switchback},
                                                        {"switchback-m", Kind::switchback_m},
                                                        {"switchback-q", Kind::switchback_q},
                                                        {"llm-int8", Kind::llm_int8},
                                                        {"fp8-tensorwise", Kind::fp8_tensorwise},
                                                        {"switchback-fp8", Kind::switchback_fp8}};
  for (const auto& [n, k] : kNames) {
    if (text == n) {
      cfg.kind = k;
      return;
    }
  }
  if (text.rfind("masked:", 0) == 0) {
    const std::string f = text.substr(7);
    int e = 0, m = -1;
    char tail = 0;
    if (std::sscanf(f.c_str(), "e%dm%d%c", &e, &m, &tail) == 2 && e >= 2 && e <= 8 && m >= 0 &&
        m <= 23 && f == "e" + std::to_string(e) + "m" + std::to_string(m)) {
      cfg.kind = Kind::masked;
      cfg.mask_e = e;
      cfg.mask_m = m;
      return;
    }
    throw InputError("--kind '" + text + "': expected masked:eXmY with X in 2..8, Y in 0..23");
  }
  throw InputError("--kind '" + text +
                   "': expected plain, switchback, switchback-m, switchback-q, llm-int8, "
                   "fp8-tensorwise, switchback-fp8 or masked:eXmY");
}

DType parse_dtype(const std::string& text) {
  if (text == "fp32") return DType::fp32;
  if (text == "bf16") return DType::bf16;
  if (text == "fp16") return DType::fp16;
  throw InputError("--dtype '" + text + "': expected bf16, fp16 or fp32");
}

std::string kind_name(const LayerConfig& cfg) {
  switch (cfg.kind) {
    case Kind::plain:
      return "plain";
    case Kind::switchback:
      return "switchback";
    case Kind::switchback_m:
      return "switchback-m";
    case Kind::switchback_q:
      return "switchback-q";
    case Kind::llm_int8:
      return "llm-int8";
    case Kind::fp8_tensorwise:
      return "fp8-tensorwise";
    case Kind::switchback_fp8:
      return "switchback-fp8";
    case Kind::masked:
      return "masked:e" + std::to_string(cfg.mask_e) + "m" + std::to_string(cfg.mask_m);
  }
  return "?";
}

std::string dtype_name(DType d) {
  return d == DType::fp32 ? "fp32" : d == DType::bf16 ? "bf16" : "fp16";
}

const FloatFormat& dtype_format(DType d) {
  return d == DType::fp32 ? formats::fp32 : d == DType::bf16 ? formats::bf16 : formats::fp16;
}

int dtype_bits(DType d) {
  return d == DType::fp32 ? 32 : 16;
}

float to_dtype(float x, DType d) {
  if (d == DType::fp32) return x;
  const FloatFormat& f = dtype_format(d);
  const std::uint64_t code = native::convert(formats::fp32, f, Rounding{}, bits_of(x), 0).code;
  return static_cast<float>(native::to_double(f, code));
}

quant::Options int8_options(Gran gran, native::ScaleOrder order) {
  quant::Options opt;
  opt.scheme = {granularity(gran), 0};
  opt.target = quant::parse_target("int8");
  opt.order = order;
  opt.transpose = gran == Gran::col;  // column-wise: the codes of the transpose (B's rows)
  return opt;
}

quant::Options float8_options(Gran gran, const FloatFormat& f) {
  quant::Options opt;
  opt.scheme = {granularity(gran), 0};
  opt.target = quant::float_target(f);
  return opt;
}

Int8 int8_of(const quant::Quantized& q) {
  Int8 r;
  r.codes.resize(q.codes.size());
  std::memcpy(r.codes.data(), q.codes.data(), q.codes.size());
  r.state = q.state;
  return r;
}

gemm::OutFormat out_format(DType d) {
  return d == DType::fp32   ? gemm::OutFormat::fp32
         : d == DType::bf16 ? gemm::OutFormat::bf16
                            : gemm::OutFormat::fp16;
}

void gemm_operands(const std::vector<float>& a, std::size_t rows, const std::vector<float>& b,
                   std::size_t cols, std::size_t k, DType d, gemm::Operand& A, gemm::Operand& B) {
  A.rows = rows;
  B.rows = cols;
  A.cols = B.cols = k;
  A.v.assign(a.begin(), a.end());
  B.v.assign(b.begin(), b.end());
  A.emin = B.emin = 1 - dtype_format(d).bias;
  A.type = B.type = dtype_name(d);
  A.code_bits = B.code_bits = dtype_bits(d);
}

float decode_output_code(std::uint32_t c, DType d) {
  return d == DType::fp32 ? float_of(c) : static_cast<float>(native::to_double(dtype_format(d), c));
}

std::vector<float> decode_output(const std::vector<std::uint32_t>& c, DType d) {
  std::vector<float> out(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) out[i] = decode_output_code(c[i], d);
  return out;
}

MatView view_of(const float* data, std::size_t rows, std::size_t cols) {
  MatView v;
  v.data = data;
  v.rows = rows;
  v.cols = cols;
  v.rs = cols;
  return v;
}

MatView view_of_codes(const std::uint16_t* codes, std::size_t rows, std::size_t cols, DType d) {
  MatView v;
  v.data = codes;
  v.rows = rows;
  v.cols = cols;
  v.rs = cols;
  v.table = code_values(d);
  return v;
}

MatView transposed(const MatView& v) {
  MatView t = v;
  t.rows = v.cols;
  t.cols = v.rows;
  t.rs = v.cs;
  t.cs = v.rs;
  return t;
}

const float* code_values(DType d) {
  if (d == DType::fp32) throw std::logic_error("code_values: fp32 has no 16-bit codes");
  const auto table = [](const FloatFormat& f) {
    std::vector<float> t(std::size_t{1} << 16);
    for (std::uint32_t c = 0; c < (1u << 16); ++c) {
      t[c] = static_cast<float>(native::to_double(f, c));
    }
    return t;
  };
  static const std::array<std::vector<float>, 2> tables{table(formats::bf16), table(formats::fp16)};
  return tables[d == DType::bf16 ? 0 : 1].data();
}

void rows_f32(const MatView& v, std::size_t r0, std::size_t r1, float* out) {
  // A row-major view row by row, a transposed one column by column: memory in order.
  if (v.cs == 1 || r1 - r0 == 1) {
    for (std::size_t r = r0; r < r1; ++r)
      for (std::size_t k = 0; k < v.cols; ++k) out[(r - r0) * v.cols + k] = v.at(r, k);
  } else {
    for (std::size_t k = 0; k < v.cols; ++k)
      for (std::size_t r = r0; r < r1; ++r) out[(r - r0) * v.cols + k] = v.at(r, k);
  }
}

std::vector<float> contiguous(const MatView& v) {
  std::vector<float> r(v.rows * v.cols);
  if (!r.empty()) rows_f32(v, 0, v.rows, r.data());
  return r;
}

namespace {

// An operand view as GEMM rows: a row-major view row by row, a transposed one column by column
// (memory in order), each element through its step.
class OpSource final : public gemm::RowSource {
 public:
  explicit OpSource(OpView v) : v_(std::move(v)) {}
  void rows_into(std::size_t r0, std::size_t r1, double* out) const override {
    const std::size_t K = v_.cols();
    if (v_.v.cs == 1 || r1 - r0 == 1) {
      for (std::size_t r = r0; r < r1; ++r)
        for (std::size_t k = 0; k < K; ++k) out[(r - r0) * K + k] = v_.at(r, k);
    } else {
      for (std::size_t k = 0; k < K; ++k)
        for (std::size_t r = r0; r < r1; ++r) out[(r - r0) * K + k] = v_.at(r, k);
    }
  }

 private:
  OpView v_;
};

}  // namespace

gemm::Operand gemm_operand(const OpView& v, DType d) {
  gemm::Operand o;
  o.rows = v.rows();
  o.cols = v.cols();
  o.source = std::make_shared<OpSource>(v);
  o.emin = 1 - dtype_format(d).bias;
  o.type = dtype_name(d);
  o.code_bits = dtype_bits(d);
  return o;
}

OpView OpView::transposed() const {
  OpView o = *this;
  o.v = layer::transposed(v);
  o.t = !t;
  return o;
}

OpView op_view(const MatView& v) {
  OpView o;
  o.v = v;
  return o;
}

std::vector<float> contiguous(const OpView& v) {
  std::vector<float> r(v.rows() * v.cols());
  for (std::size_t i = 0; i < v.rows(); ++i)
    for (std::size_t k = 0; k < v.cols(); ++k) r[i * v.cols() + k] = v.at(i, k);
  return r;
}

// The defaults: the vector primitives on contiguous copies.
OpView LayerEngine::prepare_float8(const MatView& x, Gran gran, const FloatFormat& f, DType d) {
  return held(fake_float8(contiguous(x), x.rows, x.cols, gran, f, d), x.rows, x.cols);
}

OpView LayerEngine::prepare_int8_rows(const MatView& x, DType d) {
  const Int8 q =
      quantize_int8(contiguous(x), x.rows, x.cols, Gran::row, native::ScaleOrder::div_mul);
  return held(dequantize_int8_rows(q, x.rows, x.cols, d), x.rows, x.cols);
}

OpView LayerEngine::prepare_mask(const MatView& x, const LayerConfig& cfg) {
  return held(mask(contiguous(x), cfg), x.rows, x.cols);
}

void LayerEngine::gemm_rows(const OpView& a, const OpView& b, const gemm::AccumModel& m, DType d,
                            const RowSink& out) {
  const std::vector<float> c =
      gemm(contiguous(a), a.rows(), contiguous(b), b.rows(), a.cols(), m, d);
  out(0, a.rows(), c.data());
}

void LayerEngine::int8_product_rows(const Int8Operand& a, const Int8Operand& b,
                                    native::DequantOrder order, DType d, const RowSink& out) {
  const Int8 qa = quantize_int8(contiguous(a.src), a.src.rows, a.src.cols, a.gran, a.order);
  const Int8 qb = quantize_int8(contiguous(b.src), b.src.rows, b.src.cols, b.gran, b.order);
  const std::vector<float> c = int8_product(qa, a.rows(), qb, b.rows(), a.cols(), order, d);
  out(0, a.rows(), c.data());
}

void LayerEngine::mask_values(float* v, std::size_t count, const LayerConfig& cfg) {
  const std::vector<float> r = mask(std::vector<float>(v, v + count), cfg);
  std::copy(r.begin(), r.end(), v);
}

void check_inputs(const LayerConfig& cfg, const LayerShape& s, const MatView& x, const MatView& w,
                  const MatView& g) {
  if (x.rows != s.b || x.cols != s.n || w.rows != s.m || w.cols != s.n || g.rows != s.b ||
      g.cols != s.m) {
    throw std::logic_error("check_inputs: views do not match the shape");
  }
  check_values(x, cfg.dtype, "X");
  check_values(w, cfg.dtype, "W");
  check_values(g, cfg.dtype, "G");
}

LayerResult run_layer(const LayerConfig& cfg, const LayerShape& s, const std::vector<float>& x,
                      const std::vector<float>& w, const std::vector<float>& g, LayerEngine& e) {
  check_count(x, s.b * s.n, "X");
  check_count(w, s.m * s.n, "W");
  check_count(g, s.b * s.m, "G");
  return run_layer(cfg, s, x.data(), w.data(), g.data(), e);
}

LayerResult run_layer(const LayerConfig& cfg, const LayerShape& s, const float* x, const float* w,
                      const float* g, LayerEngine& e) {
  const MatView X = view_of(x, s.b, s.n), W = view_of(w, s.m, s.n), G = view_of(g, s.b, s.m);
  check_inputs(cfg, s, X, W, G);
  LayerResult r;
  run_layer_rows(cfg, s, X, W, G,
                 {collect(r.y, s.b, s.m), collect(r.x_grad, s.b, s.n), collect(r.w_grad, s.m, s.n)},
                 e);
  return r;
}

void run_layer_rows(const LayerConfig& cfg, const LayerShape& s, const MatView& x, const MatView& w,
                    const MatView& g, const LayerSinks& out, LayerEngine& e) {
  const std::size_t b = s.b, n = s.n, m = s.m;
  using native::DequantOrder;
  using native::ScaleOrder;
  const DType d = cfg.dtype;
  const gemm::AccumModel& am = cfg.accum;
  // The backward products read W^T (n x m), G^T (m x b) and X^T (n x b) as transposed views of
  // the inputs (no copies); a prepared operand (fake float8, int8 round trip, mask) is read the
  // same way.
  const auto gv = [&](const OpView& a, const OpView& bb, const RowSink& o) {
    e.gemm_rows(a, bb, am, d, o);
  };
  const auto q8 = [&](const Int8Operand& a, const Int8Operand& bb, DequantOrder order,
                      const RowSink& o) { e.int8_product_rows(a, bb, order, d, o); };
  const OpView X = op_view(x), W = op_view(w), G = op_view(g);
  const MatView Wt = transposed(w);
  (void)b;
  (void)m;
  switch (cfg.kind) {
    case Kind::plain: {
      gv(X, W, out.y);
      gv(G, W.transposed(), out.x_grad);
      gv(G.transposed(), X.transposed(), out.w_grad);
      break;
    }
    case Kind::switchback:
    case Kind::switchback_m: {
      // quantize_rowwise (x / absmax first) for X and G; quantize_global (absmax_inv on the
      // host) for W; quantize_global_transpose gives W's codes transposed with the same state,
      // i.e. the tensor-wise quantization of W^T.
      q8({x, Gran::row, ScaleOrder::div_mul}, {w, Gran::tensor, ScaleOrder::recip_mul},
         DequantOrder::switchback, out.y);
      // The erratum: X_grad is dequantized with G's row states (the pseudocode says state_X).
      q8({g, Gran::row, ScaleOrder::div_mul}, {Wt, Gran::tensor, ScaleOrder::recip_mul},
         DequantOrder::switchback, out.x_grad);
      if (cfg.kind == Kind::switchback) {
        gv(G.transposed(), X.transposed(), out.w_grad);
      } else {
        // SwitchBackM keeps only X's int8 codes: dequantize_rowwise, then .to(G.dtype).
        gv(G.transposed(), e.prepare_int8_rows(x, d).transposed(), out.w_grad);
      }
      break;
    }
    case Kind::switchback_q: {
      // Row-wise W forward (eq. 4, int8_matmul_rowwise_dequantize); backward W^T from
      // quantize_columnwise_and_transpose (one state per column of W = per row of W^T).
      q8({x, Gran::row, ScaleOrder::div_mul}, {w, Gran::row, ScaleOrder::div_mul},
         DequantOrder::switchback, out.y);
      q8({g, Gran::row, ScaleOrder::div_mul}, {w, Gran::col, ScaleOrder::div_mul},
         DequantOrder::switchback, out.x_grad);
      gv(G.transposed(), X.transposed(), out.w_grad);
      break;
    }
    case Kind::llm_int8: {
      // Every operand row/column-wise as bitsandbytes' int8_vectorwise_quant computes it
      // (x * __fdividef(127, absmax) under --use_fast_math: ScaleOrder::fdividef_mul), and
      // bitsandbytes' epilogue.
      constexpr ScaleOrder kBnb = ScaleOrder::fdividef_mul;
      q8({x, Gran::row, kBnb}, {w, Gran::row, kBnb}, DequantOrder::bnb, out.y);
      q8({g, Gran::row, kBnb}, {w, Gran::col, kBnb}, DequantOrder::bnb, out.x_grad);
      q8({g, Gran::col, kBnb}, {x, Gran::col, kBnb}, DequantOrder::bnb, out.w_grad);
      break;
    }
    case Kind::fp8_tensorwise:
    case Kind::switchback_fp8: {
      const bool sb = cfg.kind == Kind::switchback_fp8;
      const Gran act = sb ? Gran::row : Gran::tensor;
      const OpView xh = e.prepare_float8(x, act, cfg.fwd_format, d);
      const OpView wh = e.prepare_float8(w, Gran::tensor, cfg.fwd_format, d);
      const OpView gh = e.prepare_float8(g, act, cfg.bwd_format, d);
      gv(xh, wh, out.y);
      gv(gh, wh.transposed(), out.x_grad);
      if (sb) {
        gv(G.transposed(), X.transposed(), out.w_grad);
      } else {
        gv(gh.transposed(), xh.transposed(), out.w_grad);
      }
      break;
    }
    case Kind::masked: {
      // Figure 11: every product's inputs and its output masked (forward and backward).
      const OpView xm = e.prepare_mask(x, cfg), wm = e.prepare_mask(w, cfg),
                   gm = e.prepare_mask(g, cfg);
      const auto masked = [&](const RowSink& o, std::size_t cols) -> RowSink {
        return [&e, &cfg, o, cols](std::size_t i0, std::size_t i1, const float* v) {
          std::vector<float> t(v, v + (i1 - i0) * cols);
          e.mask_values(t.data(), t.size(), cfg);
          o(i0, i1, t.data());
        };
      };
      gv(xm, wm, masked(out.y, m));
      gv(gm, wm.transposed(), masked(out.x_grad, n));
      gv(gm.transposed(), xm.transposed(), masked(out.w_grad, n));
      break;
    }
  }
}

}  // namespace exmy::layer
