// The step oracle's value type and Philox (sim/oracle/steps/real.hpp, philox.hpp): one rounding
// per operation into fp32/fp64/bf16/fp16 with subnormals and overflow, checked against values
// worked out by hand from docs/SEMANTICS.md sections 2 and 4 and against the host's IEEE
// arithmetic (a third engine: SSE add/sub/mul/div/sqrt and glibc's fma are correctly rounded).
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>

#include "sim/oracle/steps/philox.hpp"
#include "sim/oracle/steps/real.hpp"

using namespace exmy::oracle::steps;

namespace {
std::uint32_t b32(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float f32(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
std::uint64_t b64(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
}
double f64(std::uint64_t u) {
  double x;
  std::memcpy(&x, &u, 8);
  return x;
}
Real R(double x) {
  return Real::of_double(x);
}
bool nan32(std::uint32_t u) {
  return (u & 0x7FFFFFFFu) > 0x7F800000u;
}
}  // namespace

TEST_CASE("step oracle Philox4x32-10 known answers (Random123 kat_vectors)", "[oracle][steps]") {
  const auto a = philox4x32_10({0, 0, 0, 0}, 0, 0);
  CHECK(a == std::array<std::uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  const auto b = philox4x32_10({~0u, ~0u, ~0u, ~0u}, ~0u, ~0u);
  CHECK(b == std::array<std::uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  const auto c =
      philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, 0xa4093822u, 0x299f31d0u);
  CHECK(c == std::array<std::uint32_t, 4>{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
  // Section 3.2's element mapping: element 4b + j is word j of block b (counter (b, 0, s, 0)).
  const auto blk = philox4x32_10({5, 0, 9, 0}, 0x89abcdefu, 0x01234567u);
  for (int j = 0; j < 4; ++j)
    CHECK(philox_element_word(0x0123456789abcdefull, 9, 20 + j) == blk[j]);
}

TEST_CASE("step oracle: one rounding, ties to even, in every format", "[oracle][steps]") {
  // fma rounds once: (1 + 2^-12)^2 - 1 = 2^-11 + 2^-24 exactly; the product alone rounds its
  // 2^-24 (half an ulp at 1, a tie) to even and loses it.
  const Real a = R(1.0 + std::ldexp(1.0, -12));
  CHECK(fma(F32, a, a, R(-1.0)).f32_bits() == b32(std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24)));
  CHECK(sub(F32, mul(F32, a, a), R(1.0)).f32_bits() == b32(std::ldexp(1.0f, -11)));
  // Subnormal results: 1.5 and 2.5 quanta are ties and go to the even 2 quanta.
  const Real q = R(std::ldexp(1.0, -149));
  CHECK(mul(F32, R(1.5), q).f32_bits() == 2u);
  CHECK(mul(F32, R(2.5), q).f32_bits() == 2u);
  CHECK(mul(F32, R(0.5), q).f32_bits() == 0u);  // tie between 0 and 1 quantum: 0
  CHECK(mul(F32, R(-0.75), q).f32_bits() == 0x80000001u);
  // Overflow after rounding: FLT_MAX + half an ulp is a tie that goes to 2^128, i.e. inf.
  CHECK(add(F32, R(FLT_MAX), R(std::ldexp(1.0, 103))).f32_bits() == 0x7F800000u);
  CHECK(add(F32, R(FLT_MAX), R(std::ldexp(1.0, 102))).f32_bits() == b32(FLT_MAX));
  CHECK(round(F16, R(65520.0)).code(F16) == 0x7C00u);
  CHECK(round(F16, R(65519.0)).code(F16) == 0x7BFFu);
  CHECK(round(BF16, R(1.0 + std::ldexp(1.0, -8))).code(BF16) == 0x3F80u);  // tie, even
  CHECK(round(BF16, R(1.0 + 3 * std::ldexp(1.0, -8))).code(BF16) == 0x3F82u);
  CHECK(round(F16, R(std::ldexp(3.0, -26))).code(F16) == 0x0001u);  // 0.75 quantum → 1
  // Specials follow IEEE 754.
  CHECK(sub(F32, R(INFINITY), R(INFINITY)).is_nan());
  CHECK(div(F32, R(1.0), R(-0.0)).f32_bits() == 0xFF800000u);
  CHECK(sqrt(F32, R(-0.0)).f32_bits() == 0x80000000u);
  CHECK(add(F32, R(-0.0), R(0.0)).f32_bits() == 0u);
  CHECK(add(F32, R(1.0), R(-1.0)).f32_bits() == 0u);
  CHECK(pow(F64, R(2.0), R(10.0)).code(F64) == b64(1024.0));
  CHECK(fmax(Real::nan(), R(2.0)).f32_bits() == b32(2.0f));
  CHECK(maximum(Real::nan(), R(2.0)).is_nan());
  CHECK_THROWS_AS(R(0.1).code(F32), std::logic_error);  // 0.1 (a double) is not an fp32
}

TEST_CASE("step oracle arithmetic equals the host's IEEE arithmetic on random patterns",
          "[oracle][steps]") {
  std::mt19937_64 rng(20261123);
  // Patterns: uniform bits (every class) and values near each other (cancellation, ties).
  const auto pick32 = [&] {
    const std::uint32_t u = static_cast<std::uint32_t>(rng());
    switch (rng() % 4) {
      case 0:
        return u;
      case 1:
        return (u & 0x807FFFFFu) | 0x3F800000u;  // [1, 2)
      case 2:
        return u & 0x80FFFFFFu;  // subnormals and the lowest normals
      default:
        return (u & 0x80FFFFFFu) | 0x7E000000u;  // near the top
    }
  };
  int checked = 0;
  for (int k = 0; k < 20000; ++k) {
    const float x = f32(pick32()), y = f32(pick32()), z = f32(pick32());
    const Real X = Real::of_f32_bits(b32(x)), Y = Real::of_f32_bits(b32(y)),
               Z = Real::of_f32_bits(b32(z));
    const auto same = [&](const Real& o, float h) {
      const std::uint32_t ob = o.f32_bits(), hb = b32(h);
      return ob == hb || (nan32(ob) && nan32(hb));
    };
    INFO(std::hex << b32(x) << " " << b32(y) << " " << b32(z));
    CHECK(same(add(F32, X, Y), x + y));
    CHECK(same(sub(F32, X, Y), x - y));
    CHECK(same(mul(F32, X, Y), x * y));
    CHECK(same(div(F32, X, Y), x / y));
    CHECK(same(sqrt(F32, X), std::sqrt(x)));
    CHECK(same(fma(F32, X, Y, Z), std::fmaf(x, y, z)));
    // fp64 operations of fp32 operands, then RN32 (the host scalar paths).
    const double d = static_cast<double>(x) * static_cast<double>(y);
    if (!std::isnan(d)) CHECK(mul(F64, X, Y).code(F64) == b64(d));
    ++checked;
  }
  for (int k = 0; k < 20000; ++k) {
    const double x = f64(rng()), y = f64(rng()), z = f64(rng());
    const Real X = Real::of_double(x), Y = Real::of_double(y), Z = Real::of_double(z);
    const auto same = [&](const Real& o, double h) {
      return std::isnan(h) ? o.is_nan() : o.code(F64) == b64(h);
    };
    INFO(std::hex << b64(x) << " " << b64(y) << " " << b64(z));
    CHECK(same(add(F64, X, Y), x + y));
    CHECK(same(mul(F64, X, Y), x * y));
    CHECK(same(div(F64, X, Y), x / y));
    CHECK(same(fma(F64, X, Y, Z), std::fma(x, y, z)));
    CHECK(same(sqrt(F64, X), std::sqrt(x)));
    // fp64 → fp32 (the RN32 of host scalars).
    const float r = static_cast<float>(x);
    CHECK((std::isnan(x) ? round(F32, X).is_nan() : round(F32, X).f32_bits() == b32(r)));
  }
  CHECK(checked == 20000);
}
