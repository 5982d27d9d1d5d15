// Shared pieces of the vector-kernel tests (tests/fast/test_cast_simd*.cpp): forcing an
// instruction set, naming a rounding, the sr words the kernels must draw, and the one comparison
// of the kernels on every instruction set against native::convert.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sim/fast/array_cast.hpp"
#include "sim/fast/cast_simd.hpp"
#include "sim/fast/simd.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"

namespace exmy::fast::testing {

namespace simd = exmy::fast::simd;

// Restores the detected instruction set when a section ends (also on a failed REQUIRE).
struct IsaLimit {
  explicit IsaLimit(simd::Isa isa) { simd::set_isa_limit(isa); }
  ~IsaLimit() { simd::clear_isa_limit(); }
};

// avx512bf16 first: fp32 -> bf16 rne (overflow none) by VCVTNEPS2BF16 where the CPU has it; avx512
// then runs the integer kernel there.
inline constexpr simd::Isa kIsas[] = {simd::Isa::avx512bf16, simd::Isa::avx512, simd::Isa::avx2,
                                      simd::Isa::sse2};

// Every fp32 top half with the low halves that decide a rounding at bit 16 (0, 1, just below, at
// and just above the tie, all ones) and one random low half from rng: every binade, subnormals,
// +-0, +-inf and NaNs with payloads, for the bf16 casts.
inline std::vector<std::uint32_t> bf16_rounding_patterns(std::mt19937& rng) {
  std::vector<std::uint32_t> xs;
  for (std::uint32_t top = 0; top < 0x10000u; ++top) {
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu,
                              static_cast<std::uint32_t>(rng() & 0xFFFFu)}) {
      xs.push_back(top << 16 | low);
    }
  }
  return xs;
}

inline std::string rounding_name(const Rounding& r) {
  std::string s = r.mode == RoundMode::rne   ? "rne"
                  : r.mode == RoundMode::rtz ? "rtz"
                                             : "sr:" + std::to_string(r.sr_bits);
  if (r.overflow == Overflow::sat) s += "+sat";
  if (r.overflow == Overflow::satfinite) s += "+satfinite";
  return s;
}

inline constexpr std::uint64_t kSeed = 0x0123456789ABCDEFull;
inline constexpr std::uint32_t kStream = 7;

// Element `index`'s R-bit word, as the kernels must draw it (docs/SEMANTICS.md 3.2).
inline std::uint32_t word_of(const Rounding& r, std::uint64_t index) {
  if (r.mode != RoundMode::sr) return 0;
  return native::sr_word(native::philox_word(kSeed, kStream, index), r.sr_bits);
}

// Code i of a little-endian code array at byte offset `off` (cb bytes per code).
inline std::uint32_t code_at(const std::vector<std::uint8_t>& dst, std::size_t off, std::size_t cb,
                             std::size_t i) {
  return cb == 1 ? dst[off + i]
                 : static_cast<std::uint32_t>(dst[off + 2 * i] | dst[off + 2 * i + 1] << 8);
}

// The kernels on every instruction set against native::convert(from, f, r, x, word) for the codes
// xs (stored as type t), element i at index first + i; the input and the codes at odd byte
// offsets, cast in pieces of the given lengths (cycled), nothing written outside the codes.
template <typename Code>
void compare_all(const std::vector<Code>& xs, ArrayInput t, const FloatFormat& from,
                 const std::string& name, const FloatFormat& f, const Rounding& r,
                 std::uint64_t first, const std::vector<std::size_t>& pieces) {
  const std::size_t n = xs.size(), es = array_input_bytes(t);
  const std::size_t cb = f.total_bits() <= 8 ? 1 : 2;
  std::vector<std::uint32_t> want(n);
  for (std::size_t i = 0; i < n; ++i) {
    want[i] =
        static_cast<std::uint32_t>(native::convert(from, f, r, xs[i], word_of(r, first + i)).code);
  }
  std::vector<std::uint8_t> src(n * es + 3);
  std::memcpy(src.data() + 3, xs.data(), n * es);
  for (simd::Isa isa : kIsas) {
    IsaLimit limit(isa);
    INFO(name << " " << rounding_name(r) << " on " << simd::isa_name(simd::active_isa())
              << " (asked " << simd::isa_name(isa) << "), first index " << first);
    std::vector<std::uint8_t> dst(n * cb + 2, 0xA5);
    std::size_t at = 0;
    for (std::size_t k = 0; at < n; ++k) {
      const std::size_t len = std::min(pieces[k % pieces.size()], n - at);
      simd_cast_to_codes(src.data() + 3 + at * es, t, len, dst.data() + 1 + at * cb, f, r, kSeed,
                         kStream, first + at);
      at += len;
    }
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t got = code_at(dst, 1, cb, i);
      if (got != want[i] && bad++ < 5) {
        FAIL_CHECK("x=0x" << std::hex << static_cast<std::uint32_t>(xs[i]) << " index 0x"
                          << first + i << " word 0x" << word_of(r, first + i) << ": got 0x" << got
                          << " want 0x" << want[i]);
      }
    }
    CHECK(bad == 0);
    CHECK(dst[0] == 0xA5);  // nothing written outside the codes
    CHECK(dst[n * cb + 1] == 0xA5);
  }
}

// cast_to_codes on one thread and on the OpenMP team give the same bytes, and those equal
// native::convert element by element (fp32 inputs xs, element i at index first + i).
inline void check_threads_agree(const std::vector<std::uint32_t>& xs, const FloatFormat& f,
                                const Rounding& r, std::uint64_t first) {
  const std::size_t cb = f.total_bits() <= 8 ? 1 : 2;
  std::vector<std::uint8_t> one(xs.size() * cb), many(xs.size() * cb);
  cast_to_codes(xs.data(), ArrayInput::fp32, xs.size(), one.data(), f, r, kSeed, kStream, first, 1);
  cast_to_codes(xs.data(), ArrayInput::fp32, xs.size(), many.data(), f, r, kSeed, kStream, first,
                0);
  CHECK(one == many);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const auto want = native::convert(formats::fp32, f, r, xs[i], word_of(r, first + i)).code;
    if (code_at(one, 0, cb, i) != want) ++bad;
  }
  CHECK(bad == 0);
}

}  // namespace exmy::fast::testing
