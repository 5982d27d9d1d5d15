// The order-free digest of an instruction's results over all 2^32 inputs: the sum mod 2^64 of
// splitmix64((x << 32) | result(x)). The probe records the hardware's digest; a CPU run of the
// model must reproduce it (tests/sfu/test_sfu_models.cpp, hidden case [.exhaustive]).
#pragma once

#include <cstdint>

#include "sim/native/hd.hpp"

namespace exmy::native {

EXMY_HD std::uint64_t sfu_digest_term(std::uint32_t x, std::uint32_t r) {
  std::uint64_t z = (static_cast<std::uint64_t>(x) << 32) | r;
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace exmy::native
