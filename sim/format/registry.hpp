// One name -> one number format: a binary float (FloatFormat), an integer (IntFormat) or an 8-bit
// codebook. The CLI (`exmy table`, `exmy cast`) and the reports enumerate codes, classify them,
// print their exact values and encode exact inputs through this single interface. Host only.
#pragma once

// <cstdint> before <mpfr.h> enables MPFR's intmax_t functions.
#include <cstdint>
// clang-format off
#include <mpfr.h>
// clang-format on

#include <memory>
#include <string>
#include <string_view>

#include "sim/format/codebook.hpp"
#include "sim/native/codebook_lookup.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/int_format.hpp"
#include "sim/native/rounding.hpp"

namespace exmy {

enum class FormatKind : std::uint8_t { floating, integer, codebook };

struct Format {
  std::string name;
  FormatKind kind = FormatKind::floating;
  FloatFormat fp{};                    // kind == floating
  IntFormat in{};                      // kind == integer
  std::shared_ptr<const Codebook> cb;  // kind == codebook

  int code_bits() const;
  // Number of codes, 2^code_bits (codes are 0 .. code_count() - 1, ascending; 0 for 64-bit fp64,
  // whose count does not fit).
  std::uint64_t code_count() const {
    return code_bits() >= 64 ? 0 : std::uint64_t{1} << code_bits();
  }
  bool is_signed() const;
  bool has_nan() const;
  ValueClass classify(std::uint64_t code) const;
  // Exact value of a code into `out` (its precision is raised as needed; NaN/inf with sign).
  void exact_value(std::uint64_t code, mpfr_ptr out) const;
  // Round the exact value x once into this format (docs/SEMANTICS.md sections 2-5). `rand` holds
  // the R-bit word of sr:R in its low bits. `tie` applies to codebooks only.
  Encoded encode(mpfr_srcptr x, const Rounding& r, std::uint32_t rand = 0,
                 TieRule tie = TieRule::even_index) const;
};

// Parses a format name; unknown names throw InputError listing the valid names and grammar.
Format parse_format(std::string_view name);
// The list of names and grammar, for error messages and --help.
std::string format_name_help();

// The exact value of a finite nonzero MPFR number as native::Unpacked (64-bit significand plus a
// sticky bit for anything below it); specials map to their classes.
native::Unpacked unpack_mpfr(mpfr_srcptr x);

}  // namespace exmy
