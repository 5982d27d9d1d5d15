// Independent reference pieces for the quantization tests: they decide by brute force or by
// C library rounding, sharing no code path with the native per-element functions.
#pragma once

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "sim/native/convert.hpp"

namespace exmy::quant_test {

// RN32 of an fp64 value: the C conversion in the default rounding mode (nearest even). The fp32
// operations of the spec are emulated as RN32(op in fp64): for +, -, *, / of fp32 operands this
// double rounding is innocuous (fp64 has >= 2*24+2 bits).
inline float rn32(double v) {
  return static_cast<float>(v);
}

// int8 code by C library rounding: nearbyint is round-half-even in the default mode.
inline int int8_rne_ref(double y) {
  if (std::isnan(y)) return 0;
  double r = std::nearbyint(y);
  if (r > 127) r = 127;
  if (r < -127) r = -127;
  return static_cast<int>(r);
}

// Nearest code of format f to y by exhaustive search over all codes (ties: even code, i.e. the
// one whose last mantissa bit is 0), with saturation to +-max. NaN -> the format's NaN or 0.
inline std::uint64_t nearest_code_satfinite(const FloatFormat& f, double y) {
  if (std::isnan(y)) return f.has_nan() ? f.nan_code(std::signbit(y)) : 0;
  const double fmax = native::to_double(f, f.max_code());
  if (y > fmax) y = fmax;
  if (y < -fmax) y = -fmax;
  std::uint64_t best = 0;
  double bestd = std::numeric_limits<double>::infinity();
  const std::uint64_t ncodes = std::uint64_t{1} << f.total_bits();
  for (std::uint64_t c = 0; c < ncodes; ++c) {
    const ValueClass cls = f.classify(c);
    if (cls == ValueClass::nan || cls == ValueClass::inf) continue;
    const double v = native::to_double(f, c);
    const double d = std::fabs(v - y);
    const bool tie_even = d == bestd && (c & 1) == 0;
    if (d < bestd || tie_even) {
      best = c;
      bestd = d;
    }
  }
  // Zero results keep y's sign where the format has -0.
  if (native::to_double(f, best) == 0.0) {
    best = (std::signbit(y) && f.has_neg_zero()) ? f.sign_bit() : 0;
  }
  return best;
}

// Weighted random fp32: mixes of magnitudes over many binades, exact ties, zeros and specials.
inline std::vector<float> random_floats(std::mt19937_64& rng, std::size_t n, float scale = 1.0f) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::uniform_int_distribution<int> e(-30, 10);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(std::ldexp(u(rng), e(rng))) * scale;
  return v;
}

}  // namespace exmy::quant_test
