// Parsing of scheme and target names (docs/SEMANTICS.md 7.1, 11).
#include <charconv>
#include <string>

#include "sim/common/error.hpp"
#include "sim/format/codebook.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/quant_mx.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::quant {

namespace {
// Block sizes of block-wise schemes: bitsandbytes' range of kQuantizeBlockwise instantiations.
constexpr std::size_t kMinBlock = 32;
constexpr std::size_t kMaxBlock = 4096;
// Tile sides of block:RxC (DeepGEMM and TE use 1 and 128; MX-style 1x32, NVFP4-style 16x16).
constexpr std::size_t kMaxTileSide = 4096;

bool parse_size(std::string_view t, std::size_t& v) {
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc{} && end == t.data() + t.size();
}
}  // namespace

Scheme parse_scheme(std::string_view s) {
  if (s == "tensor" || s == "tensorwise") return {Granularity::tensor, 0};
  if (s == "rowwise" || s == "row") return {Granularity::row, 0};
  if (s == "colwise" || s == "col" || s == "columnwise") return {Granularity::col, 0};
  if (s == "mx") return {Granularity::mx, static_cast<std::size_t>(native::kMxBlock)};
  if (s == "nvfp4") return {Granularity::nvfp4, static_cast<std::size_t>(native::kNvfp4Block)};
  if (s.substr(0, 6) == "block:") {
    const std::string_view num = s.substr(6);
    std::size_t b = 0;
    if (parse_size(num, b) && b >= kMinBlock && b <= kMaxBlock) return {Granularity::block, b};
    const std::size_t x = num.find('x');
    std::size_t r = 0, c = 0;
    if (x != std::string_view::npos && parse_size(num.substr(0, x), r) &&
        parse_size(num.substr(x + 1), c) && r >= 1 && c >= 1 && r <= kMaxTileSide &&
        c <= kMaxTileSide) {
      return {Granularity::tile, r * c, r, c};
    }
  }
  throw InputError("scheme '" + std::string(s) +
                   "': expected tensor, rowwise, colwise, block:B (B in 32..4096), block:RxC "
                   "(R, C in 1..4096), mx or nvfp4");
}

std::string scheme_name(const Scheme& s) {
  switch (s.kind) {
    case Granularity::tensor:
      return "tensor";
    case Granularity::row:
      return "rowwise";
    case Granularity::col:
      return "colwise";
    case Granularity::block:
      return "block:" + std::to_string(s.block);
    case Granularity::mx:
      return "mx";
    case Granularity::nvfp4:
      return "nvfp4";
    case Granularity::tile:
      return "block:" + std::to_string(s.tile_rows) + "x" + std::to_string(s.tile_cols);
  }
  return "?";
}

Target parse_target(std::string_view s) {
  constexpr const char* kExpected =
      "expected int8, a float format of <= 8 bits (e4m3fn, e5m2, e2m1fn, ...), dynamic, "
      "dynamic-unsigned, linear, linear-unsigned or table:PATH (codebook:PATH)";
  // codebook:PATH is the quantizer's older spelling of the registry's table:PATH.
  const std::string name =
      s.substr(0, 9) == "codebook:" ? "table:" + std::string(s.substr(9)) : std::string(s);
  Format f;
  try {
    f = parse_format(name);
  } catch (const InputError& e) {
    // A table's own error (unreadable file, bad length) says more than the list of targets.
    if (name.substr(0, 6) == "table:") throw;
    throw InputError("target '" + std::string(s) + "': " + kExpected);
  }
  f.name = std::string(s);
  switch (f.kind) {
    case FormatKind::integer:
      if (!(f.in.bits == 8 && f.in.is_signed && f.in.symmetric)) {
        throw InputError("target '" + std::string(s) +
                         "': the quantizers' integer target is int8 (symmetric, [-127, 127])");
      }
      break;
    case FormatKind::floating:
      if (f.fp.total_bits() > 8) {
        throw InputError("target '" + std::string(s) +
                         "': scaled casts store one byte per code; expected a format of <= 8 bits");
      }
      break;
    case FormatKind::codebook:
      break;
  }
  return f;
}

Target float_target(const FloatFormat& f) {
  if (f.total_bits() > 8) {
    throw InputError("target '" + float_format_name(f) + "': expected a format of <= 8 bits");
  }
  Format t;
  t.name = float_format_name(f);
  t.kind = FormatKind::floating;
  t.fp = f;
  return t;
}

native::MxScaleMode parse_scale_mode(std::string_view s) {
  if (s == "floor") return native::MxScaleMode::floor;
  if (s == "ceil") return native::MxScaleMode::ceil;
  if (s == "even") return native::MxScaleMode::even;
  if (s == "rceil") return native::MxScaleMode::rceil;
  throw InputError("--scale-mode '" + std::string(s) + "': expected floor, ceil, even or rceil");
}

native::CastVariant parse_variant(std::string_view s) {
  if (s == "absmax") return native::CastVariant::absmax;
  if (s == "te") return native::CastVariant::te;
  if (s == "te-current") return native::CastVariant::te_current;
  if (s == "torchao") return native::CastVariant::torchao;
  if (s == "ocp") return native::CastVariant::ocp;
  if (s == "deepgemm") return native::CastVariant::deepgemm;
  throw InputError("--variant '" + std::string(s) +
                   "': expected absmax, te, te-current, torchao, ocp or deepgemm");
}

native::BlockScaleFormat parse_scale_format(std::string_view s) {
  if (s == "fp32") return native::BlockScaleFormat::fp32;
  if (s == "pow2") return native::BlockScaleFormat::pow2;
  if (s == "ue8m0") return native::BlockScaleFormat::ue8m0;
  throw InputError("--scale-format '" + std::string(s) + "': expected fp32, pow2 or ue8m0");
}

}  // namespace exmy::quant
