#include "sim/format/float_names.hpp"

#include <charconv>

namespace exmy {

const std::vector<NamedFloatFormat>& float_presets() {
  static const std::vector<NamedFloatFormat> presets = {
      {"fp64", formats::fp64},         {"fp32", formats::fp32},
      {"tf32", formats::tf32},         {"bf16", formats::bf16},
      {"fp16", formats::fp16},         {"e5m2", formats::e5m2},
      {"e4m3fn", formats::e4m3fn},     {"e4m3fnuz", formats::e4m3fnuz},
      {"e5m2fnuz", formats::e5m2fnuz}, {"e4m3", formats::e4m3},
      {"e3m4", formats::e3m4},         {"e4m3b11fnuz", formats::e4m3b11fnuz},
      {"e2m3fn", formats::e2m3fn},     {"e3m2fn", formats::e3m2fn},
      {"e2m1fn", formats::e2m1fn},     {"e8m0fnu", formats::e8m0fnu},
  };
  return presets;
}

std::vector<NamedFloatFormat> narrow_float_presets() {
  std::vector<NamedFloatFormat> out;
  for (const auto& p : float_presets()) {
    if (p.format.total_bits() <= 8) out.push_back(p);
  }
  return out;
}

namespace {

bool take_int(std::string_view& s, int& out) {
  std::size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0 || n > 4) return false;
  std::from_chars(s.data(), s.data() + n, out);
  s.remove_prefix(n);
  return true;
}

}  // namespace

std::optional<FloatFormat> parse_float_format(std::string_view name) {
  for (const auto& p : float_presets()) {
    if (name == p.name) return p.format;
  }
  if (name == "float32") return formats::fp32;
  if (name == "float64") return formats::fp64;
  if (name == "float16" || name == "half") return formats::fp16;
  if (name == "bfloat16") return formats::bf16;
  // ml_dtypes' and NumPy's dtype names: float8_e4m3fn, float6_e2m3fn, float4_e2m1fn, ... name
  // the eXmY format after the width, which must be its width.
  for (const char* w : {"float8_", "float6_", "float4_"}) {
    const std::string_view prefix = w;
    if (name.substr(0, prefix.size()) == prefix) {
      const std::string_view rest = name.substr(prefix.size());
      if (rest.substr(0, 5) == "float") return std::nullopt;
      const auto f = parse_float_format(rest);
      if (!f || f->total_bits() != prefix[5] - '0') return std::nullopt;
      return f;
    }
  }
  std::string_view s = name;
  int x = 0, y = 0;
  if (s.empty() || s[0] != 'e') return std::nullopt;
  s.remove_prefix(1);
  if (!take_int(s, x) || s.empty() || s[0] != 'm') return std::nullopt;
  s.remove_prefix(1);
  if (!take_int(s, y)) return std::nullopt;
  if (x < 1 || x > 11 || y < 0 || y > 52) return std::nullopt;
  FloatFormat f{x, y, (1 << (x - 1)) - 1, true, true, NanEncoding::ieee, true};
  // An explicit bias may stand before the suffix (ml_dtypes' e4m3b11fnuz) or after it.
  int explicit_bias = -1;
  const auto take_bias = [&]() {
    if (!s.empty() && s[0] == 'b') {
      s.remove_prefix(1);
      return take_int(s, explicit_bias);
    }
    return true;
  };
  if (!take_bias()) return std::nullopt;
  if (s.substr(0, 4) == "fnuz") {
    f.has_inf = false;
    f.nan = NanEncoding::neg_zero;
    f.bias += 1;
    s.remove_prefix(4);
  } else if (s.substr(0, 3) == "fnu") {
    f.has_inf = false;
    f.nan = NanEncoding::all_ones;
    f.is_signed = false;
    f.subnormals = y > 0;  // e8m0fnu: powers of two only, no zero
    s.remove_prefix(3);
  } else if (s.substr(0, 2) == "fn") {
    f.has_inf = false;
    // Formats too narrow to spare a NaN code (FP6, FP4) have none, as in the OCP MX spec.
    f.nan = (x + y <= 5) ? NanEncoding::none : NanEncoding::all_ones;
    s.remove_prefix(2);
  }
  if (explicit_bias < 0 && !take_bias()) return std::nullopt;
  if (!s.empty()) return std::nullopt;
  if (explicit_bias >= 0) f.bias = explicit_bias;
  // An IEEE-style format needs two exponent codes for zero/subnormals and inf/NaN.
  if (f.nan == NanEncoding::ieee && x < 2) return std::nullopt;
  if (f.total_bits() > 64) return std::nullopt;
  return f;
}

std::string float_format_name(const FloatFormat& f) {
  for (const auto& p : float_presets()) {
    if (p.format == f) return p.name;
  }
  std::string n = "e" + std::to_string(f.exp_bits) + "m" + std::to_string(f.man_bits);
  int default_bias = (1 << (f.exp_bits - 1)) - 1;
  if (!f.is_signed) {
    n += "fnu";
  } else if (f.nan == NanEncoding::neg_zero) {
    n += "fnuz";
    default_bias += 1;
  } else if (!f.has_inf) {
    n += "fn";
  }
  if (f.bias != default_bias) n += "b" + std::to_string(f.bias);
  return n;
}

}  // namespace exmy
