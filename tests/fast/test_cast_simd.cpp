// The vector kernels of sim/fast/cast_simd.cpp against the scalar native engine, element by
// element, bit for bit, on every instruction set this CPU has (AVX-512, AVX2 and SSE2, forced
// through simd::set_isa_limit):
//   - the vector Philox against native::philox_word over seeds, streams and counters (hi32 != 0,
//     a range crossing a 2^32-block boundary, starts and ends inside a block);
//   - fp32 inputs: every top half x low halves at and around the rounding points of every target
//     (bits 13, 15, 16) plus a random one (TestFloat style: boundaries x patterns), into <= 8-bit
//     and 9..16-bit formats under rne, rtz and sr:R, every overflow policy, with the array at an
//     odd byte offset, a first index that is not a multiple of 4, and in pieces of odd lengths;
//   - fp16 and bf16 inputs: every code, four times at different indices (different words).
// The sr words come from Philox(seed, stream, index), so the comparison sees random words; the
// random low halves come from a printed std::mt19937 seed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sim/fast/array_cast.hpp"
#include "sim/fast/cast_simd.hpp"
#include "sim/fast/simd.hpp"
#include "sim/format/registry.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/widen.hpp"
#include "tests/fast/cast_simd_test_util.hpp"

using namespace exmy;
namespace simd = exmy::fast::simd;
using namespace exmy::fast::testing;

namespace {

std::vector<Rounding> roundings(const std::vector<int>& sr_bits) {
  std::vector<Rounding> out;
  for (Overflow ov : {Overflow::none, Overflow::sat, Overflow::satfinite}) {
    out.push_back(Rounding{RoundMode::rne, 0, ov});
    out.push_back(Rounding{RoundMode::rtz, 0, ov});
    for (int R : sr_bits) out.push_back(Rounding{RoundMode::sr, R, ov});
  }
  return out;
}

// The presets of at most 8 bits the vector kernels serve, the 16-bit presets, and eXmY names of
// issue 15's generic-format sweep and seed 003 (e5m3, e8m3, e3m4b5, e6m5, e2m5fn, e8m7), and
// e8m0fnu (its own kernel: the MX scale format).
const char* const kFormats[] = {"e4m3fn", "e5m2",   "e4m3fnuz", "e5m2fnuz", "e2m1fn",
                                "e3m2fn", "e2m3fn", "e4m3",     "e3m4",     "e4m3b11fnuz",
                                "bf16",   "fp16",   "e5m3",     "e8m3",     "e3m4b5",
                                "e6m5",   "e2m5fn", "e8m7",     "e8m0fnu"};

}  // namespace

TEST_CASE("vector Philox equals native::philox_word", "[fast][simd][philox]") {
  std::mt19937_64 rng(20261126);
  INFO("random seeds and counters from std::mt19937_64 seed 20261126");
  std::vector<std::uint64_t> seeds = {0, 1, 0xFFFFFFFFFFFFFFFFull, 0xDEADBEEF00000000ull};
  std::vector<std::uint64_t> firsts = {0,
                                       1,
                                       2,
                                       3,
                                       5,
                                       (std::uint64_t{1} << 34) - 13,
                                       (std::uint64_t{1} << 62) + 6,
                                       ~std::uint64_t{0} - 300};
  for (int k = 0; k < 4; ++k) {
    seeds.push_back(rng());
    firsts.push_back(rng());
  }
  for (simd::Isa isa : kIsas) {
    IsaLimit limit(isa);
    for (std::uint64_t seed : seeds) {
      for (std::uint32_t stream : {0u, 1u, 0xFFFFFFFFu, 12345u}) {
        for (std::uint64_t first : firsts) {
          for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{17},
                                std::size_t{64}, std::size_t{67}, std::size_t{259}}) {
            if (first > ~std::uint64_t{0} - n) continue;
            std::vector<std::uint32_t> got(n + 1, 0xA5A5A5A5u);
            fast::philox_words(seed, stream, first, n, got.data());
            std::size_t bad = 0;
            for (std::size_t i = 0; i < n; ++i) {
              if (got[i] != native::philox_word(seed, stream, first + i) && bad++ < 3) {
                FAIL_CHECK(simd::isa_name(simd::active_isa())
                           << " seed 0x" << std::hex << seed << " stream 0x" << stream
                           << " index 0x" << first + i);
              }
            }
            CHECK(bad == 0);
            CHECK(got[n] == 0xA5A5A5A5u);  // nothing written past the range
          }
        }
      }
    }
  }
}

TEST_CASE("the kernel set: the detected one, capped by the limit", "[fast][simd]") {
  INFO("detected " << simd::isa_name(simd::detected_isa()));
  {
    IsaLimit limit(simd::Isa::sse2);
    CHECK(simd::active_isa() == simd::Isa::sse2);
  }
  {
    IsaLimit limit(simd::Isa::avx2);
    CHECK(static_cast<int>(simd::active_isa()) <= static_cast<int>(simd::Isa::avx2));
  }
  CHECK(simd::active_isa() == simd::detected_isa());
}

TEST_CASE("vector casts of fp32 equal native::convert (every top half x boundary low halves)",
          "[fast][simd]") {
  const std::uint32_t seed = 20261126;
  INFO("random low halves from std::mt19937 seed " << seed);
  std::mt19937 rng(seed);
  std::vector<std::uint32_t> xs;
  for (std::uint32_t top = 0; top < 0x10000u; ++top) {
    for (std::uint32_t low :
         {0x0000u, 0x0001u, 0x0FFFu, 0x1000u, 0x1001u, 0x3FFFu, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu,
          static_cast<std::uint32_t>(rng() & 0xFFFFu)}) {
      xs.push_back(top << 16 | low);
    }
  }
  xs.push_back(0x3F800001u);  // an odd count: every kernel ends in a scalar tail
  const std::vector<std::size_t> whole = {xs.size()}, odd = {1, 2, 37, 1000, 4093, 65539};
  for (const char* name : kFormats) {
    const FloatFormat f = parse_format(name).fp;
    const int d = 23 - f.man_bits;
    std::vector<int> sr_bits = {8};
    if (f == formats::e4m3fn || f == formats::fp16) sr_bits = {1, 8, d};
    for (const Rounding& r : roundings(sr_bits)) {
      INFO(name << " " << rounding_name(r));
      REQUIRE(fast::simd_cast_supported(f, r));
      const bool sr = r.mode == RoundMode::sr;
      // sr: a first index of 2^34 - 3 (not a multiple of 4; the blocks cross hi32 = 4) and
      // pieces of odd lengths; rne / rtz: the whole array in one call.
      compare_all(xs, fast::ArrayInput::fp32, formats::fp32, name, f, r,
                  sr ? (std::uint64_t{1} << 34) - 3 : 0, sr ? odd : whole);
    }
  }
}

// fp32 -> bf16 rne with overflow none: VCVTNEPS2BF16 where the CPU has AVX512_BF16 (compare_all
// runs avx512bf16 first, then the integer kernels of avx512, avx2 and sse2). Every top half x the
// low halves around bf16's rounding point (bit 15) and a random one, so every fp32 subnormal, NaN
// (payload dropped, sign kept) and inf pattern and the overflow to inf, in order (vectors of one
// kind) and shuffled (subnormal and NaN lanes beside normal ones, so one subnormal lane sends a
// whole vector to the integer kernel), at odd byte offsets, whole and in pieces of odd lengths.
TEST_CASE("fp32 -> bf16 rne by VCVTNEPS2BF16 equals native::convert", "[fast][simd][bf16]") {
  INFO("detected " << simd::isa_name(simd::detected_isa()));
  const std::uint32_t seed = 20261127;
  INFO("random low halves and shuffle from std::mt19937 seed " << seed);
  std::mt19937 rng(seed);
  std::vector<std::uint32_t> xs = bf16_rounding_patterns(rng);
  xs.push_back(0x00000001u);  // an odd count: a scalar tail (here a subnormal)
  const Rounding r{RoundMode::rne, 0, Overflow::none};
  REQUIRE(fast::simd_cast_supported(formats::bf16, r));
  const std::vector<std::size_t> whole = {xs.size()}, odd = {1, 15, 16, 17, 37, 1000, 4093, 65539};
  compare_all(xs, fast::ArrayInput::fp32, formats::fp32, "bf16", formats::bf16, r, 0, whole);
  compare_all(xs, fast::ArrayInput::fp32, formats::fp32, "bf16", formats::bf16, r, 0, odd);
  std::vector<std::uint32_t> mixed = xs;
  std::shuffle(mixed.begin(), mixed.end(), rng);
  compare_all(mixed, fast::ArrayInput::fp32, formats::fp32, "bf16", formats::bf16, r, 0, odd);
  // One special lane in a vector of normal ones, at every lane position: each fp32 subnormal
  // boundary, the NaNs with payloads the instruction would keep, inf, the largest finite values
  // (overflow to inf), and zeros.
  std::vector<std::uint32_t> one;
  for (std::uint32_t s :
       {0x00000001u, 0x00007FFFu, 0x00008000u, 0x00008001u, 0x007FFFFFu, 0x007F8000u, 0x00400000u,
        0x7F800001u, 0x7FBFFFFFu, 0x7FC00001u, 0x7FFFFFFFu, 0x7FFF0000u, 0x7F800000u, 0x7F7FFFFFu,
        0x7F7F8000u, 0x7F7F7FFFu, 0x00000000u, 0x00800000u}) {
    for (std::uint32_t sign : {0u, 0x80000000u}) {
      for (int lane = 0; lane < 16; ++lane) {
        for (int k = 0; k < 16; ++k) one.push_back(k == lane ? (s | sign) : 0x3F808000u + k);
      }
    }
  }
  compare_all(one, fast::ArrayInput::fp32, formats::fp32, "bf16", formats::bf16, r, 0,
              {one.size()});
}

// The VCVTNEPS2BF16 kernel's memory paths (issue 15, bench/results/2026-11-26-cpu-bf16-stream.md):
// a scalar head up to the output's 32-byte boundary, plain stores below 1 MiB of codes and
// non-temporal ones from there, rare vectors (an fp32 subnormal lane) and NaN lanes inside the
// streamed run, and a scalar tail. Outputs at every even offset inside 32 bytes (and one odd
// offset: no head, no streaming), with lengths just below, at and above the streaming threshold
// (2^19 codes) and short ones; guard bytes on both sides stay untouched.
TEST_CASE("fp32 -> bf16 rne: aligned head, streamed stores, rare vectors at every offset",
          "[fast][simd][bf16]") {
  const std::uint32_t seed = 20261126;
  INFO("inputs from std::mt19937 seed " << seed);
  std::mt19937 rng(seed);
  const std::size_t big = (std::size_t{1} << 19) + 37;
  std::vector<std::uint32_t> xs(big);
  for (std::size_t i = 0; i < big; ++i) {
    std::uint32_t u = rng();
    u = (u & 0x807FFFFFu) | ((100u + (u >> 24) % 56u) << 23);    // normal, 2^-27 .. 2^28
    if (i % 997 == 5) u = rng() & 0x807FFFFFu;                   // fp32 subnormal or zero
    if (i % 1499 == 7) u = 0x7F800001u | (rng() & 0x803FFFFFu);  // NaN with a payload
    xs[i] = u;
  }
  const Rounding r{RoundMode::rne, 0, Overflow::none};
  std::vector<std::uint16_t> want(big);
  for (std::size_t i = 0; i < big; ++i) {
    want[i] =
        static_cast<std::uint16_t>(native::convert(formats::fp32, formats::bf16, r, xs[i]).code);
  }
  IsaLimit limit(simd::Isa::avx512bf16);
  INFO("on " << simd::isa_name(simd::active_isa()));
  for (std::size_t n : {big, (std::size_t{1} << 19), (std::size_t{1} << 19) - 1, std::size_t{40},
                        std::size_t{15}}) {
    for (std::size_t off : {0, 2, 4, 14, 16, 18, 30, 1}) {
      std::vector<std::uint8_t> dst(2 * n + 64 + 32, 0xA5);
      const auto base = reinterpret_cast<std::uintptr_t>(dst.data());
      const std::size_t at = (32 - base % 32) % 32 + off;  // 32-byte aligned, then off bytes in
      fast::simd_cast_to_codes(xs.data(), fast::ArrayInput::fp32, n, dst.data() + at, formats::bf16,
                               r, 0, 0, 0);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t got = dst[at + 2 * i] | (dst[at + 2 * i + 1] << 8);
        if (got != want[i] && bad++ < 5) {
          FAIL_CHECK("n " << n << " offset " << off << " x=0x" << std::hex << xs[i] << " index "
                          << std::dec << i << ": got 0x" << std::hex << got << " want 0x"
                          << want[i]);
        }
      }
      CHECK(bad == 0);
      CHECK(std::all_of(dst.begin(), dst.begin() + at, [](std::uint8_t b) { return b == 0xA5; }));
      CHECK(std::all_of(dst.begin() + at + 2 * n, dst.end(),
                        [](std::uint8_t b) { return b == 0xA5; }));
    }
  }
}

TEST_CASE("vector casts of fp16 and bf16 equal native::convert (every code)", "[fast][simd]") {
  std::vector<std::uint16_t> xs;
  for (int rep = 0; rep < 4; ++rep) {
    for (std::uint32_t h = 0; h < 0x10000u; ++h) xs.push_back(static_cast<std::uint16_t>(h));
  }
  xs.push_back(0x3C00);
  const std::vector<std::size_t> odd = {3, 61, 1001, 65537};
  for (const char* name : kFormats) {
    const FloatFormat f = parse_format(name).fp;
    for (const Rounding& r : roundings({8})) {
      for (fast::ArrayInput t : {fast::ArrayInput::fp16, fast::ArrayInput::bf16}) {
        const FloatFormat& from = t == fast::ArrayInput::fp16 ? formats::fp16 : formats::bf16;
        INFO(name << " " << rounding_name(r) << " from "
                  << (t == fast::ArrayInput::fp16 ? "fp16" : "bf16"));
        REQUIRE(fast::simd_cast_supported(f, r));
        compare_all(xs, t, from, name, f, r, 5, odd);
      }
    }
  }
}

TEST_CASE("cast_to_codes takes the vector kernels and their thread split keeps the bits",
          "[fast][simd]") {
  std::mt19937 rng(7);
  std::vector<std::uint32_t> xs(300001);
  for (auto& x : xs) x = rng();
  for (const char* name : {"e4m3fn", "bf16", "e5m2"}) {
    const FloatFormat f = parse_format(name).fp;
    for (const Rounding& r : {Rounding{RoundMode::rne, 0}, Rounding{RoundMode::sr, 8}}) {
      INFO(name << " " << rounding_name(r));
      check_threads_agree(xs, f, r, 11);
    }
  }
}

TEST_CASE(
    "cast_to_codes outside the vector kernels (other modes, sr:R past 23 - M, e8m0) "
    "equals native::convert, with vector Philox words",
    "[fast][simd]") {
  std::mt19937 rng(11);
  INFO("inputs from std::mt19937 seed 11");
  std::vector<std::uint32_t> xs(100003);
  for (auto& x : xs) x = rng();
  for (std::size_t i = 0; i < 4096; ++i) xs[i] = 0x3F800000u + static_cast<std::uint32_t>(i);
  struct Case {
    const char* format;
    Rounding r;
  };
  const Case cases[] = {{"e8m0fnu", Rounding{RoundMode::sr, 24}},
                        {"e8m0fnu", Rounding{RoundMode::rna, 0}},
                        {"e4m3fnu", Rounding{RoundMode::rna, 0}},
                        {"e5m2fnu", Rounding{RoundMode::rup, 0}},
                        {"e11m4", Rounding{RoundMode::sr, 20}},
                        {"e8m3fn", Rounding{RoundMode::rto, 0, Overflow::satfinite}},
                        {"e4m3fn", Rounding{RoundMode::sr, 21}},
                        {"e4m3fn", Rounding{RoundMode::rna, 0}},
                        {"e5m2", Rounding{RoundMode::rup, 0, Overflow::satfinite}},
                        {"fp16", Rounding{RoundMode::sr, 20}},
                        {"bf16", Rounding{RoundMode::rdn, 0}},
                        {"e3m4", Rounding{RoundMode::sr, 23}}};
  for (const Case& c : cases) {
    const FloatFormat f = parse_format(c.format).fp;
    INFO(c.format << " " << rounding_name(c.r));
    CHECK_FALSE(fast::simd_cast_supported(f, c.r));
    for (simd::Isa isa : kIsas) {
      IsaLimit limit(isa);
      const std::size_t cb = f.total_bits() <= 8 ? 1 : 2;
      std::vector<std::uint8_t> got(xs.size() * cb);
      fast::cast_to_codes(xs.data(), fast::ArrayInput::fp32, xs.size(), got.data(), f, c.r, kSeed,
                          kStream, 3, 1);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const auto want = native::convert(formats::fp32, f, c.r, xs[i], word_of(c.r, 3 + i)).code;
        const std::uint32_t g = cb == 1 ? got[i] : (got[2 * i] | got[2 * i + 1] << 8);
        if (g != want && bad++ < 3) {
          FAIL_CHECK("x=0x" << std::hex << xs[i] << ": got 0x" << g << " want 0x" << want);
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE(
    "vector sr:R with chosen words (carry thresholds, 0, all ones, halves, random) equals "
    "native::convert",
    "[fast][simd]") {
  const std::uint32_t seed = 20261127;
  INFO("words and low halves from std::mt19937 seed " << seed);
  std::mt19937 rng(seed);
  std::vector<std::uint32_t> xs;
  for (std::uint32_t top = 0; top < 0x10000u; ++top) {
    for (std::uint32_t low :
         {0x0000u, 0x0001u, 0x8000u, 0xFFFFu, static_cast<std::uint32_t>(rng() & 0xFFFFu)}) {
      xs.push_back(top << 16 | low);
    }
  }
  xs.push_back(0x3F800001u);
  for (const char* name : kFormats) {
    const FloatFormat f = parse_format(name).fp;
    const int d = 23 - f.man_bits;
    for (int R : {1, 8, d}) {
      const Rounding r{RoundMode::sr, R, Overflow::none};
      INFO(name << " " << rounding_name(r));
      REQUIRE(fast::simd_cast_supported(f, r));
      const std::uint32_t mask = static_cast<std::uint32_t>(low_mask(R));
      // Weighted words: a quarter uniform, the rest 0, all ones, the halves, and the word at
      // which the top R fraction bits of a normal-range input carry (and one below it).
      std::vector<std::uint32_t> words(xs.size());
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const std::uint32_t frac = ((xs[i] & 0x7FFFFFFFu) >> (d - R)) & mask;
        const std::uint32_t pick = rng() % 16;
        words[i] = pick < 4    ? rng() & mask
                   : pick == 4 ? 0u
                   : pick == 5 ? mask
                   : pick == 6 ? (mask >> 1) + 1
                   : pick == 7 ? mask >> 1
                   : pick < 12 ? ((mask + 1) - frac) & mask
                               : ((mask + 1) - frac - 1) & mask;
      }
      std::vector<std::uint16_t> want(xs.size());
      for (std::size_t i = 0; i < xs.size(); ++i) {
        want[i] =
            static_cast<std::uint16_t>(native::convert(formats::fp32, f, r, xs[i], words[i]).code);
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
          const std::uint32_t got = cb == 1 ? dst[1 + i] : (dst[1 + 2 * i] | dst[2 + 2 * i] << 8);
          if (got != want[i] && bad++ < 5) {
            FAIL_CHECK("x=0x" << std::hex << xs[i] << " word 0x" << words[i] << ": got 0x" << got
                              << " want 0x" << want[i]);
          }
        }
        CHECK(bad == 0);
      }
    }
  }
}
