// The element loops of quantize() and Dequantizer::values() (sim/quant/quantize.cpp) over runs:
// maximal stretches of row-major elements that share one group (the whole tensor, a row, a
// block, a tile's segment of a row). A run reads its group's state once, with no per-element
// group index (a 64-bit division for blocks and tiles), and the encode loop is instantiated with
// the plan's scale rule, element kind and rounding mode fixed, so that the switches of
// native::quant_element are decided once per tensor rather than once per element (the host loop
// does the dispatch; the native function does one element). Every element is still
// native::quant_element / dequant_element of the same plan: codes, flags and values are those of
// the per-element loops, which remain for column groups, transposed and packed codes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/native/fast_cast.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_plan.hpp"
#include "sim/quant/quantize.hpp"
#include "sim/quant/values.hpp"

namespace exmy::quant::runs {

// Whether the run loops cover a geometry: column groups change group at every element.
inline bool covers(native::GroupShape g) {
  return g != native::GroupShape::col;
}

// Calls f(i0, i1, group) for the runs of the flat indices [begin, end) of a rows x cols view.
template <class F>
void for_each_run(native::GroupShape shape, const Scheme& s, std::size_t cols, std::size_t begin,
                  std::size_t end, F&& f) {
  std::size_t i = begin;
  while (i < end) {
    std::size_t stop = end, g = 0;
    switch (shape) {
      case native::GroupShape::tensor:
        break;
      case native::GroupShape::row:
        g = i / cols;
        stop = std::min(end, (g + 1) * cols);
        break;
      case native::GroupShape::block:
        g = i / s.block;
        stop = std::min(end, (g + 1) * s.block);
        break;
      case native::GroupShape::tile: {
        const std::size_t r = i / cols, c = i % cols;
        const std::size_t tiles_across = (cols + s.tile_cols - 1) / s.tile_cols;
        g = (r / s.tile_rows) * tiles_across + c / s.tile_cols;
        stop = std::min(end, r * cols + std::min(cols, (c / s.tile_cols + 1) * s.tile_cols));
        break;
      }
      case native::GroupShape::col:  // not a run geometry (covers())
        g = i % cols;
        stop = i + 1;
        break;
    }
    f(i, stop, g);
    i = stop;
  }
}

// native::quant_element of an int8 absmax plan under rne with order div_mul or recip_mul, for
// the n fp32 elements of one run of group absmax a, without its per-element switches: the same
// scaling y = RN32(127 * RN32(x / a)) or RN32(127 * RN32(x * RN32(1 / a))) (absmax_scale; host
// fp32 operators are RN32, and a NaN y gives code 0 whatever its bits, so the canonical NaN of
// rn32_* changes nothing), then round_to_int8's rne: for |y| < 2^23, (|y| + 2^23) - 2^23 in fp32
// is |y| rounded to an integer, ties to even (the ulp of [2^23, 2^24) is 1); a larger |y| gives
// at least 2^23, which saturates like every |y| rounding above 127 (inf included). Flags as
// round_to_int8: invalid for NaN, overflow | inexact when saturated, inexact when not an integer.
// Written without branches on the data so that the compiler vectorises it.
inline std::uint32_t encode_int8_rne_run(const float* x, std::size_t n, float a,
                                         native::ScaleOrder order, std::uint8_t* codes) {
  if (a == 0.0f) {  // all-zero group: codes 0, no division (quant_element)
    std::fill(codes, codes + n, std::uint8_t{0});
    return 0;
  }
  const float Q = static_cast<float>(native::kInt8Max);
  const float r = 1.0f / a;
  const bool div = order == native::ScaleOrder::div_mul;
  std::uint32_t flags = 0;
  const auto one = [&](float y, std::size_t i) {
    const float ay = std::fabs(y);
    const float t = (ay + 8388608.0f) - 8388608.0f;
    const bool nan = y != y;
    const bool sat = t > Q;  // false for NaN
    const float tc = sat ? Q : (nan ? 0.0f : t);
    const auto v = static_cast<std::uint32_t>(static_cast<int>(tc));
    const bool neg = std::signbit(y);
    codes[i] = static_cast<std::uint8_t>(neg ? 0u - v : v);
    flags |= nan ? flag::invalid
                 : (sat ? flag::overflow | flag::inexact : (t != ay ? flag::inexact : 0u));
  };
  if (div) {
    for (std::size_t i = 0; i < n; ++i) one(Q * (x[i] / a), i);
  } else {
    for (std::size_t i = 0; i < n; ++i) one(Q * (x[i] * r), i);
  }
  return flags;
}

// Whether encode_fp8_rne_run serves a float target: a byte-wide format that the fast casts'
// normal-range arithmetic covers (sim/native/fast_cast.hpp: signed, subnormals, M >= 1, range
// inside fp32's).
inline bool fp8_rne_run_supported(const FloatFormat& f) {
  return native::fast_cast_supported(f) && f.total_bits() <= 8;
}

// native::quant_element of a float absmax plan under rne (overflow satfinite, as quant_element
// casts) with order div_mul or recip_mul, for the n fp32 elements of one run of group absmax
// a != 0: y = absmax_scale(x, a, fmax, order) with host fp32 operators, then, where |y| lies in
// [2^emin, fmax] (f's normal range, no overflow possible), the cast done as fast_cast_fp32 does
// it in that range: x' = |y|'s bits - ((127 - bias) << 23) holds f's exponent field and the 23
// mantissa bits, and the code is x' >> (23 - M) rounded to nearest even (a carry moves into the
// exponent field); inexact iff a discarded bit is set, the only flag such an input can raise
// (no overflow below fmax, no underflow at or above 2^emin). Every other y (zeros, f's
// subnormal range, above fmax, inf, NaN) takes native::cast_fp32 itself.
inline std::uint32_t encode_fp8_rne_run(const native::QuantPlan& p, const float* x, std::size_t n,
                                        float a, std::uint8_t* codes) {
  const FloatFormat& f = p.fmt;
  const int d = 23 - f.man_bits;
  const std::uint32_t rebias = static_cast<std::uint32_t>(127 - f.bias) << 23;
  const std::uint32_t lo = static_cast<std::uint32_t>(f.emin() + 127) << 23;
  const std::uint32_t span = native::bits_of(p.fmax) - lo;
  const std::uint32_t sign_bit = 1u << (f.total_bits() - 1);
  const std::uint32_t half_m1 = (1u << (d - 1)) - 1, low_mask = (1u << d) - 1;
  const Rounding r{RoundMode::rne, 0, Overflow::satfinite};
  const float r1 = 1.0f / a;
  const bool div = p.order == native::ScaleOrder::div_mul;
  std::uint32_t flags = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float y = div ? p.fmax * (x[i] / a) : p.fmax * (x[i] * r1);
    const std::uint32_t u = native::bits_of(y), m = u & 0x7FFFFFFFu;
    if (m - lo <= span) {
      const std::uint32_t v = m - rebias;
      const std::uint32_t t = (v + half_m1 + ((v >> d) & 1u)) >> d;
      codes[i] = static_cast<std::uint8_t>(((u >> 31) != 0 ? sign_bit : 0u) | t);
      flags |= (v & low_mask) != 0 ? flag::inexact : 0u;
    } else {
      const Encoded e = native::cast_fp32(f, native::rn32_canonical(y), r, 0);
      codes[i] = static_cast<std::uint8_t>(e.code);
      flags |= e.flags;
    }
  }
  return flags;
}

// kRuntime: the plan's own field, read per element as native::quant_element does.
inline constexpr int kRuntime = -1;

// The codes of x (row-major, rows x cols, not transposed, one byte each) into `codes`; returns
// the OR of the element flags. Rule, Elem and Mode, where not kRuntime, equal the plan's fields
// (encode() checks): the local copy states them as constants for the inlined quant_element.
template <int Rule, int Elem, int Mode>
std::uint32_t encode_fixed(const native::QuantPlan& plan, const Scheme& s, std::size_t cols,
                           const Values& x, const std::vector<std::uint32_t>& state,
                           std::uint8_t* codes) {
  native::QuantPlan p = plan;
  if constexpr (Rule != kRuntime) p.rule = static_cast<native::ScaleRule>(Rule);
  if constexpr (Elem != kRuntime) p.element = static_cast<native::ElementKind>(Elem);
  if constexpr (Mode != kRuntime) p.mode = static_cast<RoundMode>(Mode);
  const bool sr = p.mode == RoundMode::sr;
  const std::uint64_t seed = p.seed;
  const std::uint32_t stream = p.stream();
  std::uint32_t flags = 0;
  if constexpr (Rule == static_cast<int>(native::ScaleRule::absmax) &&
                Elem == static_cast<int>(native::ElementKind::int8) &&
                Mode == static_cast<int>(RoundMode::rne)) {
    const float* xf = x.f32_data();
    if (xf != nullptr &&
        (p.order == native::ScaleOrder::div_mul || p.order == native::ScaleOrder::recip_mul)) {
      for_each_run(p.groups, s, cols, 0, x.size(),
                   [&](std::size_t i0, std::size_t i1, std::size_t g) {
                     flags |= encode_int8_rne_run(xf + i0, i1 - i0, native::float_of(state[g]),
                                                  p.order, codes + i0);
                   });
      return flags;
    }
  }
  if constexpr (Rule == static_cast<int>(native::ScaleRule::absmax) &&
                Elem == static_cast<int>(native::ElementKind::float_format) &&
                Mode == static_cast<int>(RoundMode::rne)) {
    const float* xf = x.f32_data();
    if (xf != nullptr && fp8_rne_run_supported(p.fmt) &&
        (p.order == native::ScaleOrder::div_mul || p.order == native::ScaleOrder::recip_mul)) {
      for_each_run(p.groups, s, cols, 0, x.size(),
                   [&](std::size_t i0, std::size_t i1, std::size_t g) {
                     const float a = native::float_of(state[g]);
                     if (a != 0.0f) {
                       flags |= encode_fp8_rne_run(p, xf + i0, i1 - i0, a, codes + i0);
                       return;
                     }
                     for (std::size_t i = i0; i < i1; ++i) {  // all-zero group: x itself is cast
                       const Encoded e = native::quant_element(p, xf[i], state[g], 0u);
                       flags |= e.flags;
                       codes[i] = static_cast<std::uint8_t>(e.code);
                     }
                   });
      return flags;
    }
  }
  for_each_run(p.groups, s, cols, 0, x.size(), [&](std::size_t i0, std::size_t i1, std::size_t g) {
    const std::uint32_t st = state[g];
    for (std::size_t i = i0; i < i1; ++i) {
      const std::uint32_t word = sr ? native::philox_word(seed, stream, i) : 0u;
      const Encoded e = native::quant_element(p, x[i], st, word);
      flags |= e.flags;
      codes[i] = static_cast<std::uint8_t>(e.code);
    }
  });
  return flags;
}

// encode_fixed with the plan's rule, element kind and mode fixed where they are the report's and
// the quantize command's common cases; every other plan runs with them read at run time.
inline std::uint32_t encode(const native::QuantPlan& p, const Scheme& s, std::size_t cols,
                            const Values& x, const std::vector<std::uint32_t>& state,
                            std::uint8_t* codes) {
  using native::ElementKind;
  using native::ScaleRule;
  constexpr int kAbsmax = static_cast<int>(ScaleRule::absmax);
  constexpr int kMx = static_cast<int>(ScaleRule::mx);
  constexpr int kInt8 = static_cast<int>(ElementKind::int8);
  constexpr int kFloat = static_cast<int>(ElementKind::float_format);
  constexpr int kRne = static_cast<int>(RoundMode::rne);
  constexpr int kSr = static_cast<int>(RoundMode::sr);
  const bool rne = p.mode == RoundMode::rne, sr = p.mode == RoundMode::sr;
  if (p.rule == ScaleRule::absmax && p.element == ElementKind::int8) {
    if (rne) return encode_fixed<kAbsmax, kInt8, kRne>(p, s, cols, x, state, codes);
    if (sr) return encode_fixed<kAbsmax, kInt8, kSr>(p, s, cols, x, state, codes);
    return encode_fixed<kAbsmax, kInt8, kRuntime>(p, s, cols, x, state, codes);
  }
  if (p.rule == ScaleRule::absmax && p.element == ElementKind::float_format) {
    if (rne) return encode_fixed<kAbsmax, kFloat, kRne>(p, s, cols, x, state, codes);
    if (sr) return encode_fixed<kAbsmax, kFloat, kSr>(p, s, cols, x, state, codes);
    return encode_fixed<kAbsmax, kFloat, kRuntime>(p, s, cols, x, state, codes);
  }
  if (p.rule == ScaleRule::mx && p.element == ElementKind::float_format) {
    if (rne) return encode_fixed<kMx, kFloat, kRne>(p, s, cols, x, state, codes);
    if (sr) return encode_fixed<kMx, kFloat, kSr>(p, s, cols, x, state, codes);
    return encode_fixed<kMx, kFloat, kRuntime>(p, s, cols, x, state, codes);
  }
  return encode_fixed<kRuntime, kRuntime, kRuntime>(p, s, cols, x, state, codes);
}

// Dequantization of the flat elements [i0, i1) (not transposed) into out. dequant_element is a
// function of (code, state) alone, so each run keeps the values it has computed for its codes
// and looks up repeats: at most as many dequant_element calls as the per-element loop makes.
// Byte states (MX, NVFP4) recur across groups: their memo is kept across runs, indexed by state.
class DequantMemo {
 public:
  // `code_space`: codes lie in [0, code_space) (check_codes); `byte_states`: states are codes.
  DequantMemo(std::uint32_t code_space, bool byte_states)
      : space_(code_space), byte_states_(byte_states) {
    const std::size_t slots = byte_states ? 256 : 1;
    value_.resize(slots * space_);
    known_.assign(slots * space_, 0);
  }
  // A new run of group state `state`.
  void start(std::uint32_t state) {
    if (byte_states_) {
      base_ = (state & 0xFFu) * space_;
    } else if (state != state_ || !valid_) {
      std::fill(known_.begin(), known_.end(), std::uint8_t{0});
      state_ = state;
      valid_ = true;
    }
  }
  float get(const native::QuantPlan& p, std::uint32_t code, std::uint32_t state) {
    const std::size_t at = base_ + code;
    if (known_[at] == 0) {
      value_[at] = native::dequant_element(p, code, state);
      known_[at] = 1;
    }
    return value_[at];
  }

 private:
  std::uint32_t space_;
  bool byte_states_;
  std::size_t base_ = 0;
  std::uint32_t state_ = 0;
  bool valid_ = false;
  std::vector<float> value_;
  std::vector<std::uint8_t> known_;
};

}  // namespace exmy::quant::runs
