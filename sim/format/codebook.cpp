#include "sim/format/codebook.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/io/files.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/bnb_dynamic_map.hpp"

namespace exmy {

namespace {

// bitsandbytes create_dynamic_map: sim/native/bnb_dynamic_map.hpp (the GPU builds its device
// tables from the same function).
Codebook make_dynamic(bool is_signed) {
  Codebook cb;
  cb.name = is_signed ? "dynamic" : "dynamic-unsigned";
  native::bnb_dynamic_map(is_signed, cb.values);
  return cb;
}

// bitsandbytes create_linear_map(signed, total_bits=8, add_zero=True): signed gives
// torch.linspace(-1, 1, 255) with a 0 inserted at index 127 (linspace's own middle element,
// fma(-step, 127, 1), lands at code 128); unsigned gives
// torch.linspace(0, 1, 256).
Codebook make_linear(bool is_signed) {
  Codebook cb;
  cb.name = is_signed ? "linear" : "linear-unsigned";
  if (is_signed) {
    const std::vector<float> v = native::torch_linspace_f32(-1.0, 1.0, 255);
    std::size_t o = 0;
    for (std::size_t k = 0; k < 127; ++k) cb.values[o++] = v[k];
    cb.values[o++] = 0.0f;
    for (std::size_t k = 127; k < 255; ++k) cb.values[o++] = v[k];
  } else {
    const std::vector<float> v = native::torch_linspace_f32(0.0, 1.0, 256);
    std::copy(v.begin(), v.end(), cb.values.begin());
  }
  return cb;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const Codebook& dynamic_codebook(bool is_signed) {
  static const Codebook s = make_dynamic(true);
  static const Codebook u = make_dynamic(false);
  return is_signed ? s : u;
}

const Codebook& linear_codebook(bool is_signed) {
  static const Codebook s = make_linear(true);
  static const Codebook u = make_linear(false);
  return is_signed ? s : u;
}

void validate_codebook(const Codebook& cb, const std::string& what) {
  for (std::size_t i = 0; i < 256; ++i) {
    const float v = cb.values[i];
    if (std::isnan(v)) throw InputError(what + ": entry " + std::to_string(i) + " is NaN");
    if (!(v >= -1.0f && v <= 1.0f)) {
      std::ostringstream os;
      os << what << ": entry " << i << " = " << v << " is outside [-1, 1]";
      throw InputError(os.str());
    }
    if (i > 0 && v < cb.values[i - 1]) {
      std::ostringstream os;
      os << what << ": entries must be ascending, but entry " << i << " = " << v << " < entry "
         << i - 1 << " = " << cb.values[i - 1];
      throw InputError(os.str());
    }
  }
}

Codebook codebook_from_text(std::string_view text, const std::string& path) {
  Codebook cb;
  cb.name = "table:" + path;
  std::vector<float> v;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream ls(line);
    std::string tok;
    while (ls >> tok) {
      if (v.size() == 256) {
        throw InputError(path + ": codebook has more than 256 entries, expected 256");
      }
      // The one number parser: the decimal rounded to the nearest float32 once.
      v.push_back(number::parse_f32(tok, path + ": entry " + std::to_string(v.size())));
    }
  }
  if (v.size() != 256) {
    throw InputError(path + ": codebook has " + std::to_string(v.size()) +
                     " entries, expected 256");
  }
  std::copy(v.begin(), v.end(), cb.values.begin());
  validate_codebook(cb, path);
  return cb;
}

Codebook load_codebook(const std::string& path) {
  if (!ends_with(path, ".npy")) {
    // Bounded before anything is read: /dev/zero or a huge file is refused by name, not read
    // until memory runs out (256 numbers with comments fit in far less than 1 MiB).
    return codebook_from_text(
        io::read_small_file(path, std::size_t{1} << 20, "a codebook of 256 numbers or a .npy"),
        path);
  }
  Codebook cb;
  cb.name = "table:" + path;
  // The header first: a valid .npy of gigabytes is refused by its count, not read.
  const io::NpyMappedFile f(path);
  if (f.header().descr != io::kDescrF32) {
    throw InputError(path + ": dtype '" + f.header().descr + "', expected '" + io::kDescrF32 + "'");
  }
  if (f.header().count() != 256) {
    throw InputError(path + ": codebook has " + std::to_string(f.header().count()) +
                     " entries, expected 256 float32");
  }
  std::vector<float> v(256);
  std::memcpy(v.data(), f.data(), 256 * sizeof(float));
  std::copy(v.begin(), v.end(), cb.values.begin());
  validate_codebook(cb, path);
  return cb;
}

}  // namespace exmy
