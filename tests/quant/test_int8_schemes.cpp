// int8 absmax quantization per granularity (SEMANTICS 7.1-7.3) against an independent fp64
// computation: the group absmax by std::fabs/std::max, the fp32 operation order emulated as
// RN32(op in fp64), the integer by nearbyint.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>

#include "sim/common/error.hpp"
#include "sim/native/philox.hpp"
#include "sim/quant/quantize.hpp"
#include "tests/quant/quant_test_util.hpp"

using namespace exmy;
using namespace exmy::quant;
using quant_test::rn32;

namespace {

Options int8_opts(const std::string& scheme, native::ScaleOrder order) {
  Options o;
  o.scheme = parse_scheme(scheme);
  o.target = parse_target("int8");
  o.order = order;
  return o;
}

// Independent: group index, absmax (NaN-propagating) and codes.
struct Ref {
  std::vector<float> state;
  std::vector<int> codes;
};

Ref reference(const std::vector<float>& x, std::size_t rows, std::size_t cols, const Scheme& s,
              native::ScaleOrder order) {
  auto group = [&](std::size_t r, std::size_t c) -> std::size_t {
    switch (s.kind) {
      case Granularity::row:
        return r;
      case Granularity::col:
        return c;
      case Granularity::block:
        return (r * cols + c) / s.block;
      default:
        return 0;
    }
  };
  std::size_t ng = s.kind == Granularity::row     ? rows
                   : s.kind == Granularity::col   ? cols
                   : s.kind == Granularity::block ? (rows * cols + s.block - 1) / s.block
                                                  : 1;
  Ref ref;
  ref.state.assign(ng, 0.0f);
  std::vector<bool> has_nan(ng, false);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const float v = x[r * cols + c];
      const std::size_t g = group(r, c);
      if (std::isnan(v))
        has_nan[g] = true;
      else
        ref.state[g] = std::max(ref.state[g], std::fabs(v));
    }
  }
  for (std::size_t g = 0; g < ng; ++g) {
    if (has_nan[g]) ref.state[g] = NAN;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const double xv = x[r * cols + c];
      const double a = ref.state[group(r, c)];
      if (a == 0) {
        ref.codes.push_back(0);
        continue;
      }
      double y = 0;
      switch (order) {
        case native::ScaleOrder::div_mul:
          y = rn32(127.0 * rn32(xv / a));
          break;
        case native::ScaleOrder::recip_mul:
          y = rn32(127.0 * rn32(xv * rn32(1.0 / a)));
          break;
        case native::ScaleOrder::mul_recip:
          y = rn32(xv * rn32(127.0 / a));
          break;
        case native::ScaleOrder::div_full_mul:  // the profiles' orders have their own tests
        case native::ScaleOrder::fdividef_mul:  // (test_quant_peer_golden, tests/layer)
          FAIL("no IEEE reference for a --compat order");
          break;
      }
      ref.codes.push_back(quant_test::int8_rne_ref(y));
    }
  }
  return ref;
}

void check_against_reference(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                             const std::string& scheme, native::ScaleOrder order) {
  const Options o = int8_opts(scheme, order);
  const Quantized q = quantize(x, {rows, cols}, o);
  const Ref ref = reference(x, rows, cols, o.scheme, order);
  REQUIRE(q.state.size() == ref.state.size());
  for (std::size_t g = 0; g < ref.state.size(); ++g) {
    INFO(scheme << " group " << g);
    CHECK(native::bits_of(q.state[g]) == native::bits_of(ref.state[g]));
  }
  std::size_t bad = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (static_cast<std::int8_t>(q.codes[i]) != ref.codes[i] && ++bad < 5) {
      std::printf("%s %zux%zu i=%zu x=%a got %d want %d\n", scheme.c_str(), rows, cols, i, x[i],
                  static_cast<std::int8_t>(q.codes[i]), ref.codes[i]);
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("int8 schemes match the independent fp64 emulation", "[quant][int8]") {
  const std::uint64_t seed = 314159;
  std::printf("int8 schemes random seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1},   {1, 7},   {7, 1},   {3, 5},
                                                        {17, 33}, {64, 64}, {5, 1000}};
  const char* schemes[] = {"tensor", "rowwise", "colwise", "block:32", "block:64", "block:4096"};
  for (const auto [rows, cols] : shapes) {
    auto x = quant_test::random_floats(rng, rows * cols);
    for (const char* s : schemes) {
      for (const auto order : {native::ScaleOrder::div_mul, native::ScaleOrder::recip_mul,
                               native::ScaleOrder::mul_recip}) {
        check_against_reference(x, rows, cols, s, order);
      }
    }
  }
}

TEST_CASE("int8: the absmax element of every group maps to exactly +-127", "[quant][int8]") {
  std::mt19937_64 rng(2718);
  for (int t = 0; t < 200; ++t) {
    auto x = quant_test::random_floats(rng, 6 * 11);
    for (const char* s : {"tensor", "rowwise", "colwise", "block:32"}) {
      for (const auto order : {native::ScaleOrder::div_mul, native::ScaleOrder::recip_mul,
                               native::ScaleOrder::mul_recip}) {
        const Options o = int8_opts(s, order);
        const Quantized q = quantize(x, {6, 11}, o);
        for (std::size_t r = 0; r < 6; ++r) {
          for (std::size_t c = 0; c < 11; ++c) {
            const std::size_t g = group_of(o.scheme, 6, 11, r, c);
            const float xi = x[r * 11 + c];
            if (std::fabs(xi) == q.state[g]) {
              CHECK(static_cast<std::int8_t>(q.codes[r * 11 + c]) == (xi > 0 ? 127 : -127));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("int8 boundary table: ties, partial blocks, zeros, NaN, inf", "[quant][int8]") {
  // Ties at .5: absmax 127 makes y = x exactly (x / 127 * 127 is exact for these x).
  {
    const std::vector<float> x = {127.0f, 0.5f, 1.5f, 2.5f, -2.5f, 126.5f, -0.5f, 3.0f};
    const Quantized q = quantize(x, {1, 8}, int8_opts("tensor", native::ScaleOrder::div_mul));
    const int want[] = {127, 0, 2, 2, -2, 126, 0, 3};
    for (int i = 0; i < 8; ++i) CHECK(static_cast<std::int8_t>(q.codes[i]) == want[i]);
  }
  // Partial last block: 70 elements in blocks of 32 -> 3 blocks, the last of 6 elements.
  {
    std::vector<float> x(70, 1.0f);
    x[69] = -8.0f;
    x[65] = 4.0f;
    const Quantized q = quantize(x, {70}, int8_opts("block:32", native::ScaleOrder::div_mul));
    REQUIRE(q.state.size() == 3);
    CHECK(q.state[2] == 8.0f);
    CHECK(static_cast<std::int8_t>(q.codes[69]) == -127);
    CHECK(static_cast<std::int8_t>(q.codes[65]) == 64);  // 4/8*127 = 63.5 -> 64 (even)
    CHECK(static_cast<std::int8_t>(q.codes[64]) == 16);  // 1/8*127 = 15.875 -> 16
  }
  // All-zero group: codes 0, state 0, dequantized +0; no division by zero anywhere.
  {
    const std::vector<float> x = {0.0f, -0.0f, 0.0f, 5.0f, -0.0f, 0.0f};
    Options o = int8_opts("rowwise", native::ScaleOrder::recip_mul);
    const Quantized q = quantize(x, {2, 3}, o);
    CHECK(q.state[0] == 0.0f);
    CHECK(q.codes[0] == 0);
    CHECK(q.codes[1] == 0);
    CHECK(q.flags == 0);
    const auto d = dequantize(q, o);
    CHECK(native::bits_of(d[1]) == 0u);
  }
  // NaN: propagate -> the group's state is NaN, its codes 0 (invalid), dequantized NaN; other
  // groups are untouched. ignore -> the state is the absmax of the rest, the NaN element's code 0.
  {
    const std::vector<float> x = {1.0f, NAN, -2.0f, 4.0f, 2.0f, 1.0f};
    Options o = int8_opts("rowwise", native::ScaleOrder::div_mul);
    Quantized q = quantize(x, {2, 3}, o);
    CHECK(std::isnan(q.state[0]));
    CHECK(q.state[1] == 4.0f);
    CHECK(q.codes[0] == 0);
    CHECK((q.flags & flag::invalid) != 0);
    auto d = dequantize(q, o);
    CHECK(std::isnan(d[0]));
    CHECK(std::isnan(d[2]));
    CHECK(d[3] == 4.0f);
    o.nan = native::NanPolicy::ignore;
    q = quantize(x, {2, 3}, o);
    CHECK(q.state[0] == 2.0f);
    CHECK(static_cast<std::int8_t>(q.codes[2]) == -127);
    CHECK(q.codes[1] == 0);
    d = dequantize(q, o);
    CHECK(d[1] == 0.0f);
  }
  // Inf: absmax inf; finite elements give 0 (x / inf = 0), +-inf gives NaN -> 0 (invalid).
  {
    const std::vector<float> x = {1.0f, INFINITY, -3.0f};
    const Quantized q = quantize(x, {3}, int8_opts("tensor", native::ScaleOrder::div_mul));
    CHECK(q.state[0] == INFINITY);
    CHECK(q.codes[0] == 0);
    CHECK(q.codes[1] == 0);
    CHECK((q.flags & flag::invalid) != 0);
  }
  // mul_recip with a tiny absmax: RN32(127 / a) overflows to inf, so x * inf saturates (+-127)
  // and a zero element gives 0 * inf = NaN -> code 0: the fp32 arithmetic decides.
  {
    const std::vector<float> x = {1e-38f, 0.0f, -5e-39f};
    const Quantized q = quantize(x, {3}, int8_opts("tensor", native::ScaleOrder::mul_recip));
    CHECK(static_cast<std::int8_t>(q.codes[0]) == 127);
    CHECK(q.codes[1] == 0);
    CHECK(static_cast<std::int8_t>(q.codes[2]) == -127);
    // div_mul stays exact there: -5e-39 / 1e-38 * 127 = -63.5 (to the fp32 rounding of x).
    const Quantized q2 = quantize(x, {3}, int8_opts("tensor", native::ScaleOrder::div_mul));
    CHECK(static_cast<std::int8_t>(q2.codes[2]) ==
          quant_test::int8_rne_ref(rn32(127.0 * rn32(-5e-39f / 1e-38f))));
  }
}

TEST_CASE("fused quantize+transpose gives the transpose of the codes", "[quant][int8]") {
  std::mt19937_64 rng(11);
  const std::size_t rows = 13, cols = 37;
  const auto x = quant_test::random_floats(rng, rows * cols);
  for (const char* s : {"tensor", "rowwise", "colwise", "block:32"}) {
    Options o = int8_opts(s, native::ScaleOrder::recip_mul);
    const Quantized plain = quantize(x, {rows, cols}, o);
    o.transpose = true;
    const Quantized t = quantize(x, {rows, cols}, o);
    CHECK(t.shape == std::vector<std::size_t>{cols, rows});
    CHECK(t.state == plain.state);
    bool same = true;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c)
        same &= t.codes[c * rows + r] == plain.codes[r * cols + c];
    }
    CHECK(same);
    CHECK(dequantize(t, o) == dequantize(plain, int8_opts(s, native::ScaleOrder::recip_mul)));
  }
  Options o = int8_opts("tensor", native::ScaleOrder::div_mul);
  o.transpose = true;
  CHECK_THROWS_AS(quantize(x, {rows * cols}, o), InputError);
}

TEST_CASE("sr random words follow the input index, also under --transpose", "[quant][int8][sr]") {
  std::mt19937_64 rng(12);
  const std::size_t rows = 7, cols = 9;
  const auto x = quant_test::random_floats(rng, rows * cols);
  Options o = int8_opts("rowwise", native::ScaleOrder::div_mul);
  o.mode = RoundMode::sr;
  o.sr_bits = 5;
  o.seed = 31;
  const Quantized plain = quantize(x, {rows, cols}, o);
  o.transpose = true;
  const Quantized t = quantize(x, {rows, cols}, o);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      CHECK(t.codes[c * rows + r] == plain.codes[i]);
      // The word itself: Philox(seed 31, stream 16, i), top 5 bits.
      const std::uint32_t w = native::sr_word(native::philox_word(31, kStreamQuantCast, i), 5);
      const float y = native::absmax_scale(x[i], plain.state[r], 127.0f, o.order);
      CHECK(static_cast<std::int8_t>(plain.codes[i]) ==
            native::round_to_int8(y, {RoundMode::sr, 5, Overflow::none}, w).code);
    }
  }
}

TEST_CASE("N-d tensors: rows are all leading dimensions", "[quant][int8]") {
  std::mt19937_64 rng(13);
  const auto x = quant_test::random_floats(rng, 2 * 3 * 5);
  const Options o = int8_opts("rowwise", native::ScaleOrder::div_mul);
  const Quantized a = quantize(x, {2, 3, 5}, o);
  const Quantized b = quantize(x, {6, 5}, o);
  CHECK(a.codes == b.codes);
  CHECK(a.state == b.state);
  CHECK(a.shape == std::vector<std::size_t>{2, 3, 5});
  const Quantized s0 = quantize({-4.0f}, {}, o);  // 0-d: one element, one row
  CHECK(s0.state == std::vector<float>{4.0f});
  CHECK(static_cast<std::int8_t>(s0.codes[0]) == -127);
}

TEST_CASE("int8 quantize -> dequantize error bound", "[quant][int8]") {
  // With rne, |q - y| <= 1/2 and y = 127 x / a up to a few fp32 roundings, so
  // |x^ - x| <= a / 127 * (1/2 + 2^-20) + |x| * 2^-21 (dequantization's three roundings).
  std::mt19937_64 rng(4242);
  const auto x = quant_test::random_floats(rng, 40 * 50, 3.0f);
  std::size_t checked = 0;
  for (const char* s : {"tensor", "rowwise", "colwise", "block:64"}) {
    const Options o = int8_opts(s, native::ScaleOrder::div_mul);
    const Quantized q = quantize(x, {40, 50}, o);
    const auto d = dequantize(q, o);
    for (std::size_t r = 0; r < 40; ++r) {
      for (std::size_t c = 0; c < 50; ++c) {
        const double a = q.state[group_of(o.scheme, 40, 50, r, c)];
        const double xv = x[r * 50 + c];
        const double bound = a / 127 * (0.5 + 0x1p-20) + std::fabs(xv) * 0x1p-21;
        if (!(std::fabs(d[r * 50 + c] - xv) <= bound)) {
          FAIL("x=" << xv << " x^=" << d[r * 50 + c] << " a=" << a);
        }
        ++checked;
      }
    }
  }
  CHECK(checked == 4 * 40 * 50);
}

TEST_CASE("scheme and target names", "[quant]") {
  CHECK(parse_scheme("block:256").block == 256);
  CHECK(scheme_name(parse_scheme("block:4096")) == "block:4096");
  CHECK(parse_scheme("mx").block == 32);
  CHECK_THROWS_AS(parse_scheme("block:31"), InputError);
  CHECK_THROWS_AS(parse_scheme("block:4097"), InputError);
  CHECK_THROWS_AS(parse_scheme("block:12x"), InputError);
  CHECK_THROWS_AS(parse_scheme("rows"), InputError);
  CHECK(parse_target("e4m3fn").kind == FormatKind::floating);
  CHECK_THROWS_AS(parse_target("bf16"), InputError);
  CHECK_THROWS_AS(parse_target("int4"), InputError);
  // Shape / state mismatches are input errors, never out-of-bounds reads.
  Options o = int8_opts("rowwise", native::ScaleOrder::div_mul);
  CHECK_THROWS_AS(quantize({1.0f, 2.0f, 3.0f}, {2, 2}, o), InputError);
  Quantized q = quantize({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2}, o);
  q.state.pop_back();
  CHECK_THROWS_AS(dequantize(q, o), InputError);
}
