// The cell table of bitsandbytes' 4-bit codes (docs/SEMANTICS.md 7.14): the same codes as
// bnb_nf4_code / bnb_fp4_code (sim/native/bnb_4bit.hpp, the reference) from one FFMA, one table
// read and one comparison instead of the decision tree. The GPU's fused quantizer
// (gpu/quant/bnb4bit.cu) calls these functions; tests/quant/test_bnb4_cells.cpp compares them
// with the tree on every fp32 pattern of the normalised value n in the kernel's domain
// ("[.exhaustive]"; every cell edge and a strided sweep in CI).
//
// The domain: n = x * rcp.approx.ftz(a) with |x| <= a (a the block's absmax) is either NaN, +-0
// or in [-1 - 2^-21, 1 + 2^-21] (rcp.approx's relative error is below 2^-22); the table covers
// |n| <= 1 + 2^-6 and NaN (kBnb4Reach), and other n are outside it.
//
// The code is a step function of n: NF4 at 15 thresholds (`n > t`), FP4 at the 7 magnitude
// thresholds on each side (`|n| > t`) and at 0 (the sign, n < 0, so that -0 and NaN count as
// positive). The cell of n is the fp32 pattern of ONE directed-rounding FMA,
//   h = RD(n * K + B)   (fma.rm; FP4 K = 32u, B = 2 - u; NF4 K = 33u, B = 2 + 32u; u = 2^-23)
// a monotone function of n whose patterns are consecutive integers across 2.0: below 2 a step
// of u (FP4 cells 1/32 wide, NF4 1/33), from 2 a step of 2u (FP4 1/16, NF4 2/33). These are
// below the thresholds' smallest gaps (NF4 0.08; FP4 0.083 between magnitudes, so 0.0052 between
// -t0 and t0 still leaves the two in different cells), so no cell holds two thresholds, and
// rounding down puts n = +-0 in the cell of B and every negative n below it (the sign's edge).
// The cell holding B = h(0) (FP4) or h(-1) = 2 - u (NF4) has the pattern 0x3FFFFFFF, which is
// the canonical NaN 0x7FFFFFFF modulo 2^29: an address scaled by 8 in 32 bits (bnb4_cell_addr)
// sends a NaN n, which the FMA returns as 0x7FFFFFFF, to that cell. Its code, NF4 0 (level -1)
// and FP4 0 (+0), is the tree's code for NaN, and no other clamp or test is needed (the
// previous table spent an FFMA.SAT per element on one, and FP4 an FSETP and an OR on the sign).
// An entry holds the one threshold inside its cell (+inf if none) and `rank`, the code of the
// cell's keys nearest the cell's low edge in the key's own order: rank + (key > thr) with key
// = n (NF4) or |n| (FP4), and for FP4 the sign (8) in the negative cells' rank and the magnitude
// rank mapped to the code by a bit operation that also serves 8 packed codes at once
// (bnb4_codes_of_ranks).
#pragma once

#include <cmath>
#include <cstdint>

#include "sim/native/bnb_4bit.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"

namespace exmy::native {

inline constexpr float kBnb4Reach = 1.015625f;  // 1 + 2^-6: the table covers |n| <= this
inline constexpr std::uint32_t kBnb4NanCell = 0x3FFFFFFFu;  // 0x7FFFFFFF modulo 2^29
// The lowest cell pattern (n = -kBnb4Reach) and the table's length, per type.
template <Bnb4Type T>
inline constexpr std::uint32_t kBnb4CellLo = T == Bnb4Type::nf4 ? 0x3FFFFFFEu : 0x3FFFFFDEu;
template <Bnb4Type T>
inline constexpr int kBnb4CellCount = T == Bnb4Type::nf4 ? 35 : 50;
inline constexpr int kBnb4CellsMax = 50;

// A cell: its threshold (+inf when it holds none) and `rank`, the code (NF4) or sign and
// magnitude rank (FP4) of its keys up to the threshold.
struct Bnb4Cell {
  float thr;
  std::uint32_t rank;
};

// The compared key of n (NF4: n itself; FP4: |n|).
template <Bnb4Type T>
EXMY_HD float bnb4_cell_key(float n) {
  return T == Bnb4Type::nf4 ? n : fabsf(n);
}

// The cell's pattern: f32_bits(RD(n * K + B)). The device issues the FMA; the host computes the
// same rounding exactly: with s = a n + b (FP4 a = 32, b = 0; NF4 a = 33, b = 33) the exact value
// is 2 - u + s u, which rounds down to 2 - u + floor(s) u below 2 (s < 1) and to
// 2 + 2u floor((s - 1) / 2) from 2. a n is exact in fp64 (24 + 6 bits), and the floors are
// taken of a n, (a n) / 2 or a n - 1 (exact in fp64 when a n >= 1) so that no sum rounds.
template <Bnb4Type T>
EXMY_HD std::uint32_t bnb4_cell_bits(float n) {
#if defined(__CUDA_ARCH__)
  constexpr float kK = T == Bnb4Type::nf4 ? 33.0f * 0x1p-23f : 0x1p-18f;
  constexpr float kB = T == Bnb4Type::nf4 ? 2.0f + 0x1p-18f : 2.0f - 0x1p-23f;
  float h;  // PTX, so that no -ftz flag can add .ftz (the check kernel feeds subnormal n)
  asm("fma.rm.f32 %0, %1, %2, %3;" : "=f"(h) : "f"(n), "f"(kK), "f"(kB));
  return __float_as_uint(h);
#else
  if (n != n) return 0x7FFFFFFFu;  // the FMA's canonical NaN
  if constexpr (T == Bnb4Type::fp4) {
    const double t = 32.0 * static_cast<double>(n);
    if (t < 1.0)
      return static_cast<std::uint32_t>(0x3FFFFFFF + static_cast<std::int64_t>(std::floor(t)));
    return static_cast<std::uint32_t>(0x40000000 +
                                      static_cast<std::int64_t>(std::floor((t - 1.0) / 2.0)));
  } else {
    const double t = 33.0 * static_cast<double>(n);  // s = 33 + t
    if (t < -32.0)
      return static_cast<std::uint32_t>(0x3FFFFFFF + 33 + static_cast<std::int64_t>(std::floor(t)));
    return static_cast<std::uint32_t>(0x40000000 + 16 +
                                      static_cast<std::int64_t>(std::floor(t / 2.0)));
  }
#endif
}
// The table index of n's cell (n in the domain; a NaN pattern gives kBnb4NanCell's index).
template <Bnb4Type T>
EXMY_HD int bnb4_cell_of(float n) {
  return static_cast<int>(((bnb4_cell_bits<T>(n) - kBnb4CellLo<T>)&0x1FFFFFFFu));
}
// The byte address of n's entry in a table at shared address `table` + kBnb4CellLo * 8: the
// pattern scaled by 8 in 32 bits (one LEA), which folds the NaN pattern onto kBnb4NanCell.
template <Bnb4Type T>
EXMY_HD std::uint32_t bnb4_cell_addr(float n, std::uint32_t table) {
  return bnb4_cell_bits<T>(n) * 8u + table;
}

template <Bnb4Type T>
EXMY_HD float bnb4_threshold_key(int k) {
  return T == Bnb4Type::nf4 ? bnb_nf4_threshold(k) : bnb_fp4_threshold(k);
}

// Entry i of the table: built from the thresholds through the same cell function as the keys.
// NF4: rank = the thresholds in lower cells. FP4, cells at or above n = 0's: the magnitude
// thresholds in lower cells; below it (n < 0): 8 + the thresholds t whose -t lies in a higher
// cell (nearer 0: |n| > t), and the one whose -t lies in cell i.
template <Bnb4Type T>
EXMY_HD Bnb4Cell bnb4_cell_entry(int i) {
  constexpr int kCount = T == Bnb4Type::nf4 ? 15 : 7;
  std::uint32_t rank = 0;
  float thr = f32_from_bits(0x7F800000u);  // +inf: no key compares above it
  const bool negative = T == Bnb4Type::fp4 && i < bnb4_cell_of<T>(0.0f);
  if (negative) rank = 8;
  for (int k = 0; k < kCount; ++k) {
    const float t = bnb4_threshold_key<T>(k);
    const int c = bnb4_cell_of<T>(negative ? -t : t);
    if (negative ? c > i : c < i) ++rank;
    if (c == i) thr = t;
  }
  return Bnb4Cell{thr, rank};
}

// True when the construction's assumptions hold: no cell holds two (signed) thresholds, the
// FP4 sign's edge is a cell edge (every negative n below n = 0's cell), the domain's ends are
// inside the table, and the NaN cell is NF4's lowest keys' (code 0) or FP4's n = 0 (code 0).
template <Bnb4Type T>
EXMY_HD bool bnb4_cells_valid() {
  constexpr int kCount = T == Bnb4Type::nf4 ? 15 : 7;
  int prev = -1;
  for (int k = 0; k < kCount; ++k) {  // NF4 ascending; FP4 -t6 .. -t0
    const float t = bnb4_threshold_key<T>(T == Bnb4Type::nf4 ? k : kCount - 1 - k);
    const int c = bnb4_cell_of<T>(T == Bnb4Type::nf4 ? t : -t);
    if (c <= prev) return false;
    prev = c;
  }
  if (T == Bnb4Type::fp4) {
    const int zero = bnb4_cell_of<T>(0.0f);
    if (bnb4_cell_of<T>(-f32_from_bits(0x00800000u)) >= zero || prev >= zero) return false;
    if (bnb4_cell_bits<T>(0.0f) != kBnb4NanCell || bnb4_cell_bits<T>(-0.0f) != kBnb4NanCell)
      return false;
    for (int k = 0; k < kCount; ++k) {  // +t0 .. +t6
      const int c = bnb4_cell_of<T>(bnb4_threshold_key<T>(k));
      if (c <= prev) return false;
      prev = c;
    }
  } else if (bnb4_cell_bits<T>(-1.0f) != kBnb4NanCell ||
             bnb4_cell_of<T>(bnb4_threshold_key<T>(0)) <= bnb4_cell_of<T>(-1.0f)) {
    return false;
  }
  return bnb4_cell_bits<T>(-kBnb4Reach) == kBnb4CellLo<T> &&
         bnb4_cell_of<T>(kBnb4Reach) == kBnb4CellCount<T> - 1;
}

// w plus the nibble of n in its cell c at bit `pos` (that nibble of w zero): NF4 the code; FP4
// the sign and the magnitude's rank. rank + (key > thr) is rank + the sign bit of thr - key
// (f32_sub_signbit: an FADD and an LEA.HI on the device, then an LEA to place it).
template <Bnb4Type T>
EXMY_HD std::uint32_t bnb4_add_rank(std::uint32_t w, int pos, Bnb4Cell c, float n) {
  return w + ((c.rank + f32_sub_signbit(c.thr, bnb4_cell_key<T>(n))) << pos);
}
// Nibbles of bnb4_add_rank (any number, at any nibble positions of w) to codes: NF4 as
// they are; FP4 ranks 0..7 to bnb_fp4_code_of_rank's {0, 1, 6, 7, 4, 5, 2, 3}, which is
// r ^ ((r & 2) << 1), the sign bit kept.
template <Bnb4Type T>
EXMY_HD std::uint32_t bnb4_codes_of_ranks(std::uint32_t w) {
  return T == Bnb4Type::nf4 ? w : w ^ ((w & 0x22222222u) << 1);
}

// The 4-bit code of a normalised value n in the domain (= bnb_nf4_code(n) / bnb_fp4_code(n)).
template <Bnb4Type T>
EXMY_HD std::uint32_t bnb4_code_cells(const Bnb4Cell* cells, float n) {
  const Bnb4Cell c = cells[bnb4_cell_of<T>(n)];
  return bnb4_codes_of_ranks<T>(bnb4_add_rank<T>(0, 0, c, n));
}

// ---- the block absmax, one instruction an element -------------------------------------------
// bnb4_absmax_step flushes each |x| before the max. Flushing is monotone on |x| >= 0, so the max
// of the flushed values is the flushed max: the fold runs as f32_fmax_hw(acc, |x|) (one FMNMX; it
// skips a NaN x, and acc, starting at -FLT_MAX, is never NaN) and bnb4_absmax_flush, once after
// the fold and after any max of partial folds, gives bnb4_absmax_step's result (-FLT_MAX, and
// FMUL.FTZ by 1, stays -FLT_MAX). tests/quant/test_bnb4_cells.cpp compares the two folds.
EXMY_HD float bnb4_absmax_raw_step(float acc, float x) {
  return f32_fmax_hw(acc, fabsf(x));
}
EXMY_HD float bnb4_absmax_flush(float acc) {
  return ftz_mul(acc, 1.0f);
}

}  // namespace exmy::native
