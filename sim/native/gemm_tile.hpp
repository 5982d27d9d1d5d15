// The fused k-group (hw) model of sim/native/gemm_dot.hpp in the form the tiled GPU kernel
// (gpu/gemm/gemm_tiled.cu) computes it: operands encoded once as small integers, a group's
// exponent maximum and aligned sum done as integer arithmetic over a register block of outputs.
// Everything here is __host__ __device__; tests/native/test_gemm_tile.cpp runs it on the CPU
// against dot_model_fp32 and tests/gpu/gemm_layer_test.cpp runs the kernel against the CPU bytes.
//
// Why it is the same function, term for term (docs/SEMANTICS.md 15.2, dot_fused_group):
// - A finite nonzero operand value x is m 2^(e - 23) (dot_sig: m < 2^24, e >= emin). When every
//   m of an operand has its low 24 - p bits zero (the encoder checks it: p is the operand's
//   precision as found in the data), m = S 2^(24 - p) with the integer S < 2^p.
// - A product's term in dot_fused_group is trunc(m_a m_b 64 2^(frac + e_a + e_b - E - 52)) =
//   floor(S_a S_b 2^(L - d)) with L = frac + 2 - p_a - p_b and d = E - e_a - e_b >= 0, E the
//   group's exponent maximum. With L >= 0 that is (S_a 2^L S_b) >> d, a right shift of an exact
//   integer (shift amounts of 32 and more give 0, as the reference's r >= 64 does: the integer is
//   below 2^31).
// - Signs: a negative term is added as ~T = -T - 1 and the group's count of negative products
//   (a popcount of the two sign masks) is added back, so the int32 sum is the reference's sum
//   exactly whenever k_group (2^p_a - 1)(2^p_b - 1) 2^L < 2^31 (checked on the host;
//   two's-complement wrap-around in between cancels).
// - Zero elements carry S = 0 and the exponent kTileZeroExp, so their products add 0 and never
//   reach the maximum; a group with no nonzero product and c = +0 gives +0, as the reference's
//   all-zero case does for c = +0. The reference's other zero-sign cases (c = -0) and the
//   specials (NaN, infinities; an accumulator that became infinite) are not computed here: the
//   kernel flags such an output and the generic kernel recomputes it with dot_model_fp32.
// - The incoming accumulator's term, the normalisation and every fp32 addition between groups,
//   chunks and split-K parts are the reference's own functions (dot_sig, dot_normalise, rn_add)
//   in the reference's order (tile_unit_end mirrors dot_part and dot_model_fp32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/native/gemm_dot.hpp"

namespace exmy::native {

// Exponent of a zero element (any two of them and any real exponent stay inside int16).
inline constexpr int kTileZeroExp = -8192;
// Real operand exponents the encoding takes (the encoder reports others: generic path).
inline constexpr int kTileExpLo = -2048, kTileExpHi = 2047;
// A group maximum below this had no nonzero product (a zero product's exponent sum is at most
// kTileZeroExp + kTileExpHi).
inline constexpr int kTileNoProduct = -4096;

// One encoded operand element in 32 bits: bits 0-15 the exponent (int16), 16-30 S, 31 the sign.
EXMY_HD std::uint32_t tile_pack(std::uint32_t s, int e, bool neg) {
  return (static_cast<std::uint32_t>(e) & 0xFFFFu) | (s << 16) | (neg ? 0x80000000u : 0u);
}
EXMY_HD int tile_exp(std::uint32_t w) {
  return static_cast<int>(static_cast<std::int16_t>(w & 0xFFFFu));
}
EXMY_HD std::uint32_t tile_sig(std::uint32_t w) {
  return (w >> 16) & 0x7FFFu;
}
EXMY_HD bool tile_neg(std::uint32_t w) {
  return (w >> 31) != 0;
}

// What the encoder learns of an operand's elements (finite ones; NaN and infinities are marked
// per row and encoded as zeros).
struct TileStats {
  std::uint32_t or_m = 0;  // OR of the significands m of the nonzero elements
  int e_lo = 1 << 20, e_hi = -(1 << 20);
};
EXMY_HD bool tile_special(double x) {
  return dot_is_nan(x) || dot_is_inf(x);
}
// The precision p an OR of significands needs: S = m >> (24 - p) is exact for every element.
EXMY_HD int tile_precision(std::uint32_t or_m) {
  if (or_m == 0) return 1;
  int tz = 0;
  while (((or_m >> tz) & 1u) == 0) ++tz;
  return 24 - tz;
}
// The encoded element of a finite value x of an operand with minimum exponent emin and
// precision p (every nonzero m a multiple of 2^(24 - p)).
EXMY_HD std::uint32_t tile_encode(double x, int emin, int p) {
  const bool neg = dot_sign(x);
  if (dot_is_zero(x) || tile_special(x)) return tile_pack(0, kTileZeroExp, neg);
  const DotSig s = dot_sig(x, emin);
  return tile_pack(static_cast<std::uint32_t>(s.m >> (24 - p)), s.e, neg);
}

// L and the int32 bound (see the top of the file); false: this GEMM takes the generic path.
EXMY_HD bool tile_shift(int frac, int p_a, int p_b, int k_group, int* L) {
  const int l = frac + 2 - p_a - p_b;
  if (l < 0 || p_a > 15 || p_b > 15) return false;
  const std::uint64_t maxt = ((std::uint64_t{1} << p_a) - 1) * ((std::uint64_t{1} << p_b) - 1);
  if (l > 40 || (maxt << l) * static_cast<std::uint64_t>(k_group) >= (std::uint64_t{1} << 31)) {
    return false;
  }
  *L = l;
  return true;
}

// A product's term magnitude (S_a 2^L S_b) >> d, d >= 0 (>= 32: 0).
EXMY_HD std::uint32_t tile_term(std::uint32_t sa_shifted, std::uint32_t sb, int d) {
  const std::uint32_t p = sa_shifted * sb;
  return d >= 32 ? 0u : p >> d;
}

// The fp32 value of an encoded element of precision p: +-S 2^(e - p + 1), the operand's value
// itself (exact: the host takes this form only when every value's last bit is at least 2^-149
// and below 2^128).
EXMY_HD float tile_value(std::uint32_t w, int p) {
  const std::uint32_t S = tile_sig(w);
  const bool neg = tile_neg(w);
  if (S == 0) return neg ? -0.0f : 0.0f;
  const int e = tile_exp(w) - p + 1;
  const float fs = static_cast<float>(S);
  const float v = e >= -126
                      ? rn_mul(fs, f32_from_bits(static_cast<std::uint32_t>(e + 127) << 23))
                      : rn_mul(rn_mul(fs, f32_from_bits(static_cast<std::uint32_t>(e + 191) << 23)),
                               f32_from_bits(0x1F800000u));  // 2^-64
  return neg ? -v : v;
}

// The fp32 form of the aligned sum (FP8-like models: the kernel's float pass): with s = 2^(frac
// - E) a product's term is trunc(a b s) (dot_fused_group's integer: the product's value times
// 2^(frac - E), truncated). a b is exact in fp32 when p_a + p_b <= 24 and its last bit is at
// least 2^-149; |a b s| < 2^(frac + 2) <= 2^23, so fma_rz(a b, s, +-2^23) (the sign of a b) is
// +-(2^23 + trunc(|a b s|)) exactly and subtracting +-2^23 leaves the term; the group's terms
// and their sum are integers below 2^24 (k_group 2^(frac + 2) <= 2^24): exact fp32 additions.
// e_lo, e_hi: the operands' exponent range (dot_sig's e of their nonzero elements). Also:
// 2^(frac - E) must be a normal fp32 value for every E a group with a nonzero product has (E
// >= e_lo_a + e_lo_b), and the values' last bits (e_lo - p + 1) and the products' at least 2^-149.
EXMY_HD bool tile_float_ok(int frac, int p_a, int p_b, int k_group, int e_lo_a, int e_hi_a,
                           int e_lo_b, int e_hi_b) {
  const int lsb_a = e_lo_a - p_a + 1, lsb_b = e_lo_b - p_b + 1;
  return frac <= 21 && (static_cast<std::uint64_t>(k_group) << (frac + 2)) <= (1u << 24) &&
         p_a + p_b <= 24 && lsb_a >= -149 && lsb_b >= -149 && lsb_a + lsb_b >= -149 &&
         e_hi_a + e_hi_b + 2 < 128 && e_hi_a < 127 && e_hi_b < 127 && e_lo_a + e_lo_b >= frac - 126;
}
// 2^(frac - E) for the float pass. A group without nonzero products (E below kTileNoProduct, or
// only the accumulator's exponent below e_lo_a + e_lo_b) multiplies zeros only: any finite scale
// (1; at most 2^126) gives their terms 0.
EXMY_HD float tile_float_scale(int frac, int E) {
  int x = E < kTileNoProduct ? 0 : frac - E;
  if (x > 126) x = 126;
  return f32_from_bits(static_cast<std::uint32_t>(x + 127) << 23);
}

// The exponent of the incoming accumulator c for the group maximum (c = 0: none).
EXMY_HD int tile_c_exp(float c) {
  const std::uint32_t b = f32_bits(c);
  if ((b & 0x7FFFFFFFu) == 0) return -32768;
  const int be = static_cast<int>((b >> 23) & 0xFFu);  // dot_sig(c, -126).e, from the bits
  return be != 0 ? be - 127 : -126;
}

// Whether the fast path computes a group with incoming accumulator c: finite and not -0 (the
// reference's all-zero sign rule needs every product's sign then; the generic kernel runs it).
EXMY_HD bool tile_c_ok(float c) {
  const std::uint32_t b = f32_bits(c);
  return b != 0x80000000u && (b & 0x7F800000u) != 0x7F800000u;
}

// The end of a group: c the incoming accumulator (tile_c_ok), E = max(group's product maximum,
// tile_c_exp(c)), sum the exact int32 sum of the products' terms. dot_fused_group's tail.
EXMY_HD float tile_group_end(float c, int E, std::int32_t sum, int frac, int inter, bool rne) {
  if (E < kTileNoProduct) return 0.0f;  // no nonzero product and c = +0
  std::int64_t s = sum;
  const std::uint32_t cb = f32_bits(c);
  if ((cb & 0x7FFFFFFFu) != 0) {
    const DotSig sc = dot_sig(static_cast<double>(c), -126);
    const int r = 46 - (frac + sc.e - E);
    const std::uint64_t t = r >= 64 ? 0 : (sc.m << 23) >> r;
    s += (cb >> 31) != 0 ? -static_cast<std::int64_t>(t) : static_cast<std::int64_t>(t);
  }
  if (s == 0) return 0.0f;
  return dot_normalise(s, E - frac, inter, rne);
}

// Bits of x (32 - leading zeros; 0 for 0).
EXMY_HD int tile_bitlen(std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  return 32 - __clz(static_cast<int>(x));
#else
  return x == 0 ? 0 : 32 - __builtin_clz(x);
#endif
}

// x >> s and x << s for every amount s, 0 from 32 on (a negative int passed as s is a large
// amount): on the device one clamped funnel shift (SHF), no comparison, no branch.
EXMY_HD std::uint32_t tile_shr(std::uint32_t x, std::uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_rc(x, 0u, s);
#else
  return s >= 32 ? 0u : x >> s;
#endif
}
EXMY_HD std::uint32_t tile_shl(std::uint32_t x, std::uint32_t s) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_lc(0u, x, s);
#else
  return s >= 32 ? 0u : x << s;
#endif
}

// tile_group_end in 32-bit integer and fp32 arithmetic (the kernel's form; frac <= 25, checked
// by tiled_model_ok), written without branches: every case is computed and the result
// selected, so that the kernel's 16 outputs of a thread run their tails interleaved (the
// branchy form ran them one after another, one dependent chain at a time, and at k_group 16
// the tails took more time than the products: issue 37). Equal to tile_group_end for every
// input (tests/native/test_gemm_tile.cpp compares them, boundary tables and random):
// - the incoming accumulator's term is trunc(m_c 2^(e_c - 23 + frac - E)) = (4 m_c) >> (25 -
//   frac + E - e_c), an exact right shift (E >= e_c, frac <= 25; 4 m_c < 2^26; c = +0: m_c = 0);
//   so |s| < 2^31 + 2^26 fits a uint32 magnitude;
// - the normalisation is dot_normalise's with 32-bit shifts: a right shift of 1..31 rounds to
//   nearest even by its remainder (rem + lsb > half), 32 rounds up to 1 exactly when the
//   magnitude exceeds 2^31 and rne is set, 33 and more give 0; a shift <= 0 is exact;
// - n < 2^25 is an exact fp32 value and n 2^q an exact product, or infinite from 2^128 on (an
//   fp32 product rounds to infinity there; q > 127 as 2^127 then 2); below 2^-126 the
//   reference's two steps, n 2^(q + 64) then 2^-64; the sign rides on the second factor (round
//   to nearest is symmetric), which also gives n = 0 its signed zero.
EXMY_HD float tile_group_end_fast(float c, int E, std::int32_t sum, int frac, int inter, bool rne) {
  const std::uint32_t cb = f32_bits(c);
  const std::uint32_t be = (cb >> 23) & 0xFFu;
  const std::uint32_t m = (cb & 0x7FFFFFu) | (be != 0 ? 0x800000u : 0u);
  const int ec = (be != 0 ? static_cast<int>(be) : 1) - 127;
  const std::uint32_t t = tile_shr(m << 2, static_cast<std::uint32_t>(25 - frac + E - ec));
  const std::int64_t st = (cb >> 31) != 0 ? -static_cast<std::int64_t>(t) : std::int64_t{t};
  const std::int64_t s = std::int64_t{sum} + st;
  const bool neg = s < 0;
  const std::uint32_t mag = static_cast<std::uint32_t>(neg ? -s : s);
  const int scale = E - frac;
  const int e1 = tile_bitlen(mag) - 1 + scale;
  const int q = (e1 < -126 ? -126 : e1) - inter, shift = q - scale;
  const auto us = static_cast<std::uint32_t>(shift);
  const std::uint32_t nr = tile_shr(mag, us);
  const std::uint32_t rem = mag & ~tile_shl(0xFFFFFFFFu, us);
  const std::uint32_t half = tile_shl(1u, us - 1u);
  const bool up = rne && shift <= 32 && rem + (nr & 1u) > half;
  const std::uint32_t n =
      shift > 0 ? nr + (up ? 1u : 0u) : tile_shl(mag, static_cast<std::uint32_t>(-shift));
  const bool lo = q<-126, hi = q> 127;
  const int qa = lo ? q + 64 : hi ? 127 : q;
  const float f1 = f32_from_bits(static_cast<std::uint32_t>(qa + 127) << 23);
  const float f2 = f32_from_bits((lo   ? 0x1F800000u
                                  : hi ? 0x40000000u
                                       : 0x3F800000u) |
                                 (neg ? 0x80000000u : 0u));  // 2^-64, 2 or 1, signed
  const float r = rn_mul(rn_mul(static_cast<float>(n), f1), f2);
  return E < kTileNoProduct ? 0.0f : r;
}

// The fp32 state of one output between groups: c the unit's accumulator (a promotion chunk, or
// a split-K part without chunks, from +0), pt the part's chunk chain, tot the parts' chain.
struct TileChain {
  float c = 0.0f, pt = 0.0f, tot = 0.0f;
};
// Group-end flags of the unit layout (host: tile_layout in gpu/gemm/gemm_tiled.cu).
inline constexpr std::uint8_t kTileUnitEnd = 1, kTilePartEnd = 2;
// A unit (chunk, or part) ends: dot_part's chunk chain (chunked: rn_add from +0; otherwise the
// part is the unit), and at a part's end dot_model_fp32's chain over parts (split: split_k > 1;
// otherwise the GEMM is that one part).
EXMY_HD void tile_unit_end(TileChain& s, bool part_end, bool chunked, bool split) {
  s.pt = chunked ? rn_add(s.pt, s.c) : s.c;
  s.c = 0.0f;
  if (part_end && split) {
    s.tot = rn_add(s.tot, s.pt);
    s.pt = 0.0f;
  }
}
EXMY_HD float tile_result(const TileChain& s, bool split) {
  return split ? s.tot : s.pt;
}

// The unit layout of a model at K (host): groups of G k from k = 0 (ng = ceil(K / G)),
// gflags[g] kTileUnitEnd where a unit (a promotion chunk, or a split-K part without chunks) ends
// and kTilePartEnd where a part ends; per unit u its first group ustart[u] (ustart[units] = ng)
// and whether it ends a part (uflags[u]). The units are dot_model_fp32's: the nonempty parts of
// dot_part_start, each cut into chunks of m.chunk k from its start. False (the generic path)
// when a unit does not start at a multiple of G (its groups would not be the aligned ones) or
// a k-tile residue would move the groups (dot_chunk with ktile).
inline bool tile_layout(std::size_t K, const DotModel& m, int G, std::vector<std::uint8_t>* gflags,
                        std::vector<std::uint8_t>* uflags, std::vector<std::uint32_t>* ustart) {
  const std::size_t g = static_cast<std::size_t>(G), ng = (K + g - 1) / g;
  gflags->assign(ng, 0);
  uflags->clear();
  ustart->clear();
  if (K == 0) return false;
  std::vector<std::size_t> bounds{0};
  if (m.split_k > 1) {
    for (std::size_t p = 0; p < static_cast<std::size_t>(m.split_k) &&
                            dot_part_start(p, K, m) < dot_part_start(p + 1, K, m);
         ++p) {
      bounds.push_back(dot_part_start(p + 1, K, m));
    }
  } else {
    bounds.push_back(K);
  }
  for (std::size_t p = 0; p + 1 < bounds.size(); ++p) {
    const std::size_t k0 = bounds[p], k1 = bounds[p + 1];
    const std::size_t len = m.chunk > 0 ? static_cast<std::size_t>(m.chunk) : k1 - k0;
    for (std::size_t c = k0; c < k1; c += len) {
      const std::size_t e = c + len < k1 ? c + len : k1;
      if (c % g != 0) return false;
      if (m.ktile > 0 && (e - c) % static_cast<std::size_t>(m.ktile) != 0) return false;
      ustart->push_back(static_cast<std::uint32_t>(c / g));
      const std::size_t last = (e + g - 1) / g - 1;
      (*gflags)[last] |= kTileUnitEnd;
      uflags->push_back(e == k1 ? kTilePartEnd : 0);
      if (e == k1) (*gflags)[last] |= kTilePartEnd;
    }
  }
  ustart->push_back(static_cast<std::uint32_t>(ng));
  return true;
}

// The value dot_model_fp32 gives for one output, computed the way the tiled kernel does (the
// CPU check of this file's algebra, tests/native/test_gemm_tile.cpp): a (sa) and b (sb) the
// encoded elements of the output's row and column over the padded K (ng groups of G),
// flags[g] the group-end flags. Returns false where the kernel would flag the output.
EXMY_HD bool tile_dot(const std::uint32_t* a, std::size_t sa, const std::uint32_t* b,
                      std::size_t sb, std::size_t ng, int G, const std::uint8_t* flags, int L,
                      const DotModel& m, float* out) {
  TileChain s;
  const bool chunked = m.chunk > 0, split = m.split_k > 1;
  for (std::size_t g = 0; g < ng; ++g) {
    if (!tile_c_ok(s.c)) return false;
    int E = tile_c_exp(s.c);
    for (int k = 0; k < G; ++k) {
      const std::size_t kk = g * G + k;
      const int e = tile_exp(a[kk * sa]) + tile_exp(b[kk * sb]);
      if (e > E) E = e;
    }
    std::uint32_t sum = 0, negs = 0;
    for (int k = 0; k < G; ++k) {
      const std::size_t kk = g * G + k;
      const std::uint32_t wa = a[kk * sa], wb = b[kk * sb];
      const int d = E - tile_exp(wa) - tile_exp(wb);
      const std::uint32_t t = tile_term(tile_sig(wa) << L, tile_sig(wb), d);
      const bool neg = tile_neg(wa) != tile_neg(wb);
      sum += neg ? ~t : t;
      negs += neg ? 1u : 0u;
    }
    s.c = tile_group_end(s.c, E, static_cast<std::int32_t>(sum + negs), m.frac_bits, m.inter_bits,
                         m.inter_rne);
    if (!tile_c_ok(s.c)) return false;
    if ((flags[g] & kTileUnitEnd) != 0) {
      tile_unit_end(s, (flags[g] & kTilePartEnd) != 0, chunked, split);
    }
  }
  *out = tile_result(s, split);
  return true;
}

}  // namespace exmy::native
