// The cell table of bitsandbytes' 4-bit codes (docs/SEMANTICS.md 7.14): the same codes as
// bnb_nf4_code / bnb_fp4_code (sim/native/bnb_4bit.hpp, the reference) from two FFMAs, one table
// read and one comparison instead of the decision tree. The GPU's fused quantizer
// (gpu/quant/bnb4bit.cu) calls these functions; tests/quant/test_bnb4_cells.cpp compares them
// with the tree on every one of the 2^32 fp32 patterns of the normalised value n ("[.exhaustive]")
// and on a strided sweep in CI.
//
// The code is a monotone step function of its key (NF4: n, steps at the 15 thresholds with `>`;
// FP4: |n|, steps at the 7 magnitude thresholds, the sign apart). The cell of a key is
//   g = sat(key * s + o)    (fma.rn.sat: clamped to [0, 1], NaN -> 0; NF4 s = o = 1/2, FP4 s = 1,
//                            o = 0)
//   i = RN(g * 32 + 2^23) - 2^23 in 0..32 (an exact multiply by 32, then integer rounding)
// Both roundings and the clamp are monotone, so each cell is an interval of keys and, for a
// threshold t in cell j, every key of a cell below j is <= t and every key of a cell above j is
// > t. A cell's entry holds the one threshold inside it (+inf if none) and the rank of its lowest
// keys: rank = lo + (key > thr), the code itself for NF4 and, for FP4, the magnitude's rank, mapped
// to the code by a bit operation that also serves 8 packed codes at once (bnb4_codes_of_ranks). The
// cells are 1/16 wide in n for NF4 (thresholds >= 0.08 apart) and 1/32 wide in |n| for FP4 (>=
// 0.083 apart), so no cell holds two thresholds (bnb4_cells_valid checks it). A NaN key lands in
// cell 0 and compares false: code 0, the tree's NaN code (NF4 level -1; FP4 +0, as x < 0 is false).
#pragma once

#include <cmath>
#include <cstdint>

#include "sim/native/bnb_4bit.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"

namespace exmy::native {

inline constexpr int kBnb4Cells = 33;

// A cell: its threshold (+inf when it holds none) and `rank`, the rank of its lowest keys
// (NF4: the code; FP4: the magnitude's rank, mapped to bitsandbytes' code order afterwards).
struct Bnb4Cell {
  float thr;
  std::uint32_t rank;
};

// The compared key of n (NF4: n itself; FP4: |n|).
template <Bnb4Type T>
EXMY_HD float bnb4_cell_key(float n) {
  return T == Bnb4Type::nf4 ? n : fabsf(n);
}
// 2^23 + the cell (0..32) of a key, as an fp32 whose code is 0x4B000000 + the cell.
template <Bnb4Type T>
EXMY_HD float bnb4_cell_h(float key) {
  const float g = T == Bnb4Type::nf4 ? rn_fma_sat(key, 0.5f, 0.5f) : rn_fma_sat(key, 1.0f, 0.0f);
  return rn_fma(g, 32.0f, 8388608.0f);
}
template <Bnb4Type T>
EXMY_HD int bnb4_cell_of_key(float key) {
  return static_cast<int>(f32_bits(bnb4_cell_h<T>(key)) - 0x4B000000u);
}

template <Bnb4Type T>
EXMY_HD float bnb4_threshold_key(int k) {
  return T == Bnb4Type::nf4 ? bnb_nf4_threshold(k) : bnb_fp4_threshold(k);
}

// Entry i of the table: built from the thresholds through the same cell function as the keys.
template <Bnb4Type T>
EXMY_HD Bnb4Cell bnb4_cell_entry(int i) {
  constexpr int kCount = T == Bnb4Type::nf4 ? 15 : 7;
  std::uint32_t below = 0;
  float thr = f32_from_bits(0x7F800000u);  // +inf: no key compares above it
  for (int k = 0; k < kCount; ++k) {
    const float t = bnb4_threshold_key<T>(k);
    const int c = bnb4_cell_of_key<T>(t);
    if (c < i) ++below;
    if (c == i) thr = t;
  }
  return Bnb4Cell{thr, below};
}

// True when no cell holds two thresholds (the construction's one assumption).
template <Bnb4Type T>
EXMY_HD bool bnb4_cells_valid() {
  constexpr int kCount = T == Bnb4Type::nf4 ? 15 : 7;
  for (int k = 1; k < kCount; ++k) {
    if (bnb4_cell_of_key<T>(bnb4_threshold_key<T>(k - 1)) >=
        bnb4_cell_of_key<T>(bnb4_threshold_key<T>(k)))
      return false;
  }
  return true;
}

// w | bits when a < 0 (ordered: -0 and NaN are not), else w. On the device a predicated OR after
// the FSETP, written as PTX: from C++, ptxas selects the bits first and ORs them (one
// instruction more an FP4 code).
EXMY_HD std::uint32_t bnb4_or_if_negative(std::uint32_t w, float a, std::uint32_t bits) {
#if defined(__CUDA_ARCH__)
  asm("{\n\t.reg .pred p;\n\tsetp.lt.f32 p, %1, 0f00000000;\n\t@p or.b32 %0, %0, %2;\n\t}"
      : "+r"(w)
      : "f"(a), "r"(bits));
  return w;
#else
  return a < 0.0f ? w | bits : w;
#endif
}

// w plus the nibble of n in its cell c at bit `pos` (that nibble of w zero): NF4 the code; FP4
// the sign (8, for n < 0) and the magnitude's rank. rank + (key > thr) is rank + the sign bit of
// thr - key (f32_sub_signbit: an FADD and an LEA.HI on the device, then an LEA to place it);
// the FP4 sign bit by bnb4_or_if_negative (an FSETP and a predicated LOP3).
template <Bnb4Type T>
EXMY_HD std::uint32_t bnb4_add_rank(std::uint32_t w, int pos, Bnb4Cell c, float n) {
  w += (c.rank + f32_sub_signbit(c.thr, bnb4_cell_key<T>(n))) << pos;
  if (T == Bnb4Type::fp4) w = bnb4_or_if_negative(w, n, 0x08u << pos);  // the sign: n < 0
  return w;
}
// Nibbles of bnb4_add_rank (any number, at any nibble positions of w) to codes: NF4 as
// they are; FP4 ranks 0..7 to bnb_fp4_code_of_rank's {0, 1, 6, 7, 4, 5, 2, 3}, which is
// r ^ ((r & 2) << 1), the sign bit kept.
template <Bnb4Type T>
EXMY_HD std::uint32_t bnb4_codes_of_ranks(std::uint32_t w) {
  return T == Bnb4Type::nf4 ? w : w ^ ((w & 0x22222222u) << 1);
}

// The 4-bit code of a normalised value n (= bnb_nf4_code(n) / bnb_fp4_code(n)).
template <Bnb4Type T>
EXMY_HD std::uint32_t bnb4_code_cells(const Bnb4Cell* cells, float n) {
  const Bnb4Cell c = cells[bnb4_cell_of_key<T>(bnb4_cell_key<T>(n))];
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
