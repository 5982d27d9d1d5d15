#include "sim/format/p3109_names.hpp"

#include <cctype>

#include "sim/common/error.hpp"

namespace exmy {

namespace {

// Digits at `pos` as an int (at most 3 digits); -1 if none.
int read_int(std::string_view s, std::size_t& pos) {
  int v = 0, n = 0;
  while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])) && n < 3) {
    v = v * 10 + (s[pos] - '0');
    ++pos;
    ++n;
  }
  return n == 0 ? -1 : v;
}

}  // namespace

std::optional<native::P3109Format> parse_p3109_format(std::string_view name) {
  if (name.size() < 10 || (name[0] != 'b' && name[0] != 'B') || name.substr(1, 5) != "inary")
    return std::nullopt;
  std::size_t pos = 6;
  const int k = read_int(name, pos);
  if (k < 0 || pos >= name.size() || name[pos] != 'p') return std::nullopt;
  ++pos;
  const int p = read_int(name, pos);
  if (p < 0 || pos + 2 != name.size()) return std::nullopt;
  const char sg = name[pos], dm = name[pos + 1];
  if ((sg != 's' && sg != 'u') || (dm != 'e' && dm != 'f')) return std::nullopt;
  native::P3109Format f{k, p, sg == 's', dm == 'e'};
  if (!f.valid()) {
    throw InputError("P3109 format '" + std::string(name) +
                     "': expected 3 <= K <= 16 and 1 <= P < K (signed) or 1 <= P <= K (unsigned)");
  }
  return f;
}

std::string p3109_format_name(const native::P3109Format& f) {
  return "binary" + std::to_string(f.k) + "p" + std::to_string(f.p) + (f.is_signed ? "s" : "u") +
         (f.extended ? "e" : "f");
}

void parse_p3109_rounding(std::string_view t, native::P3109Projection& out) {
  using native::P3109Round;
  const struct {
    const char* name;
    P3109Round mode;
  } fixed[] = {{"rne", P3109Round::nearest_even},    {"rna", P3109Round::nearest_away},
               {"rup", P3109Round::toward_positive}, {"rdn", P3109Round::toward_negative},
               {"rtz", P3109Round::toward_zero},     {"rto", P3109Round::to_odd}};
  for (const auto& m : fixed) {
    if (t == m.name) {
      out.mode = m.mode;
      out.n = 0;
      return;
    }
  }
  const struct {
    const char* prefix;
    P3109Round mode;
  } sr[] = {{"sr:", P3109Round::sr_a},
            {"sr-a:", P3109Round::sr_a},
            {"sr-b:", P3109Round::sr_b},
            {"sr-c:", P3109Round::sr_c}};
  for (const auto& m : sr) {
    const std::string_view pre = m.prefix;
    if (t.substr(0, pre.size()) != pre) continue;
    std::size_t pos = pre.size();
    const int n = read_int(t, pos);
    if (n < 1 || n > 32 || pos != t.size()) {
      throw InputError("--round '" + std::string(t) + "': N must be 1..32");
    }
    out.mode = m.mode;
    out.n = n;
    return;
  }
  throw InputError("--round '" + std::string(t) +
                   "' for a P3109 format: expected rne|rna|rup|rdn|rtz|rto|sr:N|sr-a:N|sr-b:N|"
                   "sr-c:N");
}

native::P3109Sat parse_p3109_sat(std::string_view t) {
  using native::P3109Sat;
  if (t == "satnone" || t == "none") return P3109Sat::sat_none;
  if (t == "satfinite") return P3109Sat::sat_finite;
  if (t == "satpropagate" || t == "sat") return P3109Sat::sat_propagate;
  if (t == "ovfinf") return P3109Sat::ovf_inf;
  throw InputError("--overflow '" + std::string(t) +
                   "' for a P3109 format: expected satnone|satfinite|satpropagate|ovfinf");
}

std::string p3109_rounding_name(const native::P3109Projection& p) {
  using native::P3109Round;
  switch (p.mode) {
    case P3109Round::nearest_even:
      return "rne";
    case P3109Round::nearest_away:
      return "rna";
    case P3109Round::toward_positive:
      return "rup";
    case P3109Round::toward_negative:
      return "rdn";
    case P3109Round::toward_zero:
      return "rtz";
    case P3109Round::to_odd:
      return "rto";
    case P3109Round::sr_a:
      return "sr-a:" + std::to_string(p.n);
    case P3109Round::sr_b:
      return "sr-b:" + std::to_string(p.n);
    case P3109Round::sr_c:
      return "sr-c:" + std::to_string(p.n);
  }
  return "?";
}

const char* p3109_sat_name(native::P3109Sat s) {
  switch (s) {
    case native::P3109Sat::sat_none:
      return "satnone";
    case native::P3109Sat::sat_finite:
      return "satfinite";
    case native::P3109Sat::sat_propagate:
      return "satpropagate";
    case native::P3109Sat::ovf_inf:
      return "ovfinf";
  }
  return "?";
}

}  // namespace exmy
