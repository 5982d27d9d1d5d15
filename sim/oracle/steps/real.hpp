// The value type of the step oracle (docs/SEMANTICS.md 9, 13.1): an exact MPFR number and the
// operations of the document's notation, each rounded once to the format it names. Every result
// is held exactly, so a value always is a member of the format it was last rounded to.
//
// How one operation is rounded once: MPFR computes a ⊕ b, a ⊗ b, a ⊘ b, √a, fma(a, b, c) or
// pow(a, b) toward zero at P = 64 bits with an unbounded exponent (MPFR's range, far beyond
// fp64's) and the result is made "round to odd" (its last bit set when inexact); the oracle's own
// encode (sections 2 and 4, sim/oracle/mpfr_engine.hpp) then rounds that value to the target
// format to nearest-even, with the target's emin, subnormals and overflow to inf. Rounding to odd
// at P >= p + 2 bits followed by one rounding to nearest at p bits equals one rounding of the
// exact result (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved
// algorithms using rounding to odd", IEEE TC 2008); P = 64 >= 53 + 2 covers fp64, and subnormal
// targets keep even fewer bits. No host floating-point arithmetic computes a result here.
#pragma once

// <cstdint> before <mpfr.h> enables MPFR's intmax_t functions.
#include <cstdint>
// clang-format off
#include <mpfr.h>
// clang-format on

#include <string>

#include "sim/native/float_format.hpp"

namespace exmy::oracle::steps {

// The working formats of the steps (the descriptors of section 1; shared, they compute nothing).
inline constexpr const FloatFormat& F64 = formats::fp64;
inline constexpr const FloatFormat& F32 = formats::fp32;
inline constexpr const FloatFormat& BF16 = formats::bf16;
inline constexpr const FloatFormat& F16 = formats::fp16;

class Real {
 public:
  Real();  // +0
  Real(const Real& o);
  Real(Real&& o) noexcept;
  Real& operator=(const Real& o);
  Real& operator=(Real&& o) noexcept;
  ~Real();

  // The exact value of a code of f (NaN keeps its sign bit; payloads are not values).
  static Real of_code(const FloatFormat& f, std::uint64_t code);
  static Real of_f32_bits(std::uint32_t bits) { return of_code(F32, bits); }
  // The exact value of a double: a Python float, or a constant such as 1 or 0.5.
  static Real of_double(double x);
  static Real nan();

  // The code of this value in f, which must hold it exactly (NaN: f's canonical NaN with the
  // sign; throws std::logic_error when the value is not a member of f).
  std::uint64_t code(const FloatFormat& f) const;
  std::uint32_t f32_bits() const { return static_cast<std::uint32_t>(code(F32)); }

  bool is_nan() const { return mpfr_nan_p(v_) != 0; }
  bool is_inf() const { return mpfr_inf_p(v_) != 0; }
  bool is_finite() const { return mpfr_number_p(v_) != 0; }
  bool is_zero() const { return mpfr_zero_p(v_) != 0; }
  bool signbit() const { return mpfr_signbit(v_) != 0; }
  mpfr_srcptr get() const { return v_; }
  mpfr_ptr raw() { return v_; }
  std::string hex() const;  // C99 hex float, for reports

 private:
  mpfr_t v_;
};

// ---- one rounding each (RN, ties to even, into f) -----------------------------------------
Real round(const FloatFormat& f, const Real& x);  // RN_f(x): a cast
Real add(const FloatFormat& f, const Real& a, const Real& b);
Real sub(const FloatFormat& f, const Real& a, const Real& b);
Real mul(const FloatFormat& f, const Real& a, const Real& b);
Real div(const FloatFormat& f, const Real& a, const Real& b);
Real sqrt(const FloatFormat& f, const Real& a);
Real fma(const FloatFormat& f, const Real& a, const Real& b, const Real& c);  // a·b + c
Real pow(const FloatFormat& f, const Real& a, const Real& b);  // correctly rounded a^b

// ---- exact ----------------------------------------------------------------------------------
Real neg(const Real& a);
Real abs(const Real& a);
// IEEE comparisons: false when either operand is NaN; −0 == +0.
bool lt(const Real& a, const Real& b);
bool gt(const Real& a, const Real& b);
bool eq(const Real& a, const Real& b);
// C fmax: a NaN operand is ignored (NaN only when both are).
Real fmax(const Real& a, const Real& b);
// torch.maximum: NaN if either is NaN.
Real maximum(const Real& a, const Real& b);

}  // namespace exmy::oracle::steps
