// Structured input samples for formats too wide to enumerate (fp32, fp64): boundary x pattern
// tables around every (or, for wide targets, every boundary and a sample of) representable value
// of a target format, plus special values and weighted random bit patterns. Used by campaign (c),
// the oracle tests and the properties.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/native/float_format.hpp"
#include "sim/verify/campaign.hpp"

namespace exmy::verify {

// Special codes of `in`: +-0, +-min/max subnormal, +-min normal, +-1, +-max, +-inf, quiet and
// signalling NaNs of both signs with payloads, and the first/last subnormal codes.
std::vector<std::uint64_t> special_inputs(const FloatFormat& in);

// Codes of `in` aimed at `target`'s rounding boundaries. For each chosen non-negative finite
// value v of `target` and its successor v' (for the largest finite, v' = max + one quantum, the
// overflow boundary): v and v's neighbours in `in`, the exact midpoint (v + v') / 2 and the codes
// one and two ulps of `in` either side of it, and the quarter points; all with both signs. The
// chosen values are every value when `target` has at most 4096 magnitudes, else the lowest and
// highest values, the ends of every binade and a Philox sample (fewer at Depth::ci). Also the
// special inputs and random bit patterns (uniform, and with exponents inside `target`'s range).
// Sorted, without duplicates.
std::vector<std::uint64_t> boundary_inputs(const FloatFormat& in, const FloatFormat& target,
                                           Depth depth);

}  // namespace exmy::verify
