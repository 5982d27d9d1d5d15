// Philox4x32-10 (Salmon et al., SC'11, "Parallel random numbers: as easy as 1, 2, 3") for W
// consecutive elements at once, W/4 blocks per vector, the words already in element order: the
// host side of docs/SEMANTICS.md 3.2 at vector speed. Equal to native::philox_block word for word
// (tests/fast/test_cast_simd.cpp: many seeds, streams and counters, hi32 != 0 included).
//
// Layout: the four 32-bit lanes of block b are its counter (c0, c1, c2, c3) = (lo32(b), hi32(b),
// stream, 0), so as 64-bit lanes they read (b, stream). One Philox round maps them to
// (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)). PMULUDQ multiplies the even
// lanes c0 and c2 by (M0, M1) into the 64-bit lanes (lo0, hi0, lo1, hi1); reversing each group of
// four gives (hi1, lo1, hi0, lo0); the 64-bit right shift of the state by 32 gives (c1, 0, c3, 0);
// the key vector is (k0, 0, k1, 0). So a round is one multiply, one shuffle, one shift and two
// XORs for W words, with no transposition: after ten rounds lane 4j + k holds word k of block
// j, which is the word of element 4(b + j) + k.
#pragma once

#include <cstdint>

#include "sim/fast/simd.hpp"

namespace exmy::fast::simd {

template <int W>
struct PhiloxVec {
  using U32 = typename Vec<W>::u32;
  using U64 = typename Vec<W>::u64;
  static constexpr int kBlocks = W / 4;

  U32 key[10];  // round r: (k0 + r W0, 0, k1 + r W1, 0) in every group of four
  U32 mul;      // (M0, 0, M1, 0)
  U64 ctr;      // (b + j, stream) in 64-bit lanes 2j, 2j + 1: the counters of the next vector

  // The generator positioned at block `block` (element 4 * block).
  EXMY_SIMD_INLINE PhiloxVec(std::uint64_t seed, std::uint32_t stream, std::uint64_t block) {
    std::uint32_t k0 = static_cast<std::uint32_t>(seed),
                  k1 = static_cast<std::uint32_t>(seed >> 32);
    for (int r = 0; r < 10; ++r) {
      for (int l = 0; l < W; l += 4) {
        key[r][l] = k0;
        key[r][l + 1] = 0;
        key[r][l + 2] = k1;
        key[r][l + 3] = 0;
      }
      k0 += 0x9E3779B9u;  // the Weyl increments of philox4x32_10
      k1 += 0xBB67AE85u;
    }
    for (int l = 0; l < W; l += 4) {
      mul[l] = 0xD2511F53u;
      mul[l + 1] = 0;
      mul[l + 2] = 0xCD9E8D57u;
      mul[l + 3] = 0;
    }
    for (int j = 0; j < kBlocks; ++j) {
      ctr[2 * j] = block + static_cast<std::uint64_t>(j);
      ctr[2 * j + 1] = stream;
    }
  }

  // Ten rounds on one vector of counters.
  static EXMY_SIMD_INLINE U32 rounds(const PhiloxVec& g, U32 s) {
    for (int r = 0; r < 10; ++r) {
      const U64 p = mul_even_u32<W>(s, g.mul);
      s = reverse4<W>((U32)p) ^ (U32)((U64)s >> 32) ^ g.key[r];
    }
    return s;
  }

  // The words of the next W elements; advances by W/4 blocks. (The counter's 64-bit lanes 2j
  // carry (lo, hi) of the block number, so the addition carries into hi32 as Philox wants.)
  EXMY_SIMD_INLINE U32 next() {
    const U32 s = (U32)ctr;
    ctr += step();
    return rounds(*this, s);
  }

  // The words of the next U * W elements into out[0..U), with the U vectors' rounds
  // interleaved (independent chains, so the multiplier's latency overlaps).
  template <int U>
  EXMY_SIMD_INLINE void next(U32 (&out)[U]) {
    const U64 st = step();
    for (int u = 0; u < U; ++u) {
      out[u] = (U32)ctr;
      ctr += st;
    }
    for (int r = 0; r < 10; ++r) {
      for (int u = 0; u < U; ++u) {
        const U64 p = mul_even_u32<W>(out[u], mul);
        out[u] = reverse4<W>((U32)p) ^ (U32)((U64)out[u] >> 32) ^ key[r];
      }
    }
  }

 private:
  static EXMY_SIMD_INLINE U64 step() {
    U64 s{};
    for (int j = 0; j < kBlocks; ++j) s[2 * j] = kBlocks;
    return s;
  }
};

}  // namespace exmy::fast::simd
