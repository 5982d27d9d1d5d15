// Rounding-mode, overflow-policy and tie-rule strings of the CLI (cli/cli_util.hpp).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cli/cli_util.hpp"
#include "sim/common/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  using namespace exmy;
  try {
    const cli::RoundSpec r = cli::parse_round_spec(s);
    if (r.rounding.mode == RoundMode::sr && (r.rounding.sr_bits < 1 || r.rounding.sr_bits > 32)) {
      std::abort();
    }
  } catch (const InputError&) {
  }
  try {
    (void)cli::parse_overflow(s);
  } catch (const InputError&) {
  }
  try {
    (void)cli::parse_tie(s);
  } catch (const InputError&) {
  }
  try {
    (void)cli::parse_uint(s, "x", 4096);
  } catch (const InputError&) {
  }
  return 0;
}
