// The --accum grammar of exmy gemm / layer (sim/gemm/accum_model.hpp, issue 36): every model
// string, under each operand width the CLI passes (8-bit codes, 16-bit, fp32). Only InputError may
// escape, and nothing may crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/common/error.hpp"
#include "sim/gemm/accum_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  for (const int bits : {8, 16, 32}) {
    try {
      (void)exmy::gemm::parse_accum_model(s, bits);
    } catch (const exmy::InputError&) {
    }
  }
  return 0;
}
