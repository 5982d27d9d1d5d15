// One output element of a GEMM under an accumulation model (docs/SEMANTICS.md 15.2): the fp32
// accumulator of Σ_k a_k b_k for the fp32-seq, pairwise and hw (fused k-group) models, with
// split-K and promotion chunks. Host and device run this same code: the CPU reference
// (sim/gemm/gemm.cpp) and the CUDA emulation kernel (gpu/gemm/) call exactly these functions.
//
// Operands are fp64 values with at most 24 significant bits each (every exmy float format of at
// most 16 bits, tf32 and fp32 are), so the hw model works in integers: a value is m 2^(e - 23)
// with m < 2^24 (normal: m >= 2^23) and e >= the operand's minimum exponent; a product's
// significand is the 48-bit integer m_a m_b at scale 2^(e_a + e_b - 46), i.e. in [1, 4) at
// exponent e_a + e_b as the model reads it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/specialize/platform.hpp"

namespace exmy::native {

// The model as plain data (sim/gemm/accum_model.hpp parses the strings). Limits the parser
// enforces so that the integer sums below cannot overflow and the stacks suffice:
// k_group <= 4096, frac_bits <= 40 (a group sum stays below 2^(40 + 2 + 13) < 2^63).
struct DotModel {
  enum class Kind : std::uint8_t { fp32_seq, pairwise, hw, amd } kind = Kind::hw;
  int k_group = 16;
  int frac_bits = 25;
  int inter_bits = 23;
  bool inter_rne = false;
  int split_k = 1;
  int tile = 0;
  // With tile: the (tiles mod S) parts one tile longer are the last ones, not the first (the
  // partial tile in the last part; cuBLAS's sm90 segment-k TF32 kernel, SEMANTICS 15.6).
  bool tile_tail = false;
  // With tile: every part is ceil(tiles / S) whole tiles from k = 0, so that the last nonempty
  // part is the short one and parts after it are empty (cuBLASLt's nvjet split-K kernels of
  // blockwise-scaled FP8, whose CTA z takes k-blocks [z P, (z + 1) P): FPRev trees of 40 launches,
  // bench/results/2026-12-02-h200-blockfp8-splitk.md).
  bool tile_fill = false;
  bool reduce_tree = false;
  int chunk = 0;
  // hw with block scales, MMA-Sim's Blackwell mxf4 form: the products of every `sub_group`
  // consecutive k are summed exactly, that sum times the two scales' significands is one term at
  // the scales' exponent (0: every product is a term, the scales' exponents added to its own).
  int sub_group = 0;
  // amd (MMA-Sim's CDNA3 fused dot-add): FP8 sums even and odd k separately first.
  bool two_stage = false;
  // fp32-seq spread over `lanes` threads (1: one chain), as cuBLAS's gemv, dot-like and small-N
  // kernels do (SEMANTICS 15.2): within a part, its j-th k goes to lane (j / vec) mod lanes (vec
  // 0: ceil(part length / lanes), one contiguous run per lane); each lane is an FMA chain in k
  // order from +0; the lanes are then added in fp32 by the halving tree of a shared-memory or
  // xor-shuffle reduction (lane i += lane i + lanes/2, then lanes/4, ...; lanes a power of two;
  // tree), in lane order from lane 0 (seq), or by the fold of cuBLAS's sm80 xmma FFMA kernels
  // that split K inside the kernel (fold; any lanes): with h = ceil(lanes/2), v_0 = (lane 0 +
  // lane h) + lane (lanes-1), v_s = lane s + lane s+h for 0 < s < h with s + h < lanes - 1,
  // otherwise v_s = lane s; then v_0 + v_1 + ... in order (FPRev trees on the H100 and H200,
  // bench/results/2026-12-01-h200-gemm-simt.md).
  enum class LaneSum : std::uint8_t { tree, seq, fold };
  int lanes = 1;
  int vec = 1;
  LaneSum lane_sum = LaneSum::tree;
  // fp32-seq as cuBLAS's dot_kernel<float, 128, 0> over `dot_ctas` CTAs followed by
  // reduce_1Block_kernel<float, 128, 7> (0: not this kernel; SEMANTICS 15.2): thread g of the
  // 128 dot_ctas threads holds two FMA chains, over k = 2g + 256 dot_ctas i and that + 1, added
  // (x + y); each CTA adds its 128 threads by the halving tree (t += t + 64, ..., t + 1); the
  // reduction's 128 threads hold the CTA partials (c < 128; zeros after), halve twice (t += t +
  // 64, t += t + 32), four chains add v_r, v_(r+4), ..., v_(r+28) in order from +0 and the four
  // are added in order (FPRev trees, bench/results/2026-12-01-h200-gemm-simt.md).
  int dot_ctas = 0;
  // fp32-seq lanes: each lane's FMA chain restarts from +0 after every `lane_chunk` of its k (0:
  // never), its chunk sums added in order from +0 (cuBLAS's gemmSN kernels: 16).
  int lane_chunk = 0;
  // hw and amd: every accumulation from +0 (a part, a chunk, or the whole K) runs as k-tiles of
  // `ktile` k (a multiple of k_group; 0: none) with the partial tile first, as CUTLASS 2.x's
  // predicated mainloop does with a residue: its first (n mod ktile) k, then whole tiles; the
  // groups of k_group k start at the beginning of each tile (the residue tile's last group may
  // be short).
  int ktile = 0;
  // With tile scales (DotTileScales, SEMANTICS 15.7): how a finished promotion chunk p enters the
  // fp32 accumulator y with its k-block's scales sa, sb (0 add: y + p, no scales; 1 a-first
  // fma(RN32(p sa), sb, y); 2 b-first fma(RN32(p sb), sa, y); 3 product fma(p, RN32(sa sb), y)).
  int promote = 0;
};

// Block scales (MX E8M0 per 32 k, NVFP4 UE4M3 per 16 k): the scales of A's row and of B's row
// (C's column) for this output, k's scale at [(k / block) * stride]. Scale values have at most
// 3 fraction bits (E8M0: none) and lie at or above their format's emin (subnormal UE4M3 codes
// below it keep their significand there).
struct DotBlockScales {
  const double* a = nullptr;
  std::size_t sa = 1;
  const double* b = nullptr;
  std::size_t sb = 1;
  int block = 32;
  int emin_a = -127, emin_b = -127;
};

// Tile scales (fp32 per tile of rows x `block` k: DeepSeek-V3's 1x128 / 128x128, cuBLASLt's
// blockwise FP8 scaling): the scales of this output's A row and B row, k-block kb's at a[kb] and
// b[kb]. They apply where a promotion chunk enters the fp32 accumulator (DotModel::promote), not
// inside the tensor-core sum; a chunk lies within one k-block (the host checks that the chunk
// divides `block`).
struct DotTileScales {
  const float* a = nullptr;
  const float* b = nullptr;
  int block = 128;
};

// |x| = m 2^(e - 23): m < 2^24, e >= emin (m < 2^23 only at e = emin). x finite and nonzero.
struct DotSig {
  std::uint64_t m;
  int e;
};
EXMY_HD DotSig dot_sig(double x, int emin) {
  const std::uint64_t u = f64_bits(x) & 0x7FFFFFFFFFFFFFFFull;
  int e = static_cast<int>(u >> 52) - 1023;
  // The top 24 significand bits (x has at most 24 significant bits, so this is exact).
  std::uint64_t m = ((u & 0x000FFFFFFFFFFFFFull) | (std::uint64_t{1} << 52)) >> 29;
  if (e < emin) {  // below the operand's minimum exponent: a subnormal significand (exact)
    const int s = emin - e;
    m = s >= 64 ? 0 : m >> s;
    e = emin;
  }
  return {m, e};
}

// A scale's significand as a 4-bit integer (value = m 2^(e - 3)) and exponent.
struct DotScaleSig {
  std::uint64_t m;
  int e;
};
EXMY_HD DotScaleSig dot_scale_sig(double s, int emin) {
  const DotSig d = dot_sig(s, emin);
  return {d.m >> 20, d.e};
}

EXMY_HD bool dot_is_nan(double x) {
  return (f64_bits(x) & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
}
EXMY_HD bool dot_is_inf(double x) {
  return (f64_bits(x) & 0x7FFFFFFFFFFFFFFFull) == 0x7FF0000000000000ull;
}
EXMY_HD bool dot_is_zero(double x) {
  return (f64_bits(x) & 0x7FFFFFFFFFFFFFFFull) == 0;
}
EXMY_HD bool dot_sign(double x) {
  return (f64_bits(x) >> 63) != 0;
}

// 2^k as fp64, k in [-1022, 1023], from its bits.
EXMY_HD double dot_pow2(int k) {
  return f64_from_bits(static_cast<std::uint64_t>(k + 1023) << 52);
}

// The normalisation of a group sum v = sum 2^(scale) (sum != 0) to fp32 with `bits` fraction
// bits, toward zero or to nearest even, exponent at least -126; >= 2^128 gives infinity.
EXMY_HD float dot_normalise(std::int64_t sum, int scale, int bits, bool rne) {
  const bool neg = sum < 0;
  const std::uint64_t mag =
      neg ? 0ull - static_cast<std::uint64_t>(sum) : static_cast<std::uint64_t>(sum);
  const int len = 64 - clz64(mag);  // |v| in [2^(len-1), 2^len) 2^scale
  int e = len - 1 + scale;
  if (e < -126) e = -126;
  const int q = e - bits;       // the quantum's exponent
  const int shift = q - scale;  // bits of mag below the quantum
  std::uint64_t n = mag;
  if (shift > 0) {
    if (shift >= 64) {
      n = 0;  // (cannot happen with the parser's limits: mag < 2^55 and len - 1 - bits >= -23)
    } else {
      const std::uint64_t rem = mag & ((std::uint64_t{1} << shift) - 1);
      n = mag >> shift;
      if (rne) {
        const std::uint64_t half = std::uint64_t{1} << (shift - 1);
        if (rem > half || (rem == half && (n & 1u) != 0)) ++n;
      }
    }
  } else if (shift < 0) {
    n = mag << (-shift);  // exact: mag has fewer than bits + 1 significant bits here
  }
  if (n == 0) return neg ? -0.0f : 0.0f;
  // n 2^q with n <= 2^(bits + 1): exact in fp64, and in fp32 unless it reaches 2^128.
  const int nlen = 64 - clz64(n);
  if (nlen - 1 + q >= 128) return neg ? -f32_from_bits(0x7F800000u) : f32_from_bits(0x7F800000u);
  const double r = static_cast<double>(n) * dot_pow2(q);
  return rn_f32(neg ? -r : r);
}

// One fused group: c plus the products a_k b_k (times the block scales, when bs is given), k in
// [k0, k1) (at most 4096 of them).
EXMY_HD float dot_fused_group(float c, const double* a, std::size_t sa, const double* b,
                              std::size_t sb, std::size_t k0, std::size_t k1, int emin_a,
                              int emin_b, const DotModel& m, const DotBlockScales* bs = nullptr) {
  // The scales of k (1 = significand 8 at exponent 0 without block scales).
  const auto scale_a = [&](std::size_t k) {
    return bs ? bs->a[(k / static_cast<std::size_t>(bs->block)) * bs->sa] : 1.0;
  };
  const auto scale_b = [&](std::size_t k) {
    return bs ? bs->b[(k / static_cast<std::size_t>(bs->block)) * bs->sb] : 1.0;
  };
  const auto scale_sig = [&](double v, bool is_a) {
    return bs ? dot_scale_sig(v, is_a ? bs->emin_a : bs->emin_b) : DotScaleSig{8, 0};
  };
  const std::uint32_t cb = f32_bits(c);
  // Specials first: any NaN, or infinities of both signs, give NaN; an infinity gives itself.
  bool nan = (cb & 0x7FFFFFFFu) > 0x7F800000u;
  bool pinf = cb == 0x7F800000u, ninf = cb == 0xFF800000u;
  bool all_zero = (cb & 0x7FFFFFFFu) == 0, all_neg_zero = cb == 0x80000000u;
  int emax = 0;
  bool have = false;
  if (!all_zero && !nan && !pinf && !ninf) {
    emax = dot_sig(static_cast<double>(c), -126).e;
    have = true;
  }
  for (std::size_t k = k0; k < k1; ++k) {
    const double x = a[k * sa], y = b[k * sb], u = scale_a(k), w = scale_b(k);
    const bool neg = dot_sign(x) != dot_sign(y);
    if (dot_is_nan(x) || dot_is_nan(y) || dot_is_nan(u) || dot_is_nan(w)) {
      nan = true;
      continue;
    }
    const bool zero = dot_is_zero(x) || dot_is_zero(y) || dot_is_zero(u) || dot_is_zero(w);
    if (dot_is_inf(x) || dot_is_inf(y)) {
      if (zero) {
        nan = true;  // inf x 0
      } else if (neg) {
        ninf = true;
      } else {
        pinf = true;
      }
      continue;
    }
    if (zero) {
      all_neg_zero = all_neg_zero && neg;  // the product is a zero of that sign
      continue;
    }
    all_zero = false;
    if (m.sub_group > 0) continue;  // the sub-group terms sit at the scales' exponents (below)
    const int e =
        dot_sig(x, emin_a).e + dot_sig(y, emin_b).e + scale_sig(u, true).e + scale_sig(w, false).e;
    if (!have || e > emax) emax = e;
    have = true;
  }
  if (nan || (pinf && ninf)) return f32_from_bits(0x7FC00000u);
  if (pinf) return f32_from_bits(0x7F800000u);
  if (ninf) return f32_from_bits(0xFF800000u);
  if (all_zero) {
    // Every term is zero: IEEE's sign of an exact zero sum (+0 unless every term is -0).
    return all_neg_zero ? -0.0f : 0.0f;
  }
  const std::size_t sub = static_cast<std::size_t>(m.sub_group);
  if (sub > 0) {
    // Every sub-group's term is at the exponent of its scales, zero sums included.
    for (std::size_t g = k0; g < k1; g += sub) {
      const double u = scale_a(g), w = scale_b(g);
      if (dot_is_zero(u) || dot_is_zero(w)) continue;
      const int e = scale_sig(u, true).e + scale_sig(w, false).e;
      if (!have || e > emax) emax = e;
      have = true;
    }
  }
  // Every term truncated toward zero to frac_bits below 2^emax, summed exactly. A product of
  // significand P = m_a m_b ms_a ms_b at exponent e (scale significands ms with 3 fraction bits)
  // has the value P 2^(e - 52) and becomes trunc(P 2^(frac + e - emax - 52)).
  std::int64_t sum = 0;
  if ((cb & 0x7FFFFFFFu) != 0) {
    const DotSig s = dot_sig(static_cast<double>(c), -126);
    const int r = 46 - (m.frac_bits + s.e - emax);
    const std::uint64_t t = r >= 64 ? 0 : (s.m << 23) >> r;
    sum += (cb >> 31) != 0 ? -static_cast<std::int64_t>(t) : static_cast<std::int64_t>(t);
  }
  if (sub == 0) {
    for (std::size_t k = k0; k < k1; ++k) {
      const double x = a[k * sa], y = b[k * sb], u = scale_a(k), w = scale_b(k);
      if (dot_is_zero(x) || dot_is_zero(y) || dot_is_zero(u) || dot_is_zero(w)) continue;
      const DotSig sx = dot_sig(x, emin_a), sy = dot_sig(y, emin_b);
      const DotScaleSig su = scale_sig(u, true), sw = scale_sig(w, false);
      // >= 12: frac_bits <= 40 and e <= emax
      const int r = 52 - (m.frac_bits + sx.e + sy.e + su.e + sw.e - emax);
      const std::uint64_t t = r >= 64 ? 0 : (sx.m * sy.m * su.m * sw.m) >> r;
      sum +=
          dot_sign(x) != dot_sign(y) ? -static_cast<std::int64_t>(t) : static_cast<std::int64_t>(t);
    }
  } else {
    // The exact sum S of a sub-group's products, in units of 2^(emin_a + emin_b - 46), then
    // S ms_a ms_b 2^(emin_a + emin_b - 52 + e_u + e_w) truncated to frac_bits below 2^emax.
    for (std::size_t g = k0; g < k1; g += sub) {
      const std::size_t g1 = g + sub < k1 ? g + sub : k1;
      const double u = scale_a(g), w = scale_b(g);
      if (dot_is_zero(u) || dot_is_zero(w)) continue;
      __int128 S = 0;
      for (std::size_t k = g; k < g1; ++k) {
        const double x = a[k * sa], y = b[k * sb];
        if (dot_is_zero(x) || dot_is_zero(y)) continue;
        const DotSig sx = dot_sig(x, emin_a), sy = dot_sig(y, emin_b);
        const __int128 p = static_cast<__int128>(sx.m * sy.m) << (sx.e - emin_a + sy.e - emin_b);
        S += dot_sign(x) != dot_sign(y) ? -p : p;
      }
      const DotScaleSig su = scale_sig(u, true), sw = scale_sig(w, false);
      const bool neg = S < 0;
      unsigned __int128 mag = static_cast<unsigned __int128>(neg ? -S : S) * (su.m * sw.m);
      const int sh = emin_a + emin_b - 52 + su.e + sw.e + m.frac_bits - emax;
      if (sh < 0) {
        mag = -sh >= 128 ? 0 : mag >> -sh;
      } else {
        mag <<= sh;  // (the caller bounds the operands so that this stays below 2^62)
      }
      const std::int64_t t = static_cast<std::int64_t>(mag);
      sum += neg ? -t : t;
    }
  }
  if (sum == 0) return 0.0f;
  return dot_normalise(sum, emax - m.frac_bits, m.inter_bits, m.inter_rne);
}

// floor(v 2^sh) for a signed integer v (an arithmetic shift: toward minus infinity).
EXMY_HD std::int64_t dot_floor_shift(std::int64_t v, int sh) {
  if (sh >= 0) return v * (std::int64_t{1} << sh);  // |v| 2^sh stays below 2^62 (callers)
  if (sh <= -63) return v < 0 ? -1 : 0;
  return v >= 0 ? v >> -sh : -((-v + (std::int64_t{1} << -sh) - 1) >> -sh);
}

// The truncated sum of the products k in [k0, k1) step `step` (MMA-Sim's fused_sum with 24
// fraction bits): each product toward zero to 24 bits below 2^E, E the largest product
// exponent, summed exactly. Returns the sum in units of 2^(E - 24) and E (E = -999 if every
// product is zero).
struct DotAmdPart {
  std::int64_t sum;
  int e;
};
EXMY_HD DotAmdPart dot_amd_part(const double* a, std::size_t sa, const double* b, std::size_t sb,
                                std::size_t k0, std::size_t k1, std::size_t step, int emin_a,
                                int emin_b, int frac) {
  int e = -999;
  for (std::size_t k = k0; k < k1; k += step) {
    const double x = a[k * sa], y = b[k * sb];
    if (dot_is_zero(x) || dot_is_zero(y)) continue;
    const int ek = dot_sig(x, emin_a).e + dot_sig(y, emin_b).e;
    if (ek > e) e = ek;
  }
  std::int64_t sum = 0;
  for (std::size_t k = k0; k < k1; k += step) {
    const double x = a[k * sa], y = b[k * sb];
    if (dot_is_zero(x) || dot_is_zero(y)) continue;
    const DotSig sx = dot_sig(x, emin_a), sy = dot_sig(y, emin_b);
    const int r = 46 - (frac + sx.e + sy.e - e);  // >= 46 - frac: the product is below 2^(e+2)
    const std::uint64_t t = r >= 64 ? 0 : (sx.m * sy.m) >> r;
    sum +=
        dot_sign(x) != dot_sign(y) ? -static_cast<std::int64_t>(t) : static_cast<std::int64_t>(t);
  }
  return {sum, e};
}

// One CDNA3 MFMA group (MMA-Sim's amd_fused_dot_add, published; not measured here): the
// products truncated to `frac` = 24 bits below their largest exponent E and summed (FP8:
// even and odd k separately, each then aligned down to the larger E with floor at 24 bits);
// then with E' = max(E, c's exponent) the product sum is floored to 31 fraction bits and c to
// 24 (FP8: c dropped when its exponent is below E' - 25), added, and rounded to fp32 (RNE).
// A product of magnitude >= 2^128 counts as an infinity of its sign.
EXMY_HD float dot_amd_group(float c, const double* a, std::size_t sa, const double* b,
                            std::size_t sb, std::size_t k0, std::size_t k1, int emin_a, int emin_b,
                            const DotModel& m) {
  const std::uint32_t cb = f32_bits(c);
  bool nan = (cb & 0x7FFFFFFFu) > 0x7F800000u;
  bool pinf = cb == 0x7F800000u, ninf = cb == 0xFF800000u;
  for (std::size_t k = k0; k < k1; ++k) {
    const double x = a[k * sa], y = b[k * sb];
    if (dot_is_nan(x) || dot_is_nan(y)) {
      nan = true;
      continue;
    }
    const double p = x * y;  // exact or infinite in fp64: operands have <= 24 significant bits
    const double ap = p < 0 ? -p : p;
    if (dot_is_nan(p)) {
      nan = true;  // inf x 0
    } else if (ap >= 0x1p128) {
      if (p < 0) {
        ninf = true;
      } else {
        pinf = true;
      }
    }
  }
  if (nan || (pinf && ninf)) return f32_from_bits(0x7FC00000u);
  if (pinf) return f32_from_bits(0x7F800000u);
  if (ninf) return f32_from_bits(0xFF800000u);
  const int F = m.frac_bits;
  std::int64_t s;  // the product sum in units of 2^(E - F)
  int E;
  if (m.two_stage) {
    const DotAmdPart p0 = dot_amd_part(a, sa, b, sb, k0, k1, 2, emin_a, emin_b, F);
    const DotAmdPart p1 = dot_amd_part(a, sa, b, sb, k0 + 1, k1, 2, emin_a, emin_b, F);
    E = p0.e > p1.e ? p0.e : p1.e;
    s = dot_floor_shift(p0.sum, p0.e - E) + dot_floor_shift(p1.sum, p1.e - E);
  } else {
    const DotAmdPart p = dot_amd_part(a, sa, b, sb, k0, k1, 1, emin_a, emin_b, F);
    s = p.sum;
    E = p.e;
  }
  const bool c_zero = (cb & 0x7FFFFFFFu) == 0;
  const DotSig sc = c_zero ? DotSig{0, -999} : dot_sig(static_cast<double>(c), -126);
  const int Em = E > sc.e ? E : sc.e;
  // No nonzero term, or a zero sum: +0 (MMA-Sim's floors return integers, so no -0 survives).
  if (Em == -999) return 0.0f;
  // Units of 2^(Em - 31): the products floored to 31 fraction bits, c to 24.
  std::int64_t total = dot_floor_shift(s, E - F - (Em - 31));
  if (!c_zero && (!m.two_stage || sc.e >= Em - 25)) {
    const std::int64_t cv =
        (cb >> 31) != 0 ? -static_cast<std::int64_t>(sc.m) : static_cast<std::int64_t>(sc.m);
    // c = m 2^(e - 23): floor to units of 2^(Em - 24), then in units of 2^(Em - 31)
    total += dot_floor_shift(cv, sc.e - 23 - (Em - 24)) * 128;
  }
  if (total == 0) return 0.0f;
  return dot_normalise(total, Em - 31, 23, true);
}

// A balanced binary sum of n leaves (the left subtree takes floor(n/2) leaves, recursively),
// each node one fp32 addition (RNE); n = 0 gives +0. An explicit stack: the same code runs on
// the device, where recursion is costly. leaf(i) is evaluated in order i = 0 .. n-1.
template <class Leaf>
EXMY_HD float dot_tree_sum(std::size_t n, const Leaf& leaf) {
  if (n == 0) return 0.0f;
  struct Frame {
    std::size_t lo, hi;
    float left;
    int state;
  };
  Frame st[66];  // depth <= log2(n) + 1
  int sp = 0;
  st[0] = {0, n, 0.0f, 0};
  float ret = 0.0f;
  for (;;) {
    Frame& f = st[sp];
    if (f.hi - f.lo == 1) {
      ret = leaf(f.lo);
    } else if (f.state == 0) {
      f.state = 1;
      st[++sp] = {f.lo, f.lo + (f.hi - f.lo) / 2, 0.0f, 0};
      continue;
    } else if (f.state == 1) {
      f.left = ret;
      f.state = 2;
      st[++sp] = {f.lo + (f.hi - f.lo) / 2, f.hi, 0.0f, 0};
      continue;
    } else {
      ret = rn_add(f.left, ret);
    }
    if (sp == 0) return ret;
    --sp;
  }
}

// The fp32 operand values the chains (fp32-seq, pairwise) multiply: RN32(x s), the element times
// its block scale (the product is exact in fp64: at most 24 and 4 significant bits).
EXMY_HD float dot_chain_a(const double* a, std::size_t sa, std::size_t k,
                          const DotBlockScales* bs) {
  return rn_f32(bs ? a[k * sa] * bs->a[(k / static_cast<std::size_t>(bs->block)) * bs->sa]
                   : a[k * sa]);
}
EXMY_HD float dot_chain_b(const double* b, std::size_t sb, std::size_t k,
                          const DotBlockScales* bs) {
  return rn_f32(bs ? b[k * sb] * bs->b[(k / static_cast<std::size_t>(bs->block)) * bs->sb]
                   : b[k * sb]);
}

// cuBLAS's dot_kernel<float, 128, 0> + reduce_1Block_kernel<float, 128, 7> over [k0, k1)
// (DotModel::dot_ctas CTAs).
EXMY_HD float dot_cublas_dot(const double* a, std::size_t sa, const double* b, std::size_t sb,
                             std::size_t k0, std::size_t k1, const DotModel& m,
                             const DotBlockScales* bs) {
  const std::size_t n = k1 - k0, G = static_cast<std::size_t>(m.dot_ctas), stride = 256 * G;
  auto chain = [&](std::size_t j) {  // the FMA chain over k0 + j, j + stride, ...
    float c = 0.0f;
    for (; j < n; j += stride) {
      c = rn_fma(dot_chain_a(a, sa, k0 + j, bs), dot_chain_b(b, sb, k0 + j, bs), c);
    }
    return c;
  };
  float part[128];  // the reduction's 128 threads: CTA partials (thread t: CTAs t, t + 128, ...)
  for (std::size_t t = 0; t < 128; ++t) part[t] = 0.0f;
  for (std::size_t c = 0; c < G && 256 * c < n; ++c) {
    float th[128];
    for (std::size_t t = 0; t < 128; ++t) {
      const std::size_t g = c * 128 + t;
      th[t] = rn_add(chain(2 * g), chain(2 * g + 1));
    }
    for (std::size_t h = 64; h >= 1; h /= 2) {
      for (std::size_t t = 0; t < h; ++t) th[t] = rn_add(th[t], th[t + h]);
    }
    part[c % 128] = c < 128 ? th[0] : rn_add(part[c % 128], th[0]);
  }
  for (std::size_t h = 64; h >= 32; h /= 2) {
    for (std::size_t t = 0; t < h; ++t) part[t] = rn_add(part[t], part[t + h]);
  }
  float total = 0.0f;
  for (std::size_t r = 0; r < 4; ++r) {
    float s = 0.0f;
    for (std::size_t t = r; t < 32; t += 4) s = rn_add(s, part[t]);
    total = r == 0 ? s : rn_add(total, s);
  }
  return total;
}

// The model's accumulator over [k0, k1) from +0 (one promotion chunk, or a whole part).
EXMY_HD float dot_chunk(const double* a, std::size_t sa, const double* b, std::size_t sb,
                        std::size_t k0, std::size_t k1, int emin_a, int emin_b, const DotModel& m,
                        const DotBlockScales* bs = nullptr) {
  if (m.kind == DotModel::Kind::fp32_seq && m.dot_ctas > 0) {
    return dot_cublas_dot(a, sa, b, sb, k0, k1, m, bs);
  }
  if (m.kind == DotModel::Kind::fp32_seq && m.lanes > 1) {
    const std::size_t n = k1 - k0, L = static_cast<std::size_t>(m.lanes);
    std::size_t v = m.vec > 0 ? static_cast<std::size_t>(m.vec) : (n + L - 1) / L;
    if (v == 0) v = 1;
    // Lane l's chain: runs of v k starting at l v, every L v k (restarted every lane_chunk k).
    const std::size_t lc = static_cast<std::size_t>(m.lane_chunk);
    auto lane = [&](std::size_t l) {
      float c = 0.0f, total = 0.0f;
      std::size_t count = 0;
      for (std::size_t j = l * v; j < n; j += L * v) {
        for (std::size_t u = j; u < j + v && u < n; ++u) {
          c = rn_fma(dot_chain_a(a, sa, k0 + u, bs), dot_chain_b(b, sb, k0 + u, bs), c);
          if (lc > 0 && ++count == lc) {
            total = rn_add(total, c);
            c = 0.0f;
            count = 0;
          }
        }
      }
      return lc == 0 ? c : count > 0 ? rn_add(total, c) : total;
    };
    if (m.lane_sum == DotModel::LaneSum::seq) {
      float s = lane(0);
      for (std::size_t l = 1; l < L; ++l) s = rn_add(s, lane(l));
      return s;
    }
    if (m.lane_sum == DotModel::LaneSum::fold) {
      // v_0 = (lane 0 + lane h) + lane L-1; v_s = lane s + lane s+h below L-1; the v in order.
      const std::size_t h = (L + 1) / 2;
      float s = rn_add(lane(0), lane(h));
      if (h < L - 1) s = rn_add(s, lane(L - 1));
      for (std::size_t i = 1; i < h; ++i) {
        s = rn_add(s, i + h < L - 1 ? rn_add(lane(i), lane(i + h)) : lane(i));
      }
      return s;
    }
    // The halving reduction's last step adds the sum of the even lanes to that of the odd ones,
    // and so on down: a balanced tree over the lanes in bit-reversed order.
    int bits = 0;
    while ((std::size_t{1} << bits) < L) ++bits;
    return dot_tree_sum(L, [&](std::size_t i) {
      std::size_t r = 0;
      for (int t = 0; t < bits; ++t) r |= ((i >> t) & 1u) << (bits - 1 - t);
      return lane(r);
    });
  }
  if (m.kind == DotModel::Kind::fp32_seq) {
    float c = 0.0f;
    for (std::size_t k = k0; k < k1; ++k) {
      c = rn_fma(dot_chain_a(a, sa, k, bs), dot_chain_b(b, sb, k, bs), c);
    }
    return c;
  }
  if (m.kind == DotModel::Kind::pairwise) {
    // Leaves fma(a, b, +0) = RN32(a b); a node adds its halves (left floor(n/2)) in fp32.
    return dot_tree_sum(k1 - k0, [&](std::size_t i) {
      return rn_fma(dot_chain_a(a, sa, k0 + i, bs), dot_chain_b(b, sb, k0 + i, bs), 0.0f);
    });
  }
  float c = 0.0f;
  const std::size_t g = static_cast<std::size_t>(m.k_group);
  // The groups of [k0, k1): of g k from k0, or, with k-tiles, of g k from k0 within the residue
  // tile [k0, k0 + r) and then from k0 + r (the whole tiles: ktile is a multiple of g).
  const std::size_t r = m.ktile > 0 ? (k1 - k0) % static_cast<std::size_t>(m.ktile) : 0;
  for (std::size_t k = k0; k < k1;) {
    const std::size_t lim = k < k0 + r ? k0 + r : k1;
    const std::size_t e = k + g < lim ? k + g : lim;
    c = m.kind == DotModel::Kind::amd
            ? dot_amd_group(c, a, sa, b, sb, k, e, emin_a, emin_b, m)
            : dot_fused_group(c, a, sa, b, sb, k, e, emin_a, emin_b, m, bs);
    k = e;
  }
  return c;
}

// One split-K part [k0, k1): promotion chunks of m.chunk k (the whole part when 0), each from
// +0, added to an fp32 accumulator that starts at +0, in order.
// With tile scales every chunk enters the accumulator by the promotion equation (DotModel::
// promote) with the scales of its k-block.
EXMY_HD float dot_promote(float y, float p, float sa, float sb, int promote) {
  if (promote == 1) return rn_fma(rn_mul(p, sa), sb, y);
  if (promote == 2) return rn_fma(rn_mul(p, sb), sa, y);
  if (promote == 3) return rn_fma(p, rn_mul(sa, sb), y);
  return rn_add(y, p);
}
EXMY_HD float dot_part(const double* a, std::size_t sa, const double* b, std::size_t sb,
                       std::size_t k0, std::size_t k1, int emin_a, int emin_b, const DotModel& m,
                       const DotBlockScales* bs = nullptr, const DotTileScales* ts = nullptr) {
  if (m.chunk <= 0) return dot_chunk(a, sa, b, sb, k0, k1, emin_a, emin_b, m, bs);
  const std::size_t len = static_cast<std::size_t>(m.chunk);
  float total = 0.0f;
  for (std::size_t c = k0; c < k1; c += len) {
    const float p = dot_chunk(a, sa, b, sb, c, c + len < k1 ? c + len : k1, emin_a, emin_b, m, bs);
    if (ts != nullptr) {
      const std::size_t kb = c / static_cast<std::size_t>(ts->block);
      total = dot_promote(total, p, ts->a[kb], ts->b[kb], m.promote);
    } else {
      total = rn_add(total, p);
    }
  }
  return total;
}

// Start of split-K part p (p <= S; part p is [start(p), start(p + 1))): ceil(K/S) k each, or
// whole tiles of `tile` k with the first (tiles mod S) parts one tile longer (tile_tail: the
// last ones; tile_fill: ceil(tiles / S) tiles each). Nonempty parts form a prefix 0 .. P-1.
EXMY_HD std::size_t dot_part_start(std::size_t p, std::size_t k, const DotModel& m) {
  const std::size_t s = static_cast<std::size_t>(m.split_k);
  std::size_t start;
  if (m.tile > 0) {
    const std::size_t t = static_cast<std::size_t>(m.tile), tiles = (k + t - 1) / t;
    if (m.tile_fill) {
      const std::size_t per = t * ((tiles + s - 1) / s);
      return p * per < k ? p * per : k;
    }
    const std::size_t extra = tiles % s;
    const std::size_t longer =
        m.tile_tail ? (p > s - extra ? p - (s - extra) : 0) : (p < extra ? p : extra);
    start = t * (p * (tiles / s) + longer);
  } else {
    start = p * ((k + s - 1) / s);
  }
  return start < k ? start : k;
}

// The fp32 accumulator of one output element: its K values are a[k sa] and b[k sb].
EXMY_HD float dot_model_fp32(const double* a, std::size_t sa, const double* b, std::size_t sb,
                             std::size_t k, int emin_a, int emin_b, const DotModel& m,
                             const DotBlockScales* bs = nullptr,
                             const DotTileScales* ts = nullptr) {
  // (With tile scales and split-K the parts are whole tiles of a multiple of the chunk: the
  // host checks it, so that every chunk lies in one k-block.)
  if (m.split_k <= 1) return dot_part(a, sa, b, sb, 0, k, emin_a, emin_b, m, bs, ts);
  std::size_t parts = 0;
  while (parts < static_cast<std::size_t>(m.split_k) &&
         dot_part_start(parts, k, m) < dot_part_start(parts + 1, k, m)) {
    ++parts;
  }
  auto part = [&](std::size_t p) {
    return dot_part(a, sa, b, sb, dot_part_start(p, k, m), dot_part_start(p + 1, k, m), emin_a,
                    emin_b, m, bs, ts);
  };
  if (m.reduce_tree) return dot_tree_sum(parts, part);
  float total = 0.0f;
  for (std::size_t p = 0; p < parts; ++p) total = rn_add(total, part(p));
  return total;
}

// The epilogue of an output element: alpha (the product of per-tensor scales, as fp32)
// multiplies the accumulator, RN32(alpha acc), unless it is 1; then the output code: fp32 bits
// (NaN as 0x7FFFFFFF, the pattern MMA-Sim and CUDA produce) or the bf16/fp16 code by round to
// nearest even (out: 0 fp32, 1 bf16, 2 fp16).
EXMY_HD std::uint32_t dot_out_code(float acc, float alpha, int out) {
  if (alpha != 1.0f) acc = rn_mul(alpha, acc);
  std::uint32_t u = f32_bits(acc);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) u = 0x7FFFFFFFu;
  if (out == 0) return u;
  constexpr FloatFormat kF32 = formats::fp32;
  constexpr FloatFormat kBf16 = formats::bf16;
  constexpr FloatFormat kF16 = formats::fp16;
  return static_cast<std::uint32_t>(convert(kF32, out == 1 ? kBf16 : kF16, Rounding{}, u, 0).code);
}

// rp (SEMANTICS 15.2, 16-bit split-K partials): one chunk's fp32 output code (as an fp32 GEMM
// writes it, dot_out_code(part, 1, 0)) rounded to the 16-bit output format (out: 1 bf16, 2 fp16)
// and added to the running fp32 sum. The CPU reference (sim/gemm/gemm.cpp) and the GPU emulation
// (gpu/gemm/gemm_emulation.cu) both add their chunks with it.
EXMY_HD float dot_add_rounded_part(float acc, std::uint32_t fp32_code, int out) {
  constexpr FloatFormat kBf16 = formats::bf16;
  constexpr FloatFormat kF16 = formats::fp16;
  const std::uint32_t code = dot_out_code(f32_from_bits(fp32_code), 1.0f, out);
  return rn_add(acc, static_cast<float>(to_double(out == 1 ? kBf16 : kF16, code)));
}

// Per-row scale sa (of A's row) and per-column scale sb (of B's row, i.e. C's column) applied to
// the fp32 accumulator, in one of three fp32 orders (order: 0 a-first RN32(sb RN32(sa acc)),
// 1 b-first RN32(sa RN32(sb acc)), 2 product RN32(RN32(sa sb) acc)).
EXMY_HD float dot_rowcol(float acc, float sa, float sb, int order) {
  if (order == 1) return rn_mul(sa, rn_mul(sb, acc));
  if (order == 2) return rn_mul(rn_mul(sa, sb), acc);
  return rn_mul(sb, rn_mul(sa, acc));
}

// fp32 -> tf32 (10 fraction bits): toward zero; to nearest, ties away (add half a tf32 ulp to
// the magnitude bits, then clear the low 13); or to nearest even (half an ulp minus one plus the
// kept lsb). A carry into the exponent is the right result; values near the maximum become
// infinity. mode: 0 rz, 1 rna, 2 rne.
EXMY_HD float dot_tf32(float x, int mode) {
  std::uint32_t u = f32_bits(x);
  if ((u & 0x7F800000u) != 0x7F800000u) {
    if (mode == 1) u += 0x1000u;
    if (mode == 2) u += 0x0FFFu + ((u >> 13) & 1u);
    u &= 0xFFFFE000u;
  }
  return f32_from_bits(u);
}

}  // namespace exmy::native
