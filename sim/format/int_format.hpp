// Integer format names <-> IntFormat (host only). The descriptor and its rounding live in
// sim/native/int_format.hpp (usable in kernels).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/native/int_format.hpp"

namespace exmy {

// Grammar (docs/SEMANTICS.md 5.1), N = 2..32:
//   int<N>      symmetric signed, -(2^(N-1)-1) .. 2^(N-1)-1 (int8: -127..127, as SwitchBack)
//   int<N>full  two's complement, -2^(N-1) .. 2^(N-1)-1 (int8full: -128..127)
//   uint<N>     0 .. 2^N - 1
// Returns nullopt for anything else.
std::optional<IntFormat> parse_int_format(std::string_view name);
std::string int_format_name(const IntFormat& f);

}  // namespace exmy
