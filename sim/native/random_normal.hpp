// Normal and Student-t variates from Philox4x32-10 (sim/native/philox.hpp), as pure functions of
// (seed, stream, index): any thread may generate any element, so results never depend on the
// thread count.
//
// Box–Muller: block b = philox_block(seed, stream, b) gives four words w0..w3;
//   U1 = uniform53(w0, w1) in (0, 1) (53 random bits, see below),
//   U2 likewise from w2, w3,
//   r = sqrt(-2 ln U1), z0 = r cos(2 pi U2), z1 = r sin(2 pi U2)   (fp64, libm),
// normal number j of the stream is z_(j mod 2) of block j / 2. The report rounds each variate to
// fp32 (RN) once: the experiments work on fp32 tensors, as training does. libm's log/cos/sin
// are deterministic on one machine; the rounding to fp32 makes a cross-libm difference (< 1 ulp
// of fp64) visible only with probability ~2^-29 per element.
#pragma once

#include <cmath>
#include <cstdint>

#include "sim/native/philox.hpp"

namespace exmy::native {

// A uniform in (0, 1) with 53 random bits: (2^27 * (a >> 6) + (b >> 5) + 1/2) * 2^-53.
inline double uniform53(std::uint32_t a, std::uint32_t b) {
  const std::uint64_t bits = (static_cast<std::uint64_t>(a >> 6) << 27) | (b >> 5);  // 53 bits
  return (static_cast<double>(bits) + 0.5) * 0x1p-53;
}

// Standard normal number j of (seed, stream), in fp64.
inline double normal_fp64(std::uint64_t seed, std::uint32_t stream, std::uint64_t j) {
  const Philox4 w = philox_block(seed, stream, j >> 1);
  const double u1 = uniform53(w.w[0], w.w[1]);
  const double u2 = uniform53(w.w[2], w.w[3]);
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double t = 6.283185307179586 * u2;  // 2 pi, rounded to fp64
  return (j & 1) ? r * std::sin(t) : r * std::cos(t);
}

// Student-t with nu (integer, >= 1) degrees of freedom, element j: Z / sqrt(chi2_nu / nu), where
// Z and the nu squared normals of chi2 are normals (nu + 1) * j .. (nu + 1) * j + nu.
inline double student_t_fp64(std::uint64_t seed, std::uint32_t stream, std::uint64_t j, int nu) {
  const std::uint64_t base = static_cast<std::uint64_t>(nu + 1) * j;
  const double z = normal_fp64(seed, stream, base);
  double chi2 = 0.0;
  for (int i = 1; i <= nu; ++i) {
    const double g = normal_fp64(seed, stream, base + static_cast<std::uint64_t>(i));
    chi2 += g * g;
  }
  return z / std::sqrt(chi2 / nu);
}

}  // namespace exmy::native
