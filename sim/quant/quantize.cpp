// Tensor quantization and dequantization, the CPU reference (docs/SEMANTICS.md 7). The loops
// here only decide groups, states and layout; each element goes through the native:: functions
// the CUDA kernels use.
#include "sim/quant/quantize.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/common/error.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_plan.hpp"
#include "sim/quant/element_runs.hpp"
#include "sim/quant/scheme_registry.hpp"
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

// The group geometry is the registry entry's (tensor, row, col, 1-d blocks, 2-d tiles); the sizes
// are the Scheme's.
std::size_t group_count(const Scheme& s, std::size_t rows, std::size_t cols) {
  switch (scheme_entry(s).groups) {
    case native::GroupShape::tensor:
      return 1;
    case native::GroupShape::row:
      return rows;
    case native::GroupShape::col:
      return cols;
    case native::GroupShape::block:
      return (rows * cols + s.block - 1) / s.block;
    case native::GroupShape::tile:
      return ((rows + s.tile_rows - 1) / s.tile_rows) * ((cols + s.tile_cols - 1) / s.tile_cols);
  }
  return 0;
}

namespace {
// The group of element (r, c) under a geometry (the loops hoist the registry lookup).
inline std::size_t group_index(native::GroupShape g, const Scheme& s, std::size_t cols,
                               std::size_t r, std::size_t c) {
  switch (g) {
    case native::GroupShape::tensor:
      return 0;
    case native::GroupShape::row:
      return r;
    case native::GroupShape::col:
      return c;
    case native::GroupShape::block:
      return (r * cols + c) / s.block;
    case native::GroupShape::tile:
      return (r / s.tile_rows) * ((cols + s.tile_cols - 1) / s.tile_cols) + c / s.tile_cols;
  }
  return 0;
}
}  // namespace

std::size_t group_of(const Scheme& s, std::size_t /*rows*/, std::size_t cols, std::size_t r,
                     std::size_t c) {
  return group_index(scheme_entry(s).groups, s, cols, r, c);
}

namespace {

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

// The names of the schemes whose entry accepts a switch ("block:RxC", "nvfp4 or ...").
template <typename Accepts>
std::string schemes_accepting(Accepts accepts) {
  std::vector<const char*> names;
  for (const SchemeEntry& e : schemes()) {
    if (accepts(e)) names.push_back(e.grammar);
  }
  std::string out;
  for (std::size_t k = 0; k < names.size(); ++k) {
    out += (k == 0 ? "" : k + 1 == names.size() ? " or " : ", ") + std::string(names[k]);
  }
  return out;
}
}  // namespace

void validate_options(const Options& opt) {
  using native::CastVariant;
  const SchemeEntry& e = scheme_entry(opt.scheme);
  const CastVariant v = opt.variant;
  e.validate(opt);
  if (!e.scale_format && opt.scale_format != native::BlockScaleFormat::fp32) {
    throw InputError("--scale-format: expected --scheme " +
                     schemes_accepting([](const SchemeEntry& x) { return x.scale_format; }));
  }
  if (!e.scale_mode && opt.scale_mode != native::MxScaleMode::floor) {
    throw InputError("--scale-mode: expected --scheme " +
                     schemes_accepting([](const SchemeEntry& x) { return x.scale_mode; }));
  }
  const bool level_given = option_given(opt.tensor_amax) || option_given(opt.tensor_scale);
  if (!e.two_level && (opt.two_level || level_given)) {
    throw InputError("--two-level / --tensor-amax / --tensor-scale: expected --scheme " +
                     schemes_accepting([](const SchemeEntry& x) { return x.two_level; }));
  }
  if (level_given && !opt.two_level) {
    throw InputError("--tensor-amax / --tensor-scale: expected --two-level");
  }
  if (option_given(opt.tensor_amax) && option_given(opt.tensor_scale)) {
    throw InputError("--tensor-amax and --tensor-scale: give one of them");
  }
  if (option_given(opt.tensor_amax) &&
      !(opt.tensor_amax > 0.0f && native::is_finite32(opt.tensor_amax))) {
    throw InputError("--tensor-amax: expected a finite value > 0");
  }
  if (option_given(opt.tensor_scale)) {
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
  const float amax = option_given(opt.tensor_amax) ? opt.tensor_amax : tensor_amax;
  if (opt.variant == native::CastVariant::te) return native::nvfp4_te_tensor(amax);
  native::Nvfp4Tensor t;
  t.two_level = true;
  t.per_tensor_scale =
      option_given(opt.tensor_scale) ? opt.tensor_scale : native::nvfp4_torchao_tensor_scale(amax);
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
  const SchemeEntry& e = scheme_entry(s);
  p.groups = e.groups;
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
  p.rule = e.rule(opt);
  p.mx_mode = opt.scale_mode;
  p.order = opt.order;
  p.nan = opt.nan;
  p.te_margin = opt.te_margin;
  p.te_prev_scale = opt.te_prev_scale;
  p.torchao_fp16_source = opt.torchao_fp16_source;
  p.pow2_scale = opt.pow2_scale;
  p.te_amax_epsilon = opt.te_amax_epsilon;
  p.given = option_given(opt.given_scale) && !p.byte_scales() && p.rule != ScaleRule::absmax;
  p.given_scale = opt.given_scale;
  p.tensor = tensor;
  p.block_scale = opt.scale_format;
  p.source_max = source_max(opt.source);
  if (p.rule == ScaleRule::block_te) p.block_eps = opt.te_amax_epsilon;
  // TransformerEngine's MXFP8 amax (fmaxf / __hmax from 0) skips NaN elements.
  if (p.rule == ScaleRule::mx_te) p.nan = native::NanPolicy::ignore;
  if (p.rule == ScaleRule::block_torchao) {
    p.block_eps = native::torchao_block_eps();
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

std::vector<float> group_absmax(const Values& x, const Scheme& s, std::size_t rows,
                                std::size_t cols, native::NanPolicy nan) {
  std::vector<float> amax(group_count(s, rows, cols), native::kAbsmaxInit);
  const native::GroupShape shape = scheme_entry(s).groups;
  if (cols != 0 && runs::covers(shape)) {
    // Each group's elements folded in the same (row-major) order, its running max in a register.
    runs::for_each_run(shape, s, cols, 0, rows * cols,
                       [&](std::size_t i0, std::size_t i1, std::size_t g) {
                         float a = amax[g];
                         for (std::size_t i = i0; i < i1; ++i)
                           a = native::absmax_combine(a, x[i], nan);
                         amax[g] = a;
                       });
    return amax;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      float& a = amax[group_index(shape, s, cols, r, c)];
      a = native::absmax_combine(a, x[r * cols + c], nan);
    }
  }
  return amax;
}

// The plan and the state words of a quantization from its group maxima (quantize() and
// PieceQuantizer).
void states_of(const Options& opt, const std::vector<float>& amax, native::Nvfp4Tensor& level,
               native::QuantPlan& plan, std::vector<std::uint32_t>& state) {
  // The NVFP4 tensor level: the absmax of the whole tensor is the max over its groups' absmax
  // (absmax_combine is associative and commutative).
  float tensor_amax = native::kAbsmaxInit;
  for (const float a : amax) tensor_amax = native::absmax_combine(tensor_amax, a, opt.nan);
  level = nvfp4_tensor_level(opt, tensor_amax);
  plan = make_plan(opt, level);
  state.resize(amax.size());
  for (std::size_t g = 0; g < amax.size(); ++g) state[g] = native::group_state(plan, amax[g]);
}

}  // namespace

std::vector<std::size_t> state_shape(const Scheme& s, const std::vector<std::size_t>& shape) {
  return scheme_entry(s).state_shape(s, shape);
}

void check_codes(const std::vector<std::uint8_t>& codes, const Options& opt) {
  check_codes(codes_of(codes), opt);
}

void check_codes(const Codes& codes, const Options& opt) {
  if (opt.target.kind != FormatKind::floating || opt.target.fp.total_bits() >= 8) return;
  const std::uint32_t limit = 1u << opt.target.fp.total_bits();
  for (std::size_t i = 0; i < codes.size; ++i) {
    if (codes[i] >= limit) {
      throw InputError("codes: element " + std::to_string(i) + " holds " +
                       std::to_string(codes[i]) + ", expected a code of " +
                       std::to_string(opt.target.fp.total_bits()) + " bits (< " +
                       std::to_string(limit) + ")");
    }
  }
}

void check_shape(const Options& opt, const std::vector<std::size_t>& shape) {
  const SchemeEntry& e = scheme_entry(opt.scheme);
  if (e.check_shape != nullptr) e.check_shape(opt, shape);
}

std::vector<std::size_t> codes_shape(const std::vector<std::size_t>& shape, const Options& opt) {
  if (!opt.transpose) return shape;
  if (shape.size() != 2) {
    throw InputError("--transpose: expected a 2-d tensor, got " + std::to_string(shape.size()) +
                     " dimensions");
  }
  return {shape[1], shape[0]};
}

Quantized quantize(const Values& x, const std::vector<std::size_t>& shape, const Options& opt,
                   bool pack_codes) {
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
  native::Nvfp4Tensor level;
  native::QuantPlan plan;
  std::vector<std::uint32_t> state;
  states_of(opt, amax, level, plan, state);

  Quantized q;
  q.shape = out_shape;
  q.state_shape = state_shape(s, shape);
  q.tensor_scale = nvfp4_stored_scale(opt, level);
  // The group maxima are done with: released before the codes are allocated, so that peak
  // memory stays within the CLI's bound (docs/SEMANTICS.md 11.0; NVFP4 has a group per 16).
  std::vector<float>().swap(amax);
  q.packed = pack_codes;
  q.codes.assign(pack_codes ? native::packed4_bytes(x.size()) : x.size(), 0);
  if (plan.byte_scales()) {
    q.scale_codes.assign(state.begin(), state.end());
  } else {
    q.state.resize(state.size());
    for (std::size_t g = 0; g < state.size(); ++g)
      q.state[g] = native::stored_state(plan, state[g]);
  }

  if (!pack_codes && !opt.transpose && runs::covers(plan.groups)) {
    q.flags = runs::encode(plan, s, cols, x, state, q.codes.data());
    return q;
  }
  const bool sr = opt.mode == RoundMode::sr;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      const std::uint32_t word = sr ? native::philox_word(opt.seed, plan.stream(), i) : 0u;
      const Encoded e =
          native::quant_element(plan, x[i], state[group_index(plan.groups, s, cols, r, c)], word);
      q.flags |= e.flags;
      const std::size_t at = opt.transpose ? c * rows + r : i;
      if (pack_codes) {  // native::pack4_pair's nibbles: element 2j low, 2j + 1 high
        std::uint8_t& b = q.codes[at / 2];
        b = static_cast<std::uint8_t>(at % 2 == 0 ? (b & 0xF0u) | (e.code & 0x0Fu)
                                                  : (b & 0x0Fu) | ((e.code & 0x0Fu) << 4));
      } else {
        q.codes[at] = static_cast<std::uint8_t>(e.code);
      }
    }
  }
  return q;
}

PieceQuantizer::PieceQuantizer(const Options& opt, std::size_t rows, std::size_t cols)
    : opt_(opt), rows_(rows), cols_(cols) {
  // quantize()'s checks, in its order, for a 2-d input of rows x cols.
  const std::vector<std::size_t> shape{rows, cols};
  (void)codes_shape(shape, opt);
  validate_options(opt);
  check_shape(opt, shape);
  groups_ = scheme_entry(opt.scheme).groups;
  amax_nan_ = make_plan(opt).nan;
  sr_ = opt.mode == RoundMode::sr;
  amax_.assign(group_count(opt.scheme, rows, cols), native::kAbsmaxInit);
}

std::size_t PieceQuantizer::group(std::size_t r, std::size_t c) const {
  return group_index(groups_, opt_.scheme, cols_, r, c);
}

void PieceQuantizer::add_rows(std::size_t r0, std::size_t r1, const float* x) {
  if (r0 != next_ || r1 < r0 || r1 > rows_) {
    throw std::logic_error("PieceQuantizer: rows added out of order");
  }
  // group_absmax's fold, element by element in the same order.
  for (std::size_t r = r0; r < r1; ++r) {
    for (std::size_t c = 0; c < cols_; ++c) {
      float& a = amax_[group(r, c)];
      a = native::absmax_combine(a, x[(r - r0) * cols_ + c], amax_nan_);
    }
  }
  next_ = r1;
}

void PieceQuantizer::finish() {
  if (next_ != rows_) throw std::logic_error("PieceQuantizer: finish() before the last row");
  native::Nvfp4Tensor level;
  states_of(opt_, amax_, level, plan_, state_);
  std::vector<float>().swap(amax_);
  if (!plan_.byte_scales()) {
    stored_.resize(state_.size());
    for (std::size_t g = 0; g < state_.size(); ++g) {
      stored_[g] = native::stored_state(plan_, state_[g]);
    }
  }
  // dequantize()'s plan: the level as the stored tensor scale gives it back.
  dplan_ = make_plan(opt_, nvfp4_tensor_from_scale(opt_, nvfp4_stored_scale(opt_, level)));
}

Dequantizer::Dequantizer(const Quantized& q, Codes codes, const Options& opt)
    : q_(q), codes_(codes), opt_(opt) {
  validate_options(opt);
  const Scheme& s = opt.scheme;
  // The input layout: undo the transpose of the codes' shape.
  std::vector<std::size_t> in_shape = q.shape;
  if (opt.transpose) {
    if (q.shape.size() != 2) throw InputError("--transpose: expected 2-d codes");
    in_shape = {q.shape[1], q.shape[0]};
  }
  check_shape(opt, in_shape);
  matrix_view(in_shape, rows_, cols_);
  if (codes.size != rows_ * cols_) {
    throw InputError("codes: shape has " + std::to_string(rows_ * cols_) + " elements but " +
                     std::to_string(codes.size) + " codes were given");
  }
  plan_ = make_plan(opt, nvfp4_tensor_from_scale(opt, q.tensor_scale));
  const std::size_t groups = group_count(s, rows_, cols_);
  const std::size_t have = plan_.byte_scales() ? q.scale_codes.size() : q.state.size();
  if (have != groups) {
    throw InputError("state: scheme " + scheme_name(s) + " on " + std::to_string(rows_) + "x" +
                     std::to_string(cols_) + " expects " + std::to_string(groups) +
                     " entries, got " + std::to_string(have));
  }
  check_codes(codes, opt);
}

void Dequantizer::values(std::size_t i0, std::size_t i1, float* out) const {
  const Scheme& s = opt_.scheme;
  const bool byte_scales = plan_.byte_scales();
  if (!opt_.transpose && cols_ != 0 && runs::covers(plan_.groups)) {
    // Codes lie in [0, space) (check_codes: a float target's bits; int8 and codebooks a byte).
    const std::uint32_t space = codes_.packed ? 16u
                                : opt_.target.kind == FormatKind::floating
                                    ? std::min(256u, 1u << opt_.target.fp.total_bits())
                                    : 256u;
    // Byte states share one memo of 256 states x space codes: worth its setup on long calls.
    const bool memo_bytes = byte_scales && i1 - i0 >= 16 * std::size_t{space};
    runs::DequantMemo memo(space, memo_bytes);
    runs::for_each_run(
        plan_.groups, s, cols_, i0, i1, [&](std::size_t a, std::size_t b, std::size_t g) {
          const std::uint32_t st = byte_scales ? q_.scale_codes[g] : native::bits_of(q_.state[g]);
          // A memo pays for itself when its group has several elements per code value.
          if (byte_scales ? !memo_bytes : b - a < space) {
            for (std::size_t i = a; i < b; ++i) {
              out[i - i0] = native::dequant_element(plan_, codes_[i], st);
            }
            return;
          }
          memo.start(st);
          for (std::size_t i = a; i < b; ++i) out[i - i0] = memo.get(plan_, codes_[i], st);
        });
    return;
  }
  std::size_t r = cols_ == 0 ? 0 : i0 / cols_, c = cols_ == 0 ? 0 : i0 % cols_;
  for (std::size_t i = i0; i < i1; ++i) {
    const std::size_t g = group_index(plan_.groups, s, cols_, r, c);
    const std::uint32_t st = byte_scales ? q_.scale_codes[g] : native::bits_of(q_.state[g]);
    out[i - i0] = native::dequant_element(plan_, codes_[opt_.transpose ? c * rows_ + r : i], st);
    if (++c == cols_) {
      c = 0;
      ++r;
    }
  }
}

std::vector<float> dequantize(const Quantized& q, const Options& opt) {
  const Dequantizer d(q, codes_of(q.codes), opt);
  std::vector<float> out(d.size());
  d.values(0, d.size(), out.data());
  return out;
}

}  // namespace exmy::quant
