// Tensor quantization and dequantization, the CPU reference (docs/SEMANTICS.md 7). The loops
// here only decide groups, states and layout; each element goes through the native:: functions
// the CUDA kernels use.
#include "sim/quant/quantize.hpp"

#include <string>

#include "sim/common/error.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_plan.hpp"
#include "sim/sfu/sfu_tables.hpp"

namespace exmy::quant {

void matrix_view(const std::vector<std::size_t>& shape, std::size_t& rows, std::size_t& cols) {
  if (shape.empty()) {
    rows = cols = 1;
    return;
  }
  cols = shape.back();
  rows = 1;
  for (std::size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
}

std::size_t group_count(const Scheme& s, std::size_t rows, std::size_t cols) {
  switch (s.kind) {
    case Granularity::tensor:
      return 1;
    case Granularity::row:
      return rows;
    case Granularity::col:
      return cols;
    case Granularity::block:
    case Granularity::mx:
    case Granularity::nvfp4:
      return (rows * cols + s.block - 1) / s.block;
    case Granularity::tile:
      return ((rows + s.tile_rows - 1) / s.tile_rows) * ((cols + s.tile_cols - 1) / s.tile_cols);
  }
  return 0;
}

std::size_t group_of(const Scheme& s, std::size_t /*rows*/, std::size_t cols, std::size_t r,
                     std::size_t c) {
  switch (s.kind) {
    case Granularity::tensor:
      return 0;
    case Granularity::row:
      return r;
    case Granularity::col:
      return c;
    case Granularity::block:
    case Granularity::mx:
    case Granularity::nvfp4:
      return (r * cols + c) / s.block;
    case Granularity::tile:
      return (r / s.tile_rows) * ((cols + s.tile_cols - 1) / s.tile_cols) + c / s.tile_cols;
  }
  return 0;
}

namespace {
bool is_float(const Target& t) {
  return t.kind == FormatKind::floating;
}

// The MX element formats of OCP MX v1.0 (and torchao's to_mx).
bool mx_element_format(const FloatFormat& f) {
  return f == formats::e4m3fn || f == formats::e5m2 || f == formats::e2m3fn ||
         f == formats::e3m2fn || f == formats::e2m1fn;
}

bool given(float v) {
  return v == v;
}

// The library rules of block:RxC (7.15): their targets, scale forms, rounding and NaN rule are the
// library's own, so the switches that would change them are refused rather than ignored.
bool block_rule(native::CastVariant v) {
  return v == native::CastVariant::deepgemm || v == native::CastVariant::te ||
         v == native::CastVariant::torchao;
}

std::string variant_name(native::CastVariant v) {
  for (const char* n : kVariantNames) {
    if (parse_variant(n) == v) return n;
  }
  return "?";
}

void validate_tile_options(const Options& opt) {
  using native::BlockScaleFormat;
  using native::CastVariant;
  const CastVariant v = opt.variant;
  const std::string name = "scheme " + scheme_name(opt.scheme);
  if (opt.transpose) throw InputError(name + ": --transpose does not apply");
  if (v == CastVariant::ocp) throw InputError("--variant ocp: expected --scheme mx");
  if (!is_float(opt.target) && v != CastVariant::absmax) {
    throw InputError(name + " --variant " + variant_name(v) + ": expected a float target format");
  }
  const BlockScaleFormat sf = opt.scale_format;
  if (!block_rule(v)) {
    if (sf != BlockScaleFormat::fp32) {
      throw InputError(name + ": --scale-format pow2/ue8m0 expected --variant deepgemm or te");
    }
    return;
  }
  const std::string vn = name + " --variant " + variant_name(v);
  const FloatFormat& f = opt.target.fp;
  const bool e4m3 = f == formats::e4m3fn;
  if (v == CastVariant::te ? !(e4m3 || f == formats::e5m2) : !e4m3) {
    throw InputError(vn + ": expected --to e4m3fn" + (v == CastVariant::te ? " or e5m2" : "") +
                     ", got '" + opt.target.name + "'");
  }
  if ((v == CastVariant::deepgemm && sf == BlockScaleFormat::pow2) ||
      (v == CastVariant::te && sf == BlockScaleFormat::ue8m0) ||
      (v == CastVariant::torchao && sf != BlockScaleFormat::fp32)) {
    throw InputError(vn + ": --scale-format expected " +
                     (v == CastVariant::deepgemm ? "fp32 or ue8m0"
                      : v == CastVariant::te     ? "fp32 or pow2"
                                                 : "fp32"));
  }
  if (opt.mode != RoundMode::rne) {
    throw InputError(vn + ": the library casts round to nearest even; --round does not apply");
  }
  if (opt.nan != native::NanPolicy::propagate) {
    throw InputError(vn + ": the library's NaN rule applies; --nan does not");
  }
  if (given(opt.given_scale)) throw InputError(vn + ": --scale does not apply");
  if (opt.pow2_scale) throw InputError(vn + ": use --scale-format pow2, not --pow2-scale");
  if (v != CastVariant::te && opt.te_amax_epsilon != 0.0f) {
    throw InputError(vn + ": --amax-epsilon expected --variant te");
  }
}

// The largest finite value of the source dtype (TE's torch.finfo(x.dtype).max).
float source_max(native::Storage s) {
  switch (s) {
    case native::Storage::bf16:
      return native::float_of(0x7F7F0000u);
    case native::Storage::f16:
      return 65504.0f;
    case native::Storage::f32:
      break;
  }
  return native::float_of(0x7F7FFFFFu);
}
}  // namespace

void validate_options(const Options& opt) {
  using native::CastVariant;
  const Granularity k = opt.scheme.kind;
  const CastVariant v = opt.variant;
  if (k == Granularity::mx) {
    if (!is_float(opt.target)) {
      throw InputError("scheme mx: expected a float element format (e4m3fn, e5m2, e2m1fn, ...)");
    }
    if (v != CastVariant::absmax && v != CastVariant::ocp && v != CastVariant::torchao) {
      throw InputError("scheme mx: --variant expected ocp or torchao");
    }
    if (v == CastVariant::torchao && !mx_element_format(opt.target.fp)) {
      throw InputError(
          "scheme mx --variant torchao: expected an element format of torchao's "
          "to_mx (e4m3fn, e5m2, e2m3fn, e3m2fn, e2m1fn), got '" +
          opt.target.name + "'");
    }
  } else if (k == Granularity::nvfp4) {
    if (!(is_float(opt.target) && opt.target.fp == formats::e2m1fn)) {
      throw InputError("scheme nvfp4: expected --to e2m1fn, got '" + opt.target.name + "'");
    }
    if (v != CastVariant::absmax && v != CastVariant::torchao && v != CastVariant::te) {
      throw InputError("scheme nvfp4: --variant expected torchao or te");
    }
    if (opt.mode != RoundMode::rne) {
      throw InputError(
          "scheme nvfp4: its element cast rounds to nearest even; --round does not "
          "apply");
    }
    if (opt.transpose) throw InputError("scheme nvfp4: --transpose does not apply");
    if (v == CastVariant::te && !opt.two_level) {
      throw InputError(
          "scheme nvfp4 --variant te: TransformerEngine's NVFP4 always has a "
          "per-tensor scale; add --two-level");
    }
  } else if (k == Granularity::tile) {
    validate_tile_options(opt);
  } else {
    if (v == CastVariant::ocp) throw InputError("--variant ocp: expected --scheme mx");
    if (v == CastVariant::deepgemm) {
      throw InputError("--variant deepgemm: expected --scheme block:RxC (block:1x128, ...)");
    }
    if (!is_float(opt.target) && v != CastVariant::absmax) {
      throw InputError("--variant te/te-current/torchao: expected a float target format");
    }
  }
  if (k != Granularity::tile && opt.scale_format != native::BlockScaleFormat::fp32) {
    throw InputError("--scale-format: expected --scheme block:RxC");
  }
  if (k != Granularity::mx && opt.scale_mode != native::MxScaleMode::floor) {
    throw InputError("--scale-mode: expected --scheme mx");
  }
  if (k == Granularity::mx && opt.mode != RoundMode::rne && v == CastVariant::torchao) {
    throw InputError(
        "scheme mx --variant torchao: torch's element casts round to nearest even; "
        "--round does not apply");
  }
  const bool level_given = given(opt.tensor_amax) || given(opt.tensor_scale);
  if (k != Granularity::nvfp4 && (opt.two_level || level_given)) {
    throw InputError("--two-level / --tensor-amax / --tensor-scale: expected --scheme nvfp4");
  }
  if (level_given && !opt.two_level) {
    throw InputError("--tensor-amax / --tensor-scale: expected --two-level");
  }
  if (given(opt.tensor_amax) && given(opt.tensor_scale)) {
    throw InputError("--tensor-amax and --tensor-scale: give one of them");
  }
  if (given(opt.tensor_amax) && !(opt.tensor_amax > 0.0f && native::is_finite32(opt.tensor_amax))) {
    throw InputError("--tensor-amax: expected a finite value > 0");
  }
  if (given(opt.tensor_scale)) {
    if (!(opt.tensor_scale > 0.0f && native::is_finite32(opt.tensor_scale))) {
      throw InputError("--tensor-scale: expected a finite value > 0");
    }
    if (v == CastVariant::te) {
      throw InputError(
          "--tensor-scale: TransformerEngine's reference takes the tensor amax; use "
          "--tensor-amax with --variant te");
    }
  }
  if (opt.mode == RoundMode::sr && (opt.sr_bits < 1 || opt.sr_bits > 32)) {
    throw InputError("rounding sr:R: expected R in 1..32");
  }
}

native::Nvfp4Tensor nvfp4_tensor_level(const Options& opt, float tensor_amax) {
  if (!opt.two_level) return {};
  const float amax = given(opt.tensor_amax) ? opt.tensor_amax : tensor_amax;
  if (opt.variant == native::CastVariant::te) return native::nvfp4_te_tensor(amax);
  native::Nvfp4Tensor t;
  t.two_level = true;
  t.per_tensor_scale =
      given(opt.tensor_scale) ? opt.tensor_scale : native::nvfp4_torchao_tensor_scale(amax);
  return t;
}

float nvfp4_stored_scale(const Options& opt, const native::Nvfp4Tensor& t) {
  return opt.variant == native::CastVariant::te ? t.global_decode : t.per_tensor_scale;
}

native::Nvfp4Tensor nvfp4_tensor_from_scale(const Options& opt, float tensor_scale) {
  native::Nvfp4Tensor t;
  if (!opt.two_level) return t;
  t.two_level = true;
  if (opt.variant == native::CastVariant::te) {
    t.global_decode = tensor_scale;  // dequantization reads only the decode side
  } else {
    t.per_tensor_scale = tensor_scale;
  }
  return t;
}

native::QuantPlan make_plan(const Options& opt, const native::Nvfp4Tensor& tensor) {
  using native::CastVariant;
  using native::ScaleRule;
  native::QuantPlan p;
  const Scheme& s = opt.scheme;
  switch (s.kind) {
    case Granularity::tensor:
      p.groups = native::GroupShape::tensor;
      break;
    case Granularity::row:
      p.groups = native::GroupShape::row;
      break;
    case Granularity::col:
      p.groups = native::GroupShape::col;
      break;
    case Granularity::block:
    case Granularity::mx:
    case Granularity::nvfp4:
      p.groups = native::GroupShape::block;
      break;
    case Granularity::tile:
      p.groups = native::GroupShape::tile;
      break;
  }
  p.block = static_cast<std::uint32_t>(s.block);
  p.tile_rows = static_cast<std::uint32_t>(s.tile_rows);
  p.tile_cols = static_cast<std::uint32_t>(s.tile_cols);
  const Target& t = opt.target;
  switch (t.kind) {
    case FormatKind::integer:
      p.element = native::ElementKind::int8;
      break;
    case FormatKind::floating:
      p.element = native::ElementKind::float_format;
      p.fmt = t.fp;
      p.fmax = native::format_max32(t.fp);
      break;
    case FormatKind::codebook:
      p.element = native::ElementKind::codebook;
      for (int k = 0; k < 256; ++k) p.codebook[k] = t.cb->values[k];
      break;
  }
  if (s.kind == Granularity::mx) {
    p.rule = opt.variant == CastVariant::torchao ? ScaleRule::mx_torchao : ScaleRule::mx;
  } else if (s.kind == Granularity::nvfp4) {
    p.rule = opt.variant == CastVariant::te ? ScaleRule::nvfp4_te : ScaleRule::nvfp4_torchao;
  } else if (s.kind == Granularity::tile && block_rule(opt.variant)) {
    p.rule = opt.variant == CastVariant::deepgemm ? ScaleRule::block_deepgemm
             : opt.variant == CastVariant::te     ? ScaleRule::block_te
                                                  : ScaleRule::block_torchao;
  } else if (t.kind == FormatKind::floating) {
    switch (opt.variant) {
      case CastVariant::te:
        p.rule = ScaleRule::te;
        break;
      case CastVariant::te_current:
        p.rule = ScaleRule::te_current;
        break;
      case CastVariant::torchao:
        p.rule = ScaleRule::torchao;
        break;
      default:
        p.rule = ScaleRule::absmax;
        break;
    }
  } else {
    p.rule = ScaleRule::absmax;
  }
  p.mx_mode = opt.scale_mode;
  p.order = opt.order;
  p.nan = opt.nan;
  p.te_margin = opt.te_margin;
  p.te_prev_scale = opt.te_prev_scale;
  p.torchao_fp16_source = opt.torchao_fp16_source;
  p.pow2_scale = opt.pow2_scale;
  p.te_amax_epsilon = opt.te_amax_epsilon;
  p.given = given(opt.given_scale) && !p.byte_scales() && p.rule != ScaleRule::absmax;
  p.given_scale = opt.given_scale;
  p.tensor = tensor;
  p.block_scale = opt.scale_format;
  p.source_max = source_max(opt.source);
  if (p.rule == ScaleRule::block_te) p.block_eps = opt.te_amax_epsilon;
  if (p.rule == ScaleRule::block_torchao) {
    p.block_eps = native::torchao_block_eps(opt.source == native::Storage::f16);
    p.nan = native::NanPolicy::ignore;  // Triton's max.f32 reductions skip NaN
  }
  p.mode = opt.mode;
  p.sr_bits = opt.sr_bits;
  p.seed = opt.seed;
  p.norm = opt.norm;
  if (p.norm == native::NormOrder::bnb_cuda || p.order == native::ScaleOrder::div_full_mul ||
      p.order == native::ScaleOrder::fdividef_mul) {
    p.sfu = sfu::sm90_rcp_view();  // rcp.approx on the host (device code issues the instruction)
  }
  p.tie = opt.tie;
  return p;
}

namespace {

std::vector<float> group_absmax(std::span<const float> x, const Scheme& s, std::size_t rows,
                                std::size_t cols, native::NanPolicy nan) {
  std::vector<float> amax(group_count(s, rows, cols), native::kAbsmaxInit);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      float& a = amax[group_of(s, rows, cols, r, c)];
      a = native::absmax_combine(a, x[r * cols + c], nan);
    }
  }
  return amax;
}

}  // namespace

std::vector<std::size_t> state_shape(const Scheme& s, const std::vector<std::size_t>& shape) {
  if (s.kind == Granularity::nvfp4) {
    std::vector<std::size_t> st = shape.empty() ? std::vector<std::size_t>{1} : shape;
    st.back() /= s.block;
    return st;
  }
  std::size_t rows, cols;
  matrix_view(shape, rows, cols);
  if (s.kind == Granularity::tile) {
    return {(rows + s.tile_rows - 1) / s.tile_rows, (cols + s.tile_cols - 1) / s.tile_cols};
  }
  return {group_count(s, rows, cols)};
}

void check_codes(const std::vector<std::uint8_t>& codes, const Options& opt) {
  if (opt.target.kind != FormatKind::floating || opt.target.fp.total_bits() >= 8) return;
  const std::uint32_t limit = 1u << opt.target.fp.total_bits();
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] >= limit) {
      throw InputError("codes: element " + std::to_string(i) + " holds " +
                       std::to_string(codes[i]) + ", expected a code of " +
                       std::to_string(opt.target.fp.total_bits()) + " bits (< " +
                       std::to_string(limit) + ")");
    }
  }
}

void check_shape(const Options& opt, const std::vector<std::size_t>& shape) {
  if (opt.scheme.kind == Granularity::tile) {
    const std::string name = "scheme " + scheme_name(opt.scheme);
    if (shape.size() != 2) {
      throw InputError(name + ": expected a 2-d input (rows, cols), got " +
                       std::to_string(shape.size()) + " dimensions");
    }
    // torchao's kernels assert whole tiles (K % block_size; M and N % block_size for weights).
    if (opt.variant == native::CastVariant::torchao &&
        (shape[0] % opt.scheme.tile_rows != 0 || shape[1] % opt.scheme.tile_cols != 0)) {
      throw InputError(name + " --variant torchao: expected rows divisible by " +
                       std::to_string(opt.scheme.tile_rows) + " and cols by " +
                       std::to_string(opt.scheme.tile_cols) +
                       " (torchao refuses partial tiles), got " + std::to_string(shape[0]) + "x" +
                       std::to_string(shape[1]));
    }
    return;
  }
  if (opt.scheme.kind != Granularity::nvfp4) return;
  const std::size_t last = shape.empty() ? 1 : shape.back();
  if (last % opt.scheme.block != 0) {
    throw InputError("scheme nvfp4: expected a last dimension divisible by 16, got " +
                     std::to_string(last));
  }
}

std::vector<std::size_t> codes_shape(const std::vector<std::size_t>& shape, const Options& opt) {
  if (!opt.transpose) return shape;
  if (shape.size() != 2) {
    throw InputError("--transpose: expected a 2-d tensor, got " + std::to_string(shape.size()) +
                     " dimensions");
  }
  return {shape[1], shape[0]};
}

Quantized quantize(std::span<const float> x, const std::vector<std::size_t>& shape,
                   const Options& opt) {
  const std::vector<std::size_t> out_shape = codes_shape(shape, opt);
  validate_options(opt);
  check_shape(opt, shape);
  std::size_t rows, cols;
  matrix_view(shape, rows, cols);
  if (rows * cols != x.size()) {
    throw InputError("input: shape has " + std::to_string(rows * cols) + " elements but " +
                     std::to_string(x.size()) + " values were given");
  }
  const Scheme& s = opt.scheme;
  // The plan's NaN rule (a library rule may fix it, as torchao's tiles do).
  std::vector<float> amax = group_absmax(x, s, rows, cols, make_plan(opt).nan);
  // The NVFP4 tensor level: the absmax of the whole tensor is the max over its groups' absmax
  // (absmax_combine is associative and commutative).
  float tensor_amax = native::kAbsmaxInit;
  for (const float a : amax) tensor_amax = native::absmax_combine(tensor_amax, a, opt.nan);
  const native::Nvfp4Tensor level = nvfp4_tensor_level(opt, tensor_amax);
  const native::QuantPlan plan = make_plan(opt, level);

  Quantized q;
  q.shape = out_shape;
  q.state_shape = state_shape(s, shape);
  q.tensor_scale = nvfp4_stored_scale(opt, level);
  std::vector<std::uint32_t> state(amax.size());
  for (std::size_t g = 0; g < amax.size(); ++g) state[g] = native::group_state(plan, amax[g]);
  // The group maxima are done with: released before the codes are allocated, so that peak
  // memory stays within the CLI's bound (docs/SEMANTICS.md 11.0; NVFP4 has a group per 16).
  std::vector<float>().swap(amax);
  q.codes.assign(x.size(), 0);
  if (plan.byte_scales()) {
    q.scale_codes.assign(state.begin(), state.end());
  } else {
    q.state.resize(state.size());
    for (std::size_t g = 0; g < state.size(); ++g)
      q.state[g] = native::stored_state(plan, state[g]);
  }

  const bool sr = opt.mode == RoundMode::sr;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      const std::uint32_t word = sr ? native::philox_word(opt.seed, plan.stream(), i) : 0u;
      const Encoded e =
          native::quant_element(plan, x[i], state[group_of(s, rows, cols, r, c)], word);
      q.flags |= e.flags;
      q.codes[opt.transpose ? c * rows + r : i] = static_cast<std::uint8_t>(e.code);
    }
  }
  return q;
}

std::vector<float> dequantize(const Quantized& q, const Options& opt) {
  validate_options(opt);
  const Scheme& s = opt.scheme;
  // The input layout: undo the transpose of the codes' shape.
  std::vector<std::size_t> in_shape = q.shape;
  if (opt.transpose) {
    if (q.shape.size() != 2) throw InputError("--transpose: expected 2-d codes");
    in_shape = {q.shape[1], q.shape[0]};
  }
  check_shape(opt, in_shape);
  std::size_t rows, cols;
  matrix_view(in_shape, rows, cols);
  if (q.codes.size() != rows * cols) {
    throw InputError("codes: shape has " + std::to_string(rows * cols) + " elements but " +
                     std::to_string(q.codes.size()) + " codes were given");
  }
  const native::QuantPlan plan = make_plan(opt, nvfp4_tensor_from_scale(opt, q.tensor_scale));
  const std::size_t groups = group_count(s, rows, cols);
  const std::size_t have = plan.byte_scales() ? q.scale_codes.size() : q.state.size();
  if (have != groups) {
    throw InputError("state: scheme " + scheme_name(s) + " on " + std::to_string(rows) + "x" +
                     std::to_string(cols) + " expects " + std::to_string(groups) +
                     " entries, got " + std::to_string(have));
  }
  check_codes(q.codes, opt);
  std::vector<float> out(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      const std::size_t g = group_of(s, rows, cols, r, c);
      const std::uint32_t st = plan.byte_scales() ? q.scale_codes[g] : native::bits_of(q.state[g]);
      out[i] = native::dequant_element(plan, q.codes[opt.transpose ? c * rows + r : i], st);
    }
  }
  return out;
}

}  // namespace exmy::quant
