// Format names <-> FloatFormat descriptors (host only). Names follow ml_dtypes / LLVM APFloat.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/native/float_format.hpp"

namespace exmy {

// Parses a preset name (fp32, bf16, e4m3fn, ...) or a generic name of the grammar
//   e<X>m<Y>[fn|fnuz|fnu][b<N>]
// where plain eXmY is IEEE-style (inf and NaN in the top exponent, subnormals, bias 2^(X-1)-1),
// "fn" is finite with NaN only at the all-ones code, "fnuz" is finite with NaN at the
// negative-zero code and bias one higher, "fnu" is unsigned (NaN at all-ones, no zero when Y = 0),
// and bN overrides the bias. Returns nullopt for anything else.
std::optional<FloatFormat> parse_float_format(std::string_view name);

// The canonical name of a descriptor: the preset name if it is one, else the generic grammar.
std::string float_format_name(const FloatFormat& f);

struct NamedFloatFormat {
  const char* name;
  FloatFormat format;
};
// All named presets, widest first.
const std::vector<NamedFloatFormat>& float_presets();
// The 8-bit-or-narrower presets (what the exhaustive campaigns sweep).
std::vector<NamedFloatFormat> narrow_float_presets();

}  // namespace exmy
