// Split formats on generated inputs: join(split(x)) is the rtz rounding of x to the extended
// format (through the one rounding routine, an independent path from the bit slicing of bf16),
// stochastic splits un-round exactly, and packed fields survive any write order.
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "sim/native/convert.hpp"
#include "sim/native/split_float.hpp"
#include "tests/support/rc_classify.hpp"

using namespace exmy;
using namespace exmy::native;

TEST_CASE("split formats: join(split(x)) == rtz to the extended format", "[optim][split][prop]") {
  rc::prop("truncation and sr", []() {
    const bool bf = *rc::gen::arbitrary<bool>();
    const int k = *rc::gen::inRange(0, bf ? 17 : 14);
    const std::uint32_t u = *rc::gen::arbitrary<std::uint32_t>();
    float x;
    std::memcpy(&x, &u, 4);
    const SplitFormat f{bf ? Storage::bf16 : Storage::f16, k, false};
    const FloatFormat ext{bf ? 8 : 5, (bf ? 7 : 10) + k, bf ? 127 : 15, true,
                          true,       NanEncoding::ieee, true};
    const std::uint64_t want =
        convert(formats::fp32, ext, Rounding{RoundMode::rtz, 0, Overflow::none}, u).code;
    std::uint16_t hi;
    std::uint32_t field;
    split_value(x, f, 0, hi, field);
    RC_ASSERT(((static_cast<std::uint64_t>(hi) << k) | field) == want);
    const float y = split_join(hi, field, f);
    if (!std::isnan(x)) {
      const std::uint64_t back = convert(ext, formats::fp32, Rounding{}, want).code;
      std::uint32_t yb;
      std::memcpy(&yb, &y, 4);
      RC_ASSERT(yb == back);
    }
    if (k > 0) {
      const SplitFormat s{f.hi, k, true};
      std::uint16_t h2;
      std::uint32_t f2;
      split_value(x, s, *rc::gen::arbitrary<std::uint32_t>(), h2, f2);
      const float z = split_join(h2, f2, s);
      RC_ASSERT((std::isnan(y) && std::isnan(z)) || std::memcmp(&y, &z, 4) == 0);
      RC_ASSERT(h2 == hi || h2 == hi + 1);
    }
    exmy::testing::CaseLabels labels;
    labels.add_conversion(formats::fp32, ext, u);
    labels.emit();
  });
}

TEST_CASE("packed fields survive any write order", "[optim][split][prop]") {
  rc::prop("field_put / field_get", []() {
    const int w = *rc::gen::inRange(1, 18);
    const std::size_t n = *rc::gen::inRange<std::size_t>(1, 200);
    std::vector<std::uint32_t> vals(n);
    for (auto& v : vals) v = *rc::gen::arbitrary<std::uint32_t>() & ((1u << w) - 1);
    std::vector<std::uint32_t> words(split_words(n, w), 0u);
    const auto order =
        *rc::gen::unique<std::vector<std::size_t>>(n, rc::gen::inRange<std::size_t>(0, n));
    for (std::size_t i : order) field_put(words.data(), i, w, vals[i]);
    for (std::size_t i = 0; i < n; ++i) RC_ASSERT(field_get(words.data(), i, w) == vals[i]);
  });
}
