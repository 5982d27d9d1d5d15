// Consistency properties of the schemes on generated tensors (RapidCheck; the seed is pinned and
// printed by tests/main.cpp): the granularities are the same computation on different groupings,
// so each must agree with the others where the groupings coincide.
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "sim/quant/quantize.hpp"

using namespace exmy;
using namespace exmy::quant;

namespace {

// Generated fp32 values: arbitrary bit patterns (NaN, inf, subnormals included) or moderate ones.
rc::Gen<float> gen_value() {
  return rc::gen::oneOf(rc::gen::map(rc::gen::arbitrary<std::uint32_t>(),
                                     [](std::uint32_t u) {
                                       float x;
                                       std::memcpy(&x, &u, 4);
                                       return x;
                                     }),
                        rc::gen::map(rc::gen::inRange(-100000, 100000),
                                     [](int v) { return static_cast<float>(v) / 1024.0f; }));
}

const char* gen_target_name(int k) {
  static const char* names[] = {"int8", "e4m3fn", "e5m2", "e2m1fn", "dynamic"};
  return names[k];
}

Options make(const std::string& scheme, const std::string& target, bool ignore_nan, bool sr) {
  Options o;
  o.scheme = parse_scheme(scheme);
  o.target = parse_target(target);
  o.nan = ignore_nan ? native::NanPolicy::ignore : native::NanPolicy::propagate;
  if (sr) {
    o.mode = RoundMode::sr;
    o.sr_bits = 12;
    o.seed = 42;
  }
  return o;
}

}  // namespace

TEST_CASE("colwise of X equals rowwise of X^T, transposed", "[quant][prop]") {
  rc::prop("colwise/rowwise duality", []() {
    const std::size_t rows = *rc::gen::inRange<std::size_t>(1, 9);
    const std::size_t cols = *rc::gen::inRange<std::size_t>(1, 9);
    const auto x = *rc::gen::container<std::vector<float>>(rows * cols, gen_value());
    const std::string target = gen_target_name(*rc::gen::inRange(0, 5));
    const bool ignore = *rc::gen::arbitrary<bool>();
    std::vector<float> xt(x.size());
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) xt[c * rows + r] = x[r * cols + c];
    }
    // Deterministic rounding only: sr words follow the input index, which the transpose moves.
    const Quantized qc = quantize(x, {rows, cols}, make("colwise", target, ignore, false));
    const Quantized qr = quantize(xt, {cols, rows}, make("rowwise", target, ignore, false));
    RC_ASSERT(std::memcmp(qc.state.data(), qr.state.data(), qc.state.size() * 4) == 0);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        RC_ASSERT(qc.codes[r * cols + c] == qr.codes[c * rows + r]);
      }
    }
  });
}

TEST_CASE("block:B over a tensor of <= B elements equals tensor-wise", "[quant][prop]") {
  rc::prop("one block is the tensor", []() {
    const std::size_t n = *rc::gen::inRange<std::size_t>(1, 200);
    const auto x = *rc::gen::container<std::vector<float>>(n, gen_value());
    const std::string target = gen_target_name(*rc::gen::inRange(0, 5));
    const bool ignore = *rc::gen::arbitrary<bool>();
    const bool sr = *rc::gen::arbitrary<bool>();
    const Quantized qb = quantize(x, {n}, make("block:256", target, ignore, sr));
    const Quantized qt = quantize(x, {n}, make("tensor", target, ignore, sr));
    RC_ASSERT(qb.codes == qt.codes);
    RC_ASSERT(std::memcmp(qb.state.data(), qt.state.data(), 4) == 0);
  });
}

TEST_CASE("rowwise of a 1-row tensor equals tensor-wise; shapes do not matter to blocks",
          "[quant][prop]") {
  rc::prop("reshape invariance", []() {
    const std::size_t rows = *rc::gen::inRange<std::size_t>(1, 6);
    const std::size_t cols = *rc::gen::inRange<std::size_t>(1, 70);
    const auto x = *rc::gen::container<std::vector<float>>(rows * cols, gen_value());
    const std::string target = gen_target_name(*rc::gen::inRange(0, 4));
    const bool sr = *rc::gen::arbitrary<bool>();
    // block:32 depends only on the flat order, not on the shape.
    const Quantized a = quantize(x, {rows, cols}, make("block:32", target, false, sr));
    const Quantized b = quantize(x, {rows * cols}, make("block:32", target, false, sr));
    RC_ASSERT(a.codes == b.codes);
    // One row: rowwise == tensor.
    const Quantized r1 = quantize(x, {1, rows * cols}, make("rowwise", target, false, sr));
    const Quantized t1 = quantize(x, {1, rows * cols}, make("tensor", target, false, sr));
    RC_ASSERT(r1.codes == t1.codes);
  });
}
