// nvfp4:16x16, TransformerEngine's NVFP4 2-D weight scaling (SEMANTICS 7.16), against a reference
// written from TransformerEngine's NVFP4QuantizerRef (transformer_engine/pytorch/custom_recipes/
// reference_nvfp4.py, _quantize_blockwise_reference with quant_tile_shape (16, 16) and
// _pad_tensor): every step below is that code's torch operation on fp32 CUDA tensors (one IEEE
// rounding each), spelled with host fp32 arithmetic; the e4m3fn and e2m1 encoders are TE's/torch's
// definitions (nearest-even over the code list; cast_to_fp4x2's comparison table), not exmy's
// functions.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/quant/quantize.hpp"

using namespace exmy;
using namespace exmy::quant;

namespace {

constexpr float kFltMax = std::numeric_limits<float>::max();

// float8_e4m3fn: 4 exponent bits (bias 7), 3 mantissa bits, no infinities, 0x7F/0xFF NaN.
float e4m3_decode(std::uint8_t c) {
  const int e = (c >> 3) & 0xF, m = c & 7;
  if ((c & 0x7F) == 0x7F) return std::numeric_limits<float>::quiet_NaN();
  const float mag = e == 0 ? std::ldexp(static_cast<float>(m), -9)
                           : std::ldexp(static_cast<float>(8 + m), e - 10);
  return (c & 0x80) ? -mag : mag;
}
// torch's .to(float8_e4m3fn) of a value in [-448, 448] or NaN: nearest, ties to the even code.
std::uint8_t e4m3_encode(float v) {
  if (std::isnan(v)) return 0x7F;
  const std::uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(v));
  std::uint8_t best = 0;
  for (std::uint8_t c = 1; c < 0x7F; ++c) {
    const double d = std::fabs(e4m3_decode(c) - a), db = std::fabs(e4m3_decode(best) - a);
    if (d < db || (d == db && (c & 1) == 0)) best = c;
  }
  return static_cast<std::uint8_t>(sign | best);
}
// cast_to_fp4x2's comparison table, one code per value (NaN matches nothing: code 0).
std::uint8_t te_fp4(float x) {
  std::uint8_t r = 0;
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
// torch.min / torch.clamp on CUDA: NaN propagates.
float tmin(float a, float b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<float>::quiet_NaN() : (a < b ? a : b);
}
float tclamp(float x, float lo, float hi) {
  return std::isnan(x) ? x : (x < lo ? lo : (x > hi ? hi : x));
}
// torch.amax of |x| (NaN propagates).
float amax_of(float a, float x) {
  if (std::isnan(a) || std::isnan(x)) return std::numeric_limits<float>::quiet_NaN();
  return std::fabs(x) > a ? std::fabs(x) : a;
}

struct Ref {
  std::vector<std::uint8_t> codes;   // one per element, the input layout
  std::vector<std::uint8_t> scales;  // one per 16x16 tile (TE repeats it on the tile's 16 rows)
  float global_decode = 0.0f;
};

Ref te_reference(const std::vector<float>& x, std::size_t m, std::size_t n) {
  // _pad_tensor: zeros up to multiples of 16 (they change no amax: |0| is the max's identity).
  const std::size_t mp = (m + 15) / 16 * 16, np = (n + 15) / 16 * 16;
  std::vector<float> xp(mp * np, 0.0f);
  for (std::size_t r = 0; r < m; ++r) {
    for (std::size_t c = 0; c < n; ++c) xp[r * np + c] = x[r * n + c];
  }
  // global_amax = torch.max(torch.abs(row_input)) (the unpadded input; the same value).
  float global_amax = 0.0f;
  for (const float v : x) global_amax = amax_of(global_amax, v);
  // global_encode_scale = div(448 * 6, global_amax), min with FLT_MAX, 1 where 0.
  float enc = tmin(2688.0f / global_amax, kFltMax);
  if (enc == 0.0f) enc = 1.0f;
  const float dec = 1.0f / enc;  // global_decode_scale = torch.div(1.0, enc)
  // global_encode_scale_multiplier = enc * torch.reciprocal(6.0)
  const float recip6 = 1.0f / 6.0f;
  const float mult = enc * recip6;
  Ref ref;
  ref.global_decode = dec;
  ref.codes.assign(m * n, 0);
  const std::size_t tr = mp / 16, tc = np / 16;
  ref.scales.assign(tr * tc, 0);
  for (std::size_t ti = 0; ti < tr; ++ti) {
    for (std::size_t tj = 0; tj < tc; ++tj) {
      float vec_max = 0.0f;  // amax over the 16x16 block
      for (std::size_t r = 0; r < 16; ++r) {
        for (std::size_t c = 0; c < 16; ++c) {
          vec_max = amax_of(vec_max, xp[(ti * 16 + r) * np + tj * 16 + c]);
        }
      }
      // decode_scale = vec_max * mult; min FLT_MAX; clamp +-448; to e4m3fn.
      const float ds = tclamp(tmin(vec_max * mult, kFltMax), -448.0f, 448.0f);
      const std::uint8_t code = e4m3_encode(ds);
      ref.scales[ti * tc + tj] = code;
      // encode_scale = min(div(1.0, decode_scale.float() * global_decode_scale), FLT_MAX).
      const float es = tmin(1.0f / (e4m3_decode(code) * dec), kFltMax);
      for (std::size_t r = ti * 16; r < ti * 16 + 16 && r < m; ++r) {
        for (std::size_t c = tj * 16; c < tj * 16 + 16 && c < n; ++c) {
          // scaled_x = x * encode_scale; clamp(-6, 6); cast_to_fp4x2.
          ref.codes[r * n + c] = te_fp4(tclamp(x[r * n + c] * es, -6.0f, 6.0f));
        }
      }
    }
  }
  return ref;
}

Options te_2d() {
  Options o;
  o.scheme = parse_scheme("nvfp4:16x16");
  o.target = parse_target("e2m1fn");
  o.variant = parse_variant("te");
  o.two_level = true;
  return o;
}

void check_against_reference(const std::vector<float>& x, std::size_t m, std::size_t n) {
  const Ref ref = te_reference(x, m, n);
  const Quantized q = quantize(x, {m, n}, te_2d());
  REQUIRE(q.state_shape == std::vector<std::size_t>{(m + 15) / 16, (n + 15) / 16});
  REQUIRE(q.scale_codes.size() == ref.scales.size());
  // A NaN tensor scale is CUDA's NaN (0x7FFFFFFF, SEMANTICS 7.11); the host reference's NaN bits
  // are the host's, so NaN is compared as NaN.
  if (std::isnan(ref.global_decode)) {
    CHECK(std::isnan(q.tensor_scale));
  } else {
    CHECK(std::memcmp(&q.tensor_scale, &ref.global_decode, 4) == 0);
  }
  std::size_t bad = 0;
  for (std::size_t g = 0; g < ref.scales.size(); ++g) {
    if (q.scale_codes[g] != ref.scales[g] && bad++ < 5) {
      INFO("tile " << g);
      CHECK(int(q.scale_codes[g]) == int(ref.scales[g]));
    }
  }
  for (std::size_t i = 0; i < ref.codes.size(); ++i) {
    if (q.codes[i] != ref.codes[i] && bad++ < 10) {
      INFO("element " << i << " x = " << x[i]);
      CHECK(int(q.codes[i]) == int(ref.codes[i]));
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("nvfp4:16x16 parses, prints back, and has a tile per 16x16 block", "[quant][nvfp4_2d]") {
  const Scheme s = parse_scheme("nvfp4:16x16");
  CHECK(s.kind == Granularity::nvfp4_2d);
  CHECK(scheme_name(s) == "nvfp4:16x16");
  CHECK(state_shape(s, {33, 40}) == std::vector<std::size_t>{3, 3});
  CHECK(group_count(s, 33, 40) == 9);
  CHECK(group_of(s, 33, 40, 17, 39) == 5);
  CHECK_THROWS_AS(parse_scheme("nvfp4:32x32"), InputError);
}

TEST_CASE("nvfp4:16x16 equals TE's reference on boundary tiles", "[quant][nvfp4_2d]") {
  // One 32x32 input, four tiles: (0,0) amax 6 with the e2m1 midpoints and their neighbours;
  // (0,1) all zero (scale 0, encode scale FLT_MAX-limited); (1,0) tiny values (subnormal e4m3
  // scales); (1,1) the tensor amax 1000 and negative zero.
  const std::size_t m = 32, n = 32;
  std::vector<float> x(m * n, 0.0f);
  const float mids[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f};
  for (std::size_t k = 0; k < 16 * 16; ++k) {
    const float v = mids[k % 8] * (k % 3 == 0 ? 1.0f : (k % 3 == 1 ? 1.0000001f : 0.9999999f));
    x[(k / 16) * n + k % 16] = (k & 8) ? -v : v;
  }
  for (std::size_t k = 0; k < 16 * 16; ++k) {
    x[(16 + k / 16) * n + k % 16] = std::ldexp(static_cast<float>(k % 17) - 8.0f, -12);
  }
  for (std::size_t k = 0; k < 16 * 16; ++k) {
    x[(16 + k / 16) * n + 16 + k % 16] = k == 0 ? 1000.0f : (k == 1 ? -0.0f : 0.37f * k);
  }
  check_against_reference(x, m, n);
}

TEST_CASE("nvfp4:16x16 equals TE's reference on partial tiles and specials", "[quant][nvfp4_2d]") {
  std::mt19937 rng(12);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  SECTION("partial edge tiles (TE's zero padding)") {
    for (const auto [m, n] : {std::pair<std::size_t, std::size_t>{1, 2}, {17, 18}, {40, 50}}) {
      std::vector<float> x(m * n);
      for (float& v : x) v = nd(rng) * 3.0f;
      check_against_reference(x, m, n);
    }
  }
  SECTION("all zero: global encode scale FLT_MAX") {
    check_against_reference(std::vector<float>(16 * 16, 0.0f), 16, 16);
  }
  SECTION("an infinity: global encode scale 0 -> 1") {
    std::vector<float> x(16 * 32, 0.5f);
    x[3] = std::numeric_limits<float>::infinity();
    check_against_reference(x, 16, 32);
  }
  SECTION("a NaN: every scale NaN, every code 0") {
    std::vector<float> x(16 * 32, 1.5f);
    x[40] = std::numeric_limits<float>::quiet_NaN();
    check_against_reference(x, 16, 32);
  }
}

TEST_CASE("nvfp4:16x16 equals TE's reference on random weights (printed seed)",
          "[quant][nvfp4_2d]") {
  const std::uint32_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dim(1, 80), ex(-30, 30);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int t = 0; t < 20; ++t) {
    const std::size_t m = dim(rng), n = dim(rng);
    const int scale = ex(rng);
    std::vector<float> x(m * n);
    for (float& v : x) v = std::ldexp(nd(rng), scale);
    check_against_reference(x, m, n);
  }
}

TEST_CASE("nvfp4:16x16 dequantizes as nvfp4 te: RN32(RN32(v * S) * gds)", "[quant][nvfp4_2d]") {
  std::vector<float> x(32 * 48);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1f * i) * (1.0f + i % 7);
  const Options o = te_2d();
  const Quantized q = quantize(x, {32, 48}, o);
  const std::vector<float> y = dequantize(q, o);
  const float e2m1[] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (std::size_t r = 0; r < 32; ++r) {
    for (std::size_t c = 0; c < 48; ++c) {
      const std::uint8_t code = q.codes[r * 48 + c];
      const float v = (code & 8) ? -e2m1[code & 7] : e2m1[code & 7];
      const float s = e4m3_decode(q.scale_codes[(r / 16) * 3 + c / 16]);
      const float want = (v * s) * q.tensor_scale;
      CHECK(std::memcmp(&y[r * 48 + c], &want, 4) == 0);
    }
  }
}

TEST_CASE("nvfp4:16x16 refuses what TE's 2-D path does not do, naming it", "[quant][nvfp4_2d]") {
  const std::vector<float> x(16 * 16, 1.0f);
  auto msg = [&](Options o, std::vector<std::size_t> shape) {
    try {
      (void)quantize(std::vector<float>(x.begin(), x.end()), shape, o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  Options o = te_2d();
  o.variant = parse_variant("torchao");
  CHECK_THAT(msg(o, {16, 16}), Catch::Contains("--variant expected te"));
  o = te_2d();
  o.two_level = false;
  CHECK_THAT(msg(o, {16, 16}), Catch::Contains("add --two-level"));
  o = te_2d();
  o.target = parse_target("e4m3fn");
  CHECK_THAT(msg(o, {16, 16}), Catch::Contains("expected --to e2m1fn"));
  o = te_2d();
  o.mode = RoundMode::rtz;
  CHECK_THAT(msg(o, {16, 16}), Catch::Contains("--round does not apply"));
  CHECK_THAT(msg(te_2d(), {4, 8, 8}), Catch::Contains("expected a 2-d input"));
  o = te_2d();
  o.scale_mode = parse_scale_mode("ceil");
  CHECK_THAT(msg(o, {16, 16}), Catch::Contains("--scale-mode: expected --scheme mx"));
}
