// Parsing of target, variant and scale names (docs/SEMANTICS.md 7.1, 11); the scheme names are
// the registry's (sim/quant/scheme_registry.cpp).
#include <iterator>
#include <string>

#include "sim/common/error.hpp"
#include "sim/format/codebook.hpp"
#include "sim/format/float_names.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::quant {

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
  std::string expected;
  const std::size_t n = std::size(kVariants);
  for (std::size_t k = 0; k < n; ++k) {
    if (s == kVariants[k].name) return kVariants[k].value;
    expected += (k == 0 ? "" : k + 1 == n ? " or " : ", ") + std::string(kVariants[k].name);
  }
  throw InputError("--variant '" + std::string(s) + "': expected " + expected);
}

const char* variant_name(native::CastVariant v) {
  for (const VariantName& e : kVariants) {
    if (e.value == v) return e.name;
  }
  return "?";
}

std::string variant_list(std::string_view sep) {
  std::string out;
  for (const VariantName& e : kVariants) out += (out.empty() ? "" : std::string(sep)) + e.name;
  return out;
}

native::BlockScaleFormat parse_scale_format(std::string_view s) {
  if (s == "fp32") return native::BlockScaleFormat::fp32;
  if (s == "pow2") return native::BlockScaleFormat::pow2;
  if (s == "ue8m0") return native::BlockScaleFormat::ue8m0;
  throw InputError("--scale-format '" + std::string(s) + "': expected fp32, pow2 or ue8m0");
}

}  // namespace exmy::quant
