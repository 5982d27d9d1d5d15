// Low-precision linear layers, the CPU reference (docs/SEMANTICS.md 16): the forward output
// Y = X W^T, the input gradient X_grad = G W and the weight gradient W_grad = G^T X of one layer,
// each matrix product in the precision, quantization and accumulation its algorithm states:
//   - SwitchBack (Wortsman et al., "Stable and low-precision training for large-scale
//     vision-language models", arXiv 2304.13013, Algorithm 1), SwitchBackM (Algorithm 3) and
//     SwitchBackQ (Algorithm 4, eq. 4), with the pseudocode's erratum fixed (X_grad is
//     dequantized with the state of G, as the released kernels do);
//   - LLM.int8() as that paper compares it (SwitchBackQ with the weight gradient in int8 too,
//     row- and column-wise), with bitsandbytes' dequantization epilogue;
//   - the float8 baselines of its section 2.3 (tensor-wise quantization of X, W and G, exact
//     float8 values multiplied in 16-bit) and SwitchBack with float8;
//   - "To FP8 and back again" (section 3.2 and figure 11): inputs and outputs of every product
//     masked onto an ExMy grid, forward and backward;
//   - the plain 16-bit layer (the paper's Algorithm 5) for comparison.
// X is b x n, W is m x n, G is b x m, row-major; values are of the layer's dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/gemm/accum_model.hpp"
#include "sim/gemm/gemm.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/mask.hpp"
#include "sim/native/quant_int8.hpp"
#include "sim/native/quant_matmul.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::layer {

enum class Kind : std::uint8_t {
  plain,           // every product in dtype under the accumulation model
  switchback,      // Algorithm 1
  switchback_m,    // Algorithm 3 (W_grad from the dequantized int8 X)
  switchback_q,    // Algorithm 4 (row-wise W forward, column-wise W backward)
  llm_int8,        // all three products int8, row/column-wise, bitsandbytes' epilogue
  fp8_tensorwise,  // section 2.3's baseline: tensor-wise float8 X, W, G; 16-bit arithmetic
  switchback_fp8,  // SwitchBack with float8cast(x / absmax(x)) instead of int8
  masked,          // "To FP8 and back again" figure 11
};

enum class DType : std::uint8_t { fp32, bf16, fp16 };

struct LayerConfig {
  Kind kind = Kind::switchback;
  DType dtype = DType::bf16;
  // The 16-bit (dtype) products: the accumulation model (SEMANTICS 15.2), parsed for dtype.
  gemm::AccumModel accum;
  // float8 kinds: the format of X and W (forward) and of G (backward).
  FloatFormat fwd_format = formats::e4m3fn;
  FloatFormat bwd_format = formats::e5m2;
  // masked: the ExMy grid and its limits (SEMANTICS 2.1).
  int mask_e = 4, mask_m = 3;
  MaskOuter mask_outer = MaskOuter::clamp;
  MaskInner mask_inner = MaskInner::min;
};

// Parses "plain", "switchback", "switchback-m", "switchback-q", "llm-int8", "fp8-tensorwise",
// "switchback-fp8", "masked:eXmY" into cfg.kind (and the mask's E, M). InputError otherwise.
void parse_kind(const std::string& text, LayerConfig& cfg);
DType parse_dtype(const std::string& text);
std::string kind_name(const LayerConfig& cfg);
std::string dtype_name(DType d);
const FloatFormat& dtype_format(DType d);
// The code width the accumulation presets read for this dtype (16, or 32 for fp32).
int dtype_bits(DType d);
// RNE into dtype (fp32: the value itself), as an fp32 value.
float to_dtype(float x, DType d);

struct LayerShape {
  std::size_t b = 0, n = 0, m = 0;  // X: b x n, W: m x n, G: b x m
};

struct LayerResult {
  std::vector<float> y;       // b x m
  std::vector<float> x_grad;  // b x n
  std::vector<float> w_grad;  // m x n
};

// An int8 quantization of a rows x cols matrix: row-wise (one state per row), tensor-wise (one),
// or column-wise returned transposed (cols x rows codes, one state per column), so that the
// codes are the rows of the right operand of A B^T.
struct Int8 {
  std::vector<std::int8_t> codes;
  std::vector<float> state;
};
enum class Gran : std::uint8_t { tensor, row, col };

// A matrix of dtype values as stored, read in place: element (r, k) at data[r rs + k cs], an fp32
// value, or a 16-bit code of the dtype whose value is table[code] (code_values; the CLI maps <u2
// inputs). A transpose is the same data with rs and cs swapped. The caller keeps data alive.
struct MatView {
  const void* data = nullptr;
  std::size_t rows = 0, cols = 0, rs = 0, cs = 1;
  const float* table = nullptr;  // codes: their values; nullptr: fp32 values
  float at(std::size_t r, std::size_t k) const {
    const std::size_t i = r * rs + k * cs;
    const auto* p = static_cast<const unsigned char*>(data);
    if (table != nullptr) {
      std::uint16_t c;
      std::memcpy(&c, p + 2 * i, 2);
      return table[c];
    }
    float x;
    std::memcpy(&x, p + 4 * i, 4);
    return x;
  }
};
// A row-major rows x cols matrix of fp32 values, or of 16-bit codes of d (bf16 or fp16).
MatView view_of(const float* data, std::size_t rows, std::size_t cols);
MatView view_of_codes(const std::uint16_t* codes, std::size_t rows, std::size_t cols, DType d);
MatView transposed(const MatView& v);
// The values of d's 2^16 codes (d bf16 or fp16) as fp32, as the CLI has decoded <u2 inputs.
const float* code_values(DType d);
// Rows [r0, r1) of the view's elements, row-major, into out; and all of them.
void rows_f32(const MatView& v, std::size_t r0, std::size_t r1, float* out);
std::vector<float> contiguous(const MatView& v);

// An elementwise step of a product operand (SEMANTICS 16): a quantization round trip with its
// group states, or the mask. apply(x, r, c): the element x at (r, c) of the matrix the step was
// prepared on.
class ElementStep {
 public:
  virtual ~ElementStep() = default;
  virtual float apply(float x, std::size_t r, std::size_t c) const = 0;
};

// A product operand: element (r, k) is step(v(r, k)), or v(r, k) itself without a step; `t`: v
// is the transpose of the matrix the step was prepared on. `keep` owns what v points into (an
// operand held as values), if anything.
struct OpView {
  MatView v;
  std::shared_ptr<const ElementStep> step;
  bool t = false;
  std::shared_ptr<const void> keep;
  std::size_t rows() const { return v.rows; }
  std::size_t cols() const { return v.cols; }
  float at(std::size_t r, std::size_t k) const {
    const float x = v.at(r, k);
    return !step ? x : t ? step->apply(x, k, r) : step->apply(x, r, k);
  }
  OpView transposed() const;
};
OpView op_view(const MatView& v);
std::vector<float> contiguous(const OpView& v);

// An int8 operand of a product: the SEMANTICS 7.3 quantization of src by gran with the given fp32
// order. Its rows are src's (row-wise: one state each; tensor-wise: one state), or src's columns
// (column-wise: the codes of the transpose, one state per column of src).
struct Int8Operand {
  MatView src;
  Gran gran = Gran::row;
  native::ScaleOrder order = native::ScaleOrder::div_mul;
  std::size_t rows() const { return gran == Gran::col ? src.cols : src.rows; }
  std::size_t cols() const { return gran == Gran::col ? src.rows : src.cols; }
};

// Rows [i0, i1) of an output, (i1 - i0) x its columns values of the dtype, row-major. Each
// output's rows arrive once, in order.
using RowSink = std::function<void(std::size_t i0, std::size_t i1, const float* values)>;
struct LayerSinks {
  RowSink y, x_grad, w_grad;
};

// The primitives a layer is made of. The layer's algorithm (run_layer) exists once; the CPU
// reference (cpu_engine) and the CUDA kernels (gpu/layer/layer.hpp) each implement these, with
// the same bits.
class LayerEngine {
 public:
  virtual ~LayerEngine() = default;
  // SEMANTICS 7.3 int8 quantization with the given fp32 order.
  virtual Int8 quantize_int8(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                             Gran gran, native::ScaleOrder order) = 0;
  // The int8 product of A (rows x k) and B (cols x k) with their row states (B: or one tensor
  // state), dequantized by `order` (SEMANTICS 8.2), rounded to dtype.
  virtual std::vector<float> int8_product(const Int8& a, std::size_t rows, const Int8& b,
                                          std::size_t cols, std::size_t k,
                                          native::DequantOrder order, DType d) = 0;
  // dequantize_rowwise (SEMANTICS 7.3) of row-wise int8 codes, rounded to dtype.
  virtual std::vector<float> dequantize_int8_rows(const Int8& q, std::size_t rows, std::size_t cols,
                                                  DType d) = 0;
  // The absmax-scaled float cast and its dequantization (SEMANTICS 7.4), rounded to dtype.
  virtual std::vector<float> fake_float8(const std::vector<float>& x, std::size_t rows,
                                         std::size_t cols, Gran gran, const FloatFormat& f,
                                         DType d) = 0;
  // C = A B^T of dtype values under the accumulation model, output rounded to dtype.
  virtual std::vector<float> gemm(const std::vector<float>& a, std::size_t rows,
                                  const std::vector<float>& b, std::size_t cols, std::size_t k,
                                  const gemm::AccumModel& m, DType d) = 0;
  // mask (SEMANTICS 2.1) of every value, then rounded to dtype.
  virtual std::vector<float> mask(const std::vector<float>& v, const LayerConfig& cfg) = 0;

  // What run_layer is written in: the operands as views of the inputs, the products' outputs a
  // block of rows at a time. By default each is the primitive above on contiguous copies, held
  // and delivered whole (the GPU engine). The CPU reference reads the views in place, keeps only
  // the group states of a prepared operand (each element is computed where a product reads it)
  // and delivers blocks of rows: nothing of the inputs' or outputs' size is held (issue 36's
  // memory bound, SEMANTICS 11.0), with the same bits.
  // fake_float8 of x.
  virtual OpView prepare_float8(const MatView& x, Gran gran, const FloatFormat& f, DType d);
  // dequantize_int8_rows of quantize_int8(x, row-wise, div-mul) (SwitchBackM's X).
  virtual OpView prepare_int8_rows(const MatView& x, DType d);
  // mask of x.
  virtual OpView prepare_mask(const MatView& x, const LayerConfig& cfg);
  // gemm of A and B (C = A B^T, k = a.cols()).
  virtual void gemm_rows(const OpView& a, const OpView& b, const gemm::AccumModel& m, DType d,
                         const RowSink& out);
  // int8_product of the two quantizations (k = a.cols()).
  virtual void int8_product_rows(const Int8Operand& a, const Int8Operand& b,
                                 native::DequantOrder order, DType d, const RowSink& out);
  // mask of `count` values in place.
  virtual void mask_values(float* v, std::size_t count, const LayerConfig& cfg);
};

LayerEngine& cpu_engine();

// Pieces both engines build their primitives from (the CPU reference and gpu/layer), so that
// the two cannot drift apart: the quantizer options of SEMANTICS 16, the int8 result of a
// quantization, and a 16-bit product's operands, output format and decoded output.
quant::Options int8_options(Gran gran, native::ScaleOrder order);
quant::Options float8_options(Gran gran, const FloatFormat& f);
Int8 int8_of(const quant::Quantized& q);
gemm::OutFormat out_format(DType d);
// A (rows x k) and B (cols x k), values of dtype d, as GEMM operands.
void gemm_operands(const std::vector<float>& a, std::size_t rows, const std::vector<float>& b,
                   std::size_t cols, std::size_t k, DType d, gemm::Operand& A, gemm::Operand& B);
// A product operand as a GEMM operand read through its view (each element where the GEMM
// reads it, no copy), set up as gemm_operands sets up dtype values.
gemm::Operand gemm_operand(const OpView& v, DType d);
// A product's output codes (fp32 bits, or bf16/fp16 codes) as values of dtype d.
std::vector<float> decode_output(const std::vector<std::uint32_t>& c, DType d);
float decode_output_code(std::uint32_t c, DType d);

// InputError naming the first input value that is not a value of cfg.dtype (16-bit codes always
// are). run_layer checks; run_layer_rows expects checked inputs.
void check_inputs(const LayerConfig& cfg, const LayerShape& s, const MatView& x, const MatView& w,
                  const MatView& g);
// The layer on views of X (b x n), W (m x n) and G (b x m), each output delivered to its sink
// (in the order Y, X_grad, W_grad).
void run_layer_rows(const LayerConfig& cfg, const LayerShape& s, const MatView& x, const MatView& w,
                    const MatView& g, const LayerSinks& out, LayerEngine& engine = cpu_engine());

// Runs the layer on `engine` (default: the CPU reference). Every input value must already be a
// value of cfg.dtype (InputError names the first that is not); NaN and infinities go through the
// arithmetic as SEMANTICS 16 says.
LayerResult run_layer(const LayerConfig& cfg, const LayerShape& s, const std::vector<float>& x,
                      const std::vector<float>& w, const std::vector<float>& g,
                      LayerEngine& engine = cpu_engine());
// The same on arrays of b x n, m x n and b x m values, read in place.
LayerResult run_layer(const LayerConfig& cfg, const LayerShape& s, const float* x, const float* w,
                      const float* g, LayerEngine& engine = cpu_engine());

}  // namespace exmy::layer
