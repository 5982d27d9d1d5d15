// A GEMM profile as EXMY_GEMM_PROFILE or `exmy probe gemm --out` gives it
// (sim/gemm/gemm_profile.hpp, issue 36): the entries and the launch records of a user's JSON file.
// Only InputError may escape.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/common/error.hpp"
#include "sim/gemm/gemm_profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s(reinterpret_cast<const char*>(data), size);
  try {
    (void)exmy::gemm::parse_gemm_profile(s, "profile.json");
  } catch (const exmy::InputError&) {
  }
  return 0;
}
