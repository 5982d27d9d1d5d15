// MX (OCP Microscaling v1.0) block scales (SEMANTICS 7.6) against frexp and a brute-force
// nearest-code search with saturation.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/quant_mx.hpp"
#include "sim/native/quant_mx_torchao.hpp"
#include "sim/quant/quantize.hpp"
#include "tests/quant/quant_test_util.hpp"

using namespace exmy;
using namespace exmy::quant;

namespace {
Options mx_opts(const std::string& fmt) {
  Options o;
  o.scheme = parse_scheme("mx");
  o.target = parse_target(fmt);
  return o;
}
}  // namespace

TEST_CASE("mx scale code = floor(log2 amax) - emax_elem + 127", "[quant][mx]") {
  std::mt19937_64 rng(5);
  for (const char* fname : {"e4m3fn", "e5m2", "e3m2fn", "e2m3fn", "e2m1fn"}) {
    const FloatFormat f = *parse_float_format(fname);
    for (int t = 0; t < 2000; ++t) {
      const float a = std::fabs(quant_test::random_floats(rng, 1)[0]) *
                      static_cast<float>(std::ldexp(1.0, (t % 300) - 150));
      if (a == 0.0f || !std::isfinite(a)) continue;
      int e;
      std::frexp(static_cast<double>(a), &e);  // a = m * 2^e, m in [0.5, 1): floor(log2 a) = e-1
      int want = (e - 1) - f.emax() + 127;
      want = std::clamp(want, 0, 254);
      INFO(fname << " a=" << a);
      CHECK(native::mx_scale_code(a, f) == want);
    }
    CHECK(native::mx_scale_code(0.0f, f) == 0);
    CHECK(native::mx_scale_code(NAN, f) == 0xFF);
    CHECK(native::mx_scale_code(INFINITY, f) == 0xFF);
  }
  CHECK(formats::e4m3fn.emax() == 8);
  CHECK(formats::e5m2.emax() == 15);
  CHECK(formats::e2m1fn.emax() == 2);
}

TEST_CASE("mx elements are the satfinite rne cast of x / 2^scale", "[quant][mx]") {
  const std::uint64_t seed = 2024;
  std::printf("mx random seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (const char* fname : {"e4m3fn", "e5m2", "e2m1fn", "e3m2fn"}) {
    const FloatFormat f = *parse_float_format(fname);
    const std::size_t n = 32 * 5 + 7;  // partial last block
    auto x = quant_test::random_floats(rng, n);
    const Options o = mx_opts(fname);
    const Quantized q = quantize(x, {n}, o);
    REQUIRE(q.scale_codes.size() == 6);
    const auto d = dequantize(q, o);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const int se = q.scale_codes[i / 32] - 127;
      const double y = std::ldexp(static_cast<double>(x[i]), -se);  // exact
      const auto want = quant_test::nearest_code_satfinite(f, y);
      if (q.codes[i] != want) ++bad;
      const double back = std::ldexp(native::to_double(f, want), se);
      if (d[i] != static_cast<float>(back)) ++bad;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("mx boundary table: NaN/inf blocks, zero blocks, bad targets", "[quant][mx]") {
  std::vector<float> x(64, 1.0f);
  x[3] = NAN;
  for (std::size_t i = 32; i < 64; ++i) x[i] = 0.0f;
  x[40] = -0.0f;
  const Options o = mx_opts("e4m3fn");
  const Quantized q = quantize(x, {64}, o);
  CHECK(q.scale_codes[0] == 0xFF);
  CHECK(q.scale_codes[1] == 0);
  CHECK(q.codes[0] == 0x7F);  // NaN scale: element codes NaN
  CHECK(q.codes[40] == 0x80);
  const auto d = dequantize(q, o);
  CHECK(std::isnan(d[5]));
  CHECK(d[33] == 0.0f);
  CHECK(std::signbit(d[40]));
  // Values at the block max map to the element's max normal region: 448 * 2^k -> 448 exactly.
  std::vector<float> y(32, 0.0f);
  y[0] = 448.0f * 4;
  const Quantized q2 = quantize(y, {32}, o);
  CHECK(q2.codes[0] == 0x7E);
  CHECK(dequantize(q2, o)[0] == 1792.0f);
  Options bad = mx_opts("e4m3fn");
  bad.target = parse_target("int8");
  CHECK_THROWS_AS(quantize(y, {32}, bad), InputError);
}

// Regression: floor(log2 a) of an fp32 subnormal amax was first computed one too low (the leading
// bit position of the mantissa field is offset by 149, not 150).
TEST_CASE("regression: mx scale of subnormal amax", "[quant][mx][regression]") {
  const FloatFormat f = formats::e4m3fn;  // emax_elem 8
  for (int k = -149; k <= -127; ++k) {
    const float a = std::ldexp(1.0f, k);        // 2^k, subnormal for k < -126
    const int want = std::max(0, k - 8 + 127);  // clamped at the E8M0 minimum
    INFO("k=" << k);
    CHECK(native::mx_scale_code(a, f) == want);
    CHECK(native::mx_scale_code(std::nextafter(2 * a, 0.0f), f) == std::max(0, k - 8 + 127));
  }
  // e2m1fn (emax 2): amax 2^-130 -> X = -132 -> clamped to -127 (code 0).
  CHECK(native::mx_scale_code(std::ldexp(1.0f, -130), formats::e2m1fn) == 0);
  CHECK(native::mx_scale_code(std::ldexp(1.0f, -120), formats::e2m1fn) == 5);
}

namespace {
// SEMANTICS 7.6's scale exponent X of each mode, from the exact value of a (finite, > 0) by
// double arithmetic (every fp32 and every fmax * 2^X is exact in double), then the clamp.
int reference_mx_exp(double a, const FloatFormat& elem, native::MxScaleMode mode) {
  int e2 = 0;
  const double m = std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1)
  const int fl = e2 - 1;                // floor(log2 a)
  const int emax = elem.emax();
  int x = 0;
  switch (mode) {
    case native::MxScaleMode::floor:
      x = fl - emax;
      break;
    case native::MxScaleMode::ceil:
      x = (m == 0.5 ? fl : fl + 1) - emax;
      break;
    case native::MxScaleMode::even: {
      // the significand 2m in [1, 2) rounded to M fraction bits, ties up.
      const double q = std::ldexp(1.0, elem.man_bits);
      const double r = std::floor(2.0 * m * q + 0.5) / q;
      x = (r >= 2.0 ? fl + 1 : fl) - emax;
      break;
    }
    case native::MxScaleMode::rceil: {
      // the smallest X with a <= fmax * 2^X
      const double fmax = native::to_float(elem, elem.max_code());
      x = fl - emax - 2;
      while (a > std::ldexp(fmax, x)) ++x;
      break;
    }
  }
  return x < -127 ? -127 : (x > 127 ? 127 : x);
}
}  // namespace

TEST_CASE("mx scale modes (ocp) = the exact definitions of SEMANTICS 7.6", "[quant][mx]") {
  std::mt19937_64 rng(77);
  std::printf("mx scale modes seed 77\n");
  for (const char* fname : {"e4m3fn", "e5m2", "e3m2fn", "e2m3fn", "e2m1fn"}) {
    const FloatFormat f = *parse_float_format(fname);
    const double fmax = native::to_float(f, f.max_code());
    for (const auto mode : {native::MxScaleMode::floor, native::MxScaleMode::ceil,
                            native::MxScaleMode::even, native::MxScaleMode::rceil}) {
      std::vector<float> as;
      // powers of two, their neighbours, fmax multiples and their neighbours, rounding points of
      // the even mode, subnormals, the extremes; then random bit patterns.
      for (int k = -149; k <= 127; ++k) {
        const float p = std::ldexp(1.0f, k);
        as.insert(as.end(), {p, std::nextafter(p, 0.0f), std::nextafter(p, INFINITY)});
        const float fm = static_cast<float>(std::ldexp(fmax, k));
        if (std::isfinite(fm) && fm > 0.0f) {
          as.insert(as.end(), {fm, std::nextafter(fm, 0.0f), std::nextafter(fm, INFINITY)});
        }
        const float ev = static_cast<float>(std::ldexp(2.0 - std::ldexp(1.0, -f.man_bits - 1), k));
        if (std::isfinite(ev) && ev > 0.0f) {
          as.insert(as.end(), {ev, std::nextafter(ev, 0.0f), std::nextafter(ev, INFINITY)});
        }
      }
      as.push_back(std::numeric_limits<float>::max());
      for (int t = 0; t < 20000; ++t) {
        const std::uint32_t b = static_cast<std::uint32_t>(rng()) & 0x7F7FFFFFu;
        as.push_back(native::float_of(b == 0 ? 1u : b));
      }
      for (const float a : as) {
        if (!(a > 0.0f) || !std::isfinite(a)) continue;
        INFO(fname << " mode " << int(mode) << " a " << std::hexfloat << a);
        REQUIRE(native::mx_scale_code(a, f, mode) == reference_mx_exp(a, f, mode) + 127);
      }
    }
  }
}

TEST_CASE("torchao's FLOOR field read equals exact floor(log2) for every subnormal amax",
          "[quant][mx]") {
  // SEMANTICS 7.6 claims the exponent-field read of torchao FLOOR needs no switch: for every MX
  // element format both clamp every fp32-subnormal amax to the code 0. All 2^23 subnormals.
  for (const char* fname : {"e4m3fn", "e5m2", "e3m2fn", "e2m3fn", "e2m1fn"}) {
    const FloatFormat f = *parse_float_format(fname);
    std::uint64_t bad = 0;
    for (std::uint32_t b = 1; b < 0x800000u; ++b) {
      const float a = native::float_of(b);
      bad += native::mx_scale_code(a, f, native::MxScaleMode::floor) !=
             native::mx_torchao_scale_code(a, f, native::MxScaleMode::floor);
    }
    INFO(fname);
    CHECK(bad == 0);
  }
}

TEST_CASE("torchao MX elements: RN32(x * factor) equals SEMANTICS 7.6's RN32(x / S)",
          "[quant][mx]") {
  // floor / ceil / even divide by S = max(fp32(code << 23), 2^-126) (+inf for code 255); the
  // native code multiplies by 1/S. Reference from the document: the division, then the clamp (fp8
  // only), then the element cast — for every code and boundary / random x.
  std::mt19937_64 rng(99);
  std::printf("torchao mx factor seed 99\n");
  std::vector<float> xs = {0.0f,
                           -0.0f,
                           1.0f,
                           -1.0f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::min(),
                           std::numeric_limits<float>::denorm_min()};
  for (int t = 0; t < 3000; ++t) xs.push_back(native::float_of(static_cast<std::uint32_t>(rng())));
  std::uint64_t bad = 0;
  for (const char* fname : {"e4m3fn", "e5m2", "e2m3fn", "e3m2fn", "e2m1fn"}) {
    const FloatFormat f = *parse_float_format(fname);
    for (int code = 0; code < 256; ++code) {
      float s = native::float_of(static_cast<std::uint32_t>(code) << 23);
      if (s < native::float_of(0x00800000u)) s = native::float_of(0x00800000u);
      for (const auto mode :
           {native::MxScaleMode::floor, native::MxScaleMode::ceil, native::MxScaleMode::even}) {
        for (const float x : xs) {
          float y = native::cuda_nan_result(native::rn_div(x, s));
          if (f.total_bits() == 8) y = native::torch_clamp(y, native::format_max32(f));
          const auto want = native::torchao_element_cast(f, native::bits_of(y));
          const auto got =
              native::mx_torchao_element(f, x, static_cast<std::uint8_t>(code), mode).code;
          if (got != want && bad++ == 0) {
            UNSCOPED_INFO("first mismatch: " << fname << " code " << code << " x " << std::hexfloat
                                             << x << " got " << got << " want " << int(want));
          }
        }
      }
    }
  }
  CHECK(bad == 0);
}
