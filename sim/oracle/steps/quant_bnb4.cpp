// docs/SEMANTICS.md 7.14: bitsandbytes' NF4 and FP4 element steps, from the document's tables of
// decimal literals (parsed exactly and rounded once to fp32) and its comparison rules.
#include <cmath>
#include <stdexcept>

#include "sim/oracle/exact_text.hpp"
#include "sim/oracle/steps/quant_detail.hpp"

namespace exmy::oracle::steps::quant {
namespace {

// The fp32 value of a decimal literal (one rounding, to nearest even, as a C `f` suffix).
Real f32_literal(const char* text) {
  mpfr_t v;
  mpfr_init2(v, kTextPrecision);
  parse_exact(text, v);
  const float f = mpfr_get_flt(v, MPFR_RNDN);
  mpfr_clear(v);
  std::uint32_t bits;
  static_assert(sizeof bits == sizeof f);
  __builtin_memcpy(&bits, &f, sizeof bits);
  return Real::of_f32_bits(bits);
}

const char* const kNf4Levels[16] = {"-1.0",
                                    "-0.6961928009986877",
                                    "-0.5250730514526367",
                                    "-0.39491748809814453",
                                    "-0.28444138169288635",
                                    "-0.18477343022823334",
                                    "-0.09105003625154495",
                                    "0.0",
                                    "0.07958029955625534",
                                    "0.16093020141124725",
                                    "0.24611230194568634",
                                    "0.33791524171829224",
                                    "0.44070982933044434",
                                    "0.5626170039176941",
                                    "0.7229568362236023",
                                    "1.0"};
const char* const kNf4Thresholds[15] = {
    "-0.8480964004993439",  "-0.6106329262256622",  "-0.4599952697753906",   "-0.33967943489551544",
    "-0.23460740596055984", "-0.13791173323988914", "-0.045525018125772476", "0.03979014977812767",
    "0.1202552504837513",   "0.2035212516784668",   "0.2920137718319893",    "0.3893125355243683",
    "0.5016634166240692",   "0.6427869200706482",   "0.8614784181118011"};
const char* const kFp4Magnitudes[8] = {"0.0", "0.005208333333", "0.66666667", "1.0", "0.33333333",
                                       "0.5", "0.16666667",     "0.25"};
const char* const kFp4Thresholds[7] = {"0.00260417", "0.0859375", "0.20833333", "0.29166667",
                                       "0.4166667",  "0.583333",  "0.8333333"};
// Magnitude codes by ascending value: 0, 1/192, 1/6, 1/4, 1/3, 1/2, 2/3, 1.
const std::uint8_t kFp4Rank[8] = {0b000, 0b001, 0b110, 0b111, 0b100, 0b101, 0b010, 0b011};

// FTZ: a subnormal fp32 value is the zero of its sign.
Real ftz(const Real& x) {
  if (!x.is_finite() || x.is_zero()) return x;
  if (lt(abs(x), Real::of_double(0x1p-126))) return x.signbit() ? neg(Real()) : Real();
  return x;
}

}  // namespace

Real bnb4_level(Bnb4 t, int k) {
  return f32_literal(t == Bnb4::nf4 ? kNf4Levels[k] : kFp4Magnitudes[k]);
}
Real bnb4_threshold(Bnb4 t, int k) {
  return f32_literal(t == Bnb4::nf4 ? kNf4Thresholds[k] : kFp4Thresholds[k]);
}

std::uint8_t bnb4_code(Bnb4 t, const Real& n) {
  if (t == Bnb4::nf4) {
    int c = 0;
    for (int k = 0; k < 15; ++k) c += gt(n, bnb4_threshold(t, k)) ? 1 : 0;
    return static_cast<std::uint8_t>(c);
  }
  const Real m = abs(n);
  int r = 0;
  for (int k = 0; k < 7; ++k) r += gt(m, bnb4_threshold(t, k)) ? 1 : 0;
  const std::uint8_t sign = lt(n, Real()) ? 0b1000 : 0;
  return static_cast<std::uint8_t>(kFp4Rank[r] | sign);
}

Real bnb4_value(Bnb4 t, std::uint8_t code, const Real& a) {
  Real level = bnb4_level(t, t == Bnb4::nf4 ? (code & 0x0F) : (code & 0b111));
  if (t == Bnb4::fp4 && (code & 0b1000)) level = neg(level);
  return ftz(mul(F32, level, ftz(a)));
}

}  // namespace exmy::oracle::steps::quant
