// Named regression tests for the known traps of low-precision conversion. Each one checks the
// oracle against the spec and the native engine against the oracle.
#include <catch2/catch.hpp>
#include <limits>

#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/oracle/exact_text.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/mpfr_value.hpp"

using namespace exmy;
using oracle::MpfrValue;

namespace {

constexpr Rounding kRne{};

// Both engines on an fp64 input; they must agree; returns the oracle's answer.
Encoded both_f64(double x, const FloatFormat& to, Rounding r = kRne, std::uint32_t w = 0) {
  const Encoded o = oracle::encode_f64(native::bits_of(x), to, r, w);
  const Encoded n = native::convert(formats::fp64, to, r, native::bits_of(x), w);
  INFO("input " << x);
  CHECK(n.code == o.code);
  CHECK(n.flags == o.flags);
  return o;
}

Encoded both_f32(float x, const FloatFormat& to, Rounding r = kRne) {
  const Encoded o = oracle::encode_f32(native::bits_of(x), to, r);
  const Encoded n = native::convert(formats::fp32, to, r, native::bits_of(x));
  INFO("input " << x);
  CHECK(n.code == o.code);
  CHECK(n.flags == o.flags);
  return o;
}

}  // namespace

// Guards against taking S.1111.111 = 480 as e4m3fn's max (that code is NaN).
TEST_CASE("regression: e4m3fn max is 448, not 480", "[oracle][regression]") {
  MpfrValue v(64);
  oracle::decode(formats::e4m3fn, oracle::max_finite_code(formats::e4m3fn), v);
  CHECK(mpfr_cmp_ui(v, 448) == 0);
  CHECK(oracle::classify(formats::e4m3fn, 0x7F) == ValueClass::nan);
  CHECK(both_f64(448.0, formats::e4m3fn).code == 0x7E);
  CHECK(both_f64(464.0, formats::e4m3fn).code == 0x7E);  // tie 448 | 480: even is 448
  const Encoded over = both_f64(465.0, formats::e4m3fn);
  CHECK(over.code == 0x7F);  // 480 > max: NaN (no inf)
  CHECK(over.flags == (flag::overflow | flag::inexact));
  CHECK(both_f64(480.0, formats::e4m3fn).code == 0x7F);
  // rto: 449 truncates to 448 = 1.110b * 2^8; setting the last bit would give 480: overflow -> max.
  const Encoded odd = both_f64(449.0, formats::e4m3fn, {RoundMode::rto, 0, Overflow::none});
  CHECK(odd.code == 0x7E);
  CHECK(odd.flags == (flag::overflow | flag::inexact));
}

// Guards against converting through fp32 (double rounding): x = 1.0625 + 2^-40 lies just above
// the e4m3fn midpoint between 1 and 1.125, so it rounds to 1.125; via fp32 the 2^-40 is lost,
// the tie goes to even (1.0).
TEST_CASE("regression: fp64 -> e4m3fn rounds once, not through fp32", "[oracle][regression]") {
  const double x = 1.0625 + 0x1p-40;
  const Encoded direct = both_f64(x, formats::e4m3fn);
  CHECK(direct.code == 0x39);  // 1.125 = 1.001b: exponent field 7, mantissa 001
  const Encoded f32 = native::convert(formats::fp64, formats::fp32, kRne, native::bits_of(x));
  CHECK(native::float_of(static_cast<std::uint32_t>(f32.code)) == 1.0625f);
  const Encoded twice = native::convert(formats::fp32, formats::e4m3fn, kRne, f32.code);
  CHECK(twice.code == 0x38);  // the double-rounded answer, 1.0
  CHECK(direct.code != twice.code);
}

// Guards NaN sign handling per convention (section 4.1).
TEST_CASE("regression: sign of NaN", "[oracle][regression]") {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  CHECK(both_f32(qnan, formats::e5m2).code == 0x7E);
  CHECK(both_f32(-qnan, formats::e5m2).code == 0xFE);
  CHECK(both_f32(-qnan, formats::e4m3fn).code == 0xFF);
  CHECK(both_f32(-qnan, formats::e4m3fnuz).code == 0x80);  // one NaN, no sign
  CHECK(both_f32(-qnan, formats::e8m0fnu).code == 0xFF);
  CHECK(both_f32(-qnan, formats::bf16).code == 0xFFC0);
  const Encoded none = both_f32(-qnan, formats::e2m1fn);  // no NaN: +0, invalid
  CHECK(none.code == 0x0);
  CHECK(none.flags == flag::invalid);
  MpfrValue v(64);
  const auto d = oracle::decode(formats::e5m2, 0xFE, v);
  CHECK(d.cls == ValueClass::nan);
  CHECK(mpfr_nan_p(v));
  CHECK(mpfr_signbit(v));
  CHECK(oracle::hexfloat_text(v) == "-nan");
}

// Guards -0: kept where the format has it, +0 in fnuz (0x80 is NaN there).
TEST_CASE("regression: negative zero", "[oracle][regression]") {
  CHECK(both_f32(-0.0f, formats::e4m3fn).code == 0x80);
  CHECK(both_f32(-0.0f, formats::e5m2).code == 0x80);
  CHECK(both_f32(-0.0f, formats::fp16).code == 0x8000);
  CHECK(both_f32(-0.0f, formats::e2m1fn).code == 0x8);
  CHECK(both_f32(-0.0f, formats::e4m3fnuz).code == 0x00);
  MpfrValue v(64);
  oracle::decode(formats::e4m3fn, 0x80, v);
  CHECK(mpfr_zero_p(v));
  CHECK(mpfr_signbit(v));
  CHECK(oracle::hexfloat_text(v) == "-0x0p+0");
}

// Guards fnuz underflow: a negative value that rounds to zero gives +0, never the NaN code.
TEST_CASE("regression: fnuz zero", "[oracle][regression]") {
  const Encoded e = both_f32(-1e-30f, formats::e4m3fnuz);
  CHECK(e.code == 0x00);
  CHECK(e.flags == (flag::inexact | flag::underflow));
  CHECK(both_f32(-1e-30f, formats::e5m2fnuz).code == 0x00);
  CHECK(both_f32(-1e-30f, formats::e4m3b11fnuz).code == 0x00);
  CHECK(both_f32(-1e-30f, formats::e4m3fn).code == 0x80);  // with -0, the sign stays
}

// Guards e8m0fnu: no zero and no sign, so zero and negatives are invalid (NaN 0xFF); a positive
// value far below 2^-127 is held at the smallest value instead of flushing.
TEST_CASE("regression: e8m0fnu zero and negatives are NaN", "[oracle][regression]") {
  for (const float x : {0.0f, -0.0f, -1.0f, -std::numeric_limits<float>::infinity()}) {
    const Encoded e = both_f32(x, formats::e8m0fnu);
    CHECK(e.code == 0xFF);
    CHECK(e.flags == flag::invalid);
  }
  const Encoded tiny = both_f32(1e-45f, formats::e8m0fnu);
  CHECK(tiny.code == 0x00);
  CHECK(tiny.flags == (flag::inexact | flag::underflow));
  CHECK(both_f32(1.0f, formats::e8m0fnu).code == 127);
  CHECK(both_f32(1.5f, formats::e8m0fnu).code == 128);  // T = 1 is odd: the tie goes up
}

// Guards the subnormal/normal boundary: just above the midpoint between the largest subnormal
// (7 * 2^-9) and the smallest normal (8 * 2^-9) rounds up into the normal range; the underflow
// flag follows the input's tininess (before rounding).
TEST_CASE("regression: subnormal rounding up into the min normal", "[oracle][regression]") {
  const double x = 7.5 * 0x1p-9 + 0x1p-30;
  const Encoded e = both_f64(x, formats::e4m3fn);
  CHECK(e.code == 0x08);
  CHECK(e.flags == (flag::inexact | flag::underflow));
  CHECK(both_f64(7.5 * 0x1p-9, formats::e4m3fn).code == 0x08);  // tie: 7 is odd, 8 is even
  CHECK(both_f64(6.5 * 0x1p-9, formats::e4m3fn).code == 0x06);  // tie: 6 is even
  CHECK(both_f64(7.5 * 0x1p-9, formats::e4m3fn, {RoundMode::rtz, 0, Overflow::none}).code == 0x07);
}

// Guards the carry at the top binade: rounding up from max carries into an exponent beyond the
// format; overflow is decided after rounding (section 2 step 6).
TEST_CASE("regression: carry at max into overflow", "[oracle][regression]") {
  CHECK(both_f64(61440.0, formats::e5m2).code == 0x7C);  // tie, 1.11b odd: up to 2^16 -> inf
  CHECK(both_f64(61439.0, formats::e5m2).code == 0x7B);
  CHECK(both_f64(61440.0, formats::e5m2, {RoundMode::rne, 0, Overflow::satfinite}).code == 0x7B);
  CHECK(both_f64(65520.0, formats::fp16).code == 0x7C00);  // fp16's tie above 65504
  CHECK(both_f64(65519.0, formats::fp16).code == 0x7BFF);
  CHECK(both_f64(15.75, formats::e3m4).code == 0x70);   // e3m4: 15.5 | 16 tie: 1.1111b odd -> inf
  CHECK(both_f64(7.75, formats::e2m3fn).code == 0x1F);  // no inf, no NaN: max
  CHECK(both_f64(7.75, formats::e2m3fn).flags == (flag::overflow | flag::inexact));
  // sr: a word that carries at max overflows like rne would.
  CHECK(both_f64(57344.0 + 4096.0, formats::e5m2, {RoundMode::sr, 8, Overflow::none}, 0x80).code ==
        0x7C);
}

// Guards NaN into an IEEE-style format without mantissa bits (e5m0): it has inf but no code with
// e all ones and m != 0, so NaN is "a format without NaN" (+0, invalid). The native engine used
// to return the canonical NaN code, which for M = 0 is the inf code: NaN silently became inf.
TEST_CASE("regression: NaN into an ieee format with M = 0 is +0, not inf", "[oracle][regression]") {
  const FloatFormat e5m0 = *parse_float_format("e5m0");
  for (std::uint64_t c = 0; c < 64; ++c) CHECK(oracle::classify(e5m0, c) != ValueClass::nan);
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  for (const float nan : {qnan, -qnan}) {
    const Encoded e = both_f32(nan, e5m0);
    CHECK(e.code == 0x00);
    CHECK(e.flags == flag::invalid);
  }
  CHECK(both_f32(std::numeric_limits<float>::infinity(), e5m0).code == 0x1F);
  CHECK(both_f32(-std::numeric_limits<float>::infinity(), e5m0).code == 0x3F);
  CHECK(both_f32(0x1p17f, e5m0).code == 0x1F);  // overflow under rne: inf, which it has
  CHECK(both_f32(0x1p15f, e5m0).code == 0x1E);  // max = 2^15
}
