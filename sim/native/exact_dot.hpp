// Exact sums of products of fp32 values (a long, Kulisch-style fixed-point accumulator).
//
// Why it is exact: an fp32 value is m * 2^e with an integer m < 2^24 and e >= -149, so a product
// of two is an integer P < 2^48 times 2^(e1 + e2), e1 + e2 >= -298. The accumulator is a
// fixed-point number whose least significant bit weighs 2^-298 and whose most significant
// position covers the largest product (2^128 * 2^128) plus carries: every product is added
// without any rounding. It is kept as 32-bit digits stored in int64 limbs, so up to 2^31 adds of
// (< 2^32)-sized digit contributions cannot overflow a limb before carries are propagated
// (normalize() runs every 2^30 adds). The value is rounded once, to nearest even, only when
// read out (to_double), through the native engine's round_pack.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "sim/native/convert.hpp"

namespace exmy::native {

class ExactDot32 {
 public:
  // Weight of bit 0 is 2^kLsbExp. Products of fp32 span bits 0 .. 298 + 256 = 554 (plus 80-bit
  // shifted windows); 20 digits = 640 bits leave room for carries of 2^31 adds.
  static constexpr int kLsbExp = -298;
  static constexpr int kDigits = 20;

  void clear() {
    limbs_.fill(0);
    adds_ = 0;
  }

  // acc += sign * a * b, exactly. a, b must be finite (the report never feeds inf/NaN).
  void add_product(float a, float b, bool subtract = false) {
    std::uint32_t ba, bb;
    std::memcpy(&ba, &a, 4);
    std::memcpy(&bb, &b, 4);
    const std::uint32_t ea = (ba >> 23) & 0xFF, eb = (bb >> 23) & 0xFF;
    std::uint64_t ma = ba & 0x7FFFFF, mb = bb & 0x7FFFFF;
    // No branch on zeros or signs (both are data-dependent and mispredict on random operands):
    // a zero operand has ma or mb = 0 and adds a zero product; a negative product adds the
    // two's complement of each digit contribution. The limbs hold the same exact sum.
    // The implicit bit of normals; the exponent of the significand's unit, -149 for subnormals.
    ma |= static_cast<std::uint64_t>(ea != 0) << 23;
    mb |= static_cast<std::uint64_t>(eb != 0) << 23;
    const int xa = static_cast<int>(ea > 1 ? ea : 1) - 150;
    const int xb = static_cast<int>(eb > 1 ? eb : 1) - 150;
    const bool negative = (((ba ^ bb) >> 31) != 0) != subtract;
    const std::int64_t neg = -static_cast<std::int64_t>(negative);  // 0 or all ones
    const int pos = xa + xb - kLsbExp;                              // >= 0
    add_digits(ma * mb, pos, neg);
  }

  // acc += x, exactly. x must be finite and a multiple of 2^kLsbExp, as every sum of products of
  // fp32 values is (sim/fast/exact_dot_simd.cpp adds its partial sums this way).
  void add_double(double x) {
    std::uint64_t bx;
    std::memcpy(&bx, &x, 8);
    std::uint64_t m = bx & ((std::uint64_t{1} << 52) - 1);
    const int e = static_cast<int>((bx >> 52) & 0x7FF);
    if (e == 0 && m == 0) return;  // +-0 (a multiple of 2^-298 is never an fp64 subnormal)
    m |= std::uint64_t{1} << 52;
    const int tz = __builtin_ctzll(m);  // the unit of the value's last set bit: >= kLsbExp
    m >>= tz;
    const int pos = e - 1075 + tz - kLsbExp;
    const std::int64_t neg = -static_cast<std::int64_t>(bx >> 63);
    add_digits(m, pos, neg);
  }

  // acc += other (exact).
  void add(const ExactDot32& other, bool subtract = false) {
    for (int i = 0; i < kDigits; ++i) limbs_[i] += subtract ? -other.limbs_[i] : other.limbs_[i];
    adds_ += other.adds_ + 1;
    if (adds_ >= (1u << 30)) normalize();
  }

  // The exact value rounded once to fp64, ties to even (native::round_pack).
  double to_double() const {
    std::array<std::int64_t, kDigits> v = limbs_;
    carry(v);
    const bool negative = v[kDigits - 1] < 0;
    if (negative) {
      for (auto& x : v) x = -x;
      carry(v);
    }
    int top = kDigits - 1;
    while (top >= 0 && v[top] == 0) --top;
    if (top < 0) return 0.0;
    // 128-bit window of the top four digits, then everything below it as sticky.
    unsigned __int128 w = 0;
    for (int i = top; i >= top - 3; --i) {
      w = (w << 32) | static_cast<std::uint32_t>(i >= 0 ? v[i] : 0);
    }
    bool sticky = false;
    for (int i = top - 4; i >= 0; --i) sticky = sticky || v[i] != 0;
    const std::uint64_t hi = static_cast<std::uint64_t>(w >> 64);
    const std::uint64_t lo = static_cast<std::uint64_t>(w);
    const int lz = hi != 0 ? __builtin_clzll(hi) : 64 + __builtin_clzll(lo);
    const unsigned __int128 n = w << lz;
    const std::uint64_t sig = static_cast<std::uint64_t>(n >> 64);
    sticky = sticky || static_cast<std::uint64_t>(n) != 0;
    // Bit 127 of the window is bit 32 * top + 31 + 96 - ... : the window's bit 0 has weight
    // 2^(32 * (top - 3) + kLsbExp); its top set bit is at 127 - lz.
    const int exp = 32 * (top - 3) + kLsbExp + 127 - lz;
    const Encoded e = native::round_pack(formats::fp64, Rounding{}, negative, exp, sig, sticky, 0);
    return native::double_of(e.code);
  }

 private:
  // limbs_ += (-1)^negative mag 2^(pos + kLsbExp) (neg: 0 or all ones), mag < 2^53 and
  // pos >= 0: the shifted magnitude spans the three 32-bit digits from pos / 32, each added as
  // its two's complement when negative (no branch on the sign).
  void add_digits(std::uint64_t mag, int pos, std::int64_t neg) {
    const unsigned __int128 p = static_cast<unsigned __int128>(mag) << (pos & 31);
    const int d = pos >> 5;
    const std::int64_t d0 = static_cast<std::int64_t>(static_cast<std::uint32_t>(p));
    const std::int64_t d1 = static_cast<std::int64_t>(static_cast<std::uint32_t>(p >> 32));
    const std::int64_t d2 = static_cast<std::int64_t>(static_cast<std::uint32_t>(p >> 64));
    limbs_[d] += (d0 ^ neg) - neg;
    limbs_[d + 1] += (d1 ^ neg) - neg;
    limbs_[d + 2] += (d2 ^ neg) - neg;
    if (++adds_ >= (1u << 30)) normalize();
  }

  // Propagates carries so that every digit but the top one lies in [0, 2^32).
  static void carry(std::array<std::int64_t, kDigits>& v) {
    for (int i = 0; i + 1 < kDigits; ++i) {
      const std::int64_t c = v[i] >> 32;  // arithmetic shift: floor division by 2^32
      v[i] -= c * (std::int64_t{1} << 32);
      v[i + 1] += c;
    }
  }
  void normalize() {
    carry(limbs_);
    adds_ = 0;
  }

  std::array<std::int64_t, kDigits> limbs_{};
  std::uint32_t adds_ = 0;
};

}  // namespace exmy::native
