// Exact text <-> MPFR for user-facing numbers (the CLI's inputs and outputs).
#pragma once

// <cstdint> before <mpfr.h> enables MPFR's intmax_t functions (mpfr_get_uj, ...).
#include <cstdint>
// clang-format off
#include <mpfr.h>
// clang-format on

#include <string>
#include <string_view>

namespace exmy::oracle {

// Working precision of parsed text: decimal text is held rounded to odd at this precision, which
// is enough for one correct rounding into any format with M <= 52 in every mode, sr:32 included
// (proof in exact_text.cpp). 256 >= 53 + 32 + 2 with room to spare.
inline constexpr mpfr_prec_t kTextPrecision = 256;

// Parses `text` into `out` (its precision is set to kTextPrecision):
//   [+|-] ( decimal | hexfloat | inf | infinity | nan )
//   decimal  = digits [ "." [digits] ] [ (e|E) [+|-] digits ]  |  "." digits [exponent]
//   hexfloat = (0x|0X) hexdigits [ "." [hexdigits] ] [ (p|P) [+|-] digits ]  (or "." hexdigits)
// "inf"/"nan" are case-insensitive; "-nan" carries its sign; "-0" is negative zero. Values whose
// exponent leaves MPFR's range, empty or malformed text throw exmy::InputError naming the text.
// Returns true when `out` holds the value exactly, false when it holds the round-to-odd image.
bool parse_exact(std::string_view text, mpfr_ptr out);

// The exact value of x as normalised C99 hex-float text: leading digit 1, no trailing zero hex
// digits, decimal exponent with explicit sign ("0x1.cp+8", "-0x1p-9"); zeros are "0x0p+0" and
// "-0x0p+0"; specials "inf", "-inf", "nan", "-nan".
std::string hexfloat_text(mpfr_srcptr x);

}  // namespace exmy::oracle
