// Split formats "bf16+k" / "fp16+k" (seed 004; docs/SEMANTICS.md section 6): a value of the
// extended format e8m(7+k) / e5m(10+k) (bf16's / fp16's exponent, bias, subnormals and IEEE
// specials with k more mantissa bits) stored as its top 16 bits (a bf16/fp16 code) plus its low k
// bits, packed densely. Optionally the 16-bit part is stochastically rounded up and one more bit
// per element records that, so the exact value can be restored ("un-rounded") before the update.
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/fp32_ops.hpp"
#include "sim/native/optim_storage.hpp"
#include "sim/native/philox.hpp"

namespace exmy::native {

struct SplitFormat {
  Storage hi = Storage::bf16;  // bf16 or f16
  int k = 8;                   // extra mantissa bits: bf16 0..16, fp16 0..13 (fp32 holds 10+13)
  bool sr = false;             // stochastic rounding of the 16-bit part, plus the "rounded up" bit
  // With hi = f16: the stored part is e5m2, fp16's top 8 bits ("e5m2 fp8 is equivalent to a
  // truncated fp16", Lewandowski and Kosson, table 3): extended format e5m(2+k), k 0..21.
  bool fp8 = false;
};

// Mantissa bits of the stored (forward) part: bf16 7, fp16 10, e5m2 2.
EXMY_HD constexpr int split_hi_man(const SplitFormat& f) {
  return f.hi == Storage::bf16 ? 7 : f.fp8 ? 2 : 10;
}

// Bits per element in the packed stream: the k extra bits, then (sr) the rounded-up bit above them.
EXMY_HD constexpr int split_field_bits(const SplitFormat& f) {
  return f.k + (f.sr ? 1 : 0);
}

// Largest finite 16-bit magnitude (stochastic rounding never rounds it up into inf).
EXMY_HD constexpr std::uint16_t split_hi_max(const SplitFormat& f) {
  return f.hi == Storage::bf16 ? 0x7F7Fu : f.fp8 ? 0x7Bu : 0x7BFFu;
}

// The magnitude bits of a stored code (all but its sign bit).
EXMY_HD constexpr std::uint16_t split_hi_mag_mask(const SplitFormat& f) {
  return f.fp8 ? 0x7Fu : 0x7FFFu;
}

// fp32 -> code of the extended format, truncating (rtz; fp16+k: finite values beyond the
// extended maximum saturate to it, as rtz overflow does, and NaN becomes the quiet NaN).
EXMY_HD std::uint32_t split_truncate(float x, const SplitFormat& f) {
  const std::uint32_t u = f32_bits(x);
  if (f.hi == Storage::bf16) {
    if (f32_is_nan(x)) {
      return ((u >> 31) << (15 + f.k)) | (0xFFu << (7 + f.k)) | (1u << (6 + f.k));
    }
    return u >> (16 - f.k);
  }
  constexpr FloatFormat kF32{8, 23, 127, true, true, NanEncoding::ieee, true};
  const FloatFormat ext{5, split_hi_man(f) + f.k, 15, true, true, NanEncoding::ieee, true};
  return static_cast<std::uint32_t>(
      convert(kF32, ext, Rounding{RoundMode::rtz, 0, Overflow::none}, u).code);
}

// Extended code -> fp32 (exact: 7+16 and 10+13 mantissa bits fit in fp32's 23).
EXMY_HD float split_decode(std::uint32_t code, const SplitFormat& f) {
  if (f.hi == Storage::bf16) return f32_from_bits(code << (16 - f.k));
  constexpr FloatFormat kF32{8, 23, 127, true, true, NanEncoding::ieee, true};
  const FloatFormat ext{5, split_hi_man(f) + f.k, 15, true, true, NanEncoding::ieee, true};
  return f32_from_bits(static_cast<std::uint32_t>(convert(ext, kF32, Rounding{}, code).code));
}

// Split x. `rand` is the element's 32-bit Philox word (used only with sr: its top k bits).
EXMY_HD void split_value(float x, const SplitFormat& f, std::uint32_t rand, std::uint16_t& hi,
                         std::uint32_t& field) {
  const std::uint32_t code = split_truncate(x, f);
  const std::uint32_t kmask = f.k == 0 ? 0u : (0xFFFFFFFFu >> (32 - f.k));
  hi = static_cast<std::uint16_t>(code >> f.k);
  field = code & kmask;
  if (f.sr && f.k > 0) {
    // sr:k on the discarded k bits (section 3.1): up iff extra + r >= 2^k, r = top k bits.
    const std::uint32_t r = rand >> (32 - f.k);
    const bool up = static_cast<std::uint64_t>(field) + r >= (std::uint64_t{1} << f.k) &&
                    (hi & split_hi_mag_mask(f)) != split_hi_max(f);
    if (up) {
      hi = static_cast<std::uint16_t>(hi + 1);  // magnitude + 1: away from zero, carries exponent
      field |= 1u << f.k;
    }
  }
}

// The 16-bit code with the rounding undone (the truncated top half of the extended value).
EXMY_HD std::uint16_t split_unround(std::uint16_t hi, std::uint32_t field, const SplitFormat& f) {
  return (f.sr && ((field >> f.k) & 1u) != 0) ? static_cast<std::uint16_t>(hi - 1) : hi;
}

EXMY_HD float split_join(std::uint16_t hi, std::uint32_t field, const SplitFormat& f) {
  const std::uint32_t kmask = f.k == 0 ? 0u : (0xFFFFFFFFu >> (32 - f.k));
  const std::uint32_t code =
      (static_cast<std::uint32_t>(split_unround(hi, field, f)) << f.k) | (field & kmask);
  return split_decode(code, f);
}

// The value the 16-bit part alone represents (what a forward pass reads).
EXMY_HD float split_hi_value(std::uint16_t hi, const SplitFormat& f) {
  if (f.hi == Storage::bf16) return f32_from_bf16(hi);
  return f32_from_f16(f.fp8 ? static_cast<std::uint16_t>(hi << 8) : hi);
}

// ---- dense packing
// ------------------------------------------------------------------------------- Element i's field
// of w bits occupies bits [i*w, i*w + w) of a little-endian bit stream, stream bit b being bit (b
// mod 32) of word b / 32; a field may straddle two words. 32 elements fill w words exactly, so a
// tensor of n elements takes ceil(n / 32) * w words (the tail is zero).
EXMY_HD std::uint64_t split_words(std::uint64_t n, int w) {
  return (n + 31) / 32 * static_cast<std::uint64_t>(w);
}

EXMY_HD std::uint32_t field_get(const std::uint32_t* words, std::uint64_t i, int w) {
  if (w == 0) return 0;
  const std::uint64_t bit = i * static_cast<std::uint64_t>(w);
  const std::uint64_t wi = bit >> 5;
  const int off = static_cast<int>(bit & 31);
  std::uint64_t v = words[wi] >> off;
  if (off + w > 32) v |= static_cast<std::uint64_t>(words[wi + 1]) << (32 - off);
  return static_cast<std::uint32_t>(v & ((std::uint64_t{1} << w) - 1));
}

EXMY_HD void field_put(std::uint32_t* words, std::uint64_t i, int w, std::uint32_t value) {
  if (w == 0) return;
  const std::uint64_t bit = i * static_cast<std::uint64_t>(w);
  const std::uint64_t wi = bit >> 5;
  const int off = static_cast<int>(bit & 31);
  const std::uint64_t mask = ((std::uint64_t{1} << w) - 1) << off;
  const std::uint64_t val = (static_cast<std::uint64_t>(value) << off) & mask;
  words[wi] = static_cast<std::uint32_t>((words[wi] & ~mask) | val);
  if (off + w > 32) {
    const std::uint64_t hmask = mask >> 32, hval = val >> 32;
    words[wi + 1] = static_cast<std::uint32_t>((words[wi + 1] & ~hmask) | hval);
  }
}

// Random word of element i at step t (stream 9, key = seed + t; section 3.2's mapping).
inline constexpr std::uint32_t kSplitSrStream = 9;
EXMY_HD std::uint32_t split_sr_word(std::uint64_t seed, std::uint64_t step, std::uint64_t i) {
  return philox_word(seed + step, kSplitSrStream, i);
}

}  // namespace exmy::native
