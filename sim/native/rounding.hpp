// Rounding mode, overflow policy and the status flags of one conversion. Plain values: every
// conversion takes them as parameters (there is no global rounding state, no fesetround).
#pragma once

#include <cstdint>

#include "sim/native/hd.hpp"

namespace exmy {

enum class RoundMode : std::uint8_t {
  rne,  // nearest, ties to even
  rna,  // nearest, ties away from zero
  rtz,  // toward zero (also: seed 003's mantissa bitmask)
  rup,  // toward +inf
  rdn,  // toward -inf
  rto,  // round to odd: truncate, then set the last bit if anything was discarded
  sr,   // stochastic with `sr_bits` random bits (see docs/SEMANTICS.md section 3)
};

enum class Overflow : std::uint8_t {
  none,       // IEEE 754 7.4: inf where the format has it, else NaN, else +-max (by mode)
  satfinite,  // finite overflow and +-inf give +-max (CUDA __NV_SATFINITE)
  sat,        // finite overflow gives +-max; +-inf stays inf where the format has it
};

struct Rounding {
  RoundMode mode = RoundMode::rne;
  int sr_bits = 0;  // R, 1..32, only for RoundMode::sr
  Overflow overflow = Overflow::none;
  friend constexpr bool operator==(const Rounding&, const Rounding&) = default;
};

// IEEE-style exception flags of one conversion, as bits.
namespace flag {
inline constexpr std::uint32_t inexact = 1;
inline constexpr std::uint32_t overflow = 2;
inline constexpr std::uint32_t underflow = 4;  // tiny and inexact
inline constexpr std::uint32_t invalid =
    8;  // NaN into a format without NaN; negative into unsigned
}  // namespace flag

struct Encoded {
  std::uint64_t code = 0;
  std::uint32_t flags = 0;
};

}  // namespace exmy
