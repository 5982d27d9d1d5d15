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
  mul_wide_u32(a, b, hi, lo);
}

// The key schedule: round r xors k0 + r W0 and k1 + r W1 (the Weyl increments). Kernels build it
// once per launch on the host and read it from their arguments, so that the round xors take the
// key from the constant bank instead of holding 20 per-thread registers (the sr cast kernels).
struct PhiloxKeys {
  std::uint32_t k0[10];
  std::uint32_t k1[10];
};

EXMY_HD PhiloxKeys philox_keys(std::uint64_t seed) {
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  PhiloxKeys k{};
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  EXMY_UNROLL
  for (int round = 0; round < 10; ++round) {
    k.k0[round] = k0;
    k.k1[round] = k1;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return k;
}

// The published multipliers.
inline constexpr std::uint32_t kPhiloxMul0 = 0xD2511F53u, kPhiloxMul1 = 0xCD9E8D57u;

// Rounds First..9 of Philox4x32-10 on the counter state after round First - 1.
template <int First>
EXMY_HD Philox4 philox_rounds(Philox4 ctr, const PhiloxKeys& k) {
  EXMY_UNROLL
  for (int round = First; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    mul_hilo32(kPhiloxMul0, ctr.w[0], hi0, lo0);
    mul_hilo32(kPhiloxMul1, ctr.w[2], hi1, lo1);
    ctr = Philox4{{hi1 ^ ctr.w[1] ^ k.k0[round], lo1, hi0 ^ ctr.w[3] ^ k.k1[round], lo0}};
  }
  return ctr;
}

// Ten rounds.
EXMY_HD Philox4 philox4x32_10(Philox4 ctr, const PhiloxKeys& k) {
  return philox_rounds<0>(ctr, k);
}

EXMY_HD Philox4 philox4x32_10(Philox4 ctr, std::uint32_t k0, std::uint32_t k1) {
  return philox4x32_10(ctr, philox_keys(k0 | (static_cast<std::uint64_t>(k1) << 32)));
}

// The four words of block b = i / 4, the key schedule of the seed given.
EXMY_HD Philox4 philox_block(const PhiloxKeys& k, std::uint32_t stream, std::uint64_t block) {
  const Philox4 ctr{
      {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), stream, 0u}};
  return philox4x32_10(ctr, k);
}

// Blocks whose indices share their high 32 bits, in one stream (the counters (lo, hi, stream, 0)
// with hi and stream fixed): the first round's product of counter word 2 (the stream) and the
// second round's product of word 0 (a function of that product, hi and the key) are the same for
// all of them. PhiloxPrefix holds them, computed once; philox_block(k, prefix, lo) then costs 18
// multiplications instead of 20 (the sr cast kernels draw eight blocks per thread and span).
struct PhiloxPrefix {
  std::uint32_t c0, c1;  // counter words 0 and 1 after round 1
  std::uint32_t hi, lo;  // round 2's product kPhiloxMul0 * c0
};

EXMY_HD PhiloxPrefix philox_prefix(const PhiloxKeys& k, std::uint32_t stream, std::uint32_t hi) {
  std::uint32_t h1, l1;
  mul_hilo32(kPhiloxMul1, stream, h1, l1);
  PhiloxPrefix p{};
  p.c0 = h1 ^ hi ^ k.k0[0];
  p.c1 = l1;
  mul_hilo32(kPhiloxMul0, p.c0, p.hi, p.lo);
  return p;
}

// The four words of the block with counter (lo, hi, stream, 0), prefix = philox_prefix(k, stream,
// hi): rounds 1 and 2 with the prefix's parts, then philox_rounds.
EXMY_HD Philox4 philox_block(const PhiloxKeys& k, const PhiloxPrefix& p, std::uint32_t lo) {
  std::uint32_t h0, l0, h1, l1;
  mul_hilo32(kPhiloxMul0, lo, h0, l0);
  const std::uint32_t c2 = h0 ^ k.k1[0];  // round 1: word 3 of the counter is 0
  mul_hilo32(kPhiloxMul1, c2, h1, l1);
  const Philox4 after2{{h1 ^ p.c1 ^ k.k0[1], l1, p.hi ^ l0 ^ k.k1[1], p.lo}};
  return philox_rounds<2>(after2, k);
}

// The four words of block b = i / 4.
EXMY_HD Philox4 philox_block(std::uint64_t seed, std::uint32_t stream, std::uint64_t block) {
  return philox_block(philox_keys(seed), stream, block);
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
