// The floor of an sr:R cast under docs/SEMANTICS.md 3.2 on the device at hand, for the benchmarks
// (issue 15's stochastic-rounding rows). The kernels draw exactly the Philox words an sr:R cast of
// n elements draws (one Philox4x32-10 block per four elements, counter (lo32(i/4), hi32(i/4),
// stream, 0), eight-byte key = seed) and, depending on `what`, move exactly its bytes (16-byte
// loads, one byte out per element), but round nothing: code = (input bits >> (width - 8)) ^ (top
// eight bits of the word). `philox_only` is the multiplier work every sr cast has to do under
// SEMANTICS 3.2; `philox_io` and `io_only` are plain grid-stride kernels, a reference for that
// work with the cast's traffic, not a bound (the cast kernels' pipelined loads move the same bytes
// faster than `io_only`). The benchmark times them beside the casts, in the same process.
//
// Device pointers; asynchronous on `stream`. Not a cast: the codes are meaningless.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/cast/cast.hpp"

namespace exmy::gpu {

enum class SrFloor : std::uint8_t {
  philox_only,  // the words of n elements, xor-folded: one uint32 per thread to `out`, no input
  philox_io,    // the words, the input read and one byte per element written
  io_only,      // the input read and one byte per element written, no words
};

// `out`: n bytes (philox_only writes at most that: one uint32 per 16-byte input vector). n a
// multiple of the input's 16-byte vector (4 fp32 or 8 bf16 / fp16 elements); InputError
// otherwise.
void sr_floor(const void* in, CastInput in_type, std::size_t n, std::uint8_t* out,
              std::uint64_t seed, SrFloor what, CUstream_st* stream = nullptr);

}  // namespace exmy::gpu
