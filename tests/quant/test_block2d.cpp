// 2-D block scaling, block:RxC (SEMANTICS 7.15), against a reference written here from the
// libraries' sources (DeepGEMM deep_gemm/utils/math.py, TransformerEngine's
// blockwise_quantizer_reference.py + quantize_scale_calc.py, torchao 0.18
// blockwise_fp8_training/kernels.py) in fp64 arithmetic with explicit fp32 roundings and a
// brute-force nearest-code search: it shares no code with sim/native/quant_block2d.hpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/quant/quantize.hpp"
#include "tests/quant/quant_test_util.hpp"

using namespace exmy;
using namespace exmy::quant;

namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
float rn32(double v) {
  return quant_test::rn32(v);
}
// fp32 product / quotient of fp32 operands (RN32 of the exact fp64 result).
float mul32(float a, float b) {
  return rn32(static_cast<double>(a) * b);
}
float div32(float a, float b) {
  return rn32(static_cast<double>(a) / b);
}

enum class Lib { deepgemm, te, torchao };

struct RefOut {
  std::vector<std::uint8_t> codes;
  std::vector<float> stored;  // the state file
};

// torch's fp32 -> fp8 (c10): NaN -> 0x7F | sign; e4m3fn |y| >= 480 -> 0x7F | sign; else nearest
// even (the brute-force search; its saturation is never reached below 480 for e4m3fn, and the
// callers that can exceed fmax in e5m2 clamp first).
std::uint8_t torch_fp8(const FloatFormat& f, float y) {
  const std::uint8_t sign = std::signbit(y) ? 0x80 : 0;
  if (std::isnan(y)) return 0x7F | sign;
  if (f == formats::e4m3fn && std::fabs(y) >= 480.0f) return 0x7F | sign;
  return static_cast<std::uint8_t>(quant_test::nearest_code_satfinite(f, y));
}

// DeepGEMM's ceil_to_ue8m0: 2^ceil(log2 sf) for a normal sf, clamped to [2^-126, 2^127]; NaN
// and inf -> 2^127 (exponent 255 + the mantissa test, clamped).
float ceil_ue8m0_ref(float sf) {
  if (std::isnan(sf) || std::isinf(sf)) return std::ldexp(1.0f, 127);
  int e;
  const double m = std::frexp(static_cast<double>(sf), &e);  // sf = m 2^e, m in [0.5, 1)
  double p = m == 0.5 ? sf : std::ldexp(1.0, e);
  if (p < std::ldexp(1.0, -126)) p = std::ldexp(1.0, -126);
  if (p > std::ldexp(1.0, 127)) p = std::ldexp(1.0, 127);
  return static_cast<float>(p);
}

// One library's quantization of a rows x cols fp32 matrix in R x C tiles.
RefOut reference(Lib lib, const std::vector<float>& x, std::size_t rows, std::size_t cols,
                 std::size_t R, std::size_t C, const FloatFormat& f, const std::string& scale_fmt,
                 float src_max, float te_eps = 0.0f) {
  const float fmax = static_cast<float>(native::to_double(f, f.max_code()));
  const std::size_t tr = (rows + R - 1) / R, tc = (cols + C - 1) / C;
  RefOut out;
  out.codes.resize(rows * cols);
  out.stored.resize(tr * tc);
  for (std::size_t bi = 0; bi < tr; ++bi) {
    for (std::size_t bj = 0; bj < tc; ++bj) {
      float amax = 0.0f;
      bool nan = false;
      for (std::size_t r = bi * R; r < std::min(rows, bi * R + R); ++r) {
        for (std::size_t c = bj * C; c < std::min(cols, bj * C + C); ++c) {
          const float v = x[r * cols + c];
          if (std::isnan(v)) {
            nan = true;
          } else {
            amax = std::max(amax, std::fabs(v));
          }
        }
      }
      float mult = 0, stored = 0;  // the element multiplier and the stored scale
      if (lib == Lib::deepgemm) {
        // x_amax.clamp(1e-4); sf = x_amax / 448.0 (CUDA: x_amax * (1.0f / 448.0f)).
        float a = nan ? kNan : std::max(amax, static_cast<float>(1e-4));
        float sf = mul32(a, div32(1.0f, 448.0f));
        if (scale_fmt == "ue8m0") sf = ceil_ue8m0_ref(sf);
        stored = sf;
        mult = div32(1.0f, sf);
      } else if (lib == Lib::te) {
        const float a = nan ? kNan : std::max(amax, te_eps);
        float s = div32(fmax, a);
        if (s == kInf) s = src_max;
        if (scale_fmt == "pow2") {
          int e = 0;
          if (std::isfinite(s) && s != 0.0f) std::frexp(s, &e);  // torch.frexp: 0 for 0 and NaN
          s = std::ldexp(1.0f, e - 1);
          if (a == kInf) s = 0.0f;
        }
        if (a == 0.0f) s = 1.0f;
        mult = s;
        stored = div32(1.0f, s);
      } else {
        // tl.clamp(max |x| over non-NaN, min=EPS): Triton's core.clamp makes EPS an fp32
        // tensor, so the clamp is fp32 with RN32(1e-12) for fp16 sources too.
        const float eps = static_cast<float>(1e-12);
        const float a = std::max(amax, eps);
        const float s = rn32(448.0 / static_cast<double>(a));
        mult = s;
        stored = div32(1.0f, s);
      }
      out.stored[bi * tc + bj] = stored;
      for (std::size_t r = bi * R; r < std::min(rows, bi * R + R); ++r) {
        for (std::size_t c = bj * C; c < std::min(cols, bj * C + C); ++c) {
          const float v = x[r * cols + c];
          float y = std::isnan(v) ? kNan : mul32(v, mult);
          if (std::isnan(y)) y = kNan;  // GPU and canonical NaNs are positive
          std::uint8_t code;
          if (lib == Lib::deepgemm) {
            code = torch_fp8(f, y);
          } else if (lib == Lib::te) {
            if (!std::isnan(y)) y = std::min(std::max(y, -fmax), fmax);
            code = torch_fp8(f, y);
          } else {
            // min.xorsign.abs(y, 448): a NaN gives +448.
            y = std::isnan(y) ? fmax : std::copysign(std::min(std::fabs(y), fmax), y);
            code = torch_fp8(f, y);
          }
          out.codes[r * cols + c] = code;
        }
      }
    }
  }
  return out;
}

Options tile_opts(const char* scheme, const char* variant, const char* fmt = "fp32",
                  const char* to = "e4m3fn") {
  Options o;
  o.scheme = parse_scheme(scheme);
  o.target = parse_target(to);
  o.variant = parse_variant(variant);
  o.scale_format = parse_scale_format(fmt);
  return o;
}

Lib lib_of(const std::string& v) {
  return v == "deepgemm" ? Lib::deepgemm : v == "te" ? Lib::te : Lib::torchao;
}

// Quantize with exmy and the reference; every code, stored scale and dequantized value equal.
void check_against_reference(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                             const char* scheme, const char* variant, const char* fmt,
                             native::Storage source = native::Storage::f32,
                             const char* to = "e4m3fn", float te_eps = 0.0f) {
  Options o = tile_opts(scheme, variant, fmt, to);
  o.source = source;
  o.te_amax_epsilon = te_eps;
  const Quantized q = quantize(x, {rows, cols}, o);
  const float src_max = source == native::Storage::bf16  ? from_bits(0x7F7F0000u)
                        : source == native::Storage::f16 ? 65504.0f
                                                         : from_bits(0x7F7FFFFFu);
  const RefOut ref = reference(lib_of(variant), x, rows, cols, o.scheme.tile_rows,
                               o.scheme.tile_cols, o.target.fp, fmt, src_max, te_eps);
  INFO(scheme << " " << variant << " " << fmt << " " << rows << "x" << cols);
  REQUIRE(q.state.size() == ref.stored.size());
  for (std::size_t g = 0; g < ref.stored.size(); ++g) {
    INFO("tile " << g << ": " << q.state[g] << " vs " << ref.stored[g]);
    CHECK(bits(q.state[g]) == bits(ref.stored[g]));
  }
  std::size_t bad = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (q.codes[i] != ref.codes[i] && bad++ < 5) {
      FAIL_CHECK("element " << i << " x=" << x[i] << " code " << int(q.codes[i]) << " vs "
                            << int(ref.codes[i]));
    }
  }
  CHECK(bad == 0);
  // Dequantization: RN32(value(code) * stored scale).
  const std::vector<float> y = dequantize(q, o);
  const std::size_t tc = (cols + o.scheme.tile_cols - 1) / o.scheme.tile_cols;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t r = i / cols, c = i % cols;
    const float s = ref.stored[(r / o.scheme.tile_rows) * tc + c / o.scheme.tile_cols];
    const float want = mul32(static_cast<float>(native::to_double(o.target.fp, q.codes[i])), s);
    if (!(std::isnan(want) && std::isnan(y[i]))) REQUIRE(bits(y[i]) == bits(want));
  }
}

}  // namespace

TEST_CASE("block:RxC parses tiles and prints them back", "[quant][block2d]") {
  const Scheme s = parse_scheme("block:1x128");
  CHECK(s.kind == Granularity::tile);
  CHECK(s.tile_rows == 1);
  CHECK(s.tile_cols == 128);
  CHECK(scheme_name(s) == "block:1x128");
  CHECK(scheme_name(parse_scheme("block:128x128")) == "block:128x128");
  CHECK(parse_scheme("block:64").kind == Granularity::block);  // 1-d blocks unchanged
  for (const char* bad : {"block:0x128", "block:1x0", "block:1x", "block:x128", "block:1x128x2",
                          "block:1x4097", "block:-1x128", "block:1 x128"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_scheme(bad), InputError);
  }
  CHECK_THROWS_AS(parse_scale_format("e8m0"), InputError);
}

TEST_CASE("block:RxC state shape is ceil(rows/R) x ceil(cols/C); groups are tiles",
          "[quant][block2d]") {
  const Scheme s = parse_scheme("block:128x128");
  CHECK(state_shape(s, {300, 256}) == std::vector<std::size_t>{3, 2});
  CHECK(state_shape(parse_scheme("block:1x128"), {5, 130}) == std::vector<std::size_t>{5, 2});
  CHECK(group_count(s, 300, 256) == 6);
  CHECK(group_of(s, 300, 256, 129, 127) == 2);
  CHECK(group_of(s, 300, 256, 299, 255) == 5);
}

TEST_CASE("block:RxC refuses what the libraries refuse, naming it", "[quant][block2d]") {
  const std::vector<float> x(4 * 256, 1.0f);
  auto refuses = [&](Options o, std::vector<std::size_t> shape, const std::string& what) {
    try {
      quantize(std::vector<float>(shape[0] * (shape.size() > 1 ? shape[1] : 1), 1.0f), shape, o);
      FAIL("accepted: " << what);
    } catch (const InputError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(what) != std::string::npos);
    }
  };
  refuses(tile_opts("block:1x128", "deepgemm", "fp32", "e5m2"), {4, 256}, "e4m3fn");
  refuses(tile_opts("block:1x128", "deepgemm", "pow2"), {4, 256}, "fp32 or ue8m0");
  refuses(tile_opts("block:1x128", "te", "ue8m0"), {4, 256}, "fp32 or pow2");
  refuses(tile_opts("block:1x128", "torchao", "pow2"), {4, 256}, "--scale-format");
  refuses(tile_opts("block:128x128", "torchao"), {130, 256}, "partial tiles");
  refuses(tile_opts("block:1x128", "torchao"), {4, 200}, "partial tiles");
  refuses(tile_opts("block:1x128", "deepgemm"), {1024}, "2-d input");
  Options sr = tile_opts("block:1x128", "te");
  sr.mode = RoundMode::sr;
  sr.sr_bits = 8;
  refuses(sr, {4, 256}, "--round");
  Options tr = tile_opts("block:1x128", "absmax");
  tr.transpose = true;
  refuses(tr, {4, 256}, "--transpose");
  Options nanopt = tile_opts("block:1x128", "deepgemm");
  nanopt.nan = native::NanPolicy::ignore;
  refuses(nanopt, {4, 256}, "--nan");
  Options ue = tile_opts("block:32", "absmax");
  ue.scale_format = native::BlockScaleFormat::ue8m0;
  refuses(ue, {4, 256}, "--scale-format");
  Options dg = tile_opts("block:1x128", "deepgemm");
  dg.scheme = parse_scheme("rowwise");
  refuses(dg, {4, 256}, "block:RxC");
}

TEST_CASE("block:RxC boundary tiles against the library references", "[quant][block2d]") {
  // Each row of 8 is one 1x8 tile; the table covers the edges named in SEMANTICS 7.15.
  const float eps4 = static_cast<float>(1e-4);
  const float below = std::nextafter(eps4, 0.0f), above = std::nextafter(eps4, 1.0f);
  const float big = 448.0f, tiny = from_bits(0x00000100u);  // a subnormal amax
  std::vector<std::vector<float>> rows = {
      {0.0f, -0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f},   // amax 0, -0 kept
      {tiny, -tiny, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f},   // subnormal amax
      {below, -below, below / 3, 0, 0, 0, 0, 0},           // just under the 1e-4 clamp
      {eps4, -eps4, eps4 / 3, 0, 0, 0, 0, 0},              // on it
      {above, -above, above / 3, 0, 0, 0, 0, 0},           // just above
      {big, -big, 1.0f, 3.5f, -7.25f, 0.001f, 2.0f, 0},    // amax = fmax: scale about 1
      {1.0f, 0.5f, 0.25f, -1.0f, 0.0f, 0.0f, 0.0f, 0.0f},  // amax a power of two
      {448.0f * 1.5f, 1.0f, -2.0f, 0, 0, 0, 0, 0},         // sf not a power of two
      {std::nextafter(448.0f, 0.0f), 1e-3f, 0, 0, 0, 0, 0, 0},
      {1.0f, kNan, -3.0f, 0.5f, 0.0f, -0.0f, 0, 0},      // a NaN in the tile
      {1.0f, kInf, -3.0f, 0.5f, 0.0f, -0.0f, 0, 0},      // an inf in the tile
      {1.0f, -kInf, -3.0f, 0.5f, 0.0f, -0.0f, 0, 0},     // a -inf
      {kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan},  // all NaN
      {3e38f, -3e38f, 1e38f, 1.0f, 0, 0, 0, 0},          // huge amax
      {1e-37f, -1e-38f, 0, 0, 0, 0, 0, 0},               // fmax / amax overflows fp32
      {65504.0f, -1.0f, 0, 0, 0, 0, 0, 0},
  };
  // Scales at the ue8m0 rounding edges: amax whose sf = amax * RN32(1/448) lands on, just below
  // and just above a power of two.
  for (int k : {-20, -5, 0, 3}) {
    const float p = std::ldexp(1.0f, k);
    for (float a :
         {p * 448.0f, std::nextafter(p * 448.0f, 0.0f), std::nextafter(p * 448.0f, kInf)}) {
      rows.push_back({a, -a / 2, a / 3, 0, 0, 0, 0, 0});
    }
  }
  std::vector<float> x;
  for (const auto& r : rows) x.insert(x.end(), r.begin(), r.end());
  const std::size_t n = rows.size();
  for (const char* v : {"deepgemm", "te", "torchao"}) {
    const std::vector<const char*> fmts =
        std::string(v) == "deepgemm" ? std::vector<const char*>{"fp32", "ue8m0"}
        : std::string(v) == "te"     ? std::vector<const char*>{"fp32", "pow2"}
                                     : std::vector<const char*>{"fp32"};
    for (const char* f : fmts) {
      for (const native::Storage src :
           {native::Storage::f32, native::Storage::bf16, native::Storage::f16}) {
        check_against_reference(x, n, 8, "block:1x8", v, f, src);
        check_against_reference(x, n / 2 * 2, 8, "block:2x8", v, f, src);
      }
    }
  }
  // TE's amax_epsilon floor, e5m2 elements.
  check_against_reference(x, n, 8, "block:1x8", "te", "fp32", native::Storage::f32, "e4m3fn",
                          1e-3f);
  check_against_reference(x, n, 8, "block:1x8", "te", "pow2", native::Storage::f32, "e5m2");
}

TEST_CASE("block:RxC named edges, by hand", "[quant][block2d]") {
  // DeepGEMM, all-zero tile: sf = RN32(RN32(1e-4) * RN32(1/448)); ue8m0 rounds it up to 2^-22
  // (1e-4/448 = 2.23e-7 lies in [2^-23, 2^-22)). Codes 0 and 0x80 (-0 kept).
  const std::vector<float> z = {0.0f, -0.0f, 0.0f, 0.0f};
  Quantized q = quantize(z, {1, 4}, tile_opts("block:1x4", "deepgemm"));
  CHECK(bits(q.state[0]) == bits(mul32(static_cast<float>(1e-4), div32(1.0f, 448.0f))));
  CHECK(q.codes == std::vector<std::uint8_t>{0x00, 0x80, 0x00, 0x00});
  q = quantize(z, {1, 4}, tile_opts("block:1x4", "deepgemm", "ue8m0"));
  CHECK(q.state[0] == std::ldexp(1.0f, -22));
  // TE: amax 0 -> scale 1, scale_inv 1; an inf -> scale 0, scale_inv inf, the inf element NaN.
  q = quantize(z, {1, 4}, tile_opts("block:1x4", "te"));
  CHECK(q.state[0] == 1.0f);
  const std::vector<float> inf = {1.0f, kInf, -2.0f, 0.0f};
  q = quantize(inf, {1, 4}, tile_opts("block:1x4", "te", "pow2"));
  CHECK(q.state[0] == kInf);
  CHECK(q.codes == std::vector<std::uint8_t>{0x00, 0x7F, 0x80, 0x00});
  // TE pow2 with a NaN amax: frexp(NaN) gives exponent 0, so the scale is 2^-1 and the finite
  // elements are halved; the NaN element stays NaN.
  const std::vector<float> nan = {448.0f, kNan, -2.0f, 0.0f};
  q = quantize(nan, {1, 4}, tile_opts("block:1x4", "te", "pow2"));
  CHECK(q.state[0] == 2.0f);
  CHECK(q.codes[0] == 0x76);  // 224 in e4m3fn
  CHECK(q.codes[1] == 0x7F);
  // torchao: the NaN is skipped by the max (scale from 448: 1), and the NaN element clips to +448.
  q = quantize(nan, {1, 4}, tile_opts("block:1x4", "torchao"));
  CHECK(q.state[0] == 1.0f);
  CHECK(q.codes[1] == 0x7E);
}

// Regression (issue 32, H200 2026-12-01: torchao 1x128 float16 specials, 256 codes and 2 scales
// differed): an all-zero tile of an fp16 source. torchao 0.18 kernels.py computes
// tl.clamp(tl.max(tl.abs(x)), min=EPS, max=inf) with EPS = 1e-12; Triton's core.clamp turns the
// bounds into fp32 tensors (to_tensor) before semantic.clamp's promotion, and an fp16 tensor
// against an fp32 tensor computes in fp32 (computation_type_impl rule 2). So a' = RN32(1e-12)
// (0x2B8CBCCC), s = RN32(448 / a') = 4.48e14 (0x57CBBA10), y = ±0 · s = ±0 and the codes are
// ±0 (0x00 / 0x80); the stored reciprocal is RN32(1/s) = 0x2720D7C5. exmy had taken eps in fp16
// (0), s = inf, 0 · inf = NaN → +448 (0x7E) and a stored 0.
TEST_CASE("block:RxC torchao fp16 all-zero tile clamps in fp32 (regression)",
          "[quant][block2d][regression]") {
  const std::vector<float> z = {-0.0f, 0.0f, -0.0f, 0.0f};
  for (const native::Storage src :
       {native::Storage::f16, native::Storage::bf16, native::Storage::f32}) {
    INFO("source " << static_cast<int>(src));
    Options o = tile_opts("block:1x4", "torchao");
    o.source = src;
    const Quantized q = quantize(z, {1, 4}, o);
    REQUIRE(q.state.size() == 1);
    CHECK(native::bits_of(q.state[0]) == 0x2720D7C5u);  // RN32(1 / 0x57CBBA10)
    CHECK(q.codes == std::vector<std::uint8_t>{0x80, 0x00, 0x80, 0x00});
  }
}

TEST_CASE("block:RxC partial edge tiles take the amax of the elements present",
          "[quant][block2d]") {
  std::mt19937_64 rng(77);
  const auto x = quant_test::random_floats(rng, 130 * 200);
  for (const char* v : {"deepgemm", "te"}) {
    check_against_reference(x, 130, 200, "block:128x128", v, "fp32");
    check_against_reference(x, 130, 200, "block:1x128", v, "fp32");
    check_against_reference(x, 130, 200, "block:16x16", v, "fp32");
  }
}

TEST_CASE("block:RxC weighted random against the library references", "[quant][block2d]") {
  const std::uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::printf("block2d random seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  struct Shape {
    std::size_t rows, cols;
    const char* scheme;
  };
  const Shape shapes[] = {{4, 256, "block:1x128"}, {128, 256, "block:128x128"},
                          {32, 64, "block:32x32"}, {16, 48, "block:16x16"},
                          {8, 96, "block:1x32"},   {64, 64, "block:64x1"}};
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int iter = 0; iter < 6; ++iter) {
    for (const Shape& s : shapes) {
      auto x = quant_test::random_floats(rng, s.rows * s.cols,
                                         static_cast<float>(std::ldexp(1.0, iter * 9 - 20)));
      // Heavy tails and specials, sparsely.
      for (auto& v : x) {
        const double p = u(rng);
        if (p < 0.002)
          v = kNan;
        else if (p < 0.004)
          v = (p < 0.003 ? kInf : -kInf);
        else if (p < 0.05)
          v *= 1e4f;
      }
      for (const native::Storage src : {native::Storage::f32, native::Storage::bf16}) {
        check_against_reference(x, s.rows, s.cols, s.scheme, "deepgemm", "fp32", src);
        check_against_reference(x, s.rows, s.cols, s.scheme, "deepgemm", "ue8m0", src);
        check_against_reference(x, s.rows, s.cols, s.scheme, "te", "fp32", src);
        check_against_reference(x, s.rows, s.cols, s.scheme, "te", "pow2", src);
        check_against_reference(x, s.rows, s.cols, s.scheme, "torchao", "fp32", src);
      }
    }
  }
}

TEST_CASE("block:RxC with the existing scale rules groups by tile", "[quant][block2d]") {
  // absmax on 2x2 tiles of a 2x4 matrix: the state is each tile's amax (SwitchBack's rule).
  const std::vector<float> x = {1.0f, -4.0f, 0.5f, 2.0f, 3.0f, 0.0f, -8.0f, 1.0f};
  Options o = tile_opts("block:2x2", "absmax");
  const Quantized q = quantize(x, {2, 4}, o);
  CHECK(q.state == std::vector<float>{4.0f, 8.0f});
  CHECK(q.state_shape == std::vector<std::size_t>{1, 2});
  const Quantized i8 = quantize(x, {2, 4}, [] {
    Options p;
    p.scheme = parse_scheme("block:2x2");
    return p;
  }());
  CHECK(i8.state == std::vector<float>{4.0f, 8.0f});
  CHECK(static_cast<std::int8_t>(i8.codes[1]) == -127);
  CHECK(static_cast<std::int8_t>(i8.codes[6]) == -127);
}
