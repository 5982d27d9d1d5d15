// 8-bit codebooks: 256 fp32 values in [-1, 1], ascending, code = index (bitsandbytes' dynamic and
// linear maps, or a user table). The nearest-code lookup itself is sim/native/codebook_lookup.hpp.
#pragma once

#include <array>
#include <string>

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
Codebook load_codebook(const std::string& path);
// Validates a table (InputError naming `what`).
void validate_codebook(const Codebook& cb, const std::string& what);

}  // namespace exmy
