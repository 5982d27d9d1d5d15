// NVFP4 (SEMANTICS 7.11) on hand-derived blocks: each expected code and scale below is worked out
// from the document's formulas (the constants in the comments), not taken from the code.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/native/fp32_ops.hpp"
#include "sim/quant/quantize.hpp"

using namespace exmy;
using namespace exmy::quant;

namespace {
Options nvfp4(const char* variant, bool two_level) {
  Options o;
  o.scheme = parse_scheme("nvfp4");
  o.target = parse_target("e2m1fn");
  o.variant = parse_variant(variant);
  o.two_level = two_level;
  return o;
}
// A row of 16: the given values, then zeros.
std::vector<float> row(std::initializer_list<float> head) {
  std::vector<float> r(head);
  r.resize(16, 0.0f);
  return r;
}
}  // namespace

TEST_CASE("nvfp4 torchao single level: scale, codes, zero and NaN blocks", "[quant][nvfp4]") {
  // Block 0: amax 6, bs = RN32(6 * RN32(1/6) = 0x3E2AAAAB) = 1.0 -> e4m3 0x38, r = 1:
  //   6 -> 0x7, 3 -> 0x5, -1.5 -> 0xB, 0.25 (tie 0 / 0.5, even) -> 0x0, -0.0 -> 0x8 (sign kept).
  // Block 1: all zero: bs = 0 clamps to E4M3_EPS = 2^-6 -> 0x08; codes 0.
  // Block 2: a NaN: bs NaN -> 0x7F; r = RN32(1/NaN) is NaN, so every element is CUDA's NaN
  //   0x7FFFFFFF, which torchao's encoder turns into 0x4.
  std::vector<float> x = row({6.0f, 3.0f, -1.5f, 0.25f, -0.0f});
  const std::vector<float> zero = row({});
  x.insert(x.end(), zero.begin(), zero.end());
  std::vector<float> nanb = row({1.0f, std::numeric_limits<float>::quiet_NaN(), -2.0f});
  x.insert(x.end(), nanb.begin(), nanb.end());
  const Quantized q = quantize(x, {48}, nvfp4("torchao", false));
  REQUIRE(q.scale_codes == std::vector<std::uint8_t>{0x38, 0x08, 0x7F});
  CHECK(q.state_shape == std::vector<std::size_t>{3});
  CHECK(std::vector<std::uint8_t>(q.codes.begin(), q.codes.begin() + 5) ==
        std::vector<std::uint8_t>{0x7, 0x5, 0xB, 0x0, 0x8});
  for (int i = 16; i < 32; ++i) CHECK(q.codes[i] == 0);
  for (int i = 32; i < 48; ++i) CHECK(q.codes[i] == 0x4);
  // Dequantization: value(code) * S.
  const std::vector<float> y = dequantize(q, nvfp4("torchao", false));
  CHECK(y[0] == 6.0f);
  CHECK(y[2] == -1.5f);
  CHECK(std::signbit(y[4]));
  CHECK(y[16] == 0.0f);
  CHECK(std::isnan(y[32]));  // scale 0x7F is NaN
}

TEST_CASE("nvfp4 torchao two-level: the per-tensor scale", "[quant][nvfp4]") {
  // A = 6: pts = RN32(6 * RN32(1/2688)); the block scale is RN32(bs / pts) clamped and cast.
  const std::vector<float> x = row({6.0f, -3.0f});
  const Quantized q = quantize(x, {1, 16}, nvfp4("torchao", true));
  const float pts = native::rn_mul(6.0f, native::rn_div(1.0f, 2688.0f));
  CHECK(native::bits_of(q.tensor_scale) == native::bits_of(pts));
  CHECK(q.state_shape == std::vector<std::size_t>{1, 1});
  // bs / pts is about 448: e4m3 0x7E (448) and the elements keep 6 -> 0x7, -3 -> 0xD.
  CHECK(q.scale_codes[0] == 0x7E);
  CHECK(q.codes[0] == 0x7);
  CHECK(q.codes[1] == 0xD);
  // A given tensor scale replaces the computed one; 0, negative and inf are refused (NaN is the
  // API's "not given"; the CLI refuses a NaN it is given, tests/quant/test_cli_quantize.cpp).
  Options o = nvfp4("torchao", true);
  o.tensor_scale = 1.0f;
  CHECK(quantize(x, {1, 16}, o).tensor_scale == 1.0f);
  for (const float bad : {0.0f, -1.0f, std::numeric_limits<float>::infinity()}) {
    o.tensor_scale = bad;
    CHECK_THROWS_AS(quantize(x, {1, 16}, o), InputError);
  }
}

TEST_CASE("nvfp4 te: global scale rules, no lower clamp, -0 and NaN give code 0",
          "[quant][nvfp4]") {
  // G = 6: ges = RN32(2688 / 6) = 448, gds = RN32(1/448), mult = RN32(448 * RN32(1/6)) =
  // 74.66667175, ds = RN32(6 * mult) = 448.00003 clamps to 448 -> 0x7E; es = RN32(1 / RN32(448 *
  // gds)) = 1: 6 -> 0x7, -6 -> 0xF, 0.25 -> 0x0, -0.0 -> 0x0 (comparison cast), -0.1 -> 0x8.
  const std::vector<float> x = row({6.0f, -6.0f, 0.25f, -0.0f, -0.1f});
  const Quantized q = quantize(x, {16}, nvfp4("te", true));
  CHECK(q.tensor_scale == native::rn_div(1.0f, 448.0f));
  CHECK(q.scale_codes[0] == 0x7E);
  CHECK(std::vector<std::uint8_t>(q.codes.begin(), q.codes.begin() + 5) ==
        std::vector<std::uint8_t>{0x7, 0xF, 0x0, 0x0, 0x8});
  // G = 0: 2688 / 0 = inf becomes FLT_MAX, gds = RN32(1 / FLT_MAX) = 2^-128 (0x00200000); every
  // block scale is 0 (no lower clamp) and every code 0.
  const Quantized z = quantize(std::vector<float>(32, 0.0f), {32}, nvfp4("te", true));
  CHECK(native::bits_of(z.tensor_scale) == 0x00200000u);
  CHECK(z.scale_codes == std::vector<std::uint8_t>{0, 0});
  // G = inf: 2688 / inf = 0 is replaced by 1, so gds = 1.
  const Quantized i =
      quantize(row({std::numeric_limits<float>::infinity(), 1.0f}), {16}, nvfp4("te", true));
  CHECK(i.tensor_scale == 1.0f);
  CHECK(i.codes[0] == 0x7);  // inf * es clamps to 6
  // TE has no single level.
  CHECK_THROWS_AS(quantize(x, {16}, nvfp4("te", false)), InputError);
}

TEST_CASE("nvfp4 bad input: last dimension, target, rounding", "[quant][nvfp4]") {
  CHECK_THROWS_WITH(quantize(std::vector<float>(24, 1.0f), {24}, nvfp4("torchao", false)),
                    Catch::Contains("divisible by 16"));
  Options o = nvfp4("torchao", false);
  o.target = parse_target("e4m3fn");
  CHECK_THROWS_WITH(quantize(std::vector<float>(16, 1.0f), {16}, o), Catch::Contains("e2m1fn"));
  o = nvfp4("torchao", false);
  o.mode = RoundMode::rtz;
  CHECK_THROWS_AS(quantize(std::vector<float>(16, 1.0f), {16}, o), InputError);
}

namespace {
// TransformerEngine's cast_to_fp4x2 (quantization_ref_nvfp4.py), one element, as its comparison
// table reads (SEMANTICS 7.11).
std::uint8_t te_table(float x) {
  std::uint8_t r = 0;  // torch.zeros_like: NaN matches no row
  if (x >= 0.0f && x <= 0.25f) r = 0;
  if (x > 0.25f && x < 0.75f) r = 1;
  if (x >= 0.75f && x <= 1.25f) r = 2;
  if (x > 1.25f && x < 1.75f) r = 3;
  if (x >= 1.75f && x <= 2.5f) r = 4;
  if (x > 2.5f && x < 3.5f) r = 5;
  if (x >= 3.5f && x <= 5.0f) r = 6;
  if (x > 5.0f) r = 7;
  if (x >= -0.25f && x < -0.0f) r = 8;
  if (x < -0.25f && x > -0.75f) r = 9;
  if (x <= -0.75f && x >= -1.25f) r = 10;
  if (x < -1.25f && x > -1.75f) r = 11;
  if (x <= -1.75f && x >= -2.5f) r = 12;
  if (x < -2.5f && x > -3.5f) r = 13;
  if (x <= -3.5f && x >= -5.0f) r = 14;
  if (x < -5.0f) r = 15;
  return r;
}
}  // namespace

TEST_CASE("te_cast_to_fp4 equals TE's comparison table", "[quant][nvfp4]") {
  // Every fp32 in steps of 61 over all bit patterns, plus every pattern within 2^12 ulps of each
  // threshold (both signs), zeros and NaNs.
  std::uint64_t bad = 0, n = 0;
  const auto check = [&](std::uint32_t b) {
    const float y = native::float_of(b);
    bad += native::te_cast_to_fp4(y) != te_table(y);
    ++n;
  };
  for (std::uint64_t b = 0; b <= 0xFFFFFFFFull; b += 61) check(static_cast<std::uint32_t>(b));
  for (const float t : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f}) {
    for (const float s : {t, -t}) {
      const std::uint32_t c = native::bits_of(s);
      for (std::uint32_t d = 0; d < 4096; ++d) {
        check(c + d);
        check(c - d);
      }
    }
  }
  for (const std::uint32_t b : {0x00000000u, 0x80000000u, 0x7FC00000u, 0xFFFFFFFFu, 0x7F800001u})
    check(b);
  INFO(n << " inputs");
  CHECK(bad == 0);
}

// The kernels' branch-free e2m1 encoder against torchao's encoder as written (both native), on
// every fp32 with |y| <= 6 of either sign (the clamped domain), every 97th NaN pattern and the
// NaN that CUDA arithmetic produces; and the clamping forms of both variants (torchao, TE) against
// their definitions with torch_clamp on every 7th fp32 pattern and every pattern near ±6, ±inf.
TEST_CASE("e2m1_code_clamped equals torchao's encoder on every |y| <= 6 and NaN",
          "[quant][nvfp4]") {
  std::uint64_t bad = 0, n = 0;
  const auto check = [&](std::uint32_t b) {
    bad += native::e2m1_code_clamped(b) != native::torchao_f32_to_fx_unpacked(b, 2, 1);
    ++n;
  };
  constexpr std::uint32_t kSix = 0x40C00000u;  // bits of 6.0f
  for (std::uint32_t m = 0; m <= kSix; ++m) {
    check(m);
    check(m | 0x80000000u);
  }
  for (std::uint64_t m = 0x7F800001u; m <= 0x7FFFFFFFu; m += 97) {
    check(static_cast<std::uint32_t>(m));
    check(static_cast<std::uint32_t>(m) | 0x80000000u);
  }
  check(native::kCudaNan);
  INFO(n << " inputs");
  CHECK(n > 2 * std::uint64_t{kSix});
  CHECK(bad == 0);

  std::uint64_t bad_ao = 0, bad_te = 0, m = 0;
  const auto check_clamp = [&](std::uint32_t b) {
    const float p = native::float_of(b);
    const float y = native::torch_clamp(native::cuda_nan_result(p), native::kE2m1Max);
    bad_ao +=
        native::e2m1_code_clamp6(p) != native::torchao_f32_to_fx_unpacked(native::bits_of(y), 2, 1);
    bad_te += native::te_cast_to_fp4_clamp6(p) != native::te_cast_to_fp4(y);
    ++m;
  };
  for (std::uint64_t b = 0; b <= 0xFFFFFFFFull; b += 7) check_clamp(static_cast<std::uint32_t>(b));
  for (const std::uint32_t c : {kSix, 0x7F800000u, 0u}) {
    for (std::uint32_t d = 0; d < 65536; ++d) {
      for (const std::uint32_t s : {0u, 0x80000000u}) {
        check_clamp((c + d) | s);
        check_clamp((c - d) | s);
      }
    }
  }
  INFO(m << " products");
  CHECK(bad_ao == 0);
  CHECK(bad_te == 0);
}

TEST_CASE("kRcpE2m1Max is RN32(1/6)", "[quant][nvfp4]") {
  CHECK(native::bits_of(native::kRcpE2m1Max) == 0x3E2AAAABu);
  CHECK(native::bits_of(native::rn_div(1.0f, 6.0f)) == 0x3E2AAAABu);
  CHECK(native::bits_of(native::cuda_div_by_6(3.0f)) ==
        native::bits_of(native::cuda_div_const(3.0f, 6.0f)));
}
