// The lean vector kernels of sim/fast/cast_simd.cpp (every format of native::fast_fixed_supported
// outside fast_cast_supported: ranges past fp32's, unsigned formats, M = 0, no subnormals) and the
// fast ones on the formats of the GPU's generic sweep, against the scalar native engine, element
// by element, bit for bit, on every instruction set this CPU has (AVX-512, AVX2, SSE2, forced
// through simd::set_isa_limit):
//   - fp32 inputs: every top half x the low halves 0, 1, 0x8000, 0xFFFF, 0x5A5A, in order and
//     shuffled (so that vectors mix lean lanes with inf, NaN, zero, engine and overflow lanes),
//     under rne, rtz, sr:8 and sr:(23 - M) with overflow none and satfinite, the arrays at odd
//     byte offsets, in pieces of odd lengths, sr from a first index that is not a multiple of 4;
//   - fp16 and bf16 inputs: every code, twice at different indices;
//   - sr:R with chosen words at the carry thresholds (simd_cast_to_codes_with_words);
//   - fast::cast_to_codes (one thread and a team) takes these kernels.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sim/fast/array_cast.hpp"
#include "sim/fast/cast_simd.hpp"
#include "sim/fast/simd.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/fast_cast.hpp"
#include "sim/native/philox.hpp"
#include "tests/fast/cast_simd_test_util.hpp"

using namespace exmy;
namespace simd = exmy::fast::simd;
using namespace exmy::fast::testing;

namespace {

// The GPU's generic sweep (tests/gpu/cast_test.cpp) plus e9m6 and e3m0fnu: ranges past fp32's on
// either side (e8m3fn, e8m3fnuz, e9m6, e11m4), unsigned (e4m3fnu), M = 0 without subnormals or
// zero (e4m0fnu, e3m0fnu), and formats of the fast kernels (e8m3, e5m3, e3m4b5, e8m7, e6m9b40).
const char* const kFormats[] = {"e8m3",    "e5m3",    "e3m4b5", "e8m3fn", "e8m3fnuz", "e4m3fnu",
                                "e4m0fnu", "e3m0fnu", "e11m4",  "e9m6",   "e8m7",     "e6m9b40"};

FloatFormat format_of(const char* name) {
  const auto f = parse_float_format(name);
  REQUIRE(f.has_value());
  return *f;
}

// rne, rtz, sr:8, sr:(23 - M), each with overflow none and satfinite.
std::vector<Rounding> roundings(const FloatFormat& f) {
  std::vector<Rounding> out;
  for (Overflow ov : {Overflow::none, Overflow::satfinite}) {
    out.push_back(Rounding{RoundMode::rne, 0, ov});
    out.push_back(Rounding{RoundMode::rtz, 0, ov});
    out.push_back(Rounding{RoundMode::sr, 8, ov});
    out.push_back(Rounding{RoundMode::sr, 23 - f.man_bits, ov});
  }
  return out;
}

std::vector<std::uint32_t> fp32_inputs() {
  std::vector<std::uint32_t> xs;
  for (std::uint32_t top = 0; top < 0x10000u; ++top) {
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x8000u, 0xFFFFu, 0x5A5Au}) {
      xs.push_back(top << 16 | low);
    }
  }
  xs.push_back(0x3F800001u);  // an odd count
  return xs;
}

}  // namespace

TEST_CASE("the vector kernels serve every format of fast_fixed_supported in rne, rtz, sr:R",
          "[fast][simd][lean]") {
  for (const char* name : kFormats) {
    const FloatFormat f = format_of(name);
    INFO(name);
    REQUIRE(native::fast_fixed_supported(f));
    for (const Rounding& r : roundings(f)) CHECK(fast::simd_cast_supported(f, r));
    CHECK_FALSE(fast::simd_cast_supported(f, Rounding{RoundMode::sr, 24 - f.man_bits}));
    CHECK_FALSE(fast::simd_cast_supported(f, Rounding{RoundMode::rna, 0}));
  }
}

TEST_CASE("lean vector casts of fp32 equal native::convert (every top half x 5 low halves)",
          "[fast][simd][lean]") {
  const std::vector<std::uint32_t> xs = fp32_inputs();
  const std::vector<std::size_t> odd = {1, 2, 37, 1000, 4093, 65539};
  for (const char* name : kFormats) {
    const FloatFormat f = format_of(name);
    for (const Rounding& r : roundings(f)) {
      const bool sr = r.mode == RoundMode::sr;
      compare_all(xs, fast::ArrayInput::fp32, formats::fp32, name, f, r,
                  sr ? (std::uint64_t{1} << 34) - 3 : 6, odd);
    }
  }
}

TEST_CASE("lean vector casts of shuffled fp32 inputs equal native::convert (mixed vectors)",
          "[fast][simd][lean]") {
  std::vector<std::uint32_t> xs = fp32_inputs();
  const std::uint32_t seed = 20261126;
  INFO("shuffled by std::mt19937 seed " << seed);
  std::mt19937 rng(seed);
  std::shuffle(xs.begin(), xs.end(), rng);
  for (const char* name : kFormats) {
    const FloatFormat f = format_of(name);
    for (const Rounding& r :
         {Rounding{RoundMode::rne, 0}, Rounding{RoundMode::rtz, 0}, Rounding{RoundMode::sr, 8}}) {
      compare_all(xs, fast::ArrayInput::fp32, formats::fp32, name, f, r, 1,
                  std::vector<std::size_t>{xs.size()});
    }
  }
}

TEST_CASE("lean vector casts of fp16 and bf16 equal native::convert (every code)",
          "[fast][simd][lean]") {
  std::vector<std::uint16_t> xs;
  for (int rep = 0; rep < 2; ++rep) {
    for (std::uint32_t h = 0; h < 0x10000u; ++h) xs.push_back(static_cast<std::uint16_t>(h));
  }
  xs.push_back(0x3C00);
  const std::vector<std::size_t> odd = {3, 61, 1001, 65537};
  for (const char* name : kFormats) {
    const FloatFormat f = format_of(name);
    for (const Rounding& r : roundings(f)) {
      for (fast::ArrayInput t : {fast::ArrayInput::fp16, fast::ArrayInput::bf16}) {
        const FloatFormat& from = t == fast::ArrayInput::fp16 ? formats::fp16 : formats::bf16;
        INFO("from " << (t == fast::ArrayInput::fp16 ? "fp16" : "bf16"));
        compare_all(xs, t, from, name, f, r, 5, odd);
      }
    }
  }
}

TEST_CASE("lean vector sr:R with chosen words (carry thresholds) equals native::convert",
          "[fast][simd][lean]") {
  const std::uint32_t seed = 20261128;
  INFO("words from std::mt19937 seed " << seed);
  std::mt19937 rng(seed);
  const std::vector<std::uint32_t> xs = fp32_inputs();
  for (const char* name : kFormats) {
    const FloatFormat f = format_of(name);
    const int d = 23 - f.man_bits;
    for (int R : {1, 8, d}) {
      const Rounding r{RoundMode::sr, R, Overflow::none};
      INFO(name << " " << rounding_name(r));
      const std::uint32_t mask = static_cast<std::uint32_t>(low_mask(R));
      std::vector<std::uint32_t> words(xs.size());
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const std::uint32_t frac = ((xs[i] & 0x7FFFFFFFu) >> (d - R)) & mask;
        const std::uint32_t pick = rng() % 8;
        words[i] = pick < 2    ? rng() & mask
                   : pick == 2 ? 0u
                   : pick == 3 ? mask
                   : pick < 6  ? ((mask + 1) - frac) & mask
                               : ((mask + 1) - frac - 1) & mask;
      }
      const std::size_t cb = f.total_bits() <= 8 ? 1 : 2;
      for (simd::Isa isa : kIsas) {
        IsaLimit limit(isa);
        INFO("on " << simd::isa_name(simd::active_isa()));
        std::vector<std::uint8_t> src(xs.size() * 4 + 1), dst(xs.size() * cb + 1);
        std::memcpy(src.data() + 1, xs.data(), xs.size() * 4);
        fast::simd_cast_to_codes_with_words(src.data() + 1, fast::ArrayInput::fp32, xs.size(),
                                            dst.data() + 1, f, r, words.data());
        std::size_t bad = 0;
        for (std::size_t i = 0; i < xs.size(); ++i) {
          const std::uint32_t want = static_cast<std::uint32_t>(
              native::convert(formats::fp32, f, r, xs[i], words[i]).code);
          const std::uint32_t got = code_at(dst, 1, cb, i);
          if (got != want && bad++ < 5) {
            FAIL_CHECK("x=0x" << std::hex << xs[i] << " word 0x" << words[i] << ": got 0x" << got
                              << " want 0x" << want);
          }
        }
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("cast_to_codes takes the lean kernels, one thread or a team, with the same bits",
          "[fast][simd][lean]") {
  std::mt19937 rng(13);
  INFO("inputs from std::mt19937 seed 13");
  std::vector<std::uint32_t> xs(200003);
  for (auto& x : xs) x = rng();
  for (const char* name : {"e8m3fn", "e4m3fnu", "e4m0fnu", "e11m4", "e8m3fnuz"}) {
    const FloatFormat f = format_of(name);
    for (const Rounding& r : {Rounding{RoundMode::rne, 0}, Rounding{RoundMode::sr, 8}}) {
      INFO(name << " " << rounding_name(r));
      check_threads_agree(xs, f, r, 9);
    }
  }
}
