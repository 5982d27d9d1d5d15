// quant::PieceQuantizer (the layer's operands read a block of rows at a time, issue 36) against
// quantize() and dequantize() themselves: the same InputError on a bad combination, and for every
// scheme x target below, rows added in blocks of 1, 3 and all, every code (at its transposed place
// under --transpose), every state and every dequantized value bit for bit. Inputs: normal values
// with NaN, infinities, -0, subnormals, a zero row and large values, fixed seed 20261201.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
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
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> x(rows * cols);
  for (float& v : x) v = d(rng);
  const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e-40f, 6e4f, 3e38f, 0.0f};
  std::uniform_int_distribution<std::size_t> at(0, x.size() - 1);
  for (const float s : specials) x[at(rng)] = s;
  for (std::size_t c = 0; c < cols; ++c) x[c] = 0.0f;  // an all-zero row (and zero groups)
  return x;
}

}  // namespace

TEST_CASE("PieceQuantizer: quantize()'s codes and states and dequantize()'s values, any row blocks",
          "[quant][pieces]") {
  const std::size_t rows = 6, cols = 64;
  struct Combo {
    const char* scheme;
    const char* target;
    bool transpose, sr, two_level, nan_ignore;
  };
  const Combo combos[] = {
      {"tensor", "int8", false, false, false, false},
      {"rowwise", "int8", false, false, false, false},
      {"colwise", "int8", true, false, false, false},
      {"rowwise", "int8", true, true, false, false},
      {"tensor", "e4m3fn", false, false, false, false},
      {"rowwise", "e5m2", false, false, false, true},
      {"colwise", "e2m1fn", false, false, false, false},
      {"tensor", "e3m2fn", false, true, false, false},
      {"block:32", "dynamic", false, false, false, false},
      {"block:64", "int8", false, false, false, false},
      {"mx", "e4m3fn", false, false, false, false},
      {"mx", "e2m1fn", false, true, false, false},
      {"nvfp4", "e2m1fn", false, false, false, false},
      {"nvfp4", "e2m1fn", false, false, true, false},
      {"block:4x16", "e4m3fn", false, false, false, false},
      {"mx", "int8", false, false, false, false},  // refused: mx takes float targets
  };
  const std::vector<float> x = inputs(rows, cols, 20261201);
  int checked = 0, refusals = 0;
  for (const Combo& k : combos) {
    Options opt;
    opt.scheme = parse_scheme(k.scheme);
    opt.target = parse_target(k.target);
    opt.transpose = k.transpose;
    opt.two_level = k.two_level;
    if (k.sr) {
      opt.mode = RoundMode::sr;
      opt.sr_bits = 8;
      opt.seed = 77;
    }
    if (k.nan_ignore) opt.nan = native::NanPolicy::ignore;
    INFO(k.scheme << " " << k.target << (k.transpose ? " transpose" : "") << (k.sr ? " sr" : ""));
    Quantized q;
    bool refused = false;
    try {
      q = quantize(x, {rows, cols}, opt);
    } catch (const InputError&) {
      refused = true;
    }
    if (refused) {
      REQUIRE_THROWS_AS(PieceQuantizer(opt, rows, cols), InputError);
      ++refusals;
      continue;
    }
    const std::vector<float> want = dequantize(q, opt);
    for (const std::size_t step : {std::size_t{1}, std::size_t{4}, rows}) {
      PieceQuantizer p(opt, rows, cols);
      for (std::size_t r0 = 0; r0 < rows; r0 += step) {
        const std::size_t r1 = std::min(rows, r0 + step);
        p.add_rows(r0, r1, x.data() + r0 * cols);
      }
      p.finish();
      REQUIRE(p.state().size() == q.state.size());
      for (std::size_t g = 0; g < q.state.size(); ++g) {
        REQUIRE(bits(p.state()[g]) == bits(q.state[g]));
      }
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < cols; ++c) {
          const std::uint8_t code = p.code(r, c, x[r * cols + c]);
          REQUIRE(code == q.codes[opt.transpose ? c * rows + r : r * cols + c]);
          REQUIRE(bits(p.value(r, c, code)) == bits(want[r * cols + c]));
          ++checked;
        }
      }
    }
  }
  REQUIRE(refusals == 1);
  REQUIRE(checked == 15 * 3 * static_cast<int>(rows * cols));
}

TEST_CASE("PieceQuantizer: rows out of order or unfinished are a logic error", "[quant][pieces]") {
  Options opt;
  opt.scheme = parse_scheme("rowwise");
  PieceQuantizer p(opt, 2, 2);
  const float v[4] = {1, 2, 3, 4};
  REQUIRE_THROWS_AS(p.add_rows(1, 2, v), std::logic_error);
  p.add_rows(0, 1, v);
  REQUIRE_THROWS_AS(p.finish(), std::logic_error);
}
