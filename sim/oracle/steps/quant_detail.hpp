// Shared pieces of the quantization oracle (quant.hpp): exact powers of two and binary logs,
// clamps with the document's NaN rules, the element cast through the oracle's encode, and the
// random words of section 3.2. Private to sim/oracle/steps.
#pragma once

#include <cstdint>

#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/steps/philox.hpp"
#include "sim/oracle/steps/quant.hpp"

namespace exmy::oracle::steps::quant::detail {

inline constexpr std::uint32_t kStreamCast = 16;      // 7.3, 7.4, 7.6 element casts
inline constexpr std::uint32_t kStreamCodebook = 17;  // 7.5 stochastic lookups

inline Real R(double x) {
  return Real::of_double(x);
}
// 2^k exactly (k within MPFR's exponent range).
Real exp2(long k);
// ⌊log2 |a|⌋ of a finite nonzero value (exact: the position of its leading bit).
long floor_log2(const Real& a);
// Whether |a| is a power of two.
bool is_pow2(const Real& a);
// x · 2^k exactly.
Real scale2(const Real& x, long k);
// The largest finite value of f (the oracle's own derivation, section 1).
Real fmax_of(const FloatFormat& f);
// The fp32 value with the bits `u` (the oracle reads a few formulas of the document on bits).
Real f32(std::uint32_t u);
// A NaN result of CUDA fp32 arithmetic (7.6, 7.11): positive (0x7FFFFFFF); other values as is.
Real cuda(const Real& x);
// The fp32 operations of section 7 (RN32 each): a NaN result is the canonical +NaN 0x7FC00000
// (section 7's preamble), so the sign of a NaN code produced after a scaling step is positive.
inline Real canon(const Real& x) {
  return x.is_nan() ? Real::nan() : x;
}
inline Real add32(const Real& a, const Real& b) {
  return canon(add(F32, a, b));
}
inline Real sub32(const Real& a, const Real& b) {
  return canon(sub(F32, a, b));
}
inline Real mul32(const Real& a, const Real& b) {
  return canon(mul(F32, a, b));
}
inline Real div32(const Real& a, const Real& b) {
  return canon(div(F32, a, b));
}
// torch.clamp(x, lo, hi): NaN stays NaN.
Real clamp(const Real& x, const Real& lo, const Real& hi);
// torch.minimum / maximum with a constant: NaN propagates.
Real min_nan(const Real& a, const Real& b);

// Section 2's single rounding of x into f with the mode of r and the overflow policy `ov`;
// `word` is the R-bit word of sr:R in its low bits.
std::uint64_t cast(const FloatFormat& f, const Real& x, const Rounding& r, Overflow ov,
                   std::uint32_t word);
// The exact value of a code of f (NaN for NaN codes).
Real value(const FloatFormat& f, std::uint64_t code);

// Section 3.2: the word of element i in `stream` under `seed`, and its top R bits for sr:R.
std::uint32_t word(std::uint64_t seed, std::uint32_t stream, std::uint64_t i);
std::uint32_t sr_word(const Rounding& r, std::uint64_t seed, std::uint32_t stream, std::uint64_t i);

}  // namespace exmy::oracle::steps::quant::detail

namespace exmy::oracle::steps::quant::detail {

// ---- the schemes' element steps (one file each)
// --------------------------------------------------- 7.3 int8: the code (two's complement pattern)
// of element i with group state a; dequantization.
std::uint64_t int8_code(const Spec& s, const Real& x, const Real& a, std::uint64_t i);
Real int8_dequant(std::uint64_t code, const Real& a);
// 7.4 scaled casts: the group state from its absmax, the code of element i, dequantization.
Real cast_state(const Spec& s, const Real& a);
std::uint64_t cast_code(const Spec& s, const Real& x, const Real& state, std::uint64_t i);
Real cast_dequant(const Spec& s, std::uint64_t code, const Real& state);
// 7.5 codebooks.
std::uint64_t codebook_code(const Spec& s, const Real& x, const Real& a, std::uint64_t i);
Real codebook_dequant(const Spec& s, std::uint64_t code, const Real& a);
// 7.6 MX: the E8M0 scale code of a block, the element code, dequantization.
std::uint8_t mx_scale(const Spec& s, const Real& a);
std::uint64_t mx_code(const Spec& s, const Real& x, std::uint8_t scale, std::uint64_t i);
Real mx_dequant(const Spec& s, std::uint64_t code, std::uint8_t scale);
// 7.11 NVFP4: the tensor level, the E4M3 block scale code, the element code, dequantization.
struct Nvfp4Level {
  bool two_level = false;
  Real pts;       // torchao: the per-tensor scale
  Real ges, gds;  // te: global encode / decode scales
  Real mult;      // te: ges ⊗ RN32(1/6)
};
Nvfp4Level nvfp4_level(const Spec& s, const Real& tensor_absmax);
Nvfp4Level nvfp4_level_from_stored(const Spec& s, const Real& stored);
Real nvfp4_stored(const Spec& s, const Nvfp4Level& t);
std::uint8_t nvfp4_scale(const Spec& s, const Nvfp4Level& t, const Real& a);
std::uint64_t nvfp4_code(const Spec& s, const Nvfp4Level& t, const Real& x, std::uint8_t scale);
Real nvfp4_dequant(const Spec& s, const Nvfp4Level& t, std::uint64_t code, std::uint8_t scale);

// 7.15 2-D block scaling under a library rule (spec.tile_rule): the tile's internal scale from
// its absmax (NaN handled by the rule), the stored (dequantization) scale, the element code with
// the internal scale, dequantization with the stored one.
Real tile_scale(const Spec& s, const Real& a);
Real tile_stored(const Spec& s, const Real& scale);
std::uint64_t tile_code(const Spec& s, const Real& x, const Real& scale);
Real tile_dequant(const Spec& s, std::uint64_t code, const Real& stored);
// The rule's NaN handling of the absmax (deepgemm, te: torch.amax propagates; torchao: skipped).
NanRule tile_nan(const Spec& s);

}  // namespace exmy::oracle::steps::quant::detail

namespace exmy::oracle::steps::quant::detail {
// 7.3's y = qmax·x/a in order o (also the absmax variant of 7.4 with qmax = fmax).
Real scaled_value(Order o, const Real& x, const Real& a, const Real& qmax);
}  // namespace exmy::oracle::steps::quant::detail
