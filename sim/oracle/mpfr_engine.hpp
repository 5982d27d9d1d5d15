// The MPFR oracle: an independent implementation of docs/SEMANTICS.md sections 1-4 on exact
// MPFR values. It shares no arithmetic with sim/native (it never calls native::unpack or
// native::round_pack, nor the FloatFormat helpers that derive limits and special codes): every
// limit and special code is re-derived here from the spec text, and rounding works on the exact
// value (quantum from mpfr_get_exp, exact scaling with mpfr_mul_2si, floor and fraction with
// MPFR, comparison of the fraction with 1/2). The campaigns in sim/verify prove that the two
// engines agree. Host only; thread-safe (per-thread scratch, MPFR built with TLS).
#pragma once

// <cstdint> before <mpfr.h> enables MPFR's intmax_t functions (mpfr_get_uj, ...).
#include <cstdint>
// clang-format off
#include <mpfr.h>
// clang-format on

#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::oracle {

// Independent derivations of section 1's tables (the oracle's own, not FloatFormat's).
ValueClass classify(const FloatFormat& f, std::uint64_t code);
// The largest finite positive code (section 1, "Largest finite").
std::uint64_t max_finite_code(const FloatFormat& f);
// Whether a NaN code exists. An IEEE-style format with M = 0 has no code with "e all ones,
// m != 0", so it has no NaN even though its convention is `ieee`.
bool has_nan_code(const FloatFormat& f);
bool has_zero(const FloatFormat& f);
bool has_negative_zero(const FloatFormat& f);
// The canonical NaN of section 4.1 (sign kept where the format carries it). Requires has_nan_code.
std::uint64_t canonical_nan(const FloatFormat& f, bool negative);

struct Decoded {
  ValueClass cls = ValueClass::zero;
  bool negative = false;
};

// Exact value of `code` into `out` (signed zeros, infinities, NaN with its sign bit). Raises out's
// precision to M + 1 when it is lower, so the result is always exact. Throws exmy::InputError when
// `code` has bits above the format's width.
Decoded decode(const FloatFormat& f, std::uint64_t code, mpfr_ptr out);

// Round the exact value x once into f (sections 2-4): code and flags. `rand` holds the R-bit word
// of sr:R in its low bits (higher bits are ignored). Throws exmy::InputError for sr_bits outside
// 1..32 in RoundMode::sr.
Encoded encode(const FloatFormat& f, const Rounding& r, mpfr_srcptr x, std::uint32_t rand = 0);

// Decode a code of `from` exactly, then encode into `to` (one rounding).
Encoded encode_code(const FloatFormat& from, std::uint64_t code, const FloatFormat& to,
                    const Rounding& r, std::uint32_t rand = 0);
// Convenience entries for fp32 and fp64 bit patterns.
inline Encoded encode_f32(std::uint32_t bits, const FloatFormat& to, const Rounding& r,
                          std::uint32_t rand = 0) {
  return encode_code(formats::fp32, bits, to, r, rand);
}
inline Encoded encode_f64(std::uint64_t bits, const FloatFormat& to, const Rounding& r,
                          std::uint32_t rand = 0) {
  return encode_code(formats::fp64, bits, to, r, rand);
}

}  // namespace exmy::oracle
