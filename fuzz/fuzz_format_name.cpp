// The format-name grammar (sim/format/registry.hpp parse_format) and the quantizer's target and
// scheme names. Names naming a file (table:PATH) are skipped: the fuzzer is not to read files.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/quant/quantize.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  if (s.find("table:") != std::string::npos) return 0;
  try {
    const exmy::Format f = exmy::parse_format(s);
    // An accepted name parses again to a format of the same width.
    const exmy::Format g = exmy::parse_format(f.name);
    if (g.code_bits() != f.code_bits()) std::abort();
  } catch (const exmy::InputError&) {
  }
  try {
    (void)exmy::quant::parse_target(s);
  } catch (const exmy::InputError&) {
  }
  try {
    (void)exmy::quant::parse_scheme(s);
  } catch (const exmy::InputError&) {
  }
  return 0;
}
