// Counter-based random bits: Philox4x32-10 (Salmon et al., SC'11, "Parallel random numbers: as
// easy as 1, 2, 3"), the generator of cuRAND and of PyTorch's CUDA RNG. The random word of element
// i is a pure function of (seed, stream, i), so CPU and GPU agree for any launch shape.
//
// Mapping (docs/SEMANTICS.md 3.2): counter = (lo32(i/4), hi32(i/4), stream, 0),
// key = (lo32(seed), hi32(seed)); element i takes word i%4 of that block.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/native/hd.hpp"
#include "sim/native/specialize/platform.hpp"

namespace exmy::native {

struct Philox4 {
  std::uint32_t w[4];
};

EXMY_HD void mul_hilo32(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  hi = mul_hi_u32(a, b);
  lo = a * b;
}

// Ten rounds with the published multipliers and Weyl key increments.
EXMY_HD Philox4 philox4x32_10(Philox4 ctr, std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  EXMY_UNROLL
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    mul_hilo32(kMul0, ctr.w[0], hi0, lo0);
    mul_hilo32(kMul1, ctr.w[2], hi1, lo1);
    ctr = Philox4{{hi1 ^ ctr.w[1] ^ k0, lo1, hi0 ^ ctr.w[3] ^ k1, lo0}};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return ctr;
}

// The four words of block b = i / 4.
EXMY_HD Philox4 philox_block(std::uint64_t seed, std::uint32_t stream, std::uint64_t block) {
  const Philox4 ctr{{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
                     stream, 0u}};
  return philox4x32_10(ctr, static_cast<std::uint32_t>(seed),
                       static_cast<std::uint32_t>(seed >> 32));
}

// The 32-bit random word of element i.
EXMY_HD std::uint32_t philox_word(std::uint64_t seed, std::uint32_t stream, std::uint64_t i) {
  return philox_block(seed, stream, i >> 2).w[i & 3];
}

// fn(k, word of element first + k) for k in [0, n): one Philox block serves four consecutive
// element indices (a run may start and end anywhere inside a block). The host loops of stochastic
// rounding over arrays use this; kernels draw per vector instead.
template <typename Fn>
EXMY_HD void for_each_philox_word(std::uint64_t seed, std::uint32_t stream, std::uint64_t first,
                                  std::size_t n, Fn fn) {
  std::size_t k = 0;
  while (k < n) {
    const std::uint64_t g = first + k;
    const Philox4 block = philox_block(seed, stream, g >> 2);
    for (std::uint64_t j = g & 3; j < 4 && k < n; ++j, ++k) fn(k, block.w[j]);
  }
}

// The R-bit word that stochastic rounding adds: the top R bits of element i's word.
EXMY_HD std::uint32_t sr_word(std::uint32_t word, int R) {
  return R >= 32 ? word : word >> (32 - R);
}

}  // namespace exmy::native
