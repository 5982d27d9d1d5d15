// Philox4x32-10 for the step oracle (philox.hpp).
#include "sim/oracle/steps/philox.hpp"

namespace exmy::oracle::steps {

std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> x, std::uint32_t k0,
                                           std::uint32_t k1) {
  // Random123 philox.h: PHILOX_M4x32_0/1 multipliers, PHILOX_W32_0/1 (golden ratio, sqrt(3) - 1)
  // key increments. One round: (hi0, lo0) = M0 * x0, (hi1, lo1) = M1 * x2;
  // x' = (hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0); the key is bumped after each round.
  const std::uint64_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = m0 * x[0];
    const std::uint64_t p1 = m1 * x[2];
    x = {static_cast<std::uint32_t>(p1 >> 32) ^ x[1] ^ k0, static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ x[3] ^ k1, static_cast<std::uint32_t>(p0)};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return x;
}

std::uint32_t philox_element_word(std::uint64_t seed, std::uint32_t stream, std::uint64_t i) {
  const std::uint64_t block = i / 4;
  const auto w = philox4x32_10(
      {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), stream, 0u},
      static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  return w[i % 4];
}

}  // namespace exmy::oracle::steps
