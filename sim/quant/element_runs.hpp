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
#include <cstddef>
#include <cstdint>
#include <vector>

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
