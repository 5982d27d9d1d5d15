// Labels for RapidCheck's distribution report (RC_CLASSIFY): which input classes and rounding
// situations a generated case hit (zero, subnormal, normal, inf, NaN; tie, overflow; all-zero
// group), so that a run shows whether the hard cases were exercised at all. Labels only: nothing
// here asserts, and the properties check exactly what they checked without it.
#pragma once

#include <rapidcheck.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include "sim/native/convert.hpp"

namespace exmy::testing {

// The labels of one case: added while the case runs, reported once by emit() at its end.
class CaseLabels {
 public:
  void add(const std::string& label) { labels_.insert(label); }
  // The class of `bits` in `f` (class_name: zero, subnormal, normal, inf, nan).
  void add_class(const FloatFormat& f, std::uint64_t bits) { add(class_name(f.classify(bits))); }
  void add_fp32(float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    add_class(formats::fp32, u);
  }
  template <class T>
  void add_fp32(const T* v, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) add_fp32(v[i]);
  }
  // The input's class, and what its conversion to `to` meets: an exact tie (round-to-nearest
  // even and away disagree only on a tie) and an overflow (the IEEE flag under rne).
  void add_conversion(const FloatFormat& from, const FloatFormat& to, std::uint64_t bits) {
    add_class(from, bits);
    const Encoded ne = native::convert(from, to, Rounding{RoundMode::rne}, bits);
    const Encoded na = native::convert(from, to, Rounding{RoundMode::rna}, bits);
    if (ne.code != na.code) add("tie");
    if ((ne.flags & flag::overflow) != 0) add("overflow");
  }
  // "all-zero group" when some aligned group of `group` values is all +-0 (a block absmax of 0).
  void add_zero_groups(const float* v, std::size_t n, std::size_t group) {
    for (std::size_t b = 0; b + group <= n; b += group) {
      bool all_zero = true;
      for (std::size_t i = b; i < b + group && all_zero; ++i) all_zero = v[i] == 0.0f;
      if (all_zero) {
        add("all-zero group");
        return;
      }
    }
  }
  // Reports the labels; called at the end of the case (a failing case needs none).
  void emit() const {
    for (const std::string& l : labels_) RC_CLASSIFY(true, l);
  }

 private:
  std::set<std::string> labels_;
};

}  // namespace exmy::testing
