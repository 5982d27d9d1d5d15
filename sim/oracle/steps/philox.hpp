// The step oracle's own Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers:
// as easy as 1, 2, 3", SC'11), written from the paper's round function and the Random123
// constants, and pinned by Random123's known-answer vectors (tests/oracle/steps/test_real.cpp).
// It does not include the native engine's generator: the split-format :sr steps draw their words
// here, so a wrong counter or key mapping in either engine shows as a mismatch.
#pragma once

#include <array>
#include <cstdint>

namespace exmy::oracle::steps {

// Ten rounds of Philox4x32 on counter `ctr` with key (k0, k1).
std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> ctr, std::uint32_t k0,
                                           std::uint32_t k1);

// Section 3.2's word of element i in stream s under a 64-bit seed: block counter
// (lo32(i/4), hi32(i/4), s, 0), key (lo32(seed), hi32(seed)), word i mod 4.
std::uint32_t philox_element_word(std::uint64_t seed, std::uint32_t stream, std::uint64_t i);

}  // namespace exmy::oracle::steps
