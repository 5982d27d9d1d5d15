// Packed sub-byte codes: two 4-bit codes per byte, element 2i in the low nibble and element 2i + 1
// in the high nibble (PyTorch float4_e2m1fn_x2, torchao pack_uint4). docs/SEMANTICS.md 7.10.
// An odd count leaves the last byte's high nibble zero. Host and device.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/native/hd.hpp"

namespace exmy::native {

// Bytes holding n packed 4-bit codes.
EXMY_HD constexpr std::size_t packed4_bytes(std::size_t n) {
  return (n + 1) / 2;
}

// The byte of codes lo (element 2i) and hi (element 2i + 1); only their low 4 bits are kept.
EXMY_HD constexpr std::uint8_t pack4_pair(std::uint8_t lo, std::uint8_t hi) {
  return static_cast<std::uint8_t>((lo & 0x0Fu) | ((hi & 0x0Fu) << 4));
}

// Element i of a packed array.
EXMY_HD constexpr std::uint8_t unpack4_at(const std::uint8_t* packed, std::size_t i) {
  const std::uint8_t b = packed[i >> 1];
  return static_cast<std::uint8_t>((i & 1) ? (b >> 4) : (b & 0x0Fu));
}

// packed[0 .. packed4_bytes(n)) <- codes[0 .. n).
// packed may equal codes (in place): byte j is written after codes 2j and 2j + 1 are read, and
// no later read is below 2j + 2 > j.
inline void pack4(const std::uint8_t* codes, std::size_t n, std::uint8_t* packed) {
  for (std::size_t j = 0; j < n / 2; ++j) packed[j] = pack4_pair(codes[2 * j], codes[2 * j + 1]);
  if (n & 1) packed[n / 2] = pack4_pair(codes[n - 1], 0);
}

// codes[0 .. n) <- packed.
inline void unpack4(const std::uint8_t* packed, std::size_t n, std::uint8_t* codes) {
  for (std::size_t i = 0; i < n; ++i) codes[i] = unpack4_at(packed, i);
}

}  // namespace exmy::native
