// The rounding-mode registry (host only): the one place that spells the names of the rounding
// modes (docs/SEMANTICS.md 2, 3), the overflow policies (4.2), seed 003's masking (5) and the
// codebook tie rules (7.5), and parses and prints them. The CLI, the Python module, the golden
// corpus, the verification campaigns, the backend ABI and the GPU campaign all read and write
// rounding text through it. Every parser throws exmy::InputError naming the bad text and what
// was expected.
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/native/codebook_lookup.hpp"
#include "sim/native/mask.hpp"
#include "sim/native/rounding.hpp"

namespace exmy {

// ---- names -----------------------------------------------------------------------------------

// "rne" "rna" "rtz" "rup" "rdn" "rto" "sr" (sr without its R).
const char* round_mode_name(RoundMode m);
// Every mode, in enum order (sr last).
std::span<const RoundMode> round_modes();
// The deterministic modes in enum order, then sr:R for each R of `sr_bits`: the enumerations of
// the campaigns and the golden corpus.
std::vector<Rounding> rounding_sweep(std::initializer_list<int> sr_bits);

// "none" "satfinite" "sat".
const char* overflow_name(Overflow p);
// "even" (bitsandbytes CUDA) "lower" "bnb-cpu".
const char* tie_name(TieRule t);

// The mode as typed: "rne", "sr:8" (no overflow policy).
std::string rounding_name(const Rounding& r);
// The mode then, when not none, `sep` and the policy: "sr:8 satfinite" (sep " ", report labels),
// "rne+satfinite" (sep "+", the backend ABI's rounding string).
std::string rounding_text(const Rounding& r, std::string_view sep);

// The accepted spellings for usage and error texts, separated by `sep`:
// "rne|rna|rtz|rup|rdn|rto|sr:R", "none|satfinite|sat", "even|lower|bnb-cpu".
std::string round_mode_list(std::string_view sep);
std::string overflow_list(std::string_view sep);
std::string tie_list(std::string_view sep);

// ---- parsing ---------------------------------------------------------------------------------

// "rne" "rna" "rtz" "rup" "rdn" "rto" "sr:R" (R = 1..32).
Rounding parse_rounding(std::string_view mode);

// A rounding argument that may also be seed 003's masking:
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

// MODE or MODE+POLICY ("rne", "sr:8", "rne+satfinite"): the backend ABI's rounding string, the
// inverse of rounding_text(r, "+"); `what` names the argument in the message.
Rounding parse_rounding_text(std::string_view text, std::string_view what);

// "even" "lower" "bnb-cpu".
TieRule parse_tie(std::string_view text);

}  // namespace exmy
