// The binary floating-point format descriptor: a plain value (usable in kernels and as a
// template argument), never a global. Everything the engines need is derived from seven fields.
#pragma once

#include <cstdint>

#include "sim/native/hd.hpp"

namespace exmy {

// Where a format keeps its NaNs. The four conventions cover IEEE 754, OCP FP8 and ml_dtypes.
enum class NanEncoding : std::uint8_t {
  none,      // no NaN at all (FP6/FP4: e2m3fn, e3m2fn, e2m1fn)
  ieee,      // exponent all ones, mantissa nonzero (fp32, bf16, e5m2, e4m3)
  all_ones,  // only exponent and mantissa all ones ("fn": e4m3fn; e8m0fnu's 0xFF)
  neg_zero,  // the code of negative zero (1 followed by zeros; "fnuz")
};

enum class ValueClass : std::uint8_t { zero, subnormal, normal, inf, nan };

constexpr const char* class_name(ValueClass c) {
  switch (c) {
    case ValueClass::zero:
      return "zero";
    case ValueClass::subnormal:
      return "subnormal";
    case ValueClass::normal:
      return "normal";
    case ValueClass::inf:
      return "inf";
    case ValueClass::nan:
      return "nan";
  }
  return "?";
}

EXMY_HD constexpr std::uint64_t low_mask(int n) {
  return n >= 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << n) - 1);
}

struct FloatFormat {
  int exp_bits = 8;   // 1..11
  int man_bits = 23;  // stored mantissa bits, 0..52
  int bias = 127;     // exponent bias
  bool is_signed = true;
  bool has_inf = true;  // only together with NanEncoding::ieee
  NanEncoding nan = NanEncoding::ieee;
  // true: exponent field 0 holds zero and subnormals. false: exponent field 0 is an ordinary
  // binade and the format has no zero (e8m0fnu is the one preset like this).
  bool subnormals = true;

  friend constexpr bool operator==(const FloatFormat&, const FloatFormat&) = default;

  EXMY_HD constexpr int total_bits() const { return (is_signed ? 1 : 0) + exp_bits + man_bits; }
  EXMY_HD constexpr std::uint64_t sign_bit() const {
    return is_signed ? std::uint64_t{1} << (exp_bits + man_bits) : 0;
  }
  EXMY_HD constexpr std::uint64_t magnitude_mask() const { return low_mask(exp_bits + man_bits); }
  EXMY_HD constexpr std::uint64_t man_mask() const { return low_mask(man_bits); }
  EXMY_HD constexpr std::uint64_t exp_all_ones() const { return low_mask(exp_bits); }
  EXMY_HD constexpr bool has_zero() const { return subnormals; }
  // Whether a NaN code exists: an ieee-style format with M = 0 has no code with e all ones and
  // m != 0, so it has no NaN although its convention is ieee (e5m0: only +-inf up there).
  EXMY_HD constexpr bool has_nan() const {
    return nan != NanEncoding::none && !(nan == NanEncoding::ieee && man_bits == 0);
  }
  // fnuz formats give their negative-zero code to NaN; unsigned formats have no sign at all.
  EXMY_HD constexpr bool has_neg_zero() const {
    return is_signed && subnormals && nan != NanEncoding::neg_zero;
  }
  // Unbiased exponent of the smallest normal binade.
  EXMY_HD constexpr int emin() const { return (subnormals ? 1 : 0) - bias; }

  // Largest finite positive code. Derivation per convention:
  //   ieee:     the top exponent is reserved, so E = 2^e-2 with an all-ones mantissa;
  //   all_ones: the all-ones code is NaN, so the largest finite is one below it
  //             (e4m3fn: S.1111.111 is NaN, max S.1111.110 = 1.75 * 2^8 = 448);
  //   none / neg_zero: the all-ones magnitude is an ordinary number
  //             (e4m3fnuz: 1.875 * 2^(15-8) = 240).
  EXMY_HD constexpr std::uint64_t max_code() const {
    switch (nan) {
      case NanEncoding::ieee:
        return ((exp_all_ones() - 1) << man_bits) | man_mask();
      case NanEncoding::all_ones:
        return magnitude_mask() - 1;
      default:
        return magnitude_mask();
    }
  }
  // Unbiased exponent and integer significand (with its leading one) of the largest finite.
  EXMY_HD constexpr int emax() const { return static_cast<int>(max_code() >> man_bits) - bias; }
  EXMY_HD constexpr std::uint64_t max_significand() const {
    return (std::uint64_t{1} << man_bits) | (max_code() & man_mask());
  }
  EXMY_HD constexpr std::uint64_t inf_code(bool negative) const {
    return (negative ? sign_bit() : 0) | (exp_all_ones() << man_bits);
  }
  // The NaN this library produces ("canonical"): sign kept where the format can carry it;
  // for ieee the quiet bit (mantissa MSB) alone, as ml_dtypes does; for all_ones the all-ones
  // code; for fnuz the single negative-zero code.
  EXMY_HD constexpr std::uint64_t nan_code(bool negative) const {
    const std::uint64_t s = negative ? sign_bit() : 0;
    switch (nan) {
      case NanEncoding::ieee:
        return s | (exp_all_ones() << man_bits) |
               (man_bits > 0 ? std::uint64_t{1} << (man_bits - 1) : 0);
      case NanEncoding::all_ones:
        return s | magnitude_mask();
      case NanEncoding::neg_zero:
        return sign_bit();
      default:
        return 0;
    }
  }

  EXMY_HD constexpr ValueClass classify(std::uint64_t code) const {
    const std::uint64_t mag = code & magnitude_mask();
    const std::uint64_t e = mag >> man_bits;
    const std::uint64_t m = mag & man_mask();
    switch (nan) {
      case NanEncoding::ieee:
        if (e == exp_all_ones()) return m == 0 ? ValueClass::inf : ValueClass::nan;
        break;
      case NanEncoding::all_ones:
        if (mag == magnitude_mask()) return ValueClass::nan;
        break;
      case NanEncoding::neg_zero:
        if (code == sign_bit()) return ValueClass::nan;
        break;
      default:
        break;
    }
    if (subnormals && e == 0) return m == 0 ? ValueClass::zero : ValueClass::subnormal;
    return ValueClass::normal;
  }
  EXMY_HD constexpr bool is_negative(std::uint64_t code) const { return (code & sign_bit()) != 0; }
};

// Named presets (names follow ml_dtypes / LLVM APFloat). Limits, with their derivation:
//   fp32      e8m23 bias 127, max (2-2^-23)*2^127
//   tf32      e8m10 bias 127, fp32's range with 10 mantissa bits
//   bf16      e8m7  bias 127, max (2-2^-7)*2^127 = 0x1.fep+127
//   fp16      e5m10 bias 15,  max (2-2^-10)*2^15 = 65504
//   e5m2      bias 15, ieee: max 1.75*2^15 = 57344
//   e4m3fn    bias 7, NaN at S.1111.111: max 1.75*2^8 = 448
//   e4m3      bias 7, ieee: top exponent reserved, max 1.875*2^7 = 240
//   e3m4      bias 3, ieee: max 1.9375*2^3 = 15.5
//   e4m3fnuz  bias 8, NaN at 0x80: max 1.875*2^7 = 240
//   e5m2fnuz  bias 16, NaN at 0x80: max 1.75*2^15 = 57344
//   e4m3b11fnuz bias 11: max 1.875*2^4 = 30
//   e2m3fn    bias 1, no inf/NaN: max 1.875*2^2 = 7.5
//   e3m2fn    bias 3, no inf/NaN: max 1.75*2^4 = 28
//   e2m1fn    bias 1, no inf/NaN: max 1.5*2^2 = 6
//   e8m0fnu   unsigned, bias 127, no zero/subnormals, NaN 0xFF: 2^-127 .. 2^127
namespace formats {
inline constexpr FloatFormat fp64{11, 52, 1023, true, true, NanEncoding::ieee, true};
inline constexpr FloatFormat fp32{8, 23, 127, true, true, NanEncoding::ieee, true};
inline constexpr FloatFormat tf32{8, 10, 127, true, true, NanEncoding::ieee, true};
inline constexpr FloatFormat bf16{8, 7, 127, true, true, NanEncoding::ieee, true};
inline constexpr FloatFormat fp16{5, 10, 15, true, true, NanEncoding::ieee, true};
inline constexpr FloatFormat e5m2{5, 2, 15, true, true, NanEncoding::ieee, true};
inline constexpr FloatFormat e4m3fn{4, 3, 7, true, false, NanEncoding::all_ones, true};
inline constexpr FloatFormat e4m3fnuz{4, 3, 8, true, false, NanEncoding::neg_zero, true};
inline constexpr FloatFormat e5m2fnuz{5, 2, 16, true, false, NanEncoding::neg_zero, true};
inline constexpr FloatFormat e4m3{4, 3, 7, true, true, NanEncoding::ieee, true};
inline constexpr FloatFormat e3m4{3, 4, 3, true, true, NanEncoding::ieee, true};
inline constexpr FloatFormat e4m3b11fnuz{4, 3, 11, true, false, NanEncoding::neg_zero, true};
inline constexpr FloatFormat e2m3fn{2, 3, 1, true, false, NanEncoding::none, true};
inline constexpr FloatFormat e3m2fn{3, 2, 3, true, false, NanEncoding::none, true};
inline constexpr FloatFormat e2m1fn{2, 1, 1, true, false, NanEncoding::none, true};
inline constexpr FloatFormat e8m0fnu{8, 0, 127, false, false, NanEncoding::all_ones, false};
}  // namespace formats

}  // namespace exmy
