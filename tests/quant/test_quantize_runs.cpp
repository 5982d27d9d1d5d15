// quantize() and dequantize() over runs of one group (sim/quant/element_runs.hpp) against the
// per-element definition: native::quant_element / dequant_element of make_plan's plan, called
// element by element with the group of quant::group_of (the loops the runs replaced). Tensors of
// 8 x 1,040 elements (groups longer than the 256-code space, so the dequantization memo is used,
// and over 16 x 256 elements, so the byte-state memo of MX and NVFP4 is too) with zeros, -0,
// subnormals, infinities and NaN; every code, flag word and value bit. Seed 20261203.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "sim/native/philox.hpp"
#include "sim/native/quant_plan.hpp"
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
