// docs/SEMANTICS.md 5.1 (rounding to an integer, quantum 1) and 7.3 (int8 quantization, SwitchBack
// eq. 1, in its three fp32 orders) with the dequantization of 7.3.
#include "sim/oracle/steps/quant_detail.hpp"

namespace exmy::oracle::steps::quant {
using namespace detail;

std::int32_t round_int8(const Real& y, const Rounding& r, std::uint32_t w) {
  constexpr std::int64_t kLimit = 127;  // int8: −127…127, −128 never produced
  if (y.is_nan()) return 0;             // NaN → 0 (invalid)
  const bool neg = y.signbit();
  if (y.is_inf()) return neg ? -kLimit : kLimit;
  // T = ⌊|y|⌋ and f = |y| − T, both exact (|y| is an fp32 value).
  Real a = abs(y), t;
  mpfr_floor(t.raw(), a.get());
  Real f;
  mpfr_sub(f.raw(), a.get(), t.get(), MPFR_RNDN);  // exact: a and t share their binade's grid
  if (mpfr_cmp_ui(t.get(), 1u << 20) >= 0) return neg ? -kLimit : kLimit;  // far beyond 127
  std::int64_t T = static_cast<std::int64_t>(mpfr_get_si(t.get(), MPFR_RNDN));
  const int half = mpfr_cmp_d(f.get(), 0.5);  // f − ½: <0, 0, >0
  const bool inexact = !f.is_zero();
  bool up = false;
  switch (r.mode) {
    case RoundMode::rne:
      up = half > 0 || (half == 0 && (T & 1) != 0);
      break;
    case RoundMode::rna:
      up = half >= 0;
      break;
    case RoundMode::rtz:
      break;
    case RoundMode::rup:
      up = inexact && !neg;
      break;
    case RoundMode::rdn:
      up = inexact && neg;
      break;
    case RoundMode::rto:
      if (inexact) T |= 1;
      break;
    case RoundMode::sr: {
      // ⌊f·2^R⌋ + w ≥ 2^R, w the R-bit word (3.1).
      Real fr = detail::scale2(f, r.sr_bits), fl;
      mpfr_floor(fl.raw(), fr.get());
      const std::uint64_t trunc = mpfr_get_uj(fl.get(), MPFR_RNDN);
      const std::uint64_t mask = r.sr_bits >= 32 ? 0xFFFFFFFFull : (1ull << r.sr_bits) - 1;
      up = trunc + (w & mask) >= (1ull << r.sr_bits);
      break;
    }
  }
  if (up) ++T;
  if (T > kLimit) T = kLimit;                      // saturation under every policy
  return static_cast<std::int32_t>(neg ? -T : T);  // −0 → 0
}

namespace detail {

namespace {
// y = 127·x/a in the order of 7.3 (fp32, RN32 each).
Real scaled(Order o, const Real& x, const Real& a, const Real& qmax) {
  switch (o) {
    case Order::div_mul:
      return mul32(qmax, div32(x, a));
    case Order::recip_mul:
      return mul32(qmax, mul32(x, div32(R(1.0), a)));
    case Order::mul_recip:
      return mul32(x, div32(qmax, a));
  }
  return x;
}
}  // namespace

Real scaled_value(Order o, const Real& x, const Real& a, const Real& qmax) {
  return scaled(o, x, a, qmax);
}

std::uint64_t int8_code(const Spec& s, const Real& x, const Real& a, std::uint64_t i) {
  if (a.is_zero()) return 0;  // all-zero group: codes 0, no division
  const Real y = scaled(s.order, x, a, R(127.0));
  const std::int32_t q = round_int8(y, s.rounding, sr_word(s.rounding, s.seed, kStreamCast, i));
  return static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
}

Real int8_dequant(std::uint64_t code, const Real& a) {
  const std::int32_t q = static_cast<std::int8_t>(static_cast<std::uint8_t>(code));
  // x̂ = RN32(RN32(a · q) · RN32(1/127)) (SwitchBack dequantize_rowwise)
  return mul32(mul32(a, R(q)), div32(R(1.0), R(127.0)));
}

}  // namespace detail
}  // namespace exmy::oracle::steps::quant
