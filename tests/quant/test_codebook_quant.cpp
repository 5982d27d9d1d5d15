// Block-wise codebook quantization (SEMANTICS 7.5) against a linear scan over the fp32
// midpoints, and the stochastic variant's unbiasedness.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>

#include "sim/quant/quantize.hpp"
#include "tests/quant/quant_test_util.hpp"

using namespace exmy;
using namespace exmy::quant;
using quant_test::rn32;

namespace {

Options cb_opts(const std::string& scheme, const std::string& table) {
  Options o;
  o.scheme = parse_scheme(scheme);
  o.target = parse_target(table);
  return o;
}

// Linear scan: the count of fp32 midpoints strictly below n, an exact midpoint going to the even
// index; NaN -> 0.
int nearest_linear(const std::array<float, 256>& c, float n) {
  if (std::isnan(n)) return 0;
  int k = 0;
  for (int j = 0; j < 255; ++j) {
    const float m = rn32(rn32(double(c[j]) + c[j + 1]) * 0.5);
    if (m < n) k = j + 1;
    if (m == n) return (j & 1) ? j + 1 : j;
  }
  return k;
}

}  // namespace

TEST_CASE("codebook block-wise quantization matches the linear midpoint scan",
          "[quant][codebook]") {
  const std::uint64_t seed = 1618;
  std::printf("codebook random seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (const char* table : {"dynamic", "linear", "dynamic-unsigned"}) {
    for (const char* scheme : {"block:32", "block:256", "block:2048", "tensor"}) {
      for (const auto norm : {native::NormOrder::recip_mul, native::NormOrder::div}) {
        auto x = quant_test::random_floats(rng, 3000);
        if (std::string(table).find("unsigned") != std::string::npos) {
          for (auto& v : x) v = std::fabs(v);
        }
        Options o = cb_opts(scheme, table);
        o.norm = norm;
        const Quantized q = quantize(x, {x.size()}, o);
        const auto d = dequantize(q, o);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
          const std::size_t g = group_of(o.scheme, 1, x.size(), 0, i);
          double amax = 0;
          const std::size_t B = o.scheme.kind == Granularity::block ? o.scheme.block : x.size();
          for (std::size_t j = g * B; j < std::min(x.size(), (g + 1) * B); ++j) {
            amax = std::max(amax, std::fabs(double(x[j])));
          }
          if (q.state[g] != static_cast<float>(amax)) ++bad;
          const float n =
              norm == native::NormOrder::div ? rn32(x[i] / amax) : rn32(x[i] * rn32(1.0 / amax));
          const int want = nearest_linear(o.target.cb->values, n);
          if (q.codes[i] != want) ++bad;
          if (d[i] != rn32(double(o.target.cb->values[want]) * amax)) ++bad;
        }
        INFO(table << " " << scheme << " norm " << static_cast<int>(norm));
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("codebook boundary table: zero blocks, NaN, partial block", "[quant][codebook]") {
  Options o = cb_opts("block:32", "dynamic");
  std::vector<float> x(40, 0.0f);
  x[35] = -2.0f;
  x[36] = 1.0f;
  const Quantized q = quantize(x, {40}, o);
  REQUIRE(q.state.size() == 2);
  CHECK(q.state[0] == 0.0f);
  const float zero_code_value = o.target.cb->values[q.codes[0]];
  CHECK(zero_code_value == 0.0f);  // the all-zero block maps to the code of 0
  CHECK(q.codes[35] == 0);         // -1 is below the signed dynamic map's first entry (-0.99297...)
  const auto d = dequantize(q, o);
  CHECK(d[0] == 0.0f);
  CHECK(d[35] == rn32(double(o.target.cb->values[0]) * 2.0));
  // NaN: propagate gives a NaN state (the block dequantizes to NaN); ignore keeps the absmax of
  // the rest and the NaN element takes code 0 (bitsandbytes' search ends there).
  x[3] = NAN;
  o.nan = native::NanPolicy::propagate;
  Quantized qn = quantize(x, {40}, o);
  CHECK(std::isnan(qn.state[0]));
  CHECK(std::isnan(dequantize(qn, o)[1]));
  x[1] = 0.5f;
  o.nan = native::NanPolicy::ignore;
  qn = quantize(x, {40}, o);
  CHECK(qn.state[0] == 0.5f);
  CHECK(qn.codes[3] == 0);
}

TEST_CASE("stochastic codebook quantization is unbiased (fixed seed)", "[quant][codebook][sr]") {
  const std::uint64_t seed = 77;
  std::printf("codebook sr seed %llu\n", static_cast<unsigned long long>(seed));
  const std::size_t n = 4096 * 40;
  for (const float v : {0.3f, -0.0123f, 0.77f}) {
    std::vector<float> x(n, v);
    for (std::size_t b = 0; b < n; b += 4096) x[b] = 1.0f;  // absmax 1 in every block
    Options o = cb_opts("block:4096", "dynamic");
    o.mode = RoundMode::sr;
    o.sr_bits = 24;
    o.seed = seed;
    const Quantized q = quantize(x, {n}, o);
    const auto d = dequantize(q, o);
    double sum = 0;
    std::size_t cnt = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 4096 == 0) continue;
      sum += d[i];
      ++cnt;
    }
    const double mean = sum / cnt;
    // The dynamic map's spacing near |v| <= 1 is below 2^-5: sd of the mean < 2^-6/sqrt(cnt).
    INFO("v=" << v << " mean=" << mean);
    CHECK(std::fabs(mean - v) < 6 * 0x1p-6 / std::sqrt(double(cnt)) + 1e-6);
  }
}
