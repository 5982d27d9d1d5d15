#include "cli/cli_util.hpp"

#include <cstdarg>
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

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    const auto comma = text.find(',', pos);
    out.emplace_back(text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos));
    if (comma == std::string_view::npos) return out;
    pos = comma + 1;
  }
}

}  // namespace exmy::cli

namespace exmy::cli {

std::string format_text(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list again;
  va_copy(again, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string s(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, again);
  va_end(again);
  return s;
}

}  // namespace exmy::cli
