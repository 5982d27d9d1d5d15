// 2-D block scaling (docs/SEMANTICS.md 7.15): the native quantizer (sim/quant, through
// sim/native/quant_block2d.hpp) against the MPFR oracle (sim/oracle/steps/quant_tile.cpp, reached
// through the campaigns' bridge verify::oracle_quant_spec), bit for bit: every code, stored scale
// and dequantized value, for the three library rules and each scale format, fp32/bf16/fp16
// sources, whole and partial tiles; a boundary table and weighted random tensors (seed printed).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "sim/oracle/steps/real.hpp"
#include "sim/quant/quantize.hpp"
#include "sim/verify/quant_oracle_spec.hpp"

using namespace exmy;
namespace oq = exmy::oracle::steps::quant;
using oracle::steps::Real;

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
bool same32(std::uint32_t a, std::uint32_t b) {
  const auto nan = [](std::uint32_t u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; };
  return a == b || (nan(a) && nan(b));
}

// The input as the source dtype holds it (widened exactly): RN into bf16 / fp16 by the oracle.
std::vector<float> as_source(std::vector<float> x, native::Storage src) {
  if (src == native::Storage::f32) return x;
  const FloatFormat& f = src == native::Storage::bf16 ? formats::bf16 : formats::fp16;
  for (float& v : x) {
    if (std::isnan(v)) continue;
    v = from_bits(oracle::steps::round(f, Real::of_f32_bits(bits(v))).f32_bits());
  }
  return x;
}

quant::Options tile_opts(const std::string& scheme, const std::string& variant,
                         const std::string& fmt, const std::string& to, native::Storage src) {
  quant::Options o;
  o.scheme = quant::parse_scheme(scheme);
  o.target = quant::parse_target(to);
  o.variant = quant::parse_variant(variant);
  o.scale_format = quant::parse_scale_format(fmt);
  o.source = src;
  return o;
}

// Native and oracle on x (rows × cols); returns the number of differing elements (0 expected).
std::size_t compare(const std::vector<float>& x0, std::size_t rows, std::size_t cols,
                    const quant::Options& o, const std::string& what) {
  const std::vector<float> x =
      as_source(std::vector<float>(x0.begin(), x0.begin() + rows * cols), o.source);
  const quant::Quantized nq = quant::quantize(x, {rows, cols}, o);
  const std::vector<float> nd = quant::dequantize(nq, o);
  const verify::OracleQuant oqs = verify::oracle_quant_spec(o, rows, cols);
  oracle::steps::Tensor X;
  for (float v : x) X.push_back(Real::of_f32_bits(bits(v)));
  const oq::Quantized oz = oq::quantize(X, oqs.spec);
  const oracle::steps::Tensor od = oq::dequantize(oz, oqs.spec);
  std::size_t bad = 0;
  auto report = [&](const char* kind, std::size_t i, std::uint64_t nat, std::uint64_t orc) {
    if (bad++ < 4) {
      UNSCOPED_INFO(what << ": " << kind << " " << i << " native 0x" << std::hex << nat
                         << " oracle 0x" << orc << std::dec);
    }
  };
  REQUIRE(nq.state.size() == oz.state.size());
  REQUIRE(nq.codes.size() == oz.codes.size());
  for (std::size_t g = 0; g < oz.state.size(); ++g) {
    const std::uint32_t o32 = oz.state[g].f32_bits(), n32 = bits(nq.state[g]);
    if (!same32(n32, o32)) report("state", g, n32, o32);
  }
  for (std::size_t i = 0; i < oz.codes.size(); ++i) {
    if (nq.codes[i] != oz.codes[i]) report("code", i, nq.codes[i], oz.codes[i]);
  }
  for (std::size_t i = 0; i < od.size(); ++i) {
    const std::uint32_t o32 = od[i].f32_bits(), n32 = bits(nd[i]);
    if (!same32(n32, o32)) report("dequant", i, n32, o32);
  }
  return bad;
}

struct Rule {
  const char* variant;
  std::vector<const char*> fmts;
  bool partial_ok;  // torchao refuses partial tiles
};
const std::vector<Rule>& rules() {
  static const std::vector<Rule> r = {{"deepgemm", {"fp32", "ue8m0"}, true},
                                      {"te", {"fp32", "pow2"}, true},
                                      {"torchao", {"fp32"}, false}};
  return r;
}
const native::Storage kSources[] = {native::Storage::f32, native::Storage::bf16,
                                    native::Storage::f16};
const char* source_name(native::Storage s) {
  return s == native::Storage::f32 ? "fp32" : s == native::Storage::bf16 ? "bf16" : "fp16";
}

// Rows of 8 (one 1x8 tile each) at the edges SEMANTICS 7.15 names.
std::vector<std::vector<float>> boundary_rows() {
  const float eps4 = from_bits(0x38D1B717u);  // RN32(1e-4)
  const float tiny = from_bits(0x00000100u);
  std::vector<std::vector<float>> rows = {
      {0.0f, -0.0f, 0, 0, 0, 0, 0, 0},
      {tiny, -tiny, from_bits(1), 0, 0, 0, 0, 0},
      {std::nextafter(eps4, 0.0f), -eps4 / 3, 0, 0, 0, 0, 0, 0},
      {eps4, -eps4, eps4 / 7, 0, 0, 0, 0, 0},
      {std::nextafter(eps4, 1.0f), 1e-6f, -1e-9f, 0, 0, 0, 0, 0},
      {448.0f, -448.0f, 1.0f, 3.5f, -7.25f, 0.001f, 2.0f, 0},
      {1.0f, 0.5f, 0.25f, -1.0f, 0.0f, -0.0f, 0, 0},
      {672.0f, 1.0f, -2.0f, 464.0f, -463.9f, 0, 0, 0},
      {std::nextafter(448.0f, 0.0f), 1e-3f, 0, 0, 0, 0, 0, 0},
      {1.0f, kNan, -3.0f, 0.5f, 0.0f, -0.0f, 0, 0},
      {1.0f, kInf, -3.0f, 0.5f, 0.0f, -0.0f, 0, 0},
      {1.0f, -kInf, -3.0f, 0.5f, 0.0f, -0.0f, 0, 0},
      {kNan, kNan, kNan, kNan, kNan, kNan, kNan, kNan},
      {-kNan, 2.0f, kNan, 0, 0, 0, 0, 0},
      {3.0e38f, -3.4e38f, 1e38f, 1.0f, 0, 0, 0, 0},
      {1e-37f, -1e-38f, 0, 0, 0, 0, 0, 0},
      {65504.0f, -1.0f, 65520.0f, 0, 0, 0, 0, 0},
      {1e-12f, -1e-13f, 0, 0, 0, 0, 0, 0},
      {1e-45f, 0, 0, 0, 0, 0, 0, 0},
  };
  // DeepGEMM's sf = amax · RN32(1/448) on, just below and just above powers of two (ue8m0 edges),
  // and fmax / amax near powers of two (TE's pow2).
  for (int k : {-126, -100, -20, -5, 0, 3, 100, 119}) {
    const float p = std::ldexp(1.0f, k);
    for (float a : {p * 448.0f, std::nextafter(p * 448.0f, 0.0f), std::nextafter(p * 448.0f, kInf),
                    p, std::nextafter(p, kInf)}) {
      if (std::isfinite(a)) rows.push_back({a, -a / 2, a / 3, a / 1000, 0, 0, 0, 0});
    }
  }
  return rows;
}

}  // namespace

TEST_CASE("block:RxC native = MPFR oracle on the boundary table", "[oracle][quant][block2d]") {
  const auto rows = boundary_rows();
  std::vector<float> x;
  for (const auto& r : rows) x.insert(x.end(), r.begin(), r.end());
  const std::size_t n = rows.size();
  std::size_t cases = 0;
  for (const Rule& r : rules()) {
    for (const char* f : r.fmts) {
      for (const native::Storage src : kSources) {
        const std::string tag = std::string(r.variant) + " " + f + " " + source_name(src);
        CHECK(compare(x, n, 8, tile_opts("block:1x8", r.variant, f, "e4m3fn", src), tag + " 1x8") ==
              0);
        CHECK(compare(x, n & ~std::size_t{1}, 8,
                      tile_opts("block:2x8", r.variant, f, "e4m3fn", src), tag + " 2x8") == 0);
        CHECK(compare(x, n & ~std::size_t{3}, 8,
                      tile_opts("block:4x2", r.variant, f, "e4m3fn", src), tag + " 4x2") == 0);
        if (r.partial_ok) {  // partial tiles at the bottom and right edges
          CHECK(compare(x, n, 8, tile_opts("block:3x5", r.variant, f, "e4m3fn", src),
                        tag + " 3x5") == 0);
        }
        cases += r.partial_ok ? 4 : 3;
      }
    }
  }
  // TE with e5m2 elements and an amax epsilon; the per-tile rules of 7.3/7.4.
  quant::Options o = tile_opts("block:1x8", "te", "pow2", "e5m2", native::Storage::f32);
  CHECK(compare(x, n, 8, o, "te pow2 e5m2") == 0);
  o = tile_opts("block:1x8", "te", "fp32", "e4m3fn", native::Storage::f32);
  o.te_amax_epsilon = 1e-3f;
  CHECK(compare(x, n, 8, o, "te amax_epsilon 1e-3") == 0);
  for (const char* v : {"absmax", "te-current"}) {
    CHECK(compare(x, n, 8, tile_opts("block:2x4", v, "fp32", "e4m3fn", native::Storage::f32),
                  std::string(v) + " per tile") == 0);
  }
  CHECK(cases == 2 * 3 * 4 + 2 * 3 * 4 + 3 * 3);
}

TEST_CASE("block:RxC native = MPFR oracle on weighted random tensors", "[oracle][quant][block2d]") {
  const std::uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::printf("block2d oracle random seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  struct Shape {
    std::size_t rows, cols;
    const char* scheme;
    bool whole;
  };
  const Shape shapes[] = {{3, 300, "block:1x128", false}, {130, 20, "block:128x128", false},
                          {33, 40, "block:16x16", false}, {10, 12, "block:3x5", false},
                          {4, 256, "block:1x128", true},  {256, 3, "block:128x1", true},
                          {32, 64, "block:32x32", true}};
  for (const Shape& s : shapes) {
    // Weighted classes: a magnitude per row over the whole fp32 range, tiles of zeros, of values
    // around DeepGEMM's 1e-4 clamp, subnormals, and sparse NaN / ±inf.
    std::vector<float> x(s.rows * s.cols);
    for (std::size_t r = 0; r < s.rows; ++r) {
      const int e = static_cast<int>(rng() % 200) - 110;
      const double cls = u(rng);
      for (std::size_t c = 0; c < s.cols; ++c) {
        double v = (u(rng) * 2 - 1) * std::ldexp(1.0, e);
        if (cls < 0.1)
          v = 0.0;
        else if (cls < 0.2)
          v = (u(rng) * 2 - 1) * 1.2e-4;
        else if (cls < 0.25)
          v = (u(rng) * 2 - 1) * 1e-40;
        const double p = u(rng);
        float f = static_cast<float>(v);
        if (p < 0.002)
          f = kNan;
        else if (p < 0.004)
          f = p < 0.003 ? kInf : -kInf;
        else if (p < 0.01)
          f = -0.0f;
        x[r * s.cols + c] = f;
      }
    }
    for (const Rule& r : rules()) {
      if (!r.partial_ok && !s.whole) continue;
      for (const char* f : r.fmts) {
        for (const native::Storage src : kSources) {
          const std::string tag = std::string(s.scheme) + " " + r.variant + " " + f + " " +
                                  source_name(src) + " seed " + std::to_string(seed);
          CHECK(compare(x, s.rows, s.cols, tile_opts(s.scheme, r.variant, f, "e4m3fn", src), tag) ==
                0);
        }
      }
    }
  }
}
