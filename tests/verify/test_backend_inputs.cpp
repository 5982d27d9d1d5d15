// The designed inputs of `verify --backend --depth ci` (sim/verify/backend_inputs.hpp, SEMANTICS
// 13.5.1): the classes hold what the document says (every tie with a subnormal result, the
// overflow tie), the sr word placement puts its words where the rounding decision flips (checked
// against the native engine's rounding of the same input with that word and with word 0, not
// against the placement code), and odd formats do not break the generator.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/verify/backend_inputs.hpp"

namespace {

using exmy::FloatFormat;
using exmy::Rounding;
using exmy::RoundMode;
using exmy::verify::DesignedSweep;

std::uint32_t bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

std::size_t class_index(const DesignedSweep& s, const std::string& name) {
  for (std::size_t k = 0; k < s.input_classes.size(); ++k) {
    if (s.input_classes[k] == name) return k;
  }
  FAIL("no input class " << name);
  return 0;
}

}  // namespace

TEST_CASE("backend ci inputs: every e4m3fn tie with a subnormal result, and the overflow tie",
          "[verify][backend]") {
  const FloatFormat f = *exmy::parse_float_format("e4m3fn");
  exmy::verify::SweepSize size;
  size.random_elements = 1000;
  const DesignedSweep s = exmy::verify::designed_cast_sweep(f, Rounding{}, 7, size);
  const std::size_t sub = class_index(s, "tie (subnormal result)"),
                    boundary = class_index(s, "tie (subnormal/normal boundary)"),
                    edge = class_index(s, "overflow edge");
  std::set<std::uint32_t> subnormal_ties, edges;
  std::uint32_t boundary_tie = 0;
  for (const auto& c : s.calls) {
    for (std::size_t i = 0; i < c.x.size(); ++i) {
      if (c.input[i] == sub) subnormal_ties.insert(c.x[i]);
      if (c.input[i] == boundary) boundary_tie = c.x[i] & 0x7FFFFFFFu;
      if (c.input[i] == edge) edges.insert(c.x[i]);
    }
  }
  // From SEMANTICS 1: e4m3fn's subnormals are m * 2^-9, m = 1..7; the ties below 2^-6 with a
  // subnormal (or zero) result are (2m + 1) * 2^-10 for m = 0..6, both signs.
  std::set<std::uint32_t> want;
  for (int m = 0; m < 7; ++m) {
    const float t = std::ldexp(static_cast<float>(2 * m + 1), -10);
    want.insert(bits(t));
    want.insert(bits(-t));
  }
  CHECK(subnormal_ties == want);
  CHECK(boundary_tie == bits(std::ldexp(15.0f, -10)));  // between 7 * 2^-9 and 2^-6
  CHECK(edges.count(bits(464.0f)) == 1);                // max 448 + q/2, q = 32
  CHECK(edges.count(bits(-464.0f)) == 1);
  CHECK(edges.count(bits(480.0f)) == 1);  // max + q
  // Deterministic.
  const DesignedSweep again = exmy::verify::designed_cast_sweep(f, Rounding{}, 7, size);
  REQUIRE(again.calls.size() == s.calls.size());
  for (std::size_t k = 0; k < s.calls.size(); ++k) CHECK(again.calls[k].x == s.calls[k].x);
}

TEST_CASE("backend ci inputs: sr words placed at the rounding decision's edges",
          "[verify][backend]") {
  const FloatFormat fp32 = *exmy::parse_float_format("fp32");
  for (const char* name : {"e4m3fn", "e5m2", "bf16"}) {
    for (const int R : {1, 8, 13}) {
      INFO(name << " sr:" << R);
      const FloatFormat f = *exmy::parse_float_format(name);
      Rounding r;
      r.mode = RoundMode::sr;
      r.sr_bits = R;
      exmy::verify::SweepSize size;
      size.call_elements = std::size_t{1} << 18;
      size.random_elements = 0;
      const DesignedSweep s = exmy::verify::designed_cast_sweep(f, r, 3, size);
      std::size_t up = 0, down = 0;
      for (const auto& c : s.calls) {
        for (std::size_t i = 0; i < c.x.size(); ++i) {
          const std::string& w = s.word_classes[c.word[i]];
          const bool is_up = w == "sr word at the boundary (up)",
                     is_down = w == "sr word below the boundary (down)";
          if (!is_up && !is_down) continue;
          const std::uint32_t word =
              exmy::native::sr_word(exmy::native::philox_word(c.seed, 0, i), R);
          // The engine's result with this word against its result with word 0 (which rounds
          // toward zero): up changes it, down does not (SEMANTICS 3.1).
          const auto with = exmy::native::convert(fp32, f, r, c.x[i], word).code;
          const auto trunc = exmy::native::convert(fp32, f, r, c.x[i], 0).code;
          // Beyond the overflow edge both words overflow: nothing to tell apart.
          const auto cls = f.classify(trunc);
          if (cls == exmy::ValueClass::nan || cls == exmy::ValueClass::inf) continue;
          INFO("x 0x" << std::hex << c.x[i] << " word 0x" << word << std::dec);
          if (is_up) {
            CHECK(with != trunc);
            ++up;
          } else {
            CHECK(with == trunc);
            ++down;
          }
        }
      }
      CHECK(up > 0);
      CHECK(down > 0);
    }
  }
}

TEST_CASE("backend ci inputs: formats beyond fp32's range do not break the generator",
          "[verify][backend]") {
  exmy::verify::SweepSize size;
  size.random_elements = 100;
  for (const char* name : {"e11m4", "e8m7b200", "e8m0fnu", "e2m1fn", "e4m3fnu"}) {
    INFO(name);
    const auto f = exmy::parse_float_format(name);
    REQUIRE(f.has_value());
    const DesignedSweep s = exmy::verify::designed_cast_sweep(*f, Rounding{}, 1, size);
    CHECK(!s.calls.empty());
    CHECK(s.designed > 0);
  }
}
