// Tensor quantization, the CPU reference (docs/SEMANTICS.md 7). Host-level orchestration only:
// group absmax reductions, layouts and state arrays. Every per-element step is a native::
// function from sim/native/quant_*.hpp, which the CUDA kernels call too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/format/codebook.hpp"
#include "sim/native/codebook_lookup.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_codebook.hpp"
#include "sim/native/quant_int8.hpp"
#include "sim/native/quant_scaled_cast.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::quant {

// Scaling granularity. A tensor of shape (d0, ..., dn-1) is viewed as a matrix of
// rows = d0*...*dn-2 and cols = dn-1 (a 1-d tensor is one row, a 0-d tensor one element).
enum class Granularity : std::uint8_t { tensor, row, col, block, mx };

struct Scheme {
  Granularity kind = Granularity::tensor;
  std::size_t block = 0;  // block: B in [32, 4096]; mx: 32
};

// "tensor", "rowwise", "colwise", "block:B", "mx" (InputError otherwise, B in 32..4096).
Scheme parse_scheme(std::string_view s);
std::string scheme_name(const Scheme& s);

enum class TargetKind : std::uint8_t { int8, float_format, codebook };

struct Target {
  TargetKind kind = TargetKind::int8;
  FloatFormat fmt{};    // float_format: the element format
  Codebook codebook{};  // codebook: the 256-entry table
};

// "int8", a float format name (e4m3fn, e5m2, ...), "dynamic" / "dynamic-unsigned" / "linear" /
// "linear-unsigned" (bitsandbytes maps) or "codebook:PATH" (a user table). InputError otherwise.
Target parse_target(std::string_view s);

struct Options {
  Scheme scheme;
  Target target;
  native::CastVariant variant = native::CastVariant::absmax;  // float targets
  native::ScaleOrder order = native::ScaleOrder::div_mul;     // absmax variant (int8 and float)
  native::NanPolicy nan = native::NanPolicy::propagate;
  RoundMode mode = RoundMode::rne;
  int sr_bits = 0;  // RoundMode::sr; for codebooks any sr means bitsandbytes' stochastic lookup
  std::uint64_t seed = 0;
  int te_margin = 0;                 // te: scale = fmax / amax / 2^margin
  float te_prev_scale = 1.0f;        // te: scale kept when amax is 0 or not finite
  bool torchao_fp16_source = false;  // torchao <= 0.5 with fp16 sources: scale <= 65504
  bool pow2_scale = false;  // torchao round_scales_to_power_of_2, te_current force_pow_2_scales
  float te_amax_epsilon = 0.0f;  // te_current amax_epsilon
  // te / torchao: use this scale for every group instead of the one computed from the amax
  // (delayed scaling: the scale of an earlier step). NaN = not given.
  float given_scale = __builtin_nanf("");
  native::NormOrder norm = native::NormOrder::recip_mul;  // codebook normalization
  TieRule tie = TieRule::even_index;                      // codebook nearest-code ties
  bool transpose = false;  // fused quantize + transpose (2-d views only): codes are Q(x)^T
};

// Random streams (SEMANTICS 3.2): element casts of tensor quantization (int8, float, MX) draw
// from this stream at the element's flat row-major index in the *input* tensor; the codebook
// stochastic lookup from the next one.
inline constexpr std::uint32_t kStreamQuantCast = 16;
inline constexpr std::uint32_t kStreamQuantCodebook = 17;

struct Quantized {
  std::vector<std::size_t> shape;        // codes' shape (the input's; transposed 2-d when asked)
  std::vector<std::uint8_t> codes;       // one byte per element: int8 as two's complement bits
  std::vector<float> state;              // fp32 absmax or scale per group (not for mx)
  std::vector<std::uint8_t> mx_scales;   // mx: one E8M0 code per block of 32
  std::vector<std::size_t> state_shape;  // tensor {1}; row {rows}; col {cols}; block/mx {nblocks}
  std::uint32_t flags = 0;               // OR of the element conversions' exmy::flag bits
};

// The shape-independent option checks shared by the CPU and GPU paths (InputError on misuse).
void validate_options(const Options& opt);
// The per-group state shape and the group of element (r, c) (used by the GPU tests too).
std::size_t group_count(const Scheme& s, std::size_t rows, std::size_t cols);
std::size_t group_of(const Scheme& s, std::size_t rows, std::size_t cols, std::size_t r,
                     std::size_t c);
// The codes' shape: the input's, or its transpose (2-d only; InputError otherwise) when
// opt.transpose.
std::vector<std::size_t> codes_shape(const std::vector<std::size_t>& shape, const Options& opt);
// rows/cols of the matrix view of a shape.
void matrix_view(const std::vector<std::size_t>& shape, std::size_t& rows, std::size_t& cols);

// Quantize x (fp32, row-major, `shape`). InputError on bad combinations (e.g. transpose of a
// non-2-d tensor, mx with an int8 or codebook target, codebook with a non-block scheme).
Quantized quantize(const std::vector<float>& x, const std::vector<std::size_t>& shape,
                   const Options& opt);

// Dequantize to fp32 in the *input* layout (a transposed quantization is transposed back).
// `q.shape` must be the codes' shape as quantize produced it.
std::vector<float> dequantize(const Quantized& q, const Options& opt);

}  // namespace exmy::quant
