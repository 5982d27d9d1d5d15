// FP8/ExMy scaled casts (SEMANTICS 7.4): absmax (SwitchBack float8cast), TransformerEngine and
// torchao variants, against an independent fp64 emulation of their fp32 op sequences and a
// brute-force nearest-code search.
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdio>

#include "sim/format/float_names.hpp"
#include "sim/quant/quantize.hpp"
#include "tests/quant/quant_test_util.hpp"

using namespace exmy;
using namespace exmy::quant;
using quant_test::rn32;

namespace {

Options cast_opts(const std::string& scheme, const std::string& fmt, native::CastVariant v) {
  Options o;
  o.scheme = parse_scheme(scheme);
  o.target = parse_target(fmt);
  o.variant = v;
  return o;
}

double group_amax(const std::vector<float>& x) {
  double a = 0;
  for (float v : x) {
    if (std::isnan(v)) return NAN;
    a = std::max(a, std::fabs(static_cast<double>(v)));
  }
  return a;
}

}  // namespace

TEST_CASE("scaled casts match the fp64 emulation + brute-force rounding", "[quant][fp8]") {
  const std::uint64_t seed = 8675309;
  std::printf("scaled casts random seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (const char* fname : {"e4m3fn", "e5m2", "e4m3fnuz", "e3m2fn", "e2m1fn"}) {
    const FloatFormat f = *parse_float_format(fname);
    const double fmax = native::to_double(f, f.max_code());
    for (int t = 0; t < 6; ++t) {
      auto x = quant_test::random_floats(rng, 97, t == 5 ? 1e-30f : 1.0f);
      if (t == 4) x[3] = 0.0f;
      const double a = group_amax(x);
      for (const auto v : {native::CastVariant::absmax, native::CastVariant::te,
                           native::CastVariant::torchao, native::CastVariant::te_current}) {
        const Options o = cast_opts("tensor", fname, v);
        const Quantized q = quantize(x, {x.size()}, o);
        // The state.
        double s = a;
        if (v == native::CastVariant::te || v == native::CastVariant::te_current) {
          s = rn32(rn32(fmax / a) / 1.0);
        }
        if (v == native::CastVariant::torchao) s = rn32(fmax / std::max(a, 1e-12));
        INFO(fname << " variant " << static_cast<int>(v) << " t=" << t);
        CHECK(q.state[0] == static_cast<float>(s));
        const auto d = dequantize(q, o);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
          const double xv = x[i];
          double y;
          if (v == native::CastVariant::absmax)
            y = rn32(fmax * rn32(xv / s));
          else
            y = rn32(xv * s);
          const std::uint64_t want = quant_test::nearest_code_satfinite(f, y);
          if (q.codes[i] != want) ++bad;
          const double cv = native::to_double(f, want);
          double back;
          if (v == native::CastVariant::absmax)
            back = rn32(rn32(s * cv) * rn32(1.0 / fmax));
          else if (v != native::CastVariant::torchao)
            back = rn32(cv * rn32(1.0 / s));
          else
            back = rn32(cv / s);
          if (native::bits_of(d[i]) != native::bits_of(static_cast<float>(back))) ++bad;
        }
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("scaled casts: absmax maps to +-max; zeros, NaN, inf; te margin", "[quant][fp8]") {
  const FloatFormat f = formats::e4m3fn;
  {
    const std::vector<float> x = {-3.0f, 1.0f, 0.5f};
    const Quantized q =
        quantize(x, {3}, cast_opts("tensor", "e4m3fn", native::CastVariant::absmax));
    CHECK(q.codes[0] == (f.sign_bit() | f.max_code()));
  }
  // All-zero group: absmax variant casts the signed zeros themselves; te keeps the previous
  // scale (1.0 by default); torchao clamps amax to 1e-12 in fp64 (scale RN32(448e12)).
  {
    const std::vector<float> x = {0.0f, -0.0f};
    const Quantized qa =
        quantize(x, {2}, cast_opts("tensor", "e4m3fn", native::CastVariant::absmax));
    CHECK(qa.codes[0] == 0x00);
    CHECK(qa.codes[1] == 0x80);
    Options ote = cast_opts("tensor", "e4m3fn", native::CastVariant::te);
    ote.te_prev_scale = 2.0f;
    CHECK(quantize(x, {2}, ote).state[0] == 2.0f);
    const Quantized qt =
        quantize(x, {2}, cast_opts("tensor", "e4m3fn", native::CastVariant::torchao));
    CHECK(qt.state[0] == static_cast<float>(448.0 / 1e-12));
  }
  // te margin: scale = 448 / amax / 2^margin; amax 7 -> 64 / 2^2 = 16.
  {
    Options o = cast_opts("tensor", "e4m3fn", native::CastVariant::te);
    o.te_margin = 2;
    CHECK(quantize({7.0f, 1.0f}, {2}, o).state[0] == 16.0f);
  }
  // NaN in the group: te keeps the previous scale and the NaN element casts to NaN (satfinite
  // keeps NaN); torchao's scale is NaN, so every code is NaN; absmax variant likewise NaN state.
  {
    const std::vector<float> x = {1.0f, NAN};
    const Quantized qte = quantize(x, {2}, cast_opts("tensor", "e4m3fn", native::CastVariant::te));
    CHECK(qte.state[0] == 1.0f);
    CHECK(qte.codes[0] == 0x38);  // 1.0
    CHECK(qte.codes[1] == 0x7F);
    const Quantized qto =
        quantize(x, {2}, cast_opts("tensor", "e4m3fn", native::CastVariant::torchao));
    CHECK(std::isnan(qto.state[0]));
    CHECK((qto.codes[0] & 0x7F) == 0x7F);
  }
  // te with inf: amax not finite -> previous scale; inf saturates to max (satfinite).
  {
    const std::vector<float> x = {1.0f, -INFINITY};
    const Quantized q = quantize(x, {2}, cast_opts("tensor", "e5m2", native::CastVariant::te));
    CHECK(q.state[0] == 1.0f);
    CHECK(q.codes[1] == (formats::e5m2.sign_bit() | formats::e5m2.max_code()));
  }
}

TEST_CASE("scaled casts with sr are unbiased after dequantization (fixed seed)",
          "[quant][fp8][sr]") {
  const std::uint64_t seed = 1234;
  std::printf("fp8 sr seed %llu\n", static_cast<unsigned long long>(seed));
  const std::size_t n = 100000;
  std::vector<float> x(n, 0.3f);
  x[0] = 448.0f;  // amax 448: the absmax variant's y = x (up to fp32 rounding of 0.3 * 448 / 448)
  Options o = cast_opts("tensor", "e4m3fn", native::CastVariant::absmax);
  o.mode = RoundMode::sr;
  o.sr_bits = 16;
  o.seed = seed;
  const Quantized q = quantize(x, {n}, o);
  const auto d = dequantize(q, o);
  double sum = 0;
  for (std::size_t i = 1; i < n; ++i) sum += d[i];
  const double mean = sum / (n - 1);
  // Neighbours of 0.3 in e4m3fn are 0.28125 and 0.3125 (spacing 2^-5): sd of the mean
  // <= 2^-6 / sqrt(n); 6 sd.
  INFO("mean " << mean);
  CHECK(std::fabs(mean - 0.3) < 6 * 0x1p-6 / std::sqrt(double(n)) + 1e-6);
}

TEST_CASE("torchao switches: power-of-two scale, fp16 clamp; given (delayed) scale",
          "[quant][fp8]") {
  // 448 / 3 = 149.33: power-of-two rounding down gives 128; the fp16 clamp only bites for
  // scales above 65504 (amax < 448 / 65504).
  CHECK(native::torchao_scale(3.0f, 448.0f, false, true) == 128.0f);
  CHECK(native::torchao_scale(1e-3f, 448.0f, true, false) == 65504.0f);
  CHECK(native::torchao_scale(1e-3f, 448.0f, false, false) ==
        quant_test::rn32(448.0 / double(1e-3f)));
  CHECK(native::torchao_scale(0x1p-140f, 448.0f, false, false) ==
        static_cast<float>(448.0 / 1e-12));
  // A subnormal-range scale (huge amax) keeps its leading bit only.
  const float tiny = native::torchao_scale(3e38f, 1.0f, false, true);
  CHECK(tiny == std::exp2(std::floor(std::log2(static_cast<double>(1.0f / 3e38f)))));
  Options o = cast_opts("rowwise", "e4m3fn", native::CastVariant::te);
  o.given_scale = 4.0f;
  const Quantized q = quantize({1.0f, 200.0f, -0.5f, 3.0f}, {2, 2}, o);
  CHECK(q.state == std::vector<float>{4.0f, 4.0f});
  CHECK(q.codes[1] == 0x7E);  // 800 saturates to 448
}

TEST_CASE("float scaled casts and MX: quantize -> dequantize error bound", "[quant][fp8][mx]") {
  // Where y does not saturate, the element rounding (rne) errs by at most half a quantum of y:
  // max(|y| 2^-(M+1), 2^(emin-M-1)); dividing by the scale factor k (fmax/a, s or 2^-X) and the
  // fp32 roundings of the scale and the dequantization (a few 2^-24 relative) bound |x^ - x|.
  std::mt19937_64 rng(606);
  const auto x = quant_test::random_floats(rng, 64 * 8, 5.0f);
  std::size_t checked = 0;
  for (const char* fname : {"e4m3fn", "e5m2", "e2m1fn"}) {
    const FloatFormat f = *parse_float_format(fname);
    const double fmax = native::to_double(f, f.max_code());
    const double qmin = std::ldexp(1.0, f.emin() - f.man_bits);  // subnormal quantum
    for (const char* scheme : {"tensor", "rowwise", "block:32", "mx"}) {
      for (const auto v : {native::CastVariant::absmax, native::CastVariant::te,
                           native::CastVariant::torchao, native::CastVariant::te_current}) {
        if (std::string(scheme) == "mx" && v != native::CastVariant::absmax) continue;
        const Options o = cast_opts(scheme, fname, v);
        const Quantized q = quantize(x, {8, 64}, o);
        const auto d = dequantize(q, o);
        for (std::size_t i = 0; i < x.size(); ++i) {
          const std::size_t g = group_of(o.scheme, 8, 64, i / 64, i % 64);
          double k;  // y = k x
          if (o.scheme.kind == Granularity::mx)
            k = std::ldexp(1.0, 127 - q.scale_codes[g]);
          else if (v == native::CastVariant::absmax)
            k = fmax / q.state[g];
          else
            k = q.state[g];
          const double y = k * x[i];
          if (std::fabs(y) > fmax) continue;  // saturated (MX blocks can exceed fmax)
          const double half_q = std::max(std::fabs(y) * std::ldexp(1.0, -f.man_bits - 1), qmin / 2);
          const double bound = half_q / k * (1 + 0x1p-20) + std::fabs(x[i]) * 0x1p-20;
          if (!(std::fabs(d[i] - x[i]) <= bound)) {
            FAIL(fname << " " << scheme << " variant " << static_cast<int>(v) << " x=" << x[i]
                       << " x^=" << d[i] << " bound " << bound);
          }
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 10000);  // most elements do not saturate
}

// Regression (found by the GPU tests): x86 makes 0 * inf the negative NaN 0xFFC00000 and NVIDIA
// GPUs 0x7FFFFFFF, so the cast code's sign differed between CPU and GPU. The fp32 steps return
// the canonical +NaN, whose e5m2 code is 0x7E.
TEST_CASE("regression: a NaN from the scaling step casts to the positive NaN code",
          "[quant][fp8][regression]") {
  Options o = cast_opts("tensor", "e5m2", native::CastVariant::absmax);
  o.order = native::ScaleOrder::mul_recip;  // RN32(fmax / 1e-38) = inf; 0 * inf = NaN
  const Quantized q = quantize({1e-38f, 0.0f, -0.0f}, {3}, o);
  CHECK(q.codes[1] == 0x7E);
  CHECK(q.codes[2] == 0x7E);
  CHECK(native::bits_of(native::rn32_mul(0.0f, INFINITY)) == 0x7FC00000u);
  CHECK(native::bits_of(native::rn32_div(-0.0f, 0.0f)) == 0x7FC00000u);
}

TEST_CASE("te-current (TransformerEngine 2.x compute_scale_from_amax) boundary table",
          "[quant][fp8]") {
  using native::te_current_scale;
  CHECK(te_current_scale(0.0f, 448.0f, false, 0.0f) == 1.0f);
  CHECK(te_current_scale(NAN, 448.0f, false, 0.0f) == 1.0f);
  CHECK(te_current_scale(INFINITY, 448.0f, false, 0.0f) == 1.0f);
  CHECK(te_current_scale(7.0f, 448.0f, false, 0.0f) == 64.0f);
  CHECK(te_current_scale(3.0f, 448.0f, true, 0.0f) == 128.0f);      // 149.33 -> 2^7
  CHECK(te_current_scale(1e-40f, 448.0f, false, 0.0f) == FLT_MAX);  // 448 / 1e-40 overflows
  CHECK(te_current_scale(1e-40f, 448.0f, false, 1e-3f) == quant_test::rn32(448.0 / double(1e-3f)));
  CHECK(te_current_scale(0.0f, 448.0f, false, 2.0f) == 224.0f);  // epsilon lifts a zero amax
  // The tensor path: an all-zero tensor keeps scale 1 and casts to zeros.
  const Quantized q =
      quantize({0.0f, -0.0f}, {2}, cast_opts("tensor", "e4m3fn", native::CastVariant::te_current));
  CHECK(q.state[0] == 1.0f);
  CHECK(q.codes[1] == 0x80);
}
