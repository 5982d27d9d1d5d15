// The scheme registry (sim/quant/scheme_registry.hpp): one entry per scheme of
// docs/SEMANTICS.md 7, with its grammar, option checks, state shape and scale rule.
#include "sim/quant/scheme_registry.hpp"

#include <charconv>
#include <iterator>
#include <stdexcept>
#include <string>

#include "sim/common/error.hpp"
#include "sim/native/quant_mx.hpp"

namespace exmy::quant {

namespace {

using native::CastVariant;
using native::ScaleRule;

// Block sizes of block-wise schemes: bitsandbytes' range of kQuantizeBlockwise instantiations.
constexpr std::size_t kMinBlock = 32;
constexpr std::size_t kMaxBlock = 4096;
// Tile sides of block:RxC (DeepGEMM and TE use 1 and 128; MX-style 1x32, NVFP4-style 16x16).
constexpr std::size_t kMaxTileSide = 4096;

bool parse_size(std::string_view t, std::size_t& v) {
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc{} && end == t.data() + t.size();
}

bool is_float(const Target& t) {
  return t.kind == FormatKind::floating;
}

// ---- shared pieces -------------------------------------------------------------------------

// A scheme spelled by fixed names (its first name is the canonical one, scheme_name).
template <Granularity K, std::size_t Block, const char*... Names>
bool parse_names(std::string_view s, Scheme& out) {
  if (((s == Names) || ...)) {
    out = {K, Block};
    return true;
  }
  return false;
}

std::vector<std::size_t> one_state_per_group(const Scheme& s,
                                             const std::vector<std::size_t>& shape) {
  std::size_t rows, cols;
  matrix_view(shape, rows, cols);
  return {group_count(s, rows, cols)};
}

// The scale rule of the scaled-cast schemes (tensor, rows, columns, 1-d blocks): the variant's
// rule for float targets, absmax for int8 and codebooks.
ScaleRule scaled_cast_rule(const Options& opt) {
  if (!is_float(opt.target)) return ScaleRule::absmax;
  switch (opt.variant) {
    case CastVariant::te:
      return ScaleRule::te;
    case CastVariant::te_current:
      return ScaleRule::te_current;
    case CastVariant::torchao:
      return ScaleRule::torchao;
    default:
      return ScaleRule::absmax;
  }
}

void validate_scaled_cast(const Options& opt) {
  const CastVariant v = opt.variant;
  if (v == CastVariant::ocp) throw InputError("--variant ocp: expected --scheme mx");
  if (v == CastVariant::deepgemm) {
    throw InputError("--variant deepgemm: expected --scheme block:RxC (block:1x128, ...)");
  }
  if (!is_float(opt.target) && v != CastVariant::absmax) {
    throw InputError("--variant te/te-current/torchao: expected a float target format");
  }
}

// ---- tensor, rowwise, colwise, block:B --------------------------------------------------------

constexpr char kTensor[] = "tensor", kTensorwise[] = "tensorwise";
constexpr char kRowwise[] = "rowwise", kRow[] = "row";
constexpr char kColwise[] = "colwise", kCol[] = "col", kColumnwise[] = "columnwise";
constexpr char kMx[] = "mx", kNvfp4[] = "nvfp4";

bool parse_block(std::string_view s, Scheme& out) {
  std::size_t b = 0;
  if (s.substr(0, 6) != "block:" || !parse_size(s.substr(6), b)) return false;
  if (b < kMinBlock || b > kMaxBlock) return false;
  out = {Granularity::block, b};
  return true;
}

std::string name_tensor(const Scheme&) {
  return "tensor";
}
std::string name_rowwise(const Scheme&) {
  return "rowwise";
}
std::string name_colwise(const Scheme&) {
  return "colwise";
}
std::string name_block(const Scheme& s) {
  return "block:" + std::to_string(s.block);
}

// ---- block:RxC (docs/SEMANTICS.md 7.15) ---------------------------------------------------------

bool parse_tile(std::string_view s, Scheme& out) {
  if (s.substr(0, 6) != "block:") return false;
  const std::string_view num = s.substr(6);
  const std::size_t x = num.find('x');
  std::size_t r = 0, c = 0;
  if (x != std::string_view::npos && parse_size(num.substr(0, x), r) &&
      parse_size(num.substr(x + 1), c) && r >= 1 && c >= 1 && r <= kMaxTileSide &&
      c <= kMaxTileSide) {
    out = {Granularity::tile, r * c, r, c};
    return true;
  }
  return false;
}

std::string name_tile(const Scheme& s) {
  return "block:" + std::to_string(s.tile_rows) + "x" + std::to_string(s.tile_cols);
}

std::vector<std::size_t> tile_state_shape(const Scheme& s, const std::vector<std::size_t>& shape) {
  std::size_t rows, cols;
  matrix_view(shape, rows, cols);
  return {(rows + s.tile_rows - 1) / s.tile_rows, (cols + s.tile_cols - 1) / s.tile_cols};
}

// The library rules of block:RxC (7.15): their targets, scale forms, rounding and NaN rule are the
// library's own, so the switches that would change them are refused rather than ignored.
bool block_rule(CastVariant v) {
  return v == CastVariant::deepgemm || v == CastVariant::te || v == CastVariant::torchao;
}

void validate_tile(const Options& opt) {
  using native::BlockScaleFormat;
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
  if (option_given(opt.given_scale)) throw InputError(vn + ": --scale does not apply");
  if (opt.pow2_scale) throw InputError(vn + ": use --scale-format pow2, not --pow2-scale");
  if (v != CastVariant::te && opt.te_amax_epsilon != 0.0f) {
    throw InputError(vn + ": --amax-epsilon expected --variant te");
  }
}

void check_tile_shape(const Options& opt, const std::vector<std::size_t>& shape) {
  const std::string name = "scheme " + scheme_name(opt.scheme);
  if (shape.size() != 2) {
    throw InputError(name + ": expected a 2-d input (rows, cols), got " +
                     std::to_string(shape.size()) + " dimensions");
  }
  // torchao's kernels assert whole tiles (K % block_size; M and N % block_size for weights).
  if (opt.variant == CastVariant::torchao &&
      (shape[0] % opt.scheme.tile_rows != 0 || shape[1] % opt.scheme.tile_cols != 0)) {
    throw InputError(name + " --variant torchao: expected rows divisible by " +
                     std::to_string(opt.scheme.tile_rows) + " and cols by " +
                     std::to_string(opt.scheme.tile_cols) +
                     " (torchao refuses partial tiles), got " + std::to_string(shape[0]) + "x" +
                     std::to_string(shape[1]));
  }
}

ScaleRule tile_rule(const Options& opt) {
  if (!block_rule(opt.variant)) return scaled_cast_rule(opt);
  return opt.variant == CastVariant::deepgemm ? ScaleRule::block_deepgemm
         : opt.variant == CastVariant::te     ? ScaleRule::block_te
                                              : ScaleRule::block_torchao;
}

// ---- mx (docs/SEMANTICS.md 7.6) -----------------------------------------------------------------

std::string name_mx(const Scheme&) {
  return "mx";
}

// The MX element formats of OCP MX v1.0 (and torchao's to_mx).
bool mx_element_format(const FloatFormat& f) {
  return f == formats::e4m3fn || f == formats::e5m2 || f == formats::e2m3fn ||
         f == formats::e3m2fn || f == formats::e2m1fn;
}

void validate_mx(const Options& opt) {
  const CastVariant v = opt.variant;
  if (!is_float(opt.target)) {
    throw InputError("scheme mx: expected a float element format (e4m3fn, e5m2, e2m1fn, ...)");
  }
  if (v != CastVariant::absmax && v != CastVariant::ocp && v != CastVariant::torchao &&
      v != CastVariant::te) {
    throw InputError("scheme mx: --variant expected ocp, torchao or te");
  }
  if (v == CastVariant::te) {
    // TransformerEngine's MXFP8 quantizer (sim/native/quant_mx_te.hpp): FP8 elements, its one
    // scale rule (rceil arithmetic), round to nearest even.
    if (opt.target.fp != formats::e4m3fn && opt.target.fp != formats::e5m2) {
      throw InputError("scheme mx --variant te: expected --to e4m3fn or e5m2 (MXFP8), got '" +
                       opt.target.name + "'");
    }
    if (opt.mode != RoundMode::rne) {
      throw InputError(
          "scheme mx --variant te: its element cast (cvt.rn.satfinite) rounds to nearest even; "
          "--round does not apply");
    }
    if (opt.scale_mode != native::MxScaleMode::floor &&
        opt.scale_mode != native::MxScaleMode::rceil) {
      throw InputError(
          "scheme mx --variant te: the scale rule is TransformerEngine's float_to_e8m0 (rceil); "
          "--scale-mode ceil/even do not apply");
    }
  }
  if (v == CastVariant::torchao && !mx_element_format(opt.target.fp)) {
    throw InputError(
        "scheme mx --variant torchao: expected an element format of torchao's "
        "to_mx (e4m3fn, e5m2, e2m3fn, e3m2fn, e2m1fn), got '" +
        opt.target.name + "'");
  }
  if (opt.mode != RoundMode::rne && v == CastVariant::torchao) {
    throw InputError(
        "scheme mx --variant torchao: torch's element casts round to nearest even; "
        "--round does not apply");
  }
}

ScaleRule mx_rule(const Options& opt) {
  return opt.variant == CastVariant::torchao ? ScaleRule::mx_torchao
         : opt.variant == CastVariant::te    ? ScaleRule::mx_te
                                             : ScaleRule::mx;
}

// ---- nvfp4 (docs/SEMANTICS.md 7.11) -------------------------------------------------------------

std::string name_nvfp4(const Scheme&) {
  return "nvfp4";
}

void validate_nvfp4(const Options& opt) {
  const CastVariant v = opt.variant;
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
}

// The shape with its last dimension / 16 (a 0-d input is one element).
std::vector<std::size_t> nvfp4_state_shape(const Scheme& s, const std::vector<std::size_t>& shape) {
  std::vector<std::size_t> st = shape.empty() ? std::vector<std::size_t>{1} : shape;
  st.back() /= s.block;
  return st;
}

void check_nvfp4_shape(const Options& opt, const std::vector<std::size_t>& shape) {
  const std::size_t last = shape.empty() ? 1 : shape.back();
  if (last % opt.scheme.block != 0) {
    throw InputError("scheme nvfp4: expected a last dimension divisible by 16, got " +
                     std::to_string(last));
  }
}

ScaleRule nvfp4_rule(const Options& opt) {
  return opt.variant == CastVariant::te ? ScaleRule::nvfp4_te : ScaleRule::nvfp4_torchao;
}

// ---- nvfp4:16x16, TransformerEngine's 2-D weight scaling (docs/SEMANTICS.md 7.16) --------------
// The NVFP4 te rule (7.11) on 16×16 tiles: one E4M3 scale per tile from the tile's amax, under
// the tensor's global encode scale; partial edge tiles as TE's zero padding gives them.

constexpr std::size_t kNvfp4Tile = 16;

bool parse_nvfp4_2d(std::string_view s, Scheme& out) {
  if (s != "nvfp4:16x16") return false;
  out = {Granularity::nvfp4_2d, kNvfp4Tile * kNvfp4Tile, kNvfp4Tile, kNvfp4Tile};
  return true;
}

std::string name_nvfp4_2d(const Scheme&) {
  return "nvfp4:16x16";
}

void validate_nvfp4_2d(const Options& opt) {
  if (!(is_float(opt.target) && opt.target.fp == formats::e2m1fn)) {
    throw InputError("scheme nvfp4:16x16: expected --to e2m1fn, got '" + opt.target.name + "'");
  }
  if (opt.variant != CastVariant::te) {
    throw InputError(
        "scheme nvfp4:16x16: --variant expected te (TransformerEngine's 2-D weight "
        "scaling; torchao has none)");
  }
  if (opt.mode != RoundMode::rne) {
    throw InputError(
        "scheme nvfp4:16x16: its element cast rounds to nearest even; --round does not apply");
  }
  if (opt.transpose) throw InputError("scheme nvfp4:16x16: --transpose does not apply");
  if (!opt.two_level) {
    throw InputError(
        "scheme nvfp4:16x16 --variant te: TransformerEngine's NVFP4 always has a per-tensor "
        "scale; add --two-level");
  }
}

ScaleRule nvfp4_2d_rule(const Options&) {
  return ScaleRule::nvfp4_te;
}

// ---- the registry -------------------------------------------------------------------------------

using native::GroupShape;
constexpr std::size_t kMxB = native::kMxBlock, kNvB = native::kNvfp4Block;

const SchemeEntry kSchemes[] = {
    {Granularity::tensor, "tensor", "", parse_names<Granularity::tensor, 0, kTensor, kTensorwise>,
     name_tensor, GroupShape::tensor, one_state_per_group, validate_scaled_cast, nullptr,
     scaled_cast_rule, false, false, false, false, GpuLauncher::contiguous},
    {Granularity::row, "rowwise", "", parse_names<Granularity::row, 0, kRowwise, kRow>,
     name_rowwise, GroupShape::row, one_state_per_group, validate_scaled_cast, nullptr,
     scaled_cast_rule, false, false, false, false, GpuLauncher::contiguous},
    {Granularity::col, "colwise", "", parse_names<Granularity::col, 0, kColwise, kCol, kColumnwise>,
     name_colwise, GroupShape::col, one_state_per_group, validate_scaled_cast, nullptr,
     scaled_cast_rule, false, false, false, false, GpuLauncher::contiguous},
    {Granularity::block, "block:B", "(B in 32..4096)", parse_block, name_block, GroupShape::block,
     one_state_per_group, validate_scaled_cast, nullptr, scaled_cast_rule, false, false, false,
     false, GpuLauncher::contiguous},
    {Granularity::tile, "block:RxC", "(R, C in 1..4096)", parse_tile, name_tile, GroupShape::tile,
     tile_state_shape, validate_tile, check_tile_shape, tile_rule, true, false, false, false,
     GpuLauncher::tile},
    {Granularity::mx, "mx", "", parse_names<Granularity::mx, kMxB, kMx>, name_mx, GroupShape::block,
     one_state_per_group, validate_mx, nullptr, mx_rule, false, true, false, false,
     GpuLauncher::contiguous},
    {Granularity::nvfp4, "nvfp4", "", parse_names<Granularity::nvfp4, kNvB, kNvfp4>, name_nvfp4,
     GroupShape::block, nvfp4_state_shape, validate_nvfp4, check_nvfp4_shape, nvfp4_rule, false,
     false, true, true, GpuLauncher::contiguous},
    {Granularity::nvfp4_2d, "nvfp4:16x16", "", parse_nvfp4_2d, name_nvfp4_2d, GroupShape::tile,
     tile_state_shape, validate_nvfp4_2d, check_tile_shape, nvfp4_2d_rule, false, false, true, true,
     GpuLauncher::tile},
};

}  // namespace

std::span<const SchemeEntry> schemes() {
  return kSchemes;
}

const SchemeEntry& scheme_entry(Granularity kind) {
  for (const SchemeEntry& e : kSchemes) {
    if (e.kind == kind) return e;
  }
  // Unreachable: every Granularity has an entry (tests/quant check each one).
  throw std::logic_error("quant: scheme id " + std::to_string(static_cast<int>(kind)) +
                         " has no registry entry");
}

std::string scheme_list(std::string_view sep) {
  std::string out;
  for (const SchemeEntry& e : kSchemes) out += (out.empty() ? "" : std::string(sep)) + e.grammar;
  return out;
}

Scheme parse_scheme(std::string_view s) {
  Scheme out;
  for (const SchemeEntry& e : kSchemes) {
    if (e.parse(s, out)) return out;
  }
  std::string expected;
  const std::size_t n = std::size(kSchemes);
  for (std::size_t k = 0; k < n; ++k) {
    expected += (k == 0 ? "" : k + 1 == n ? " or " : ", ") + std::string(kSchemes[k].grammar);
    if (*kSchemes[k].limits) expected += std::string(" ") + kSchemes[k].limits;
  }
  throw InputError("scheme '" + std::string(s) + "': expected " + expected);
}

std::string scheme_name(const Scheme& s) {
  return scheme_entry(s).name(s);
}

}  // namespace exmy::quant
