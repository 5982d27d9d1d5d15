// Argument helpers shared by the subcommands: rounding modes, overflow policies, integers, flags
// and JSON text. Every parser throws exmy::InputError naming the bad text and what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/common/error.hpp"
#include "sim/native/codebook_lookup.hpp"
#include "sim/native/mask.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::cli {

// "rne" "rna" "rtz" "rup" "rdn" "rto" "sr:R" (R = 1..32).
Rounding parse_rounding(std::string_view mode);

// A --round argument of `exmy cast`: a rounding mode, or seed 003's masking
//   mask[:outer=clamp|keep][,inner=min|zero|keep]   (defaults outer=clamp, inner=min)
struct RoundSpec {
  Rounding rounding{};
  bool mask = false;
  MaskOuter outer = MaskOuter::clamp;
  MaskInner inner = MaskInner::min;
};
RoundSpec parse_round_spec(std::string_view text);

// "none" "satfinite" "sat".
Overflow parse_overflow(std::string_view text);

// "even" (bitsandbytes CUDA), "lower", "bnb-cpu".
TieRule parse_tie(std::string_view text);

// A decimal or 0x-hex unsigned integer <= max; `what` names the option in the message.
std::uint64_t parse_uint(std::string_view text, const std::string& what, std::uint64_t max);

// The value following option args[i] (advancing i); InputError if it is missing.
template <typename Args>
const std::string& option_value(const Args& args, std::size_t& i) {
  if (i + 1 >= args.size()) {
    throw InputError("option " + args[i] + " needs a value");
  }
  return args[++i];
}

// Flag names of an exmy::flag bit set, as a JSON array: ["inexact","overflow"].
std::string flags_json(std::uint32_t flags);
// The same, space separated ("-" when none), for plain text.
std::string flags_text(std::uint32_t flags);

// A JSON string literal of s (quotes, backslashes and control characters escaped).
std::string json_string(std::string_view s);

}  // namespace exmy::cli
