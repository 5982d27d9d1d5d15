// Split formats bf16+k / fp16+k: truncation split and join, stochastic rounding with the
// un-round bit, dense packing, and the seed-004 property bf16+16 == fp32-master AdamW.
#include <catch2/catch.hpp>
#include <cmath>

#include "optim_test_util.hpp"
#include "sim/common/error.hpp"
#include "sim/optim/optim.hpp"

using namespace exmy;
using namespace exmy::optim;
using namespace exmy::native;
using optim_test::bits;

namespace {
// Independent truncation: keep the top (M + k) mantissa bits of x's fp64 value with fp16/bf16's
// exponent range (fp16: saturate above the extended maximum; subnormal quantum 2^(emin - M - k)).
double truncated(double x, const SplitFormat& f) {
  if (std::isnan(x) || std::isinf(x) || x == 0.0) return x;
  const int M = (f.hi == Storage::bf16 ? 7 : f.fp8 ? 2 : 10) + f.k;
  const int emin = f.hi == Storage::bf16 ? -126 : -14;
  const int emax = f.hi == Storage::bf16 ? 127 : 15;
  int e;
  std::frexp(std::abs(x), &e);  // |x| in [2^(e-1), 2^e)
  const int q = std::max(e - 1, emin) - M;
  double t = std::trunc(std::ldexp(std::abs(x), -q));
  double r = std::ldexp(t, q);
  const double maxv = std::ldexp(2.0 - std::ldexp(1.0, -M), emax);
  if (r > maxv) r = maxv;
  return std::copysign(r, x);
}
}  // namespace

TEST_CASE("split/join: truncation split equals an independent truncation", "[optim][split]") {
  const auto xs = optim_test::random_bits(20000, 7);
  for (int hi = 0; hi < 3; ++hi) {  // bf16, fp16, e5m2 (fp16's top 8 bits)
    const int kmax = hi == 0 ? 16 : hi == 1 ? 13 : 21;
    for (int k = 0; k <= kmax; ++k) {
      SplitFormat f{hi == 0 ? Storage::bf16 : Storage::f16, k, false, hi == 2};
      std::size_t bad = 0;
      for (float x : xs) {
        std::uint16_t h;
        std::uint32_t field;
        split_value(x, f, 0, h, field);
        const float y = split_join(h, field, f);
        if (std::isnan(x)) {
          bad += !std::isnan(y) || field != 0;
          continue;
        }
        bad += static_cast<double>(y) != truncated(x, f);
        // The 16-bit part alone is the truncation to bf16/fp16.
        SplitFormat f0{f.hi, 0, false, f.fp8};
        bad += split_hi_value(h, f) != static_cast<float>(truncated(x, f0));
      }
      INFO(split_format_name(f));
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("split: e5m2+k stores e5m2 codes; sr never rounds past e5m2's maximum",
          "[optim][split]") {
  const SplitFormat f = parse_split_format("e5m2+8:sr");
  CHECK(f.fp8);
  CHECK(f.hi == Storage::f16);
  CHECK(split_format_name(f) == "e5m2+8:sr");
  std::uint16_t h;
  std::uint32_t field;
  // 1.5 + 2^-10: e5m2 code 0x3E (1.5), extra bits (the next 8 of fp16+...): 2^-10 is bit 7 of
  // the 8 extra bits below 1.5's 2-bit mantissa (quantum 2^-2 / 2^8 = 2^-10): field 1.
  split_value(1.5f + std::ldexp(1.0f, -10), f, 0u, h, field);
  CHECK(h == 0x3E);
  CHECK((field & 0xFF) == 1);
  // Every word rounds up (r = 2^8 - 1 >= 2^8 - extra for extra >= 1): 0x3F, rounded-up bit set.
  split_value(1.5f + std::ldexp(1.0f, -10), f, 0xFFFFFFFFu, h, field);
  CHECK(h == 0x3F);
  CHECK((field >> 8) == 1);
  CHECK(split_join(h, field, f) == 1.5f + std::ldexp(1.0f, -10));
  CHECK(split_hi_value(h, f) == 1.75f);
  // The largest e5m2 magnitude (0x7B = 57344) is never rounded up into inf.
  split_value(60000.0f, f, 0xFFFFFFFFu, h, field);  // e5m2 0x7B + nonzero extra bits
  CHECK(h == 0x7B);
  CHECK((field & 0xFF) != 0);
  CHECK((field >> 8) == 0);
  CHECK_THROWS_AS(parse_split_format("e5m2+22"), InputError);
}

TEST_CASE("split: specials, subnormals and fp16 overflow", "[optim][split]") {
  SplitFormat f16{Storage::f16, 8, false};
  std::uint16_t h;
  std::uint32_t field;
  split_value(1e6f, f16, 0, h, field);  // beyond 65504: rtz saturates at the extended maximum
  CHECK(h == 0x7BFF);
  CHECK(field == 0xFF);
  split_value(-INFINITY, f16, 0, h, field);
  CHECK(h == 0xFC00);
  CHECK(field == 0);
  split_value(NAN, f16, 0, h, field);
  CHECK(h == 0x7E00);
  CHECK(field == 0);
  // fp16 subnormal 2^-24 * 3 plus 5 extra-bit quanta of 2^-32: exact in fp16+8.
  const float x = std::ldexp(3.0f, -24) + std::ldexp(5.0f, -32);
  split_value(x, f16, 0, h, field);
  CHECK(h == 0x0003);
  CHECK(field == 5);
  CHECK(split_join(h, field, f16) == x);
  SplitFormat b16{Storage::bf16, 16, false};
  split_value(-0.0f, b16, 0, h, field);
  CHECK(h == 0x8000);
  CHECK(bits(split_join(h, field, b16)) == 0x80000000u);
  split_value(std::ldexp(1.0f, -149), b16, 0, h, field);  // fp32's smallest subnormal
  CHECK(split_join(h, field, b16) == std::ldexp(1.0f, -149));
}

TEST_CASE("split sr: un-rounding restores the exact value; rounding is unbiased",
          "[optim][split]") {
  const auto xs = optim_test::normal_values(4000, 9);
  for (int k : {1, 4, 8, 13}) {
    SplitFormat tr{Storage::f16, k, false}, sr{Storage::f16, k, true};
    std::size_t bad = 0, ups = 0;
    double expected_ups = 0.0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      std::uint16_t h0, h1;
      std::uint32_t f0, f1;
      split_value(xs[i], tr, 0, h0, f0);
      split_value(xs[i], sr, split_sr_word(1234, 1, i), h1, f1);
      bad += split_join(h1, f1, sr) != split_join(h0, f0, tr);
      bad += (f1 & ((1u << k) - 1)) != f0;
      const bool up = (f1 >> k) & 1;
      bad += up ? h1 != h0 + 1 : h1 != h0;
      ups += up;
      expected_ups += static_cast<double>(f0) / static_cast<double>(1u << k);
    }
    INFO("k=" << k);
    CHECK(bad == 0);
    // Binomial: the count of ups is within 5 sigma of sum of P(up) = extra / 2^k.
    CHECK(std::abs(static_cast<double>(ups) - expected_ups) < 5.0 * std::sqrt(xs.size() / 4.0));
  }
  // Exact values never move; the largest finite never rounds up into inf.
  SplitFormat sr{Storage::f16, 4, true};
  std::uint16_t h;
  std::uint32_t field;
  split_value(65504.0f + 2047.0f, sr, 0xFFFFFFFFu, h, field);
  CHECK(h == 0x7BFF);
  split_value(1.5f, sr, 0xFFFFFFFFu, h, field);
  CHECK(h == 0x3E00);
  CHECK(field == 0);
}

TEST_CASE("dense packing: every width, values straddling words", "[optim][split]") {
  for (int w = 0; w <= 17; ++w) {
    const std::size_t n = 101;
    std::vector<std::uint32_t> words(split_words(n, w), 0u);
    CHECK(words.size() == (n + 31) / 32 * static_cast<std::size_t>(w));
    std::vector<std::uint32_t> vals(n);
    for (std::size_t i = 0; i < n; ++i) {
      vals[i] = w == 0 ? 0 : static_cast<std::uint32_t>((i * 2654435761u) >> 7) & ((1u << w) - 1);
      field_put(words.data(), i, w, vals[i]);
    }
    // Rewrite in reverse order: neighbours must survive.
    for (std::size_t i = n; i-- > 0;) field_put(words.data(), i, w, vals[i]);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) bad += field_get(words.data(), i, w) != vals[i];
    INFO("w=" << w);
    CHECK(bad == 0);
  }
}

TEST_CASE("bf16+16 Adam reproduces fp32-master AdamW bit for bit", "[optim][split]") {
  const std::size_t n = 1000;
  AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  auto master = optim_test::wide_values(n, 13);
  for (auto& x : master) x = std::ldexp(x, -20);
  SplitTensor sp = split_tensor(master, SplitFormat{Storage::bf16, 16, false}, 0);
  std::vector<float> m(n, 0.0f), v(n, 0.0f), m2(n, 0.0f), v2(n, 0.0f);
  for (long t = 1; t <= 15; ++t) {
    const auto g = optim_test::normal_values(n, 200 + static_cast<std::uint64_t>(t));
    adam_step(h, true, Storage::f32, t, master, g, m, v);
    split_adam_step(h, true, t, 0, sp, g, m2, v2);
  }
  const auto joined = join_tensor(sp);
  std::size_t diff = 0;
  for (std::size_t i = 0; i < n; ++i) {
    diff += bits(joined[i]) != bits(master[i]) || bits(m[i]) != bits(m2[i]) ||
            bits(v[i]) != bits(v2[i]);
  }
  CHECK(diff == 0);
}

TEST_CASE("fp16+k SGD: more extra bits track the fp32 master more closely", "[optim][split]") {
  const std::size_t n = 2000;
  SgdHyper h{0.01, 0.9, 0.0, 0.0, false};
  auto master = optim_test::normal_values(n, 17);
  std::vector<float> buf(n, 0.0f);
  double prev_err = 1e30;
  std::vector<std::vector<float>> grads;
  for (long t = 1; t <= 30; ++t) {
    grads.push_back(optim_test::normal_values(n, 300 + static_cast<std::uint64_t>(t), 1e-3f));
  }
  auto ref = master;
  for (long t = 1; t <= 30; ++t) sgd_step(h, Storage::f32, t, ref, grads[t - 1], buf);
  for (int k : {0, 4, 8, 13}) {
    SplitTensor sp = split_tensor(master, SplitFormat{Storage::f16, k, false}, 0);
    std::vector<float> b(n, 0.0f);
    for (long t = 1; t <= 30; ++t) split_sgd_step(h, t, 0, sp, grads[t - 1], b);
    const auto got = join_tensor(sp);
    double err = 0.0;
    for (std::size_t i = 0; i < n; ++i) err += std::abs(static_cast<double>(got[i]) - ref[i]);
    INFO("k=" << k << " err=" << err);
    CHECK(err < prev_err);
    prev_err = err;
  }
}

TEST_CASE("split format names parse and reject bad input", "[optim][split]") {
  CHECK(split_format_name(parse_split_format("bf16+8")) == "bf16+8");
  CHECK(split_format_name(parse_split_format("fp16+13:sr")) == "fp16+13:sr");
  CHECK_THROWS_AS(parse_split_format("fp16+14"), InputError);
  CHECK_THROWS_AS(parse_split_format("bf16+17"), InputError);
  CHECK_THROWS_AS(parse_split_format("bf16"), InputError);
  CHECK_THROWS_AS(parse_split_format("fp8+4"), InputError);
  CHECK_THROWS_AS(parse_split_format("bf16+0:sr"), InputError);
}
