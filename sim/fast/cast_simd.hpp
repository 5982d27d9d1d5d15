// The vectorised host cast (issue 15): native::fast_cast_fp32_fixed (sim/native/fast_cast.hpp,
// the GPU kernels' mode-fixed integer cast) evaluated on W lanes at once, for fp32, fp16 and bf16
// inputs into every format of native::fast_fixed_supported (every float format of at most 16 bits
// but signed ones without subnormals) under rne, rtz and sr:R (R <= 23 - M), every overflow
// policy, by three kernels:
//   - fast: formats of native::fast_cast_supported (signed, subnormals, 1 <= M, range inside
//     fp32's: e4m3fn, e5m2, e4m3fnuz, e5m2fnuz, e2m1fn, e3m2fn, e2m3fn, bf16, fp16, e5m3, e8m3,
//     ...), every input class inline;
//   - e8m0: e8m0fnu (native::fast_cast_fp32_e8m0: rne, rtz, sr:R with R <= 23);
//   - lean: the others (ranges past fp32's: e8m3fn, e8m3fnuz, e9m6, e11m4; unsigned: e4m3fnu,
//     e5m2fnu; M = 0 without subnormals: e4m0fnu, e3m0fnu), native::fast_cast_fp32_lean on every
//     lane (cbias in the code domain, par_or, below_mask, the sign shape as lane masks), and the
//     lanes outside its domain (inf, NaN, fp32 subnormals into formats reaching below fp32's
//     range, zero into a format without zero) redone by the scalar fast_cast_fp32_fixed, which
//     calls the native engine for the last two. sr:R draws the word of
// element i from the vector Philox of sim/fast/philox_simd.hpp: word i % 4 of block i / 4 with
// counter (lo32(i/4), hi32(i/4), stream, 0) and key (lo32(seed), hi32(seed)), the top R bits
// (docs/SEMANTICS.md 3.2), so any range may be cast in any number of pieces.
//
// Every call equals native::convert(from, f, r, x, word) element by element: the lane function is
// the scalar function's operations, lane-wise (cast_simd.cpp says which line is which), and
// tests/fast/test_cast_simd.cpp compares every kernel (AVX-512, AVX2, SSE2, forced through
// simd::set_isa_limit) with native::convert on every fp32 top half x boundary low halves, and
// tests/fast/test_cast_simd_generic.cpp does the same for the lean kernel's formats.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/fast/array_cast.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::fast {

// True when simd_cast_to_codes serves f under r.
bool simd_cast_supported(const FloatFormat& f, const Rounding& r);

// codes[i] = native::convert(t, f, r, in[i], word of element first_index + i).code, one byte
// each for f of at most 8 bits, two (little-endian) for 9..16. Requires simd_cast_supported.
void simd_cast_to_codes(const void* in, ArrayInput t, std::size_t n, void* codes,
                        const FloatFormat& f, const Rounding& r, std::uint64_t seed,
                        std::uint32_t stream, std::uint64_t first_index);

// simd_cast_to_codes with the R-bit words of sr:R given (words[i] for element i, as `rand` of
// native::convert) instead of drawn from Philox: for tests that choose the words (the carry
// thresholds) and for callers with words of their own. Ignored for rne and rtz.
void simd_cast_to_codes_with_words(const void* in, ArrayInput t, std::size_t n, void* codes,
                                   const FloatFormat& f, const Rounding& r,
                                   const std::uint32_t* words);

// out[k] = native::philox_word(seed, stream, first_index + k) for k in [0, n), vectorised.
void philox_words(std::uint64_t seed, std::uint32_t stream, std::uint64_t first_index,
                  std::size_t n, std::uint32_t* out);

// fn(k, native::philox_word(seed, stream, first_index + k)) for k in [0, n), in order: the words
// drawn by philox_words a buffer at a time (native::for_each_philox_word at vector speed), for the
// scalar paths of stochastic rounding.
template <typename Fn>
void for_each_philox_word(std::uint64_t seed, std::uint32_t stream, std::uint64_t first_index,
                          std::size_t n, Fn fn) {
  constexpr std::size_t kBuffer = 1024;
  std::uint32_t words[kBuffer];
  for (std::size_t at = 0; at < n; at += kBuffer) {
    const std::size_t m = n - at < kBuffer ? n - at : kBuffer;
    philox_words(seed, stream, first_index + at, m, words);
    for (std::size_t i = 0; i < m; ++i) fn(at + i, words[i]);
  }
}

}  // namespace exmy::fast
