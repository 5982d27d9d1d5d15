// The one number parser for text that a user or a file hands to exmy: command-line options,
// state.json fields. Exact and checked: the whole text must be the number (no leading space, no
// trailing characters, no '+'), a decimal is rounded once, correctly, to the target type
// (round to nearest even), and a value beyond the type's range (1e999 for a
// double, 1e39 for a float) or a value outside the caller's domain is an InputError naming `what`
// and the text. "inf" / "nan" are refused: no option or state field of exmy takes them.
// docs/SEMANTICS.md 11.0 states the grammar.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "sim/common/error.hpp"

namespace exmy::number {

namespace detail {

// Decimal syntax of SEMANTICS 11.0: -?digits[.digits][(e|E)[+-]?digits], or .digits / digits.
// strtod alone also takes "inf", "nan", "infinity", hex and leading spaces; this check keeps
// the accepted language the one the document states.
inline bool decimal_syntax(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  std::size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    std::size_t exp_digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

[[noreturn]] inline void bad(std::string_view what, std::string_view text,
                             std::string_view expected) {
  throw InputError(std::string(what) + " '" + std::string(text) + "': expected " +
                   std::string(expected));
}

template <typename T>
T parse_real(std::string_view text, std::string_view what) {
  if (!decimal_syntax(text)) bad(what, text, "a decimal number");
  // glibc's strtod / strtof round the decimal correctly (once, to nearest even) in the "C"
  // locale that exmy never changes; the syntax check above leaves them no hex, inf or nan.
  const std::string s(text);
  const T v = sizeof(T) == 4 ? static_cast<T>(std::strtof(s.c_str(), nullptr))
                             : static_cast<T>(std::strtod(s.c_str(), nullptr));
  // Overflow gives inf; an underflow gives the correctly rounded subnormal or zero, a value.
  if (!std::isfinite(v)) {
    bad(what, text,
        std::string("a number within the range of ") + (sizeof(T) == 4 ? "float32" : "float64"));
  }
  return v;
}

}  // namespace detail

// A finite double / float from decimal text (one correct rounding), or InputError.
inline double parse_f64(std::string_view text, std::string_view what) {
  return detail::parse_real<double>(text, what);
}
inline float parse_f32(std::string_view text, std::string_view what) {
  return detail::parse_real<float>(text, what);
}

// Domain checks, each naming `what`, the text and the domain.
inline double require_range(double v, std::string_view text, std::string_view what, double lo,
                            bool lo_open, double hi, bool hi_open) {
  const bool ok_lo = lo_open ? v > lo : v >= lo;
  const bool ok_hi = hi_open ? v < hi : v <= hi;
  if (ok_lo && ok_hi) return v;
  auto num = [](double x) {
    if (std::isinf(x)) return std::string(x > 0 ? "inf" : "-inf");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    return std::string(buf);
  };
  std::string dom =
      std::string(lo_open ? "(" : "[") + num(lo) + ", " + num(hi) + (hi_open ? ")" : "]");
  detail::bad(what, text, "a number in " + dom);
}

// Unsigned decimal integer (or 0x-hex when `hex`), <= max; no sign, no spaces.
inline std::uint64_t parse_u64(std::string_view text, std::string_view what, std::uint64_t max,
                               bool hex = true) {
  const std::string expected = "an unsigned integer <= " + std::to_string(max);
  std::string_view digits = text;
  int base = 10;
  if (hex && (digits.substr(0, 2) == "0x" || digits.substr(0, 2) == "0X")) {
    base = 16;
    digits.remove_prefix(2);
  }
  if (digits.empty()) detail::bad(what, text, expected);
  std::uint64_t v = 0;
  for (const char c : digits) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (base == 16 && c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (base == 16 && c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      detail::bad(what, text, expected);
    }
    const auto ud = static_cast<std::uint64_t>(d), ub = static_cast<std::uint64_t>(base);
    if (v > (max - ud) / ub) detail::bad(what, text, expected);
    v = v * ub + ud;
  }
  return v;
}

// Signed decimal integer in [lo, hi]; an optional leading '-', no '+', no spaces.
inline std::int64_t parse_i64(std::string_view text, std::string_view what, std::int64_t lo,
                              std::int64_t hi) {
  const std::string expected =
      "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  const bool neg = !text.empty() && text[0] == '-';
  const std::string_view digits = neg ? text.substr(1) : text;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    detail::bad(what, text, expected);
  }
  // Magnitude up to 2^63 (the magnitude of INT64_MIN).
  const std::uint64_t lim = std::uint64_t{1} << 63;
  std::uint64_t m = 0;
  for (const char c : digits) {
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (m > (lim - d) / 10) detail::bad(what, text, expected);
    m = m * 10 + d;
  }
  if (!neg && m == lim) detail::bad(what, text, expected);
  const std::int64_t v =
      neg ? (m == lim ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(m))
          : static_cast<std::int64_t>(m);
  if (v < lo || v > hi) detail::bad(what, text, expected);
  return v;
}

}  // namespace exmy::number
