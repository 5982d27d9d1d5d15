// Exact number text for the CLI (see exact_text.hpp).
//
// Why round-to-odd at P = 256 bits gives one correct rounding in every mode.
// Let x > 0 be the exact value of the text, y = RO_P(x): x truncated to P significant bits, with
// the last kept bit set when anything nonzero was cut off. Truncation never leaves x's binade, and
// setting a bit that was 0 cannot carry, so y and x have the same exponent `exp`; the target's
// quantum q (docs/SEMANTICS.md 2, step 1) depends only on `exp` and the format, so it is the same
// for y and for x, and q >= exp - M. The working ulp is u = 2^(exp - P + 1), so the target quantum
// lies k = q - log2(u) >= P - 1 - M bit positions above u. Write x / 2^q = T + f. Every bit of
// x / 2^q at positions 2^-1 ... 2^-(k-1) is kept exactly in y, and the bit at 2^-k (the last
// kept bit) is 1 in y iff x has any nonzero bit at or below 2^-k. Every rounding decision of
// section 2 is a function of T, of floor(f * 2^R) (bits 2^-1 ... 2^-R), of whether f = 1/2, > 1/2
// (bit 2^-1 plus "anything below"), and of whether f > 0 ("anything at all"). With k - 1 >= R,
// i.e. P >= M + R + 2, all of these are equal for y and for x: T and floor(f * 2^R) from the exact
// bits, and every "anything nonzero below position j" (j <= R < k) from the sticky last bit. So
// rounding y once into the target gives exactly the rounding of x, for M <= 52 (fp64) and
// R <= 32: P >= 52 + 32 + 2 = 86; 256 leaves room. Overflow (step 6) is decided on the rounded
// T * 2^q, which is the same. Text that parses exactly (every hex-float within 256 bits) is simply
// exact.
#include "sim/oracle/exact_text.hpp"

#include <gmp.h>

#include <cctype>
#include <cstdio>
#include <string>

#include "sim/common/error.hpp"

namespace exmy::oracle {
namespace {

bool is_digit(char c, bool hex) {
  return hex ? std::isxdigit(static_cast<unsigned char>(c)) != 0 : (c >= '0' && c <= '9');
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

[[noreturn]] void malformed(std::string_view text) {
  throw InputError("'" + std::string(text) +
                   "' is not a number (expected decimal like -1.5e-3, hex-float like 0x1.cp+8, "
                   "inf or nan)");
}

// Checks the grammar of an unsigned decimal or hex-float; returns whether any significand digit
// is nonzero.
bool check_unsigned_number(std::string_view s, std::string_view text) {
  bool hex = false;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    hex = true;
    s.remove_prefix(2);
  }
  std::size_t i = 0, digits = 0;
  bool nonzero = false;
  const auto take_digits = [&]() {
    while (i < s.size() && is_digit(s[i], hex)) {
      nonzero = nonzero || s[i] != '0';
      ++i;
      ++digits;
    }
  };
  take_digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    take_digits();
  }
  if (digits == 0) malformed(text);
  if (i < s.size()) {
    const char e = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    if (e != (hex ? 'p' : 'e')) malformed(text);
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const std::size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start) malformed(text);
  }
  if (i != s.size()) malformed(text);
  return nonzero;
}

}  // namespace

bool parse_exact(std::string_view text, mpfr_ptr out) {
  mpfr_set_prec(out, kTextPrecision);
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (iequals(s, "inf") || iequals(s, "infinity")) {
    mpfr_set_inf(out, negative ? -1 : 1);
    return true;
  }
  if (iequals(s, "nan")) {
    mpfr_set_nan(out);
    mpfr_setsign(out, out, negative, MPFR_RNDN);
    return true;
  }
  const bool nonzero = check_unsigned_number(s, text);
  const bool hex = s.size() >= 2 && (s[1] == 'x' || s[1] == 'X');
  const std::string body(s);  // NUL-terminated for MPFR
  char* end = nullptr;
  mpfr_clear_flags();
  // Truncate, then set the last bit if anything was cut: round to odd (proof above).
  const int ternary = mpfr_strtofr(out, body.c_str(), &end, hex ? 16 : 10, MPFR_RNDZ);
  if (end != body.c_str() + body.size()) malformed(text);
  if (mpfr_overflow_p() || mpfr_inf_p(out)) {
    throw InputError("'" + std::string(text) + "' is beyond the exponent range of exact parsing");
  }
  if (mpfr_underflow_p() || (nonzero && mpfr_zero_p(out))) {
    throw InputError("'" + std::string(text) + "' is below the exponent range of exact parsing");
  }
  if (ternary != 0 && mpfr_min_prec(out) < kTextPrecision) mpfr_nextabove(out);
  if (negative) mpfr_neg(out, out, MPFR_RNDN);
  return ternary == 0;
}

std::string hexfloat_text(mpfr_srcptr x) {
  const bool negative = mpfr_signbit(x) != 0;
  const std::string sign = negative ? "-" : "";
  if (mpfr_nan_p(x)) return sign + "nan";
  if (mpfr_inf_p(x)) return sign + "inf";
  if (mpfr_zero_p(x)) return sign + "0x0p+0";
  // x = m * 2^e exactly; strip m's trailing zero bits so that it is odd.
  mpz_t m;
  mpz_init(m);
  long e = mpfr_get_z_2exp(m, x);
  mpz_abs(m, m);
  const mp_bitcnt_t tz = mpz_scan1(m, 0);
  mpz_fdiv_q_2exp(m, m, tz);
  e += static_cast<long>(tz);
  // m = 1.frac in binary with n - 1 fraction bits; value = 1.frac * 2^(e + n - 1).
  const long n = static_cast<long>(mpz_sizeinbase(m, 2));
  const long exponent = e + n - 1;
  std::string out = sign + "0x1";
  const long frac_bits = n - 1;
  if (frac_bits > 0) {
    // Pad the fraction on the right to whole hex digits; the last digit stays nonzero (m is odd).
    const long pad = (4 - frac_bits % 4) % 4;
    mpz_clrbit(m, static_cast<mp_bitcnt_t>(frac_bits));
    mpz_mul_2exp(m, m, static_cast<mp_bitcnt_t>(pad));
    const long hex_digits = (frac_bits + pad) / 4;
    std::string digits(static_cast<std::size_t>(mpz_sizeinbase(m, 16)) + 2, '\0');
    mpz_get_str(digits.data(), 16, m);
    digits.resize(std::char_traits<char>::length(digits.c_str()));
    out.push_back('.');
    out.append(static_cast<std::size_t>(hex_digits) - digits.size(), '0');
    out.append(digits);
  }
  mpz_clear(m);
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%+ld", exponent);
  return out + buf;
}

}  // namespace exmy::oracle
