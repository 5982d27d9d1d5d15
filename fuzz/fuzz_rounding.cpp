// Rounding-mode, overflow-policy and tie-rule strings (the rounding registry,
// sim/format/rounding_names.hpp) and the number parser the CLI reads integers with.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/format/rounding_names.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  using namespace exmy;
  try {
    const RoundSpec r = parse_round_spec(s);
    if (r.rounding.mode == RoundMode::sr && (r.rounding.sr_bits < 1 || r.rounding.sr_bits > 32)) {
      std::abort();
    }
  } catch (const InputError&) {
  }
  try {
    (void)parse_overflow(s);
  } catch (const InputError&) {
  }
  try {
    (void)parse_tie(s);
  } catch (const InputError&) {
  }
  try {
    (void)number::parse_u64(s, "x", 4096);
  } catch (const InputError&) {
  }
  return 0;
}
