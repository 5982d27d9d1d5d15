// Integer formats (int8 symmetric as SwitchBack uses, two's complement intNfull, uintN) and the
// rounding of an exact value onto them: the same routine as native::round_pack with the quantum
// fixed at 1 (docs/SEMANTICS.md section 5.1). Host and device; no floating-point arithmetic.
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/round_step.hpp"
#include "sim/native/rounding.hpp"

namespace exmy {

struct IntFormat {
  int bits = 8;           // 2..32
  bool is_signed = true;  // false: 0 .. 2^N - 1
  bool symmetric = true;  // signed only: -(2^(N-1) - 1) .. 2^(N-1) - 1 (the code 100..0 unused)

  friend constexpr bool operator==(const IntFormat&, const IntFormat&) = default;

  EXMY_HD constexpr std::uint64_t code_mask() const { return low_mask(bits); }
  EXMY_HD constexpr std::int64_t max_value() const {
    return is_signed ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1;
  }
  EXMY_HD constexpr std::int64_t min_value() const {
    if (!is_signed) return 0;
    return symmetric ? -max_value() : -(std::int64_t{1} << (bits - 1));
  }
  // Two's complement bit pattern of v in `bits` bits (the code).
  EXMY_HD constexpr std::uint64_t code_of(std::int64_t v) const {
    return static_cast<std::uint64_t>(v) & code_mask();
  }
  // The integer a code stands for (sign-extended for signed formats). In a symmetric format the
  // unused code 100..0 reads as -2^(N-1), as an int8 tensor holding it would; encode never makes
  // it.
  EXMY_HD constexpr std::int64_t value_of(std::uint64_t code) const {
    code &= code_mask();
    if (is_signed && ((code >> (bits - 1)) & 1) != 0) {
      return static_cast<std::int64_t>(code) - (std::int64_t{1} << bits);
    }
    return static_cast<std::int64_t>(code);
  }
  // Whether encode can produce this code.
  EXMY_HD constexpr bool reachable(std::uint64_t code) const {
    const std::int64_t v = value_of(code);
    return v >= min_value() && v <= max_value();
  }
};

namespace int_formats {
inline constexpr IntFormat int8{8, true, true};
inline constexpr IntFormat int8full{8, true, false};
inline constexpr IntFormat uint8{8, false, false};
}  // namespace int_formats

namespace native {

// Saturation at the format's limit (every overflow policy: an integer format has neither inf nor
// NaN, so section 4.2's "inf, else NaN, else +-max" is +-max under none, sat and satfinite alike).
EXMY_HD Encoded int_saturate(const IntFormat& f, bool neg) {
  return {f.code_of(neg ? f.min_value() : f.max_value()), flag::overflow | flag::inexact};
}

// Round (-1)^neg * sig * 2^(exp-63) (+ sticky below sig) to an integer: quantum 1, the mode table
// of section 2, then saturation. `rand` carries the R random bits of sr:R in its low bits.
EXMY_HD Encoded int_round_pack(const IntFormat& f, const Rounding& r, bool neg, int exp,
                               std::uint64_t sig, bool sticky, std::uint32_t rand) {
  if (!f.is_signed && neg) return {0, flag::invalid};  // section 4.1: negative into unsigned
  // |x| >= 2^33 exceeds every limit (<= 2^32 - 1) whatever the mode; no rounding can bring it back.
  if (exp >= 33) return int_saturate(f, neg);
  const int s = 63 - exp;  // fraction bits of sig; >= 31
  const QuantumSplit split = split_at_quantum(sig, s, sticky);
  const bool inexact = split_inexact(split);
  const std::uint64_t t = round_quantum(split, neg, r, rand);
  const std::uint32_t flags = inexact ? flag::inexact : 0;
  if (t == 0) return {0, flags};  // integers have no -0
  const std::uint64_t limit = static_cast<std::uint64_t>(neg ? -f.min_value() : f.max_value());
  if (t > limit) return int_saturate(f, neg);
  const std::int64_t v = neg ? -static_cast<std::int64_t>(t) : static_cast<std::int64_t>(t);
  return {f.code_of(v), flags};
}

// Encode an unpacked value (specials first): NaN -> 0 with `invalid` (no NaN code, as section 4.1
// for formats without NaN); +-inf -> the saturated limit with `overflow`; +-0 -> 0; a negative
// nonzero input into an unsigned format -> 0 with `invalid` (section 4.1), whatever the mode.
EXMY_HD Encoded int_encode(const IntFormat& f, const Rounding& r, const Unpacked& u,
                           std::uint32_t rand = 0) {
  switch (u.cls) {
    case ValueClass::nan:
      return {0, flag::invalid};
    case ValueClass::inf:
      if (!f.is_signed && u.negative) return {0, flag::invalid};
      return int_saturate(f, u.negative);
    case ValueClass::zero:
      return {0, 0};
    default:
      break;
  }
  if (!f.is_signed && u.negative) return {0, flag::invalid};
  return int_round_pack(f, r, u.negative, u.exp, u.sig, u.sticky, rand);
}

// Convert a code of float format `from` (fp32, bf16, ...) to the integer format.
EXMY_HD Encoded int_convert(const FloatFormat& from, const IntFormat& to, const Rounding& r,
                            std::uint64_t code, std::uint32_t rand = 0) {
  return int_encode(to, r, unpack(from, code), rand);
}

}  // namespace native
}  // namespace exmy
