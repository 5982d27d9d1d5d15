#include "reports/format_profile.hpp"

#include <cmath>

#include "sim/native/convert.hpp"

namespace exmy::reports {

namespace {
double round_rne(const FloatFormat& f, double x) {
  const Encoded e = native::convert(formats::fp64, f, Rounding{}, native::bits_of(x));
  return native::to_double(f, e.code);
}
}  // namespace

FormatLimits format_limits(const std::string& name, const FloatFormat& f) {
  FormatLimits l;
  l.name = name;
  l.fmt = f;
  l.max = native::to_double(f, f.max_code());
  l.min_normal = std::ldexp(1.0, f.emin());
  l.min_positive = f.subnormals ? std::ldexp(1.0, f.emin() - f.man_bits) : l.min_normal;
  // Differences of logs: max / min_positive overflows fp64 for fp64 itself.
  l.decades_total = std::log10(l.max) - std::log10(l.min_positive);
  l.decades_normal = std::log10(l.max) - std::log10(l.min_normal);
  l.unit_roundoff = std::ldexp(1.0, -(f.man_bits + 1));
  l.sharp_bound = l.unit_roundoff / (1.0 + l.unit_roundoff);
  return l;
}

std::vector<BinadeProfile> binade_profiles(const FloatFormat& f, int grid) {
  std::vector<BinadeProfile> out;
  if (f.total_bits() > 32) return out;
  const int M = f.man_bits, emin = f.emin();
  const double max = native::to_double(f, f.max_code());
  const int e_lo = f.subnormals ? emin - M : emin;
  for (int e = e_lo; e <= f.emax(); ++e) {
    BinadeProfile b;
    b.e = e;
    b.subnormal = e < emin;
    const double base = std::ldexp(1.0, e);
    const double q = std::ldexp(1.0, (e > emin ? e : emin) - M);
    b.bound = (q / 2) / (base + q / 2);
    b.mean_approx = (q / 4) * std::log(2.0) / base;
    double sum = 0;
    int n = 0;
    for (int j = 0; j < grid; ++j) {
      const double x = base * (1.0 + (j + 0.5) / grid);
      if (x > max) break;
      const double rel = std::fabs(round_rne(f, x) - x) / x;
      sum += rel;
      ++n;
      if (rel > b.max_rel) b.max_rel = rel;
    }
    const double mid = base + q / 2;  // the worst point: half a quantum above the binade start
    b.has_worst_point = mid <= max;
    if (b.has_worst_point) {
      const double rel = std::fabs(round_rne(f, mid) - mid) / mid;
      if (rel > b.max_rel) b.max_rel = rel;
    }
    b.points = n;
    b.mean_rel = n ? sum / n : 0;
    out.push_back(b);
  }
  return out;
}

std::vector<double> sr_fractions(int n) {
  std::vector<double> fr;
  const double phi = 0.6180339887498949;
  for (int j = 0; j < n; ++j) {
    double v = (j + 0.5) * phi;
    v -= std::floor(v);
    v = std::floor(v * 0x1p40) * 0x1p-40;
    if (v == 0) v = 0x1p-40;
    fr.push_back(v);
  }
  return fr;
}

std::vector<SrPoint> sr_profile(const FloatFormat& f, int R, const std::vector<double>& fracs) {
  std::vector<SrPoint> out;
  const int M = f.man_bits;
  const double q = std::ldexp(1.0, -M);
  const Rounding sr{RoundMode::sr, R, Overflow::none};
  const std::uint32_t words = 1u << R;
  for (double fr : fracs) {
    SrPoint p;
    p.f = fr;
    const double x = 1.0 + (1.0 + fr) * q;
    const double lo = 1.0 + q;
    const std::uint64_t bits = native::bits_of(x);
    // Every word once: E and Var exactly (x^ takes two values, so count the upward ones).
    std::uint64_t ups = 0;
    for (std::uint32_t w = 0; w < words; ++w) {
      const Encoded e = native::convert(formats::fp64, f, sr, bits, w);
      if (native::to_double(f, e.code) != lo) ++ups;
    }
    const double pu = static_cast<double>(ups) / words;
    p.bias_ulp = (lo + pu * q - x) / q;
    p.var_ulp2 = pu * (1 - pu);
    const double pc = std::floor(fr * words) / words;
    p.bias_closed = pc - fr;
    p.var_closed = pc * (1 - pc);
    p.rne_err_ulp = (round_rne(f, x) - x) / q;
    out.push_back(p);
  }
  return out;
}

}  // namespace exmy::reports
