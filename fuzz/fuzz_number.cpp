// The one number parser (sim/common/number.hpp): accepted text is a finite value equal to
// strtod's / strtof's correctly rounded reading of the same text; integers within their bounds.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  using namespace exmy;
  try {
    const double d = number::parse_f64(s, "x");
    if (!std::isfinite(d) || d != std::strtod(s.c_str(), nullptr)) std::abort();
  } catch (const InputError&) {
  }
  try {
    const float f = number::parse_f32(s, "x");
    if (!std::isfinite(f) || f != std::strtof(s.c_str(), nullptr)) std::abort();
  } catch (const InputError&) {
  }
  try {
    const std::uint64_t u = number::parse_u64(s, "x", 1000000007u);
    if (u > 1000000007u) std::abort();
  } catch (const InputError&) {
  }
  try {
    const std::int64_t i = number::parse_i64(s, "x", -5, INT64_MAX);
    // In range, and the value strtoll reads from the same (sign and digits only) text.
    if (i < -5 || i != std::strtoll(s.c_str(), nullptr, 10)) std::abort();
  } catch (const InputError&) {
  }
  return 0;
}
