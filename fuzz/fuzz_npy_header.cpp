// The one NPY header validator (sim/io/npy.hpp): any bytes as a whole file. Accepted headers must
// describe exactly the bytes there are; nothing may crash, overflow or allocate by the header.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const exmy::io::NpyHeader h = exmy::io::parse_npy_header(data, size, size, "fuzz.npy");
    // Invariants of an accepted header: the data fits the file exactly, and the element count
    // times the item size is that many bytes (no wrap).
    const std::size_t bytes = h.count() * h.item_size();
    if (h.item_size() == 0 || h.data_offset > size || size - h.data_offset != bytes) std::abort();
  } catch (const exmy::InputError&) {
  }
  return 0;
}
