// docs/SEMANTICS.md 7.1 (groups), 7.2 (absmax) and the shared pieces of the quantization oracle
// (quant_detail.hpp): powers of two, clamps, the element cast, the random words of 3.2.
#include <stdexcept>

#include "sim/oracle/steps/quant_detail.hpp"

namespace exmy::oracle::steps::quant {

std::size_t group_count(const Layout& l) {
  const std::size_t n = l.size();
  switch (l.groups) {
    case Groups::tensor:
      return 1;
    case Groups::rowwise:
      return l.rows;
    case Groups::colwise:
      return l.cols;
    case Groups::block:
      return (n + l.block - 1) / l.block;
    case Groups::mx:
      return (n + 31) / 32;
    case Groups::nvfp4:
      return n / 16;
    case Groups::tile:
      return ((l.rows + l.tile_rows - 1) / l.tile_rows) *
             ((l.cols + l.tile_cols - 1) / l.tile_cols);
  }
  return 1;
}

std::size_t group_of(const Layout& l, std::size_t i) {
  switch (l.groups) {
    case Groups::tensor:
      return 0;
    case Groups::rowwise:
      return i / l.cols;
    case Groups::colwise:
      return i % l.cols;
    case Groups::block:
      return i / l.block;
    case Groups::mx:
      return i / 32;
    case Groups::nvfp4:  // 16 consecutive elements along the last dimension (cols % 16 == 0)
      return (i / l.cols) * (l.cols / 16) + (i % l.cols) / 16;
    case Groups::tile:  // tile (r / R, c / C), partial tiles at the bottom and right edges
      return (i / l.cols / l.tile_rows) * ((l.cols + l.tile_cols - 1) / l.tile_cols) +
             (i % l.cols) / l.tile_cols;
  }
  return 0;
}

Tensor group_absmax(const Tensor& x, const Layout& l, NanRule nan) {
  Tensor a(group_count(l));  // +0: the empty max
  for (std::size_t i = 0; i < x.size(); ++i) {
    Real& m = a[group_of(l, i)];
    if (m.is_nan()) continue;
    if (x[i].is_nan()) {
      if (nan == NanRule::propagate) m = Real::nan();  // canonical +NaN
      continue;
    }
    const Real v = abs(x[i]);  // |x| clears the sign: −0 contributes +0
    if (gt(v, m)) m = v;
  }
  return a;
}

namespace detail {

Real exp2(long k) {
  Real r = R(1.0);
  mpfr_mul_2si(r.raw(), r.get(), k, MPFR_RNDN);
  return r;
}
long floor_log2(const Real& a) {
  if (!a.is_finite() || a.is_zero()) throw std::logic_error("floor_log2 of a non-finite or 0");
  return static_cast<long>(mpfr_get_exp(a.get())) - 1;  // MPFR: |a| = m·2^e, ½ ≤ m < 1
}
bool is_pow2(const Real& a) {
  return a.is_finite() && !a.is_zero() && mpfr_min_prec(a.get()) == 1;
}
Real scale2(const Real& x, long k) {
  Real r = x;
  mpfr_mul_2si(r.raw(), x.get(), k, MPFR_RNDN);
  return r;
}
Real fmax_of(const FloatFormat& f) {
  return Real::of_code(f, max_finite_code(f));
}
Real f32(std::uint32_t u) {
  return Real::of_f32_bits(u);
}
Real cuda(const Real& x) {
  return x.is_nan() ? Real::nan() : x;  // Real::nan() is positive
}
Real clamp(const Real& x, const Real& lo, const Real& hi) {
  if (x.is_nan()) return x;
  if (lt(x, lo)) return lo;
  if (gt(x, hi)) return hi;
  return x;
}
Real min_nan(const Real& a, const Real& b) {
  if (a.is_nan()) return a;
  if (b.is_nan()) return b;
  return lt(b, a) ? b : a;
}

std::uint64_t cast(const FloatFormat& f, const Real& x, const Rounding& r, Overflow ov,
                   std::uint32_t w) {
  return encode(f, Rounding{r.mode, r.sr_bits, ov}, x.get(), w).code;
}
Real value(const FloatFormat& f, std::uint64_t code) {
  return Real::of_code(f, code);
}

std::uint32_t word(std::uint64_t seed, std::uint32_t stream, std::uint64_t i) {
  return philox_element_word(seed, stream, i);
}
std::uint32_t sr_word(const Rounding& r, std::uint64_t seed, std::uint32_t stream,
                      std::uint64_t i) {
  if (r.mode != RoundMode::sr) return 0;
  const std::uint32_t w = word(seed, stream, i);
  return r.sr_bits >= 32 ? w : w >> (32 - r.sr_bits);  // the top R bits
}

}  // namespace detail
}  // namespace exmy::oracle::steps::quant
