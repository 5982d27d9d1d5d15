// Codebook tables in text form (sim/format/codebook.hpp codebook_from_text): an accepted table
// has 256 ascending finite entries in [-1, 1].
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/common/error.hpp"
#include "sim/format/codebook.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view s(reinterpret_cast<const char*>(data), size);
  try {
    const exmy::Codebook cb = exmy::codebook_from_text(s, "fuzz.txt");
    for (std::size_t i = 0; i < 256; ++i) {
      if (!(cb.values[i] >= -1.0f && cb.values[i] <= 1.0f)) std::abort();
      if (i > 0 && cb.values[i] < cb.values[i - 1]) std::abort();
    }
  } catch (const exmy::InputError&) {
  }
  return 0;
}
