// Midpoint +- tiny offset tests (TestFloat / Universal style) for every format: for each pair of
// adjacent representable values v < v' (every pair for <= 16-bit formats, boundary pairs and a
// sample for wider ones; for the largest finite, v' = max + one quantum, the overflow boundary)
// the exact midpoint and midpoint +- (v' - v) * 2^-k are rounded by the oracle from exact MPFR
// values and checked against the answer the definition gives (which side, tie rules, rto's odd
// side, overflow); where the point is an fp64 number, the native engine gets its fp64 bits and
// must agree with the oracle in code and flags.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/mpfr_value.hpp"
#include "sim/verify/campaign.hpp"

using namespace exmy;
using oracle::MpfrValue;

namespace {

std::vector<NamedFloatFormat> formats_under_test() {
  std::vector<NamedFloatFormat> out = float_presets();
  // Generic shapes the presets miss: M = 0 with and without zero, odd biases, unsigned with M > 0.
  static const char* const generic[] = {"e3m3fn",  "e5m1fnuz", "e6m4b20", "e2m2fnu",
                                        "e4m0fnu", "e4m0fn",   "e3m1",    "e7m8fnuzb3"};
  static std::vector<std::string> names(std::begin(generic), std::end(generic));
  for (const auto& n : names) out.push_back({n.c_str(), *parse_float_format(n)});
  return out;
}

// Magnitude codes whose successor pairs are tested.
std::vector<std::uint64_t> pair_starts(const FloatFormat& f) {
  const std::uint64_t max = oracle::max_finite_code(f);
  std::vector<std::uint64_t> out;
  if (max < (std::uint64_t{1} << 16)) {
    for (std::uint64_t c = 0; c <= max; ++c) out.push_back(c);
    return out;
  }
  for (std::uint64_t k = 0; k < 64; ++k) {
    out.push_back(k);
    out.push_back(max - k);
  }
  const int M = f.man_bits;
  for (std::uint64_t e = 0; (e << M) <= max; ++e) {
    out.push_back(e << M);
    if (((e + 1) << M) - 1 <= max) out.push_back(((e + 1) << M) - 1);
  }
  for (std::uint64_t k = 0; k < 256; ++k) {
    const auto b = native::philox_block(20261121, 7, k);
    out.push_back(((std::uint64_t{b.w[0]} << 32) | b.w[1]) % (max + 1));
  }
  return out;
}

bool is_zero_code(const FloatFormat& f, std::uint64_t mag) {
  return oracle::classify(f, mag) == ValueClass::zero;
}

// The parity that rne's ties and rto read at magnitude code c (section 2, step 3): T's last bit,
// which is the code's for M >= 1; for M = 0 the code's in formats with a zero (e4m0fn: ties to the
// even exponent field), and T = 1 in formats without one (e4m0fnu, e8m0fnu: ties up).
bool t_is_odd(const FloatFormat& f, std::uint64_t c) {
  if (f.man_bits == 0 && !f.subnormals) return true;
  return (c & 1) != 0;
}

enum class Where { below, mid, above };

struct Point {
  Where where;
  int k;  // offset (v' - v) * 2^-k, 0 for the midpoint
};

}  // namespace

TEST_CASE("midpoints +- 2^-k: oracle follows the definition, native agrees on fp64 inputs",
          "[oracle][midpoint]") {
  const RoundMode modes[] = {RoundMode::rne, RoundMode::rna, RoundMode::rtz,
                             RoundMode::rup, RoundMode::rdn, RoundMode::rto};
  std::vector<Point> points = {{Where::mid, 0}};
  for (int k : {2, 8, 20, 40, 70}) {
    points.push_back({Where::below, k});
    points.push_back({Where::above, k});
  }
  MpfrValue v(128), next(128), step(128), x(256), delta(256);
  std::uint64_t oracle_checks = 0, native_checks = 0;
  for (const auto& nf : formats_under_test()) {
    const FloatFormat& f = nf.format;
    const std::uint64_t max = oracle::max_finite_code(f);
    const std::uint64_t sign_bit = f.is_signed ? std::uint64_t{1} << (f.exp_bits + f.man_bits) : 0;
    for (const std::uint64_t c : pair_starts(f)) {
      oracle::decode(f, c, v);
      mpfr_abs(v, v, MPFR_RNDN);
      const bool over = c == max;
      if (over) {
        mpfr_set_ui_2exp(step, 1, mpfr_get_exp(v) - 1 - f.man_bits, MPFR_RNDN);
        mpfr_add(next, v, step, MPFR_RNDN);
      } else {
        oracle::decode(f, c + 1, next);
      }
      mpfr_sub(step, next, v, MPFR_RNDN);
      for (const Point& p : points) {
        mpfr_add(x, v, next, MPFR_RNDN);
        mpfr_div_2ui(x, x, 1, MPFR_RNDN);
        if (p.where != Where::mid) {
          mpfr_div_2ui(delta, step, static_cast<unsigned long>(p.k), MPFR_RNDN);
          if (p.where == Where::above) mpfr_add(x, x, delta, MPFR_RNDN);
          if (p.where == Where::below) mpfr_sub(x, x, delta, MPFR_RNDN);
        }
        for (const bool negative : {false, true}) {
          if (negative && !f.is_signed) continue;
          if (negative) mpfr_neg(x, x, MPFR_RNDN);
          const double xd = mpfr_get_d(x, MPFR_RNDN);
          const bool in_fp64 = mpfr_cmp_d(x, xd) == 0 && f != formats::fp64;
          for (const RoundMode mode : modes) {
            for (const Overflow pol : {Overflow::none, Overflow::satfinite}) {
              if (pol != Overflow::none && !over) continue;
              const Rounding r{mode, 0, pol};
              // The definition: which neighbour the mode picks.
              bool hi = false;
              switch (mode) {
                case RoundMode::rne:
                  hi = p.where == Where::above || (p.where == Where::mid && t_is_odd(f, c));
                  break;
                case RoundMode::rna:
                  hi = p.where != Where::below;
                  break;
                case RoundMode::rtz:
                  hi = false;
                  break;
                case RoundMode::rup:
                  hi = !negative;
                  break;
                case RoundMode::rdn:
                  hi = negative;
                  break;
                case RoundMode::rto:
                  hi = !t_is_odd(f, c);
                  break;
                default:
                  break;
              }
              std::uint64_t want;
              std::uint32_t want_flags = flag::inexact;
              if (hi && over) {
                want_flags |= flag::overflow;
                const bool to_inf =
                    pol == Overflow::none &&
                    (mode == RoundMode::rne || mode == RoundMode::rna ||
                     (mode == RoundMode::rup && !negative) || (mode == RoundMode::rdn && negative));
                const std::uint64_t s = negative ? sign_bit : 0;
                if (to_inf && f.has_inf) {
                  want = s | (low_mask(f.exp_bits) << f.man_bits);
                } else if (to_inf && oracle::has_nan_code(f)) {
                  want = oracle::canonical_nan(f, negative);
                } else {
                  want = s | max;
                }
              } else {
                const std::uint64_t mag = hi ? c + 1 : c;
                const bool signed_result =
                    negative && (!is_zero_code(f, mag) || oracle::has_negative_zero(f));
                want = (signed_result ? sign_bit : 0) | mag;
              }
              const Encoded got = oracle::encode(f, r, x);
              ++oracle_checks;
              const auto where = [&]() {
                std::ostringstream m;
                m << nf.name << " pair at 0x" << std::hex << c << std::dec << " point "
                  << static_cast<int>(p.where) << " k=" << p.k << " negative " << negative
                  << " mode " << static_cast<int>(mode) << " policy " << static_cast<int>(pol);
                return m.str();
              };
              if (got.code != want || (got.flags & want_flags) != want_flags) {
                INFO(where());
                CHECK(got.code == want);
                CHECK((got.flags & want_flags) == want_flags);
              }
              if (in_fp64) {
                ++native_checks;
                const Encoded nat = native::convert(formats::fp64, f, r, native::bits_of(xd));
                if (nat.code != got.code || nat.flags != got.flags) {
                  INFO(where());
                  CHECK(nat.code == got.code);
                  CHECK(nat.flags == got.flags);
                }
              }
            }
          }
          if (negative) mpfr_neg(x, x, MPFR_RNDN);
        }
      }
    }
  }
  INFO("oracle checks " << oracle_checks << ", native checks " << native_checks);
  CHECK(oracle_checks > 5000000);
  CHECK(native_checks > 3000000);
}
