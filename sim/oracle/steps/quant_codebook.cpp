// docs/SEMANTICS.md 5.3 (nearest code under each tie rule), 5.4 (bitsandbytes' stochastic
// lookup) and 7.5 (block-wise codebook quantization, seed 002's "8-bit Optimizers via Block-wise
// Quantization") with its dequantization.
#include "sim/oracle/steps/quant_detail.hpp"

namespace exmy::oracle::steps::quant {
using namespace detail;
namespace {

// #{k : t_k < x} over an ascending list (bisection).
int count_below(const Tensor& t, const Real& x) {
  int lo = 0, hi = static_cast<int>(t.size());
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (lt(t[mid], x)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}
// The last k with c_k ≤ x, 0 when there is none.
int last_at_most(const Tensor& c, const Real& x) {
  int lo = 0, hi = static_cast<int>(c.size());  // #{k : c_k ≤ x} by bisection
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (!gt(c[mid], x) && !x.is_nan()) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo == 0 ? 0 : lo - 1;
}

}  // namespace

std::uint8_t nearest(const Codebook& cb, const Real& n, Tie tie) {
  if (tie == Tie::bnb_cpu) {
    const int k = last_at_most(cb.c, n);
    if (k == 255) return 255;
    const Real dn = abs(sub32(n, cb.c[k + 1])), dk = abs(sub32(n, cb.c[k]));
    return static_cast<std::uint8_t>(lt(dn, dk) ? k + 1 : k);
  }
  if (n.is_nan()) return 0;
  int k = count_below(cb.mid, n);
  if (k < 255 && eq(cb.mid[k], n) && tie == Tie::even && k % 2 == 1) ++k;  // x == m_k
  return static_cast<std::uint8_t>(k);
}

std::uint8_t nearest_stochastic(const Codebook& cb, const Real& x, const Real& u) {
  const int j = count_below(cb.c, x);  // #codes < x (NaN: 0)
  const int p = std::min(2 * (j / 2), 254);
  if (gt(x, cb.c[p])) {
    const Real ratio = div32(abs(sub32(cb.c[p + 1], x)), sub32(cb.c[p + 1], cb.c[p]));
    return static_cast<std::uint8_t>(!lt(u, ratio) ? p + 1 : p);
  }
  if (p == 0) return 0;
  const Real ratio = div32(abs(sub32(cb.c[p - 1], x)), sub32(cb.c[p], cb.c[p - 1]));
  return static_cast<std::uint8_t>(!lt(u, ratio) ? p - 1 : p);
}

namespace detail {

std::uint64_t codebook_code(const Spec& s, const Real& x, const Real& a, std::uint64_t i) {
  // n: +0 for an all-zero group; RN32(x · RN32(1/a)) (recip-mul) or RN32(x / a) (div).
  Real n;
  if (!a.is_zero()) {
    n = s.norm == Norm::recip_mul ? mul32(x, div32(R(1.0), a)) : div32(x, a);
  }
  if (s.rounding.mode == RoundMode::sr) {
    // u = (w >> 8)·2^−24 from the element's word in stream 17 (24 bits whatever R is).
    const Real u = scale2(R(static_cast<double>(word(s.seed, kStreamCodebook, i) >> 8)), -24);
    return nearest_stochastic(*s.codebook, n, u);
  }
  return nearest(*s.codebook, n, s.tie);
}

Real codebook_dequant(const Spec& s, std::uint64_t code, const Real& a) {
  return mul32(s.codebook->c[code], a);  // RN32(c[code] · a)
}

}  // namespace detail
}  // namespace exmy::oracle::steps::quant
