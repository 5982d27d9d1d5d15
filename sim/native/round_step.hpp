// The two steps every rounding in exmy shares (docs/SEMANTICS.md section 2, steps 2 and 3):
// split a significand at the quantum, then decide the increment by the mode. Float, integer and
// int8-quantizer rounding and the GPU fast cast all call these, so the mode table exists once.
#pragma once

#include <cstdint>

#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::native {

// sig split at a quantum s bits above its lowest bit (s >= 1): the kept integer T, the
// discarded fraction of one quantum as 0.64 fixed point (top bit = one half), and the sticky
// bit of anything discarded below those 64 bits (or-ed with the caller's incoming sticky).
struct QuantumSplit {
  std::uint64_t t;
  std::uint64_t rem;
  bool sticky;
};

EXMY_HD QuantumSplit split_at_quantum(std::uint64_t sig, int s, bool sticky) {
  if (s < 64) return {sig >> s, sig << (64 - s), sticky};
  if (s == 64) return {0, sig, sticky};
  if (s < 128) return {0, sig >> (s - 64), sticky || (sig << (128 - s)) != 0};
  return {0, 0, sticky || sig != 0};
}

// T rounded by the mode table of section 2 step 3 (the increment is in magnitude, i.e. away
// from zero); `rand` holds the R random bits of sr:R in its low bits. `odd` is the parity that
// rne's ties and rto read: T's last bit, except for M = 0 formats with a zero, where it is the
// code's (code_parity_odd below). The caller handles the carry into the next binade (step 4).
EXMY_HD std::uint64_t round_quantum(const QuantumSplit& q, bool neg, const Rounding& r,
                                    std::uint32_t rand, bool odd) {
  const std::uint64_t t = q.t;
  const std::uint64_t rem = q.rem;
  const bool inexact = rem != 0 || q.sticky;
  switch (r.mode) {
    case RoundMode::rne:
      return t + ((rem >> 63) != 0 && ((rem << 1) != 0 || q.sticky || odd) ? 1 : 0);
    case RoundMode::rna:
      return t + (rem >> 63);
    case RoundMode::rtz:
      return t;
    case RoundMode::rup:
      return t + (!neg && inexact ? 1 : 0);
    case RoundMode::rdn:
      return t + (neg && inexact ? 1 : 0);
    case RoundMode::rto:  // round to odd: an inexact even result moves up to the odd neighbour
      return inexact && !odd ? t + 1 : t;
    case RoundMode::sr: {
      // Truncate the residual to R fractional bits, add the R-bit word; a carry rounds away.
      const int R = r.sr_bits;
      const std::uint64_t frac = rem >> (64 - R);
      return t + (frac + (rand & low_mask(R)) >= (std::uint64_t{1} << R) ? 1 : 0);
    }
  }
  return t;
}

// The same with T's own last bit as the parity (every format with M >= 1, integers, codebooks).
EXMY_HD std::uint64_t round_quantum(const QuantumSplit& q, bool neg, const Rounding& r,
                                    std::uint32_t rand) {
  return round_quantum(q, neg, r, rand, (q.t & 1) != 0);
}

// The parity rne and rto read for a float format f, the kept significand T (before rounding)
// at quantum 2^q (docs/SEMANTICS.md section 2, step 3). For M >= 1 it is T's last bit, which is
// the code's last bit. For M = 0 T is 1 in every binade, so T's bit says nothing: formats with a
// zero take the code's parity, the exponent field q + bias (IEEE P3109's CodeIsEven for P = 1;
// below 2^emin T is 0 or 1 and so is the code); formats without a zero (e8m0fnu, e4m0fnu, ...)
// keep T's bit, 1, as LLVM APFloat, ml_dtypes 0.7 and torch round them (ties up). exmy issue:
// ties of e7m0b64fnuz went up (6 -> 8, P3109 gives 4); regression test in
// tests/native/test_convert_basics.cpp ("[m0-ties]").
EXMY_HD bool code_parity_odd(const FloatFormat& f, std::uint64_t t, int q) {
  if (f.man_bits != 0 || !f.subnormals || t == 0) return (t & 1) != 0;
  return ((q + f.bias) & 1) != 0;
}

EXMY_HD bool split_inexact(const QuantumSplit& q) {
  return q.rem != 0 || q.sticky;
}

}  // namespace exmy::native
