// bitsandbytes' dynamic 8-bit maps, bit for bit (docs/SEMANTICS.md section 5), built on the
// host. Here rather than in sim/format so that the CUDA optimizer kernels (gpu/optim) build their
// device tables from the same function without reaching into the format registry; sim/format's
// dynamic_codebook names the result. Host only.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace exmy::native {

// torch.linspace(start, end, steps) in float32 on the CPU, PyTorch >= 2.0 (the serial kernel of
// aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp; PR 89048 removed the vectorised path):
//   start, end = RN32 of the Python floats; step = RN32(RN32(end - start) / RN32(steps - 1));
//   idx <  steps/2: start + step * idx
//   idx >= steps/2: end - step * (steps - idx - 1)
// PyTorch's CPU kernels are compiled with FMA contraction (GCC's default -ffp-contract=fast with
// -mfma in the AVX2/AVX512 kernel builds), so each element is ONE fused multiply-add:
// fma(step, idx, start) and fma(-step, steps - idx - 1, end). Without the fusion, 42 of the 256
// entries of the signed dynamic map come out 1 ulp off the tables bitsandbytes users print.
inline std::vector<float> torch_linspace_f32(double start_d, double end_d, int steps) {
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
inline void bnb_dynamic_map(bool is_signed, std::array<float, 256>& out) {
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
  std::copy(data.begin(), data.end(), out.begin());
}

}  // namespace exmy::native
