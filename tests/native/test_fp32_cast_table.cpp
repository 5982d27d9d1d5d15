// The table fast path equals the native engine: every top-16-bit pattern of fp32 with a sweep of
// low-16-bit patterns (zero, one, the half bit, all ones, and random), for every <= 8-bit preset
// and every deterministic mode and overflow policy. Sticky-only dependence on the low bits is the
// table's premise; the sweep checks it.
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "sim/fast/fp32_cast_table.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"

using namespace exmy;

TEST_CASE("fp32 cast table equals the native engine", "[native][fast]") {
  const RoundMode modes[] = {RoundMode::rne, RoundMode::rna, RoundMode::rtz,
                             RoundMode::rup, RoundMode::rdn, RoundMode::rto};
  const Overflow policies[] = {Overflow::none, Overflow::satfinite, Overflow::sat};
  std::mt19937 gen(7);
  std::vector<std::uint32_t> lows = {0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
  for (int i = 0; i < 4; ++i) lows.push_back(gen() & 0xFFFF);
  std::size_t checked = 0;
  for (const auto& p : narrow_float_presets()) {
    for (RoundMode m : modes) {
      for (Overflow o : policies) {
        const Rounding r{m, 0, o};
        REQUIRE(fast::Fp32CastTable::eligible(p.format, r));
        const fast::Fp32CastTable table(p.format, r);
        std::size_t bad = 0;
        for (std::uint32_t top = 0; top < (1u << 16); ++top) {
          for (std::uint32_t low : lows) {
            const std::uint32_t b = (top << 16) | low;
            const auto want = native::convert(formats::fp32, p.format, r, b).code;
            bad += table(b) != want;
            ++checked;
          }
        }
        INFO(p.name << " mode " << int(m) << " overflow " << int(o));
        CHECK(bad == 0);
      }
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("cast_fp32_to_u8 stochastic rounding uses Philox words per element index",
          "[native][fast]") {
  std::vector<float> in(37);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = 0.3f * static_cast<float>(i) - 5.1f;
  const Rounding r{RoundMode::sr, 8, Overflow::none};
  std::vector<std::uint8_t> whole(in.size()), tail(in.size() - 5);
  fast::cast_fp32_to_u8(in.data(), whole.data(), in.size(), formats::e4m3fn, r, 99, 0, 0);
  // Starting mid-block (index 5) must reproduce the same words: launch-shape independence.
  fast::cast_fp32_to_u8(in.data() + 5, tail.data(), tail.size(), formats::e4m3fn, r, 99, 0, 5);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const auto w = native::sr_word(native::philox_word(99, 0, i), 8);
    const auto want =
        native::convert(formats::fp32, formats::e4m3fn, r, native::bits_of(in[i]), w).code;
    CHECK(whole[i] == want);
    if (i >= 5) CHECK(tail[i - 5] == want);
  }
}

// Guards the sr:R fast path of cast_fp32_to_u8 (sim/native/fast_cast.hpp's mode-fixed cast and
// the e8m0 path): every <= 8-bit preset, several R, chunks that start mid-block, inputs with
// every exponent and sign, against native::convert with the element's Philox word.
TEST_CASE("cast_fp32_to_u8 sr:R equals the native engine for every 8-bit preset",
          "[native][fast]") {
  std::vector<float> in;
  for (std::uint32_t se = 0; se < 512; ++se) {
    for (std::uint32_t m : {0u, 1u, 0x1FFFFu, 0x400000u, 0x5A5A5Au, 0x7FFFFFu}) {
      in.push_back(native::float_of((se << 23) | m));
    }
  }
  std::size_t checked = 0;
  for (const auto& p : float_presets()) {
    if (p.format.total_bits() > 8) continue;
    for (int R : {1, 5, 8, 13, 23, 32}) {
      const Rounding r{RoundMode::sr, R, Overflow::none};
      std::vector<std::uint8_t> out(in.size() - 3);
      fast::cast_fp32_to_u8(in.data() + 3, out.data(), out.size(), p.format, r, 4242, 1, 3);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < out.size(); ++i) {
        const auto w = native::sr_word(native::philox_word(4242, 1, i + 3), R);
        const auto want =
            native::convert(formats::fp32, p.format, r, native::bits_of(in[i + 3]), w).code;
        if (out[i] != want && bad++ < 3) {
          UNSCOPED_INFO(p.name << " sr:" << R << " input 0x" << std::hex
                               << native::bits_of(in[i + 3]) << " got " << int(out[i]) << " want "
                               << want);
        }
        ++checked;
      }
      CHECK(bad == 0);
    }
  }
  CHECK(checked > 100'000);
}
