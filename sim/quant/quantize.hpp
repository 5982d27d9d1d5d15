// Tensor quantization, the CPU reference (docs/SEMANTICS.md 7). Host-level orchestration only:
// group absmax reductions, layouts and state arrays. Every per-element step is a native::
// function from sim/native/quant_*.hpp, which the CUDA kernels call too.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/format/codebook.hpp"
#include "sim/format/registry.hpp"
#include "sim/native/codebook_lookup.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/optim_storage.hpp"
#include "sim/native/pack4.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_codebook.hpp"
#include "sim/native/quant_int8.hpp"
#include "sim/native/quant_plan.hpp"
#include "sim/native/quant_scaled_cast.hpp"
#include "sim/native/rounding.hpp"
#include "sim/quant/values.hpp"

namespace exmy::quant {

// Scaling granularity. A tensor of shape (d0, ..., dn-1) is viewed as a matrix of
// rows = d0*...*dn-2 and cols = dn-1 (a 1-d tensor is one row, a 0-d tensor one element).
// mx: blocks of 32 with an E8M0 scale; nvfp4: blocks of 16 along the last dimension with an
// E4M3 scale (cols % 16 == 0); tile: R×C tiles of a 2-d tensor, partial tiles at the bottom and
// right edges (docs/SEMANTICS.md 7.15); nvfp4_2d: NVFP4 on 16×16 tiles of a 2-d tensor
// (TransformerEngine's 2-D weight scaling, 7.16). The scheme registry
// (sim/quant/scheme_registry.hpp) has one entry per id.
enum class Granularity : std::uint8_t { tensor, row, col, block, mx, nvfp4, tile, nvfp4_2d };

struct Scheme {
  Granularity kind = Granularity::tensor;
  std::size_t block = 0;                     // block: B in [32, 4096]; mx: 32; nvfp4: 16; tile: R*C
  std::size_t tile_rows = 0, tile_cols = 0;  // tile: R, C
};

// "tensor", "rowwise", "colwise", "block:B", "block:RxC", "mx", "nvfp4" (InputError otherwise, B
// in 32..4096; R, C in 1..4096).
Scheme parse_scheme(std::string_view s);
std::string scheme_name(const Scheme& s);

// The element target is a format of the one registry (sim/format/registry.hpp): int8 (the
// symmetric integer format), a float format of at most 8 bits, or a codebook (dynamic,
// dynamic-unsigned, linear, linear-unsigned, table:PATH; codebook:PATH is the same as table:).
using Target = Format;
// parse_format plus the quantizer's own limits (InputError otherwise).
Target parse_target(std::string_view s);
// The target of a float format descriptor (for callers that hold one rather than a name).
Target float_target(const FloatFormat& f);

// "floor", "ceil", "even", "rceil" (InputError otherwise).
native::MxScaleMode parse_scale_mode(std::string_view s);
// The --variant names, one table: parse_variant, variant_name, the usage texts (variant_list),
// the verify campaign's op names, the oracle bridge and the Python module all read it. Order: the
// usage texts'. Which variants a scheme accepts is its registry entry's check
// (sim/quant/scheme_registry.hpp).
struct VariantName {
  const char* name;
  native::CastVariant value;
};
inline constexpr VariantName kVariants[] = {{"absmax", native::CastVariant::absmax},
                                            {"te", native::CastVariant::te},
                                            {"te-current", native::CastVariant::te_current},
                                            {"torchao", native::CastVariant::torchao},
                                            {"ocp", native::CastVariant::ocp},
                                            {"deepgemm", native::CastVariant::deepgemm}};
// The names of kVariants (an array of const char*).
inline constexpr auto kVariantNames = [] {
  std::array<const char*, std::size(kVariants)> names{};
  for (std::size_t k = 0; k < names.size(); ++k) names[k] = kVariants[k].name;
  return names;
}();
// A name of kVariants (InputError listing them otherwise; the scheme decides which apply,
// validate_options).
native::CastVariant parse_variant(std::string_view s);
// The name of a variant ("?" for a value outside the table).
const char* variant_name(native::CastVariant v);
// "absmax|te|..." (the names joined by `sep`), for --help.
std::string variant_list(std::string_view sep);
// "fp32", "pow2", "ue8m0": the 2-D block scales' form (InputError otherwise).
native::BlockScaleFormat parse_scale_format(std::string_view s);
inline constexpr const char* kScaleFormatNames[] = {"fp32", "pow2", "ue8m0"};
inline constexpr const char* kScaleModeNames[] = {"floor", "ceil", "even", "rceil"};

// An optional float of Options (given_scale, tensor_amax, tensor_scale): NaN is "not given".
constexpr bool option_given(float v) {
  return v == v;
}

struct Options {
  Scheme scheme;
  Target target = parse_target("int8");
  // Float targets: absmax (default), te, te-current, torchao. mx: ocp (default; absmax means the
  // same) or torchao. nvfp4: torchao (default; absmax means the same) or te.
  native::CastVariant variant = native::CastVariant::absmax;
  native::ScaleOrder order = native::ScaleOrder::div_mul;  // absmax variant (int8 and float)
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
  native::MxScaleMode scale_mode = native::MxScaleMode::floor;  // mx
  bool two_level = false;  // nvfp4: a per-tensor fp32 scale above the block scales
  // nvfp4 two-level: the tensor amax to use instead of the input's (calibration); NaN = not given.
  float tensor_amax = __builtin_nanf("");
  // nvfp4 two-level, torchao: the per_tensor_scale itself; NaN = not given.
  float tensor_scale = __builtin_nanf("");
  native::NormOrder norm = native::NormOrder::recip_mul;  // codebook normalization
  TieRule tie = TieRule::even_index;                      // codebook nearest-code ties
  bool transpose = false;  // fused quantize + transpose (2-d views only): codes are Q(x)^T
  // tile schemes: the scale form (deepgemm: fp32 | ue8m0; te: fp32 | pow2; others fp32).
  native::BlockScaleFormat scale_format = native::BlockScaleFormat::fp32;
  // The input's dtype before its exact widening to fp32 (tile te / torchao read it: TE's
  // finfo(x.dtype).max, torchao's eps in fp16).
  native::Storage source = native::Storage::f32;
};

// Random streams (SEMANTICS 3.2), as the plan defines them.
inline constexpr std::uint32_t kStreamQuantCast = native::kStreamQuantCast;
inline constexpr std::uint32_t kStreamQuantCodebook = native::kStreamQuantCodebook;

struct Quantized {
  std::vector<std::size_t> shape;         // codes' shape (the input's; transposed 2-d when asked)
  std::vector<std::uint8_t> codes;        // one byte per element: int8 as two's complement bits
  std::vector<float> state;               // fp32 absmax or scale per group (fp32 scale rules)
  std::vector<std::uint8_t> scale_codes;  // mx: E8M0 codes; nvfp4: E4M3 codes (one per group)
  std::vector<std::size_t> state_shape;   // tensor {1}; row {rows}; col {cols}; block/mx {nblocks};
                                          // nvfp4 the input's shape with the last dim / 16
  float tensor_scale = 1.0f;  // nvfp4 two-level: the per-tensor factor dequantization applies
  std::uint32_t flags = 0;    // OR of the element conversions' exmy::flag bits
  bool packed = false;        // codes two per byte (quantize(..., pack_codes))
};

// The plan of a quantization (sim/native/quant_plan.hpp) from validated options. `tensor` is
// the NVFP4 per-tensor level (ignored by other schemes).
native::QuantPlan make_plan(const Options& opt, const native::Nvfp4Tensor& tensor = {});
// The NVFP4 per-tensor level of a two-level plan from the tensor's absmax (or the options'
// given amax / scale), and back from a stored tensor scale (dequantization).
native::Nvfp4Tensor nvfp4_tensor_level(const Options& opt, float tensor_amax);
native::Nvfp4Tensor nvfp4_tensor_from_scale(const Options& opt, float tensor_scale);
// The stored tensor scale of a level (the factor dequantization applies).
float nvfp4_stored_scale(const Options& opt, const native::Nvfp4Tensor& t);

// The shape-independent option checks shared by the CPU and GPU paths (InputError on misuse).
void validate_options(const Options& opt);

// The options the caller set besides the profile: a profile fixes them, so giving them too is an
// error rather than a silent override.
struct CompatGiven {
  bool order = false;        // --order
  bool norm_or_nan = false;  // --norm or --nan
  bool dequantize = false;   // applied to `exmy dequantize`, not quantize
};
// Applies the --compat profile `profile` (sim/format/compat.hpp) to the options of a
// quantization to opt.target: the profile's kernel rules replace the order, normalization and
// NaN rule (docs/SEMANTICS.md 7.3, 7.5). "" and "default" change nothing. An InputError names the
// profile when it does not cover the target or conflicts with `given`. The CLI (quantize,
// dequantize) and the Python module call this one function.
void apply_compat(Options& opt, std::string_view profile, const CompatGiven& given);
// The per-group state shape and the group of element (r, c) (used by the GPU tests too).
std::size_t group_count(const Scheme& s, std::size_t rows, std::size_t cols);
std::size_t group_of(const Scheme& s, std::size_t rows, std::size_t cols, std::size_t r,
                     std::size_t c);
// The codes' shape: the input's, or its transpose (2-d only; InputError otherwise) when
// opt.transpose.
std::vector<std::size_t> codes_shape(const std::vector<std::size_t>& shape, const Options& opt);
// The state array's shape for an input of `shape` (nvfp4: the shape with its last dimension / 16;
// otherwise {group_count}).
std::vector<std::size_t> state_shape(const Scheme& s, const std::vector<std::size_t>& shape);
// NVFP4's shape rule: a last dimension divisible by 16 (InputError otherwise; no-op for other
// schemes).
void check_shape(const Options& opt, const std::vector<std::size_t>& shape);
// Codes of a format narrower than 8 bits must fit it (InputError naming the first that does not);
// the CPU and GPU dequantizers both check.
void check_codes(const std::vector<std::uint8_t>& codes, const Options& opt);
// rows/cols of the matrix view of a shape.
void matrix_view(const std::vector<std::size_t>& shape, std::size_t& rows, std::size_t& cols);

// Quantize x (fp32 values or 16-bit codes widened exactly, row-major, `shape`). InputError on bad
// combinations (e.g. transpose of a non-2-d tensor, mx with an int8 or codebook target, codebook
// with a non-block scheme). x is read only (the CLI passes a read-only mapping of the input file:
// no copy of a large input, fp32 or 16-bit).
// pack_codes: the codes two per byte as they are computed (sim/native/pack4.hpp's order; codes of
// formats of at most 4 bits), Quantized::packed set: the bytes native::pack4 makes of the
// unpacked codes, without the unpacked buffer (`exmy quantize --pack`, issue 36).
Quantized quantize(const Values& x, const std::vector<std::size_t>& shape, const Options& opt,
                   bool pack_codes = false);
inline Quantized quantize(const std::vector<float>& x, const std::vector<std::size_t>& shape,
                          const Options& opt) {
  return quantize(Values(x), shape, opt);
}

// quantize() and dequantize() of an input read a block of rows at a time, one element where it
// is needed (the layer's operands, read from mapped files: issue 36's memory bound, SEMANTICS
// 11.0): the same checks, group maxima, plan and states as quantize(), so that every code, state
// and value is quantize()'s and dequantize()'s. Add every row in order (add_rows), then finish();
// then code() and value() of any element (r, c) of the rows x cols input.
class PieceQuantizer {
 public:
  PieceQuantizer(const Options& opt, std::size_t rows, std::size_t cols);
  // Rows [r0, r1) of the input, (r1 - r0) x cols fp32 values, row-major; r0 continues the last.
  void add_rows(std::size_t r0, std::size_t r1, const float* x);
  void finish();
  // The code of input element (r, c) of value x (Quantized::codes at r cols + c, or its
  // transposed place).
  std::uint8_t code(std::size_t r, std::size_t c, float x) const {
    const std::uint32_t word =
        sr_ ? native::philox_word(opt_.seed, plan_.stream(), r * cols_ + c) : 0u;
    return static_cast<std::uint8_t>(
        native::quant_element(plan_, x, state_[group(r, c)], word).code);
  }
  // dequantize()'s value of element (r, c) with code `code`.
  float value(std::size_t r, std::size_t c, std::uint8_t code) const {
    const std::size_t g = group(r, c);
    const std::uint32_t st =
        dplan_.byte_scales() ? (state_[g] & 0xFFu) : native::bits_of(stored_[g]);
    return native::dequant_element(dplan_, code, st);
  }
  // Quantized::state (empty for byte scales), one per group.
  const std::vector<float>& state() const { return stored_; }

 private:
  std::size_t group(std::size_t r, std::size_t c) const;
  Options opt_;
  std::size_t rows_ = 0, cols_ = 0, next_ = 0;
  native::GroupShape groups_ = native::GroupShape::tensor;
  native::NanPolicy amax_nan_ = native::NanPolicy::propagate;
  bool sr_ = false;
  std::vector<float> amax_, stored_;
  std::vector<std::uint32_t> state_;
  native::QuantPlan plan_, dplan_;
};

// Dequantize to fp32 in the *input* layout (a transposed quantization is transposed back).
// `q.shape` must be the codes' shape as quantize produced it.
std::vector<float> dequantize(const Quantized& q, const Options& opt);

// Codes read in place: one byte per element, or two per byte in sim/native/pack4.hpp's order
// (--pack), e.g. a mapped .npy file (no copy, no unpacked copy: issue 36's memory bound).
struct Codes {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;  // elements
  bool packed = false;
  std::uint8_t operator[](std::size_t i) const {
    return packed ? native::unpack4_at(data, i) : data[i];
  }
};
inline Codes codes_of(const std::vector<std::uint8_t>& c) {
  return {c.data(), c.size(), false};
}
// check_codes of codes read in place.
void check_codes(const Codes& codes, const Options& opt);

// dequantize() a piece at a time: the constructor makes dequantize()'s checks, in its order, and
// its plan, for q's shape, state, scale codes and tensor scale (q.codes is not read: the codes are
// `codes`; q and the codes must outlive this object); values(i0, i1, out) writes the input-layout
// elements [i0, i1) of dequantize()'s result into out.
class Dequantizer {
 public:
  Dequantizer(const Quantized& q, Codes codes, const Options& opt);
  std::size_t size() const { return rows_ * cols_; }
  void values(std::size_t i0, std::size_t i1, float* out) const;

 private:
  const Quantized& q_;
  Codes codes_;
  Options opt_;
  std::size_t rows_ = 0, cols_ = 0;
  native::QuantPlan plan_;
};

}  // namespace exmy::quant
