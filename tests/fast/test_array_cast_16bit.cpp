// The 16-bit fast call of sim/fast/array_cast.cpp (fp32 → bf16 under rne and rtz, every overflow
// policy) against the native engine element by element: every fp32 top half with the low halves
// that decide a rounding at bit 16 (0, 1, just below, at and just above the tie, all ones) and
// random low halves (seed printed), so every binade, subnormals, ±0, ±inf and NaNs with payloads.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <vector>

#include "sim/fast/array_cast.hpp"
#include "sim/native/convert.hpp"
#include "tests/fast/cast_simd_test_util.hpp"

using namespace exmy;

TEST_CASE("fast fp32 -> bf16 (rne, rtz; none, sat, satfinite) equals native::convert",
          "[fast][bf16]") {
  const std::uint32_t seed = 20261124;
  INFO("random low halves from std::mt19937 seed " << seed);
  std::mt19937 rng(seed);
  const std::vector<std::uint32_t> bits = exmy::fast::testing::bf16_rounding_patterns(rng);
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), bits.size() * 4);
  std::vector<std::uint16_t> got(bits.size());
  for (RoundMode m : {RoundMode::rne, RoundMode::rtz}) {
    for (Overflow ov : {Overflow::none, Overflow::sat, Overflow::satfinite}) {
      const Rounding r{m, 0, ov};
      fast::cast_to_codes(x.data(), fast::ArrayInput::fp32, x.size(), got.data(), formats::bf16, r,
                          0, 0, 0);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < bits.size(); ++i) {
        const auto want = native::convert(formats::fp32, formats::bf16, r, bits[i], 0).code;
        if (got[i] != want && bad++ < 5) {
          FAIL_CHECK("x=0x" << std::hex << bits[i] << " mode " << int(m) << " policy " << int(ov)
                            << ": got 0x" << got[i] << " want 0x" << want);
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("fast fp32 -> fp16 (rne, rtz; none, sat, satfinite) equals native::convert",
          "[fast][fp16]") {
  // fp16 rounds at bit 13 for normal results and higher for subnormal ones: every top-19-bit
  // pattern with the low 13 bits at 0, 1, just below, at and above the half, all ones, random.
  const std::uint32_t seed = 20261124;
  INFO("random low bits from std::mt19937 seed " << seed);
  std::mt19937 rng(seed);
  std::vector<std::uint32_t> bits;
  for (std::uint32_t top = 0; top < (1u << 19); ++top) {
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x0FFFu, 0x1000u, 0x1001u, 0x1FFFu,
                              static_cast<std::uint32_t>(rng() & 0x1FFFu)}) {
      bits.push_back(top << 13 | low);
    }
  }
  bits.push_back(0x3F800000u);  // an odd count: the one-element tail
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), bits.size() * 4);
  std::vector<std::uint16_t> got(bits.size());
  for (RoundMode m : {RoundMode::rne, RoundMode::rtz}) {
    for (Overflow ov : {Overflow::none, Overflow::sat, Overflow::satfinite}) {
      const Rounding r{m, 0, ov};
      fast::cast_to_codes(x.data(), fast::ArrayInput::fp32, x.size(), got.data(), formats::fp16, r,
                          0, 0, 0);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < bits.size(); ++i) {
        const auto want = native::convert(formats::fp32, formats::fp16, r, bits[i], 0).code;
        if (got[i] != want && bad++ < 5) {
          FAIL_CHECK("x=0x" << std::hex << bits[i] << " mode " << int(m) << " policy " << int(ov)
                            << ": got 0x" << got[i] << " want 0x" << want);
        }
      }
      CHECK(bad == 0);
    }
  }
}
