#include "sim/format/int_format.hpp"

#include <charconv>

namespace exmy {

std::optional<IntFormat> parse_int_format(std::string_view name) {
  IntFormat f;
  std::string_view s = name;
  if (s.substr(0, 4) == "uint") {
    f.is_signed = false;
    f.symmetric = false;
    s.remove_prefix(4);
  } else if (s.substr(0, 3) == "int") {
    s.remove_prefix(3);
  } else {
    return std::nullopt;
  }
  std::size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0 || n > 2 || (n == 2 && s[0] == '0')) return std::nullopt;
  int bits = 0;
  std::from_chars(s.data(), s.data() + n, bits);
  s.remove_prefix(n);
  if (bits < 2 || bits > 32) return std::nullopt;
  f.bits = bits;
  if (s == "full" && f.is_signed) {
    f.symmetric = false;
  } else if (!s.empty()) {
    return std::nullopt;
  }
  return f;
}

std::string int_format_name(const IntFormat& f) {
  std::string n = (f.is_signed ? "int" : "uint") + std::to_string(f.bits);
  if (f.is_signed && !f.symmetric) n += "full";
  return n;
}

}  // namespace exmy
