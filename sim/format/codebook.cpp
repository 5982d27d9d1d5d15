#include "sim/format/codebook.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"

namespace exmy {

namespace {

// torch.linspace(start, end, steps) in float32 on the CPU, PyTorch >= 2.0 (the serial kernel of
// aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp; PR 89048 removed the vectorised path):
//   start, end = RN32 of the Python floats; step = RN32(RN32(end - start) / RN32(steps - 1));
//   idx <  steps/2: start + step * idx
//   idx >= steps/2: end - step * (steps - idx - 1)
// PyTorch's CPU kernels are compiled with FMA contraction (GCC's default -ffp-contract=fast with
// -mfma in the AVX2/AVX512 kernel builds), so each element is ONE fused multiply-add:
// fma(step, idx, start) and fma(-step, steps - idx - 1, end). Without the fusion, 42 of the 256
// entries of the signed dynamic map come out 1 ulp off the tables bitsandbytes users print.
std::vector<float> torch_linspace_f32(double start_d, double end_d, int steps) {
  const float start = static_cast<float>(start_d);
  const float end = static_cast<float>(end_d);
  std::vector<float> out(static_cast<std::size_t>(steps));
  if (steps == 1) {
    out[0] = start;
    return out;
  }
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int halfway = steps / 2;
  for (int idx = 0; idx < steps; ++idx) {
    out[static_cast<std::size_t>(idx)] =
        idx < halfway ? std::fma(step, static_cast<float>(idx), start)
                      : std::fma(-step, static_cast<float>(steps - idx - 1), end);
  }
  return out;
}

// bitsandbytes create_dynamic_map(signed, max_exponent_bits=7, total_bits=8). For exponent group
// i = 0..6 it takes n = 2^i + 1 (signed) or 2^(i+1) + 1 (unsigned) boundaries
// torch.linspace(0.1, 1, n), their float32 means RN32(b_k + b_{k+1}) / 2 (the division by 2.0 is
// exact), and scales them by the Python float 10**(i-6): torch casts that double scalar to float32
// (RN32 of the correctly rounded double) and multiplies in float32, one more RN32. Group 6 scales
// by the int 1 (exact). Signed maps add the negated values; then 0 and 1.0 are appended, the list
// is sorted, and torch.Tensor() stores it exactly (every entry is already a float32).
// non_sign_bits is 7 for both signs (the code reads `total_bits - (1 if signed else 1)`), so
// additional_items is 0 and the tables hold 127*2 + 2 and 254 + 2 entries.
Codebook make_dynamic(bool is_signed) {
  std::vector<float> data;
  for (int i = 0; i < 7; ++i) {
    const int n = is_signed ? (1 << i) + 1 : (1 << (i + 1)) + 1;
    const std::vector<float> b = torch_linspace_f32(0.1, 1.0, n);
    // 10**(i-6) as Python computes it: a correctly rounded double (strtod of the decimal).
    const double scale_d =
        i == 6 ? 1.0 : std::strtod(("1e" + std::to_string(i - 6)).c_str(), nullptr);
    const float scale = static_cast<float>(scale_d);
    for (int k = 0; k + 1 < n; ++k) {
      const float mean =
          (b[static_cast<std::size_t>(k)] + b[static_cast<std::size_t>(k + 1)]) / 2.0f;
      data.push_back(scale * mean);
      if (is_signed) data.push_back(-scale * mean);
    }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  std::sort(data.begin(), data.end());
  if (data.size() != 256) throw std::logic_error("dynamic map: expected 256 entries");
  Codebook cb;
  cb.name = is_signed ? "dynamic" : "dynamic-unsigned";
  std::copy(data.begin(), data.end(), cb.values.begin());
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
    const std::vector<float> v = torch_linspace_f32(-1.0, 1.0, 255);
    std::size_t o = 0;
    for (std::size_t k = 0; k < 127; ++k) cb.values[o++] = v[k];
    cb.values[o++] = 0.0f;
    for (std::size_t k = 127; k < 255; ++k) cb.values[o++] = v[k];
  } else {
    const std::vector<float> v = torch_linspace_f32(0.0, 1.0, 256);
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

Codebook load_codebook(const std::string& path) {
  Codebook cb;
  cb.name = "table:" + path;
  if (ends_with(path, ".npy")) {
    const io::NpyArray a = io::read_npy(path);
    const std::vector<float> v = io::as_f32(a, path);
    if (v.size() != 256) {
      throw InputError(path + ": codebook has " + std::to_string(v.size()) +
                       " entries, expected 256 float32");
    }
    std::copy(v.begin(), v.end(), cb.values.begin());
  } else {
    std::ifstream in(path);
    if (!in) throw InputError(path + ": cannot open codebook (expected 256 numbers or a .npy)");
    std::vector<float> v;
    std::string line;
    while (std::getline(in, line)) {
      const std::size_t hash = line.find('#');
      if (hash != std::string::npos) line.resize(hash);
      std::replace(line.begin(), line.end(), ',', ' ');
      std::istringstream ls(line);
      std::string tok;
      while (ls >> tok) {
        char* end = nullptr;
        // strtof rounds the decimal text to the nearest float32 once (no double step).
        const float x = std::strtof(tok.c_str(), &end);
        if (end == tok.c_str() || *end != '\0') {
          throw InputError(path + ": '" + tok + "' is not a number (expected 256 numbers)");
        }
        v.push_back(x);
      }
    }
    if (v.size() != 256) {
      throw InputError(path + ": codebook has " + std::to_string(v.size()) +
                       " entries, expected 256");
    }
    std::copy(v.begin(), v.end(), cb.values.begin());
  }
  validate_codebook(cb, path);
  return cb;
}

}  // namespace exmy
