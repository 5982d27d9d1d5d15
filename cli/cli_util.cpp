#include "cli/cli_util.hpp"

#include <cstdio>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"

namespace exmy::cli {

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
