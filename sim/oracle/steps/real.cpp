// The step oracle's value type (real.hpp): MPFR toward zero at 64 bits, made round-to-odd, then
// the oracle's own section-2 rounding (oracle::encode) into the named format.
#include "sim/oracle/steps/real.hpp"

#include <cstdio>
#include <stdexcept>

#include "sim/oracle/mpfr_engine.hpp"

namespace exmy::oracle::steps {
namespace {

// P: the precision of the round-to-odd intermediate and of every held value (fp64 needs 53).
constexpr mpfr_prec_t kPrec = 64;

struct Scratch {
  mpfr_t t;
  Scratch() { mpfr_init2(t, kPrec); }
  ~Scratch() { mpfr_clear(t); }
};
mpfr_ptr scratch() {
  thread_local Scratch s;
  return s.t;
}

// Round to odd: `t` holds the result rounded toward zero and `ternary` says whether that was
// inexact; an inexact result whose last bit is 0 moves one ulp away from zero (its last bit then
// is 1: no carry, since the bit was 0). mpfr_min_prec < P means the last bit is 0.
void make_odd(mpfr_ptr t, int ternary) {
  if (ternary == 0 || !mpfr_number_p(t) || mpfr_zero_p(t)) return;
  if (mpfr_min_prec(t) < mpfr_get_prec(t)) {
    if (mpfr_signbit(t)) {
      mpfr_nextbelow(t);
    } else {
      mpfr_nextabove(t);
    }
  }
}

// RN into f of the (round-to-odd) value in `t`, held exactly in `out`.
void round_into(const FloatFormat& f, mpfr_srcptr t, mpfr_ptr out) {
  const Encoded e = encode(f, Rounding{}, t);
  decode(f, e.code, out);
}

}  // namespace

Real::Real() {
  mpfr_init2(v_, kPrec);
  mpfr_set_zero(v_, 1);
}
Real::Real(const Real& o) {
  mpfr_init2(v_, kPrec);
  mpfr_set(v_, o.v_, MPFR_RNDN);
}
Real::Real(Real&& o) noexcept {
  mpfr_init2(v_, kPrec);
  mpfr_swap(v_, o.v_);
}
Real& Real::operator=(const Real& o) {
  if (this != &o) mpfr_set(v_, o.v_, MPFR_RNDN);
  return *this;
}
Real& Real::operator=(Real&& o) noexcept {
  mpfr_swap(v_, o.v_);
  return *this;
}
Real::~Real() {
  mpfr_clear(v_);
}

Real Real::of_code(const FloatFormat& f, std::uint64_t code) {
  Real r;
  decode(f, code, r.v_);
  return r;
}

Real Real::of_double(double x) {
  Real r;
  if (mpfr_set_d(r.v_, x, MPFR_RNDN) != 0) throw std::logic_error("of_double: inexact");
  return r;
}

Real Real::nan() {
  Real r;
  mpfr_set_nan(r.v_);
  return r;
}

std::uint64_t Real::code(const FloatFormat& f) const {
  const Encoded e = encode(f, Rounding{}, v_);
  if (!is_nan() && e.flags != 0) {
    throw std::logic_error("step oracle: value " + hex() + " is not a member of the format");
  }
  return e.code;
}

std::string Real::hex() const {
  if (is_nan()) return signbit() ? "-nan" : "nan";
  if (is_inf()) return signbit() ? "-inf" : "inf";
  char buf[96];
  mpfr_snprintf(buf, sizeof buf, "%Ra", v_);
  return buf;
}

Real round(const FloatFormat& f, const Real& x) {
  Real r;
  round_into(f, x.get(), r.raw());
  return r;
}

#define EXMY_ORACLE_OP(expr) \
  mpfr_ptr t = scratch();    \
  make_odd(t, (expr));       \
  Real r;                    \
  round_into(f, t, r.raw()); \
  return r

Real add(const FloatFormat& f, const Real& a, const Real& b) {
  EXMY_ORACLE_OP(mpfr_add(t, a.get(), b.get(), MPFR_RNDZ));
}
Real sub(const FloatFormat& f, const Real& a, const Real& b) {
  EXMY_ORACLE_OP(mpfr_sub(t, a.get(), b.get(), MPFR_RNDZ));
}
Real mul(const FloatFormat& f, const Real& a, const Real& b) {
  EXMY_ORACLE_OP(mpfr_mul(t, a.get(), b.get(), MPFR_RNDZ));
}
Real div(const FloatFormat& f, const Real& a, const Real& b) {
  EXMY_ORACLE_OP(mpfr_div(t, a.get(), b.get(), MPFR_RNDZ));
}
Real sqrt(const FloatFormat& f, const Real& a) {
  EXMY_ORACLE_OP(mpfr_sqrt(t, a.get(), MPFR_RNDZ));
}
Real fma(const FloatFormat& f, const Real& a, const Real& b, const Real& c) {
  EXMY_ORACLE_OP(mpfr_fma(t, a.get(), b.get(), c.get(), MPFR_RNDZ));
}
Real pow(const FloatFormat& f, const Real& a, const Real& b) {
  EXMY_ORACLE_OP(mpfr_pow(t, a.get(), b.get(), MPFR_RNDZ));
}
#undef EXMY_ORACLE_OP

Real neg(const Real& a) {
  Real r;
  mpfr_neg(r.raw(), a.get(), MPFR_RNDN);
  return r;
}
Real abs(const Real& a) {
  Real r;
  mpfr_abs(r.raw(), a.get(), MPFR_RNDN);
  return r;
}
bool lt(const Real& a, const Real& b) {
  return mpfr_less_p(a.get(), b.get()) != 0;
}
bool gt(const Real& a, const Real& b) {
  return mpfr_greater_p(a.get(), b.get()) != 0;
}
bool eq(const Real& a, const Real& b) {
  return mpfr_equal_p(a.get(), b.get()) != 0;
}
Real fmax(const Real& a, const Real& b) {
  if (a.is_nan()) return b;
  if (b.is_nan()) return a;
  return gt(a, b) ? a : b;
}
Real maximum(const Real& a, const Real& b) {
  if (a.is_nan()) return a;
  if (b.is_nan()) return b;
  return gt(a, b) ? a : b;
}

}  // namespace exmy::oracle::steps
