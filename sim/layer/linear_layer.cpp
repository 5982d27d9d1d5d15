#include "sim/layer/linear_layer.hpp"

#include <cstring>

#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
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

quant::Granularity granularity(Gran g) {
  return g == Gran::tensor ? quant::Granularity::tensor
         : g == Gran::row  ? quant::Granularity::row
                           : quant::Granularity::col;
}

// The CPU reference of the primitives: sim/quant (quantize, matmul, dequantize), sim/gemm.
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

  std::vector<float> gemm_view(const MatView& a, const MatView& b, const gemm::AccumModel& m,
                               DType d) override {
    const gemm::Operand A = view_operand(a, d), B = view_operand(b, d);
    std::vector<float> r(a.rows * b.rows);
    gemm::gemm_rows(A, B, m, out_format(d), 1.0, nullptr,
                    [&](std::size_t i0, std::size_t i1, const std::uint32_t* c) {
                      for (std::size_t t = 0; t < (i1 - i0) * b.rows; ++t) {
                        r[i0 * b.rows + t] = decode_output_code(c[t], d);
                      }
                    });
    return r;
  }

  std::vector<float> mask(const std::vector<float>& v, const LayerConfig& cfg) override {
    std::vector<float> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      r[i] = to_dtype(float_of(exmy::mask_fp32(bits_of(v[i]), cfg.mask_e, cfg.mask_m,
                                               cfg.mask_outer, cfg.mask_inner)),
                      cfg.dtype);
    }
    return r;
  }
};

void check_count(const std::vector<float>& v, std::size_t want, const char* name) {
  if (v.size() != want) {
    throw InputError(std::string(name) + ": " + std::to_string(v.size()) + " values (expected " +
                     std::to_string(want) + ")");
  }
}

void check_values(const float* v, std::size_t count, DType d, const char* name) {
  for (std::size_t i = 0; i < count; ++i) {
    const float x = v[i];
    if (x == x && bits_of(to_dtype(x, d)) != bits_of(x)) {
      throw InputError(std::string(name) + ": value at index " + std::to_string(i) + " is not a " +
                       dtype_name(d) + " value");
    }
  }
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
  return {data, rows, cols, cols, 1};
}

MatView transposed_view(const float* data, std::size_t rows, std::size_t cols) {
  return {data, cols, rows, 1, cols};
}

std::vector<float> contiguous(const MatView& v) {
  std::vector<float> r(v.rows * v.cols);
  for (std::size_t i = 0; i < v.rows; ++i)
    for (std::size_t k = 0; k < v.cols; ++k) r[i * v.cols + k] = v.data[i * v.rs + k * v.cs];
  return r;
}

gemm::Operand view_operand(const MatView& v, DType d) {
  gemm::Operand o = gemm::operand_view_f32(v.data, v.rows, v.cols, v.rs, v.cs);
  o.emin = 1 - dtype_format(d).bias;
  o.type = dtype_name(d);
  o.code_bits = dtype_bits(d);
  return o;
}

LayerEngine& cpu_engine() {
  static CpuEngine engine;
  return engine;
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
  const std::size_t b = s.b, n = s.n, m = s.m;
  check_values(x, b * n, cfg.dtype, "X");
  check_values(w, m * n, cfg.dtype, "W");
  check_values(g, b * m, cfg.dtype, "G");
  using native::DequantOrder;
  using native::ScaleOrder;
  const DType d = cfg.dtype;
  const gemm::AccumModel& am = cfg.accum;
  LayerResult r;
  // The backward products read W^T (n x m), G^T (m x b) and X^T (n x b) as transposed views of
  // the inputs (no copies); the quantizers read the arrays themselves (copied for them: they
  // take vectors).
  const auto gv = [&](const MatView& a, const MatView& bb) { return e.gemm_view(a, bb, am, d); };
  const MatView X = view_of(x, b, n), W = view_of(w, m, n), G = view_of(g, b, m);
  const MatView Wt = transposed_view(w, m, n), Gt = transposed_view(g, b, m),
                Xt = transposed_view(x, b, n);
  const auto vec = [](const float* p, std::size_t count) {
    return std::vector<float>(p, p + count);
  };
  switch (cfg.kind) {
    case Kind::plain: {
      r.y = gv(X, W);
      r.x_grad = gv(G, Wt);
      r.w_grad = gv(Gt, Xt);
      break;
    }
    case Kind::switchback:
    case Kind::switchback_m: {
      // quantize_rowwise (x / absmax first) for X and G; quantize_global (absmax_inv on the
      // host) for W; quantize_global_transpose gives W's codes transposed with the same state,
      // i.e. the tensor-wise quantization of W^T.
      const std::vector<float> xv = vec(x, b * n), wv = vec(w, m * n), gvv = vec(g, b * m);
      const Int8 xq = e.quantize_int8(xv, b, n, Gran::row, ScaleOrder::div_mul);
      const Int8 wq = e.quantize_int8(wv, m, n, Gran::tensor, ScaleOrder::recip_mul);
      const Int8 wtq = e.quantize_int8(contiguous(Wt), n, m, Gran::tensor, ScaleOrder::recip_mul);
      const Int8 gq = e.quantize_int8(gvv, b, m, Gran::row, ScaleOrder::div_mul);
      r.y = e.int8_product(xq, b, wq, m, n, DequantOrder::switchback, d);
      // The erratum: X_grad is dequantized with G's row states (the pseudocode says state_X).
      r.x_grad = e.int8_product(gq, b, wtq, n, m, DequantOrder::switchback, d);
      if (cfg.kind == Kind::switchback) {
        r.w_grad = gv(Gt, Xt);
      } else {
        // SwitchBackM keeps only X's int8 codes: dequantize_rowwise, then .to(G.dtype).
        const std::vector<float> xhat = e.dequantize_int8_rows(xq, b, n, d);
        r.w_grad = gv(Gt, transposed_view(xhat.data(), b, n));
      }
      break;
    }
    case Kind::switchback_q: {
      // Row-wise W forward (eq. 4, int8_matmul_rowwise_dequantize); backward W^T from
      // quantize_columnwise_and_transpose (one state per column of W = per row of W^T).
      const std::vector<float> xv = vec(x, b * n), wv = vec(w, m * n), gvv = vec(g, b * m);
      const Int8 xq = e.quantize_int8(xv, b, n, Gran::row, ScaleOrder::div_mul);
      const Int8 wq = e.quantize_int8(wv, m, n, Gran::row, ScaleOrder::div_mul);
      const Int8 wcq = e.quantize_int8(wv, m, n, Gran::col, ScaleOrder::div_mul);
      const Int8 gq = e.quantize_int8(gvv, b, m, Gran::row, ScaleOrder::div_mul);
      r.y = e.int8_product(xq, b, wq, m, n, DequantOrder::switchback, d);
      r.x_grad = e.int8_product(gq, b, wcq, n, m, DequantOrder::switchback, d);
      r.w_grad = gv(Gt, Xt);
      break;
    }
    case Kind::llm_int8: {
      // Every operand row/column-wise as bitsandbytes' int8_vectorwise_quant computes it
      // (x * __fdividef(127, absmax) under --use_fast_math: ScaleOrder::fdividef_mul), and
      // bitsandbytes' epilogue.
      constexpr ScaleOrder kBnb = ScaleOrder::fdividef_mul;
      const std::vector<float> xv = vec(x, b * n), wv = vec(w, m * n), gvv = vec(g, b * m);
      const Int8 xq = e.quantize_int8(xv, b, n, Gran::row, kBnb);
      const Int8 wq = e.quantize_int8(wv, m, n, Gran::row, kBnb);
      const Int8 wcq = e.quantize_int8(wv, m, n, Gran::col, kBnb);
      const Int8 gq = e.quantize_int8(gvv, b, m, Gran::row, kBnb);
      const Int8 gcq = e.quantize_int8(gvv, b, m, Gran::col, kBnb);
      const Int8 xcq = e.quantize_int8(xv, b, n, Gran::col, kBnb);
      r.y = e.int8_product(xq, b, wq, m, n, DequantOrder::bnb, d);
      r.x_grad = e.int8_product(gq, b, wcq, n, m, DequantOrder::bnb, d);
      r.w_grad = e.int8_product(gcq, m, xcq, n, b, DequantOrder::bnb, d);
      break;
    }
    case Kind::fp8_tensorwise:
    case Kind::switchback_fp8: {
      const bool sb = cfg.kind == Kind::switchback_fp8;
      const Gran act = sb ? Gran::row : Gran::tensor;
      const std::vector<float> xh = e.fake_float8(vec(x, b * n), b, n, act, cfg.fwd_format, d);
      const std::vector<float> wh =
          e.fake_float8(vec(w, m * n), m, n, Gran::tensor, cfg.fwd_format, d);
      const std::vector<float> gh = e.fake_float8(vec(g, b * m), b, m, act, cfg.bwd_format, d);
      r.y = gv(view_of(xh.data(), b, n), view_of(wh.data(), m, n));
      r.x_grad = gv(view_of(gh.data(), b, m), transposed_view(wh.data(), m, n));
      r.w_grad =
          sb ? gv(Gt, Xt) : gv(transposed_view(gh.data(), b, m), transposed_view(xh.data(), b, n));
      break;
    }
    case Kind::masked: {
      // Figure 11: every product's inputs and its output masked (forward and backward).
      const std::vector<float> xm = e.mask(vec(x, b * n), cfg), wm = e.mask(vec(w, m * n), cfg),
                               gm = e.mask(vec(g, b * m), cfg);
      const MatView XM = view_of(xm.data(), b, n), WM = view_of(wm.data(), m, n),
                    GM = view_of(gm.data(), b, m);
      r.y = e.mask(gv(XM, WM), cfg);
      r.x_grad = e.mask(gv(GM, transposed_view(wm.data(), m, n)), cfg);
      r.w_grad =
          e.mask(gv(transposed_view(gm.data(), b, m), transposed_view(xm.data(), b, n)), cfg);
      break;
    }
  }
  return r;
}

}  // namespace exmy::layer
