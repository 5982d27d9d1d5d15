#include "cli/cli_util.hpp"

#include <cstdio>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"

namespace exmy::cli {

Rounding parse_rounding(std::string_view mode) {
  Rounding r;
  if (mode == "rne") {
    r.mode = RoundMode::rne;
  } else if (mode == "rna") {
    r.mode = RoundMode::rna;
  } else if (mode == "rtz") {
    r.mode = RoundMode::rtz;
  } else if (mode == "rup") {
    r.mode = RoundMode::rup;
  } else if (mode == "rdn") {
    r.mode = RoundMode::rdn;
  } else if (mode == "rto") {
    r.mode = RoundMode::rto;
  } else if (mode.substr(0, 3) == "sr:") {
    r.mode = RoundMode::sr;
    const std::string_view bits = mode.substr(3);
    if (bits.empty() || bits.size() > 2 || bits.find_first_not_of("0123456789") != bits.npos) {
      throw InputError("rounding mode '" + std::string(mode) + "': expected sr:R with R = 1..32");
    }
    r.sr_bits = static_cast<int>(number::parse_u64(bits, "rounding mode sr:R", 99, false));
    if (r.sr_bits < 1 || r.sr_bits > 32) {
      throw InputError("rounding mode '" + std::string(mode) + "': expected sr:R with R = 1..32");
    }
  } else {
    throw InputError("unknown rounding mode '" + std::string(mode) +
                     "' (expected rne, rna, rtz, rup, rdn, rto, sr:R or mask[:outer=..,inner=..])");
  }
  return r;
}

RoundSpec parse_round_spec(std::string_view text) {
  RoundSpec s;
  if (text.substr(0, 4) != "mask") {
    s.rounding = parse_rounding(text);
    return s;
  }
  s.mask = true;
  s.rounding.mode = RoundMode::rtz;  // the mantissa bitmask is rtz at M bits
  std::string_view rest = text.substr(4);
  if (rest.empty()) return s;
  const std::string bad = "rounding mode '" + std::string(text) +
                          "': expected mask[:outer=clamp|keep][,inner=min|zero|keep]";
  if (rest[0] != ':') throw InputError(bad);
  rest.remove_prefix(1);
  // "mask:" with nothing after the colon is a typo, not the defaults (those are plain "mask").
  if (rest.empty()) throw InputError(bad);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (item == "outer=clamp") {
      s.outer = MaskOuter::clamp;
    } else if (item == "outer=keep") {
      s.outer = MaskOuter::keep;
    } else if (item == "inner=min") {
      s.inner = MaskInner::min;
    } else if (item == "inner=zero") {
      s.inner = MaskInner::zero;
    } else if (item == "inner=keep") {
      s.inner = MaskInner::keep;
    } else {
      throw InputError(bad);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
    if (rest.empty()) throw InputError(bad);
  }
  return s;
}

Overflow parse_overflow(std::string_view text) {
  if (text == "none") return Overflow::none;
  if (text == "satfinite") return Overflow::satfinite;
  if (text == "sat") return Overflow::sat;
  throw InputError("overflow policy '" + std::string(text) + "': expected none, satfinite or sat");
}

TieRule parse_tie(std::string_view text) {
  if (text == "even") return TieRule::even_index;
  if (text == "lower") return TieRule::lower_index;
  if (text == "bnb-cpu") return TieRule::bnb_cpu;
  throw InputError("tie rule '" + std::string(text) + "': expected even, lower or bnb-cpu");
}

std::uint64_t parse_uint(std::string_view text, const std::string& what, std::uint64_t max) {
  return number::parse_u64(text, what, max);
}

namespace {
constexpr struct {
  std::uint32_t bit;
  const char* name;
} kFlagNames[] = {{flag::inexact, "inexact"},
                  {flag::overflow, "overflow"},
                  {flag::underflow, "underflow"},
                  {flag::invalid, "invalid"}};
}  // namespace

std::string flags_json(std::uint32_t flags) {
  std::string s = "[";
  for (const auto& f : kFlagNames) {
    if ((flags & f.bit) == 0) continue;
    if (s.size() > 1) s += ",";
    s += std::string("\"") + f.name + "\"";
  }
  return s + "]";
}

std::string flags_text(std::uint32_t flags) {
  std::string s;
  for (const auto& f : kFlagNames) {
    if ((flags & f.bit) == 0) continue;
    if (!s.empty()) s += " ";
    s += f.name;
  }
  return s.empty() ? "-" : s;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace exmy::cli
