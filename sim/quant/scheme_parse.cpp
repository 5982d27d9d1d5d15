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
}  // namespace

Scheme parse_scheme(std::string_view s) {
  if (s == "tensor" || s == "tensorwise") return {Granularity::tensor, 0};
  if (s == "rowwise" || s == "row") return {Granularity::row, 0};
  if (s == "colwise" || s == "col" || s == "columnwise") return {Granularity::col, 0};
  if (s == "mx") return {Granularity::mx, static_cast<std::size_t>(native::kMxBlock)};
  if (s.substr(0, 6) == "block:") {
    const std::string_view num = s.substr(6);
    std::size_t b = 0;
    const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), b);
    if (ec == std::errc{} && end == num.data() + num.size() && b >= kMinBlock && b <= kMaxBlock) {
      return {Granularity::block, b};
    }
  }
  throw InputError("scheme '" + std::string(s) +
                   "': expected tensor, rowwise, colwise, block:B (B in 32..4096) or mx");
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
  }
  return "?";
}

Target parse_target(std::string_view s) {
  Target t;
  if (s == "int8") {
    t.kind = TargetKind::int8;
    return t;
  }
  if (s == "dynamic" || s == "dynamic-unsigned" || s == "linear" || s == "linear-unsigned") {
    t.kind = TargetKind::codebook;
    const bool is_signed = s.find("unsigned") == std::string_view::npos;
    t.codebook =
        s.substr(0, 7) == "dynamic" ? dynamic_codebook(is_signed) : linear_codebook(is_signed);
    return t;
  }
  if (s.substr(0, 9) == "codebook:") {
    t.kind = TargetKind::codebook;
    t.codebook = load_codebook(std::string(s.substr(9)));
    return t;
  }
  if (const auto f = parse_float_format(s)) {
    if (f->total_bits() > 8) {
      throw InputError("target '" + std::string(s) +
                       "': scaled casts store one byte per code; expected a format of <= 8 bits");
    }
    t.kind = TargetKind::float_format;
    t.fmt = *f;
    return t;
  }
  throw InputError("target '" + std::string(s) +
                   "': expected int8, a float format of <= 8 bits (e4m3fn, e5m2, ...), dynamic, "
                   "dynamic-unsigned, linear, linear-unsigned or codebook:PATH");
}

}  // namespace exmy::quant
