// The MPFR oracle (see mpfr_engine.hpp). Each step below cites the paragraph of
// docs/SEMANTICS.md it implements; no code is shared with sim/native/convert.hpp.
#include "sim/oracle/mpfr_engine.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "sim/common/error.hpp"

namespace exmy::oracle {
namespace {

std::uint64_t ones(int n) {
  return n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
}

std::uint64_t magnitude_ones(const FloatFormat& f) {
  return ones(f.exp_bits + f.man_bits);
}
std::uint64_t sign_mask(const FloatFormat& f) {
  return f.is_signed ? std::uint64_t{1} << (f.exp_bits + f.man_bits) : 0;
}
// Unbiased exponent of the lowest normal binade (section 1: emin = 1 - bias with subnormals,
// -bias without, where exponent field 0 is an ordinary binade).
long emin_of(const FloatFormat& f) {
  return f.subnormals ? 1L - f.bias : -static_cast<long>(f.bias);
}

[[noreturn]] void internal(const char* what) {
  throw std::logic_error(std::string("oracle invariant broken: ") + what);
}

// Per-thread scratch numbers: MPFR allocation would otherwise dominate the cost of a conversion.
struct Scratch {
  mpfr_t scaled;  // |x| / 2^q, exact (precision of x)
  mpfr_t whole;   // floor of a scaled value (< 2^64, so 64 bits hold it exactly)
  mpfr_t frac;    // the residual f in [0, 1), exact
  mpfr_t bits;    // f * 2^R, exact
  mpfr_t value;   // the rounded magnitude T * 2^q (T < 2^54)
  mpfr_t limit;   // the largest finite value of the target
  mpfr_t input;   // decoded inputs of encode_code
  Scratch() {
    mpfr_inits2(64, scaled, whole, frac, bits, value, limit, input, static_cast<mpfr_ptr>(nullptr));
  }
  ~Scratch() {
    mpfr_clears(scaled, whole, frac, bits, value, limit, input, static_cast<mpfr_ptr>(nullptr));
  }
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

void ensure_prec(mpfr_ptr v, mpfr_prec_t p) {
  if (mpfr_get_prec(v) != p) mpfr_set_prec(v, p);
}

// floor(v) as an integer, for 0 <= v < 2^64.
std::uint64_t floor_u64(mpfr_ptr whole, mpfr_srcptr v) {
  const int t = mpfr_floor(whole, v);
  if (t == 1 || t == -1) internal("floor does not fit 64 bits");
  return mpfr_get_uj(whole, MPFR_RNDZ);
}

// Section 4.1, the result of an invalid operation: the format's NaN, or +0 where it has none.
Encoded invalid_result(const FloatFormat& f, bool negative) {
  if (has_nan_code(f)) return {canonical_nan(f, negative), flag::invalid};
  return {0, flag::invalid};
}

std::uint64_t max_code_signed(const FloatFormat& f, bool negative) {
  return (negative ? sign_mask(f) : 0) | max_finite_code(f);
}

std::uint64_t inf_code(const FloatFormat& f, bool negative) {
  return (negative ? sign_mask(f) : 0) | (ones(f.exp_bits) << f.man_bits);
}

// Section 4.2: where a finite value that rounded above the largest finite goes.
Encoded overflow_result(const FloatFormat& f, const Rounding& r, bool negative) {
  bool toward_inf = false;
  if (r.overflow == Overflow::none) {
    switch (r.mode) {
      case RoundMode::rne:
      case RoundMode::rna:
      case RoundMode::sr:
        toward_inf = true;
        break;
      case RoundMode::rtz:
      case RoundMode::rto:
        toward_inf = false;
        break;
      case RoundMode::rup:
        toward_inf = !negative;
        break;
      case RoundMode::rdn:
        toward_inf = negative;
        break;
    }
  }
  const std::uint32_t fl = flag::overflow | flag::inexact;
  // "inf" means inf where the format has it, else NaN, else +-max.
  if (toward_inf && f.has_inf) return {inf_code(f, negative), fl};
  if (toward_inf && has_nan_code(f)) return {canonical_nan(f, negative), fl};
  return {max_code_signed(f, negative), fl};
}

// Section 4.1/4.2 for an infinite input.
Encoded infinity_input(const FloatFormat& f, const Rounding& r, bool negative) {
  // 4.1's rule for unsigned formats is the more specific one: -inf is invalid even under
  // satfinite (there is no -max to saturate to).
  if (!f.is_signed && negative) return invalid_result(f, negative);
  const std::uint32_t saturated = flag::overflow | flag::inexact;
  if (r.overflow == Overflow::satfinite) return {max_code_signed(f, negative), saturated};
  if (f.has_inf) return {inf_code(f, negative), 0};
  if (has_nan_code(f)) return {canonical_nan(f, negative), flag::invalid};
  return {max_code_signed(f, negative), saturated};
}

// Section 4.1 for a zero input.
Encoded zero_input(const FloatFormat& f, bool negative) {
  if (!has_zero(f)) return invalid_result(f, negative);
  return {(negative && has_negative_zero(f)) ? sign_mask(f) : 0, 0};
}

// The code of a positive finite value v that is a point of f's grid within range.
std::uint64_t code_of_grid_value(const FloatFormat& f, mpfr_srcptr v, Scratch& s) {
  const int M = f.man_bits;
  const long e = mpfr_get_exp(v) - 1;  // v in [2^e, 2^(e+1))
  const long emin = emin_of(f);
  std::uint64_t efield, mfield;
  if (f.subnormals && e < emin) {
    // Subnormal: v = m * 2^(emin - M).
    if (mpfr_mul_2si(s.bits, v, M - emin, MPFR_RNDN) != 0) internal("subnormal scaling");
    efield = 0;
    mfield = floor_u64(s.whole, s.bits);
    if (!mpfr_integer_p(s.bits) || mfield == 0 || mfield >> M != 0) internal("subnormal grid");
  } else {
    // Normal: v = (2^M + m) * 2^(e - M), exponent field e + bias.
    if (mpfr_mul_2si(s.bits, v, M - e, MPFR_RNDN) != 0) internal("normal scaling");
    const std::uint64_t sig = floor_u64(s.whole, s.bits);
    if (!mpfr_integer_p(s.bits) || sig >> M != 1) internal("normal grid");
    if (e + f.bias < 0) internal("exponent field below zero");
    efield = static_cast<std::uint64_t>(e + f.bias);
    mfield = sig - (std::uint64_t{1} << M);
  }
  return (efield << M) | mfield;
}

void check_rounding(const Rounding& r) {
  if (r.mode == RoundMode::sr && (r.sr_bits < 1 || r.sr_bits > 32)) {
    throw InputError("stochastic rounding sr:" + std::to_string(r.sr_bits) +
                     ": expected 1 to 32 random bits");
  }
}

// Section 2 for a finite nonzero x (sign already admitted by the format).
Encoded round_finite(const FloatFormat& f, const Rounding& r, bool negative, mpfr_srcptr x,
                     std::uint32_t rand) {
  Scratch& s = scratch();
  const int M = f.man_bits;
  const long exp = mpfr_get_exp(x) - 1;  // |x| in [2^exp, 2^(exp+1))
  const long emin = emin_of(f);
  const bool tiny = exp < emin;
  // Step 1: the quantum. Below the normal range a format without subnormals holds only 0 and
  // 2^emin, so its quantum is 2^emin.
  long q = !tiny ? exp - M : (f.subnormals ? emin - M : emin);

  // Step 2: T = floor(|x| / 2^q) and f = |x| / 2^q - T, both exact.
  const mpfr_prec_t p = std::max<mpfr_prec_t>(mpfr_get_prec(x), 2);
  ensure_prec(s.scaled, p);
  ensure_prec(s.frac, p);
  ensure_prec(s.bits, std::max<mpfr_prec_t>(p, 64));
  if (mpfr_abs(s.scaled, x, MPFR_RNDN) != 0) internal("abs");
  if (mpfr_mul_2si(s.scaled, s.scaled, -q, MPFR_RNDN) != 0) internal("scaling by the quantum");
  std::uint64_t T = floor_u64(s.whole, s.scaled);
  if (mpfr_frac(s.frac, s.scaled, MPFR_RNDN) != 0) internal("fraction");
  const bool inexact = !mpfr_zero_p(s.frac);
  const int vs_half = inexact ? mpfr_cmp_ui_2exp(s.frac, 1, -1) : -1;  // sign of f - 1/2

  // Step 3: the mode decides whether T moves one quantum away from zero. The parity of rne's
  // ties and of rto: T's last bit, except for M = 0 formats with a zero, whose T is 1 in every
  // binade: there the parity is the code's, the exponent field q + bias (below 2^emin, T = 0 is
  // code 0 and T = 1 code 1).
  const bool odd = (M == 0 && f.subnormals && T != 0) ? ((q + f.bias) & 1) != 0 : (T & 1) == 1;
  bool up = false;
  switch (r.mode) {
    case RoundMode::rne:
      up = vs_half > 0 || (vs_half == 0 && odd);
      break;
    case RoundMode::rna:
      up = vs_half >= 0;
      break;
    case RoundMode::rtz:
      break;
    case RoundMode::rup:
      up = inexact && !negative;
      break;
    case RoundMode::rdn:
      up = inexact && negative;
      break;
    case RoundMode::rto:
      up = inexact && !odd;  // an inexact even result moves to the odd neighbour
      break;
    case RoundMode::sr: {
      // Section 3.1: floor(f * 2^R) + w >= 2^R rounds away from zero.
      const int R = r.sr_bits;
      if (mpfr_mul_2si(s.bits, s.frac, R, MPFR_RNDN) != 0) internal("residual scaling");
      const std::uint64_t kept = floor_u64(s.whole, s.bits);
      const std::uint64_t word = rand & ones(R);
      up = kept + word >= (std::uint64_t{1} << R);
      break;
    }
  }
  if (up) ++T;
  // Step 4: a carry into 2^(M+1) moves to the next binade.
  if (T == (std::uint64_t{2} << M)) {
    T >>= 1;
    ++q;
  }
  std::uint32_t flags = inexact ? flag::inexact : 0;
  if (tiny && inexact) flags |= flag::underflow;
  const std::uint64_t sign = negative ? sign_mask(f) : 0;

  // Step 5: zero, or the smallest value for a format without zero.
  if (T == 0) {
    if (has_zero(f)) return {(negative && has_negative_zero(f)) ? sign : 0, flags};
    if (!tiny || f.subnormals) internal("zero without tininess");
    T = 1;  // q = emin here: the smallest value 2^emin
    flags |= flag::underflow;
  }
  // Step 6: overflow is decided on the rounded value T * 2^q with an unbounded exponent.
  ensure_prec(s.value, 64);
  if (mpfr_set_uj_2exp(s.value, T, q, MPFR_RNDN) != 0) internal("rounded value");
  decode(f, max_finite_code(f), s.limit);
  if (mpfr_cmp(s.value, s.limit) > 0) return overflow_result(f, r, negative);
  const std::uint64_t mag = code_of_grid_value(f, s.value, s);
  const ValueClass cls = classify(f, mag);
  if (cls != ValueClass::normal && cls != ValueClass::subnormal) internal("result is not finite");
  return {sign | mag, flags};
}

}  // namespace

ValueClass classify(const FloatFormat& f, std::uint64_t code) {
  const int M = f.man_bits;
  const std::uint64_t mag = code & magnitude_ones(f);
  const std::uint64_t e = mag >> M;
  const std::uint64_t m = mag & ones(M);
  switch (f.nan) {
    case NanEncoding::ieee:  // e all ones: m = 0 is inf, m != 0 is NaN
      if (e == ones(f.exp_bits)) return m == 0 ? ValueClass::inf : ValueClass::nan;
      break;
    case NanEncoding::all_ones:  // only the all-ones magnitude
      if (mag == magnitude_ones(f)) return ValueClass::nan;
      break;
    case NanEncoding::neg_zero:  // the code 1000...0
      if (f.is_signed && code == sign_mask(f)) return ValueClass::nan;
      break;
    case NanEncoding::none:
      break;
  }
  if (f.subnormals && e == 0) return m == 0 ? ValueClass::zero : ValueClass::subnormal;
  return ValueClass::normal;
}

std::uint64_t max_finite_code(const FloatFormat& f) {
  const int M = f.man_bits;
  switch (f.nan) {
    case NanEncoding::ieee:  // top exponent reserved: (2^E - 2, 2^M - 1)
      return ((ones(f.exp_bits) - 1) << M) | ones(M);
    case NanEncoding::all_ones:  // the code just below the all-ones magnitude
      return magnitude_ones(f) - 1;
    case NanEncoding::neg_zero:
    case NanEncoding::none:
      return magnitude_ones(f);
  }
  return magnitude_ones(f);
}

bool has_nan_code(const FloatFormat& f) {
  switch (f.nan) {
    case NanEncoding::ieee:
      return f.man_bits > 0;
    case NanEncoding::all_ones:
      return true;
    case NanEncoding::neg_zero:
      return f.is_signed;
    case NanEncoding::none:
      return false;
  }
  return false;
}

bool has_zero(const FloatFormat& f) {
  return f.subnormals;
}

bool has_negative_zero(const FloatFormat& f) {
  return f.is_signed && has_zero(f) && f.nan != NanEncoding::neg_zero;
}

std::uint64_t canonical_nan(const FloatFormat& f, bool negative) {
  const std::uint64_t s = negative ? sign_mask(f) : 0;
  switch (f.nan) {
    case NanEncoding::ieee:  // quiet bit (mantissa MSB) only
      return s | (ones(f.exp_bits) << f.man_bits) | (std::uint64_t{1} << (f.man_bits - 1));
    case NanEncoding::all_ones:
      return s | magnitude_ones(f);
    case NanEncoding::neg_zero:
      return sign_mask(f);  // regardless of sign
    case NanEncoding::none:
      break;
  }
  internal("canonical_nan of a format without NaN");
}

Decoded decode(const FloatFormat& f, std::uint64_t code, mpfr_ptr out) {
  const int width = f.exp_bits + f.man_bits + (f.is_signed ? 1 : 0);
  if (width < 64 && (code >> width) != 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(code));
    throw InputError("code " + std::string(buf) + " does not fit the format's " +
                     std::to_string(width) + " bits");
  }
  const int M = f.man_bits;
  if (mpfr_get_prec(out) < M + 1) mpfr_set_prec(out, M + 1);
  Decoded d;
  d.negative = (code & sign_mask(f)) != 0;
  d.cls = classify(f, code);
  const int sgn = d.negative ? -1 : 1;
  const std::uint64_t mag = code & magnitude_ones(f);
  const long e = static_cast<long>(mag >> M);
  const std::uint64_t m = mag & ones(M);
  int t = 0;
  switch (d.cls) {
    case ValueClass::nan:
      mpfr_set_nan(out);
      mpfr_setsign(out, out, d.negative, MPFR_RNDN);
      break;
    case ValueClass::inf:
      mpfr_set_inf(out, sgn);
      break;
    case ValueClass::zero:
      mpfr_set_zero(out, sgn);
      break;
    case ValueClass::subnormal:  // m * 2^(emin - M)
      t = mpfr_set_uj_2exp(out, m, emin_of(f) - M, MPFR_RNDN);
      break;
    case ValueClass::normal:  // (2^M + m) * 2^(e - bias - M)
      t = mpfr_set_uj_2exp(out, (std::uint64_t{1} << M) | m, e - f.bias - M, MPFR_RNDN);
      break;
  }
  if (t != 0) internal("decode is not exact");
  if (d.negative && (d.cls == ValueClass::subnormal || d.cls == ValueClass::normal)) {
    mpfr_neg(out, out, MPFR_RNDN);
  }
  return d;
}

Encoded encode(const FloatFormat& f, const Rounding& r, mpfr_srcptr x, std::uint32_t rand) {
  check_rounding(r);
  const bool negative = mpfr_signbit(x) != 0;
  if (mpfr_nan_p(x)) {
    // Section 4.1: the format's NaN, payload dropped; +0 and invalid where there is none.
    if (has_nan_code(f)) return {canonical_nan(f, negative), 0};
    return {0, flag::invalid};
  }
  if (mpfr_inf_p(x)) return infinity_input(f, r, negative);
  if (mpfr_zero_p(x)) return zero_input(f, negative);
  if (!f.is_signed && negative) return invalid_result(f, negative);
  return round_finite(f, r, negative, x, rand);
}

Encoded encode_code(const FloatFormat& from, std::uint64_t code, const FloatFormat& to,
                    const Rounding& r, std::uint32_t rand) {
  Scratch& s = scratch();
  ensure_prec(s.input, std::max(from.man_bits + 1, 2));
  decode(from, code, s.input);
  return encode(to, r, s.input, rand);
}

}  // namespace exmy::oracle
