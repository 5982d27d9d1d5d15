// quantize() and dequantize() over runs of one group (sim/quant/element_runs.hpp) against the
// per-element definition: native::quant_element / dequant_element of make_plan's plan, called
// element by element with the group of quant::group_of (the loops the runs replaced). Tensors of
// 8 x 1,040 elements (groups longer than the 256-code space, so the dequantization memo is used,
// and over 16 x 256 elements, so the byte-state memo of MX and NVFP4 is too) with zeros, -0,
// subnormals, infinities and NaN; every code, flag word and value bit. Seed 20261203.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "sim/native/philox.hpp"
#include "sim/native/quant_plan.hpp"
#include "sim/quant/element_runs.hpp"
#include "sim/quant/quantize.hpp"

using namespace exmy;
using namespace exmy::quant;

namespace {

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::vector<float> inputs(std::size_t rows, std::size_t cols, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> x(rows * cols);
  for (float& v : x) v = d(rng);
  const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e-40f, -3e-42f, 6e4f, 0.0f};
  std::uniform_int_distribution<std::size_t> at(cols, x.size() - 1);
  for (const float s : specials) x[at(rng)] = s;
  for (std::size_t c = 0; c < cols; ++c) x[c] = 0.0f;                   // an all-zero row
  for (std::size_t i = 5 * cols; i < 5 * cols + 300; ++i) x[i] = 0.0f;  // zero blocks
  return x;
}

}  // namespace

TEST_CASE("quantize/dequantize over group runs: the per-element quant_element and dequant_element",
          "[quant][runs]") {
  const std::size_t rows = 8, cols = 1040;
  struct Combo {
    const char* scheme;
    const char* target;
    RoundMode mode;
    bool nan_ignore;
  };
  const Combo combos[] = {
      {"tensor", "int8", RoundMode::rne, false},
      {"rowwise", "int8", RoundMode::rne, false},
      {"rowwise", "int8", RoundMode::sr, false},
      {"tensor", "int8", RoundMode::rtz, false},
      {"tensor", "e4m3fn", RoundMode::rne, false},
      {"rowwise", "e5m2", RoundMode::sr, true},
      {"tensor", "e3m2fn", RoundMode::rtz, false},
      {"block:64", "int8", RoundMode::rne, false},
      {"block:256", "dynamic", RoundMode::rne, false},
      {"mx", "e4m3fn", RoundMode::rne, false},
      {"mx", "e2m1fn", RoundMode::sr, false},
      {"mx", "e5m2", RoundMode::rtz, false},
      {"nvfp4", "e2m1fn", RoundMode::rne, false},
      {"block:4x16", "e4m3fn", RoundMode::rne, false},
  };
  const std::vector<float> x = inputs(rows, cols, 20261203);
  int checked = 0;
  for (const Combo& k : combos) {
    Options opt;
    opt.scheme = parse_scheme(k.scheme);
    opt.target = parse_target(k.target);
    opt.mode = k.mode;
    if (k.mode == RoundMode::sr) {
      opt.sr_bits = 8;
      opt.seed = 91;
    }
    if (k.nan_ignore) opt.nan = native::NanPolicy::ignore;
    INFO(k.scheme << " " << k.target << " mode " << static_cast<int>(k.mode));
    const Quantized q = quantize(x, {rows, cols}, opt);
    const std::vector<float> got = dequantize(q, opt);
    const native::QuantPlan qp = make_plan(opt, nvfp4_tensor_from_scale(opt, q.tensor_scale));
    // The encode plan: the NVFP4 level from the stored scale is the dequantization's; the
    // single-level schemes here have no level, so both plans agree.
    std::uint32_t flags = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        const std::size_t i = r * cols + c;
        const std::size_t g = group_of(opt.scheme, rows, cols, r, c);
        const std::uint32_t st = qp.byte_scales() ? q.scale_codes[g] : bits(q.state[g]);
        const std::uint32_t word =
            k.mode == RoundMode::sr ? native::philox_word(opt.seed, qp.stream(), i) : 0u;
        const Encoded e = native::quant_element(qp, x[i], st, word);
        flags |= e.flags;
        REQUIRE(q.codes[i] == static_cast<std::uint8_t>(e.code));
        REQUIRE(bits(got[i]) == bits(native::dequant_element(qp, q.codes[i], st)));
        ++checked;
      }
    }
    REQUIRE(q.flags == flags);
  }
  REQUIRE(checked == static_cast<int>(std::size(combos) * rows * cols));
}

TEST_CASE("int8 rne runs: encode_int8_rne_run is quant_element, code and flags per element",
          "[quant][runs]") {
  // x: a stride through all 2^32 fp32 patterns (every exponent, both signs, NaN and inf
  // patterns) plus the rounding boundaries of y = 127 x / a: integers, half-integers and their
  // neighbours, 127.5 and 256. a: group maxima of every kind (power of two, not, subnormal,
  // huge, inf, NaN, zero).
  std::vector<float> x;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 65521) {
    float f;
    const auto w = static_cast<std::uint32_t>(u);
    std::memcpy(&f, &w, 4);
    x.push_back(f);
  }
  for (int k = 0; k <= 512; ++k) {
    const float h = static_cast<float>(k) * 0.5f;
    for (const float v : {h, std::nextafter(h, 0.0f), std::nextafter(h, 1e9f)}) {
      x.push_back(v / 127.0f);
      x.push_back(-v / 127.0f);
      x.push_back(v);
    }
  }
  const float maxima[] = {1.0f,   127.0f,   0.37f, 3.1e-41f, 2.5e38f,
                          1e-30f, INFINITY, NAN,   0.0f,     -0.0f};
  int checked = 0;
  for (const auto order : {native::ScaleOrder::div_mul, native::ScaleOrder::recip_mul}) {
    native::QuantPlan p;
    p.element = native::ElementKind::int8;
    p.rule = native::ScaleRule::absmax;
    p.mode = RoundMode::rne;
    p.order = order;
    for (const float a : maxima) {
      std::vector<std::uint8_t> codes(x.size());
      // Runs of every length up to 9 and one long one: the vector body and its tails.
      std::uint32_t flags_all = 0, want_all = 0;
      for (std::size_t i0 = 0, run = 0, n = 0; i0 < x.size(); i0 += n, ++run) {
        n = std::min(run == 0 ? std::size_t{4099} : run % 9 + 1, x.size() - i0);
        const std::uint32_t f =
            runs::encode_int8_rne_run(x.data() + i0, n, a, order, codes.data() + i0);
        std::uint32_t want = 0;
        for (std::size_t i = i0; i < i0 + n; ++i) {
          const Encoded e = native::quant_element(p, x[i], bits(a), 0);
          INFO("order " << static_cast<int>(order) << " a " << a << " x bits " << bits(x[i]));
          REQUIRE(codes[i] == static_cast<std::uint8_t>(e.code));
          want |= e.flags;
          ++checked;
        }
        REQUIRE(f == want);
        flags_all |= f;
        want_all |= want;
      }
      REQUIRE(flags_all == want_all);
    }
  }
  REQUIRE(checked > 100000);
}

TEST_CASE("int8 rne runs: per-element flags, one element a run", "[quant][runs]") {
  // The OR over a run hides which element set a flag: here every element is its own run.
  native::QuantPlan p;
  p.element = native::ElementKind::int8;
  p.rule = native::ScaleRule::absmax;
  p.mode = RoundMode::rne;
  const float xs[] = {0.0f,   -0.0f,    1.0f,      -1.0f,   0.5f,   127.0f, 127.5f,  -127.5f,
                      300.0f, INFINITY, -INFINITY, NAN,     -NAN,   1e-45f, -1e-45f, 2.5f,
                      3.5f,   -2.5f,    1e30f,     126.49f, 126.5f, -0.49f};
  for (const auto order : {native::ScaleOrder::div_mul, native::ScaleOrder::recip_mul}) {
    p.order = order;
    for (const float a : {127.0f, 1.0f, 254.0f}) {
      for (const float v : xs) {
        std::uint8_t c = 0xAB;
        const std::uint32_t f = runs::encode_int8_rne_run(&v, 1, a, order, &c);
        const Encoded e = native::quant_element(p, v, bits(a), 0);
        INFO("a " << a << " x " << v);
        CHECK(c == static_cast<std::uint8_t>(e.code));
        CHECK(f == e.flags);
      }
    }
  }
}

TEST_CASE("fp8 rne runs: encode_fp8_rne_run is quant_element, code and flags per element",
          "[quant][runs]") {
  // The same inputs as the int8 case, scaled to each format's boundaries: the normal range's
  // ends (2^emin and fmax), their neighbours, ties of the format's grid, and a stride through
  // all fp32 patterns (subnormal range, above fmax, inf and NaN take the engine).
  const FloatFormat fmts[] = {formats::e4m3fn,   formats::e5m2,   formats::e4m3fnuz,
                              formats::e5m2fnuz, formats::e4m3,   formats::e3m4,
                              formats::e3m2fn,   formats::e2m3fn, formats::e2m1fn};
  std::vector<float> base;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 65521) {
    float f;
    const auto w = static_cast<std::uint32_t>(u);
    std::memcpy(&f, &w, 4);
    base.push_back(f);
  }
  int checked = 0;
  for (const FloatFormat& f : fmts) {
    REQUIRE(runs::fp8_rne_run_supported(f));
    native::QuantPlan p;
    p.element = native::ElementKind::float_format;
    p.rule = native::ScaleRule::absmax;
    p.mode = RoundMode::rne;
    p.fmt = f;
    p.fmax = native::format_max32(f);
    std::vector<float> x = base;
    // Values whose y = fmax x / a (a = fmax: y = x up to the scaling's rounding) sit on the
    // grid's boundaries: every code's value, the midpoints to its neighbour, and one ulp of
    // fp32 either side of each.
    for (std::uint32_t c = 0; c < (1u << f.total_bits()); ++c) {
      const float v = native::to_float(f, c);
      const float w = native::to_float(f, c + 1 < (1u << f.total_bits()) ? c + 1 : c);
      if (!std::isfinite(v)) continue;
      const float mid = std::isfinite(w) ? static_cast<float>((double{v} + w) / 2) : v;
      for (const float t : {v, mid}) {
        x.push_back(t);
        x.push_back(std::nextafter(t, 0.0f));
        x.push_back(std::nextafter(t, 1e30f));
        x.push_back(std::nextafter(t, -1e30f));
      }
    }
    for (const auto order : {native::ScaleOrder::div_mul, native::ScaleOrder::recip_mul}) {
      p.order = order;
      for (const float a : {p.fmax, 1.0f, 0.37f, 3.1e-41f, 2.5e38f, INFINITY, NAN}) {
        std::vector<std::uint8_t> codes(x.size());
        for (std::size_t i0 = 0, run = 0, n = 0; i0 < x.size(); i0 += n, ++run) {
          n = std::min(run == 0 ? std::size_t{4099} : run % 9 + 1, x.size() - i0);
          const std::uint32_t got = runs::encode_fp8_rne_run(p, x.data() + i0, n, a, &codes[i0]);
          std::uint32_t want = 0;
          for (std::size_t i = i0; i < i0 + n; ++i) {
            const Encoded e = native::quant_element(p, x[i], bits(a), 0);
            INFO(f.exp_bits << "/" << f.man_bits << " order " << static_cast<int>(order) << " a "
                            << a << " x bits " << bits(x[i]));
            REQUIRE(codes[i] == static_cast<std::uint8_t>(e.code));
            want |= e.flags;
            ++checked;
          }
          REQUIRE(got == want);
        }
        // One element a run: each element's own flags.
        for (std::size_t i = 0; i < x.size(); i += 37) {
          std::uint8_t c = 0;
          const std::uint32_t got = runs::encode_fp8_rne_run(p, &x[i], 1, a, &c);
          const Encoded e = native::quant_element(p, x[i], bits(a), 0);
          INFO("single x bits " << bits(x[i]) << " a " << a);
          REQUIRE(got == e.flags);
        }
      }
    }
  }
  REQUIRE(checked > 1000000);
}
