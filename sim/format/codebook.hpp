// 8-bit codebooks: 256 fp32 values in [-1, 1], ascending, code = index (bitsandbytes' dynamic and
// linear maps, or a user table). The nearest-code lookup itself is sim/native/codebook_lookup.hpp.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace exmy {

struct Codebook {
  std::string name;
  std::array<float, 256> values;
};

// bitsandbytes' create_dynamic_map(signed=is_signed), bit for bit (docs/SEMANTICS.md section 5).
const Codebook& dynamic_codebook(bool is_signed);
// bitsandbytes' create_linear_map(signed=is_signed) with its default 8 bits, bit for bit.
const Codebook& linear_codebook(bool is_signed);
// A user table: a text file of 256 numbers (whitespace/comma separated, '#' comments) or a .npy of
// 256 float32. Validates count, finiteness, range [-1, 1] and strict ascending order (InputError).
// Text files are read with a 1 MiB bound (a device or directory is refused by name).
Codebook load_codebook(const std::string& path);
// The text form of a table (`path` names it in messages), as load_codebook parses it.
Codebook codebook_from_text(std::string_view text, const std::string& path);
// Validates a table (InputError naming `what`).
void validate_codebook(const Codebook& cb, const std::string& what);

}  // namespace exmy
