// Names of the IEEE P3109 formats and projection specifications (docs/SEMANTICS.md 1.2). The
// report's own spelling, §3.2 of the P3109 interim report v4.0: Binary<K>p<P><s|u><e|f>
// (binary8p3se, Binary12p7uf; the leading B in either case). Host only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/native/p3109.hpp"

namespace exmy {

// binary<K>p<P><s|u><e|f> with 3 <= K <= 16 and the report's P limits; nullopt if `name` does
// not have this shape; InputError if it does but K or P is out of range.
std::optional<native::P3109Format> parse_p3109_format(std::string_view name);
std::string p3109_format_name(const native::P3109Format& f);  // "binary8p3se"

// Rounding: rne rna rup rdn rtz rto (the report's NearestTiesToEven, NearestTiesToAway,
// TowardPositive, TowardNegative, TowardZero, ToOdd), sr-a:N sr-b:N sr-c:N (StochasticA/B/C
// with N = 1..32 random bits) and sr:N = sr-a:N (exmy's sr:R, SEMANTICS 3.1).
void parse_p3109_rounding(std::string_view text, native::P3109Projection& out);
// Saturation: satnone (or none), satfinite, satpropagate (or sat), ovfinf (v3.2.1).
native::P3109Sat parse_p3109_sat(std::string_view text);
std::string p3109_rounding_name(const native::P3109Projection& p);  // "rne", "sr-b:8"
const char* p3109_sat_name(native::P3109Sat s);                     // "satnone", ...

}  // namespace exmy
