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

// A matrix operand of a product without a copy: element (r, k) at data[r rs + k cs]; a
// transpose is a view of the same data with rs and cs swapped. The caller keeps data alive.
struct MatView {
  const float* data = nullptr;
  std::size_t rows = 0, cols = 0, rs = 0, cs = 1;
};
// A row-major rows x cols matrix, and its transpose (cols x rows).
MatView view_of(const float* data, std::size_t rows, std::size_t cols);
MatView transposed_view(const float* data, std::size_t rows, std::size_t cols);
// The view's elements as a row-major matrix.
std::vector<float> contiguous(const MatView& v);

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
  // gemm() of views (C = A B^T, k = a.cols): by default on contiguous copies of the views; the
  // CPU reference reads the views in place and writes C's values directly (a transposed 1 GiB
  // operand and C's codes beside its values exceeded issue 36's memory bound).
  virtual std::vector<float> gemm_view(const MatView& a, const MatView& b,
                                       const gemm::AccumModel& m, DType d) {
    return gemm(contiguous(a), a.rows, contiguous(b), b.rows, a.cols, m, d);
  }
  // mask (SEMANTICS 2.1) of every value, then rounded to dtype.
  virtual std::vector<float> mask(const std::vector<float>& v, const LayerConfig& cfg) = 0;
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
// A product's output codes (fp32 bits, or bf16/fp16 codes) as values of dtype d.
std::vector<float> decode_output(const std::vector<std::uint32_t>& c, DType d);
float decode_output_code(std::uint32_t c, DType d);
// A view (values of dtype d) as a GEMM operand read in place, as gemm_operands would set it up.
gemm::Operand view_operand(const MatView& v, DType d);

// Runs the layer on `engine` (default: the CPU reference). Every input value must already be a
// value of cfg.dtype (InputError names the first that is not); NaN and infinities go through the
// arithmetic as SEMANTICS 16 says.
LayerResult run_layer(const LayerConfig& cfg, const LayerShape& s, const std::vector<float>& x,
                      const std::vector<float>& w, const std::vector<float>& g,
                      LayerEngine& engine = cpu_engine());
// The same on arrays of b x n, m x n and b x m values (e.g. mapped input files): the plain kind
// reads them in place; the others copy what their quantizers read.
LayerResult run_layer(const LayerConfig& cfg, const LayerShape& s, const float* x, const float* w,
                      const float* g, LayerEngine& engine = cpu_engine());

}  // namespace exmy::layer
