// Boundary x pattern input tables (see sample_inputs.hpp).
#include "sim/verify/sample_inputs.hpp"

#include <algorithm>

#include "sim/native/philox.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/mpfr_value.hpp"

namespace exmy::verify {
namespace {

constexpr std::uint64_t kSampleSeed = 0x5A3D1E5EEDull;

std::uint64_t ones(int n) {
  return n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
}

// 64 random bits number i of a sample stream (Philox, as everywhere in exmy).
std::uint64_t random64(std::uint32_t stream, std::uint64_t i) {
  const auto b = native::philox_block(kSampleSeed, stream, i);
  return (std::uint64_t{b.w[0]} << 32) | b.w[1];
}

void with_signs(const FloatFormat& in, std::uint64_t magnitude, std::vector<std::uint64_t>& out) {
  const std::uint64_t mag_mask = ones(in.exp_bits + in.man_bits);
  if (magnitude > mag_mask) return;
  out.push_back(magnitude);
  if (in.is_signed) out.push_back(magnitude | (std::uint64_t{1} << (in.exp_bits + in.man_bits)));
}

// The code of `in` nearest to the positive value w (rne), as a magnitude.
std::uint64_t nearest_code(const FloatFormat& in, mpfr_srcptr w) {
  return oracle::encode(in, Rounding{}, w).code;
}

void add_around(const FloatFormat& in, std::uint64_t c, int reach,
                std::vector<std::uint64_t>& out) {
  for (int d = -reach; d <= reach; ++d) {
    if (d < 0 && c < static_cast<std::uint64_t>(-d)) continue;
    with_signs(in, c + static_cast<std::uint64_t>(static_cast<std::int64_t>(d)), out);
  }
}

}  // namespace

std::vector<std::uint64_t> special_inputs(const FloatFormat& in) {
  std::vector<std::uint64_t> out;
  const int M = in.man_bits;
  const std::uint64_t exp_top = ones(in.exp_bits) << M;
  for (std::uint64_t c : {std::uint64_t{0}, std::uint64_t{1}, ones(M), std::uint64_t{1} << M,
                          static_cast<std::uint64_t>(in.bias) << M, oracle::max_finite_code(in)}) {
    with_signs(in, c, out);
  }
  for (std::uint64_t k = 0; k < 32; ++k) {  // first and last subnormals
    with_signs(in, 1 + k, out);
    with_signs(in, ones(M) - k, out);
  }
  if (in.nan == NanEncoding::ieee) {
    // inf, the quiet NaN, signalling NaNs with the smallest and largest payloads, all-ones NaN.
    for (std::uint64_t m : {std::uint64_t{0}, std::uint64_t{1} << (M - 1), std::uint64_t{1},
                            ones(M - 1), ones(M), std::uint64_t{0x5A5}}) {
      with_signs(in, exp_top | m, out);
    }
  } else if (oracle::has_nan_code(in)) {
    out.push_back(oracle::canonical_nan(in, false));
    out.push_back(oracle::canonical_nan(in, true));
  }
  return out;
}

std::vector<std::uint64_t> boundary_inputs(const FloatFormat& in, const FloatFormat& target,
                                           Depth depth) {
  std::vector<std::uint64_t> out = special_inputs(in);
  const int Mt = target.man_bits;
  const std::uint64_t max_mag = oracle::max_finite_code(target);

  // The target values to surround.
  std::vector<std::uint64_t> chosen;
  const std::uint64_t mags = ones(target.exp_bits + target.man_bits) + 1;
  const bool full = depth == Depth::full;
  if (mags <= 4096) {
    for (std::uint64_t c = 0; c <= max_mag; ++c) chosen.push_back(c);
  } else {
    const std::uint64_t ends = full ? 256 : 48;
    for (std::uint64_t k = 0; k < ends; ++k) {
      chosen.push_back(k);
      chosen.push_back(max_mag - k);
    }
    for (std::uint64_t e = 0; e <= ones(target.exp_bits); ++e) {
      for (std::uint64_t m : {std::uint64_t{0}, std::uint64_t{1}, ones(Mt) - 1, ones(Mt)}) {
        const std::uint64_t c = (e << Mt) | (m & ones(Mt));
        if (c <= max_mag && (full || e % 4 == 0 || e < 3 || (max_mag >> Mt) - e < 3)) {
          chosen.push_back(c);
        }
      }
    }
    const std::uint64_t n = full ? 512 : 64;
    for (std::uint64_t k = 0; k < n; ++k) chosen.push_back(random64(1, k) % (max_mag + 1));
  }
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());

  oracle::MpfrValue v(128), next(128), step(128), point(128);
  for (std::uint64_t c : chosen) {
    const ValueClass cls = oracle::classify(target, c);
    if (cls == ValueClass::nan || cls == ValueClass::inf) continue;
    oracle::decode(target, c, v);
    mpfr_abs(v, v, MPFR_RNDN);  // the zero code: +0
    if (c == max_mag) {
      // Beyond the largest finite, one quantum of the top binade: the overflow boundary.
      mpfr_set_ui_2exp(step, 1, mpfr_get_exp(v) - 1 - Mt, MPFR_RNDN);
      mpfr_add(next, v, step, MPFR_RNDN);
    } else {
      oracle::decode(target, c + 1, next);
    }
    mpfr_sub(step, next, v, MPFR_RNDN);  // exact at 128 bits: both ends have <= 53 bits
    add_around(in, nearest_code(in, v), 1, out);
    for (int quarter : {1, 2, 3}) {  // quarter points; the midpoint gets two ulps either side
      mpfr_mul_ui(point, step, static_cast<unsigned long>(quarter), MPFR_RNDN);
      mpfr_div_2ui(point, point, 2, MPFR_RNDN);
      mpfr_add(point, point, v, MPFR_RNDN);
      add_around(in, nearest_code(in, point), quarter == 2 ? 2 : 0, out);
    }
  }

  // Random patterns: uniform bits, and exponents within [emin - M - 4, emax + 3] of the target.
  const std::uint64_t n = full ? 2048 : 256;
  const long t_emin = target.subnormals ? 1L - target.bias : -static_cast<long>(target.bias);
  const long t_emax = static_cast<long>(max_mag >> Mt) - target.bias;
  const long lo = t_emin - Mt - 4, hi = t_emax + 3;
  const int Mi = in.man_bits;
  const std::uint64_t all = ones(in.total_bits());
  for (std::uint64_t k = 0; k < n; ++k) {
    out.push_back(random64(2, k) & all);
    const std::uint64_t r = random64(3, k);
    const long e = lo + static_cast<long>(r % static_cast<std::uint64_t>(hi - lo + 1));
    const long efield = e + in.bias;
    if (efield < 1 || efield >= static_cast<long>(ones(in.exp_bits))) continue;
    with_signs(in, (static_cast<std::uint64_t>(efield) << Mi) | (random64(4, k) & ones(Mi)), out);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace exmy::verify
