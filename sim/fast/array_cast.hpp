// Host fast path for element-wise array casts (the CLI's `exmy cast --in/--out`): fp32, fp16 or
// bf16 inputs into float formats of at most 16 bits, in every rounding mode. fp16 and bf16 widen
// exactly to fp32 (as the GPU kernels do), and the fp32 codes go through
//   - the vector kernels of sim/fast/cast_simd.hpp (AVX-512 / AVX2 / SSE2, chosen at run time)
//     for rne, rtz and sr:R (R <= 23 - M) into every format the mode-fixed fast cast serves
//     (native::fast_fixed_supported: e4m3fn, e5m2, the fnuz formats, e2m1fn, e3m2fn, e2m3fn,
//     bf16, fp16, e5m3, e8m0fnu, e4m3fnu, e8m3fn, e11m4, ...): the common case;
//   - the table / mode-fixed paths of sim/fast/fp32_cast_table.hpp for the other <= 8-bit cases;
//   - the 32-bit fast cast of sim/native/fast_cast.hpp (fast_cast_fp32 for the other modes) for
//     the 9..16-bit formats it supports;
//   - native::convert otherwise.
// Every one of these is native::convert(from, f, r, x, word) element by element (the proofs and
// checks are cited in those files; tests/cli compares whole files against the per-element native
// engine). sr:R takes the word of element i from Philox(seed, stream, first_index + i)
// (docs/SEMANTICS.md 3.2), so a range may be cast in any number of pieces, by any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::fast {

// The element type of an input array (little-endian bit patterns).
enum class ArrayInput : std::uint8_t { fp32, fp16, bf16 };

// Bytes per input element.
std::size_t array_input_bytes(ArrayInput t);

// The exact fp32 bit pattern of element i of `in` (fp16 and bf16 widen exactly).
std::uint32_t widen_to_fp32(const void* in, ArrayInput t, std::size_t i);

// True when cast_to_codes serves f: a float format of at most 16 bits.
bool array_cast_supported(const FloatFormat& f);

// codes[i] = code of element i of `in` in f under r: 1 byte each for f of at most 8 bits, 2 bytes
// (little-endian) for 9..16 bits. `threads`: 1 runs on the calling thread (the default, and what
// the single-thread benchmarks measure); 0 takes OpenMP's team (OMP_NUM_THREADS, else every
// core); N > 1 takes N threads. The codes are the same for every count (fixed pieces of 2^16
// elements, and every code is a function of its element and index).
void cast_to_codes(const void* in, ArrayInput t, std::size_t n, void* codes, const FloatFormat& f,
                   const Rounding& r, std::uint64_t seed, std::uint32_t stream,
                   std::uint64_t first_index, int threads = 1);

// The fp32 value of every code of f (at most 16 bits): native::to_float(f, c) at index c.
const std::vector<float>& decode_table(const FloatFormat& f);

}  // namespace exmy::fast
