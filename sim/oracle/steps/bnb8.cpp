// docs/SEMANTICS.md 5.3 (nearest code, ties to the even index) and 9.4 (bitsandbytes 8-bit
// block-wise Adam/AdamW and Momentum, and the 32-bit fallback below 4096 elements; 9.4.1 RMSprop,
// Adagrad, Lion; 9.4.2 AdEMAMix) on exact values.
#include <cfloat>
#include <stdexcept>

#include "sim/oracle/steps/steps.hpp"

namespace exmy::oracle::steps {
namespace {

const Real& one() {
  static const Real r = Real::of_double(1.0);
  return r;
}

// The fp32 scalars of one step (9.4): hyperparameters RN32 of the input, β^t the correctly
// rounded fp32 power of the fp32 β.
struct Scalars {
  Real lr, b1, b2, eps, wd, omb1, omb2, c2, ce, step, decay;
  bool has_wd = false;
};
Scalars scalars(const AdamHyper& h, long t) {
  Scalars s;
  s.lr = round(F32, Real::of_double(h.lr));
  s.b1 = round(F32, Real::of_double(h.beta1));
  s.b2 = round(F32, Real::of_double(h.beta2));
  s.eps = round(F32, Real::of_double(h.eps));
  s.wd = round(F32, Real::of_double(h.wd));
  s.has_wd = gt(s.wd, Real());
  s.omb1 = sub(F32, one(), s.b1);  // 1 ⊖ β1
  s.omb2 = sub(F32, one(), s.b2);
  const Real tt = Real::of_double(static_cast<double>(t));
  const Real c1 = sub(F32, one(), pow(F32, s.b1, tt));    // 1 ⊖ RN32(β1^t)
  s.c2 = sqrt(F32, sub(F32, one(), pow(F32, s.b2, tt)));  // √(1 ⊖ RN32(β2^t))
  s.step = div(F32, mul(F32, neg(s.lr), s.c2), c1);       // ((−lr) ⊗ c2) ⊘ c1
  s.ce = mul(F32, s.c2, s.eps);                           // c2 ⊗ eps
  s.decay = sub(F32, one(), mul(F32, s.lr, s.wd));        // 1 ⊖ (lr ⊗ wd)
  return s;
}

// 9.4 step 3 (and the fallback's update): p ← T(p ⊕ (step ⊗ (s1 ⊘ (√s2 ⊕ ce)))), then the
// decoupled decay p ← T(p ⊗ decay) when wd > 0.
Real adam_param(const Scalars& s, const FloatFormat& T, const Real& p, const Real& s1,
                const Real& s2) {
  Real q = round(T, add(F32, p, mul(F32, s.step, div(F32, s1, add(F32, sqrt(F32, s2), s.ce)))));
  if (s.has_wd) q = round(T, mul(F32, q, s.decay));
  return q;
}

Real dequant(const Codebook& cb, std::uint8_t q, const Real& absmax) {
  return mul(F32, cb.c[q], absmax);  // code[q] ⊗ absmax
}

Real floor_max() {
  return Real::of_double(-static_cast<double>(FLT_MAX));
}

void check(std::size_t n, std::size_t a) {
  if (a != n) throw std::logic_error("step oracle: tensor sizes differ");
}

}  // namespace

std::uint8_t requantize_signed(const Codebook& cb, const Real& s, const Real& absmax,
                               std::uint8_t& nan_state) {
  std::uint8_t q = nearest_even(cb, div(F32, s, absmax));
  nan_state = s.is_nan() ? 1 : 0;
  if (cb.c[q].signbit() != s.signbit()) {
    q = static_cast<std::uint8_t>(gt(s, Real()) ? q + 1 : q - 1);
  }
  return q;
}

Codebook make_codebook(std::span<const float> values) {
  if (values.size() != 256) throw std::logic_error("step oracle: a codebook has 256 entries");
  Codebook cb;
  const Real half = Real::of_double(0.5);
  for (const float v : values) cb.c.push_back(Real::of_double(static_cast<double>(v)));
  for (int k = 0; k < 255; ++k) cb.mid.push_back(mul(F32, add(F32, cb.c[k], cb.c[k + 1]), half));
  return cb;
}

std::uint8_t nearest_even(const Codebook& cb, const Real& x) {
  if (x.is_nan()) return 0;
  // #{k : m_k < x} by bisection over the ascending midpoints.
  int lo = 0, hi = 255;  // answer in [lo, hi]
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (lt(cb.mid[mid], x)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  // On an exact midpoint m_lo == x the code is the even one of lo, lo + 1.
  if (lo < 255 && eq(cb.mid[lo], x) && lo % 2 == 1) ++lo;
  return static_cast<std::uint8_t>(lo);
}

Bnb8State bnb8_init(std::size_t n, bool two_states, int block, bool small_fallback) {
  Bnb8State s;
  s.block = block;
  s.is_8bit = !(small_fallback && n < 4096);
  const std::size_t blocks = (n + block - 1) / block;
  if (s.is_8bit) {
    s.q1.assign(n, 0);
    s.a1.assign(blocks, Real());
    if (two_states) {
      s.q2.assign(n, 0);
      s.a2.assign(blocks, Real());
    }
  } else {
    s.s1.assign(n, Real());
    if (two_states) s.s2.assign(n, Real());
  }
  s.q1_nan.assign(n, 0);
  return s;
}

void bnb_adam8_step(const AdamHyper& h, long t, const FloatFormat& T, const Codebook& code1,
                    const Codebook& code2, Tensor& p, const Tensor& g, Bnb8State& st) {
  const std::size_t n = p.size();
  check(n, g.size());
  const Scalars s = scalars(h, t);
  if (!st.is_8bit) {  // kOptimizer32bit2State: g·g first, no finiteness test
    for (std::size_t i = 0; i < n; ++i) {
      st.s1[i] = add(F32, mul(F32, st.s1[i], s.b1), mul(F32, s.omb1, g[i]));
      st.s2[i] = add(F32, mul(F32, st.s2[i], s.b2), mul(F32, s.omb2, mul(F32, g[i], g[i])));
      p[i] = adam_param(s, T, p[i], st.s1[i], st.s2[i]);
    }
    return;
  }
  const std::size_t B = static_cast<std::size_t>(st.block);
  for (std::size_t lo = 0, b = 0; lo < n; lo += B, ++b) {
    const std::size_t cnt = std::min(B, n - lo);
    // Phase 1 on the real lanes and, in a partial block, the padding lanes (g = 0, q1 = 128,
    // q2 = 0); phase 2 the maxima of |s| from −FLT_MAX, NaN ignored.
    Tensor s1(B), s2(B);
    std::vector<bool> finite(B, true);
    Real m1 = floor_max(), m2 = floor_max();
    for (std::size_t j = 0; j < B; ++j) {
      const bool pad = j >= cnt;
      const Real gj = pad ? Real() : g[lo + j];
      const std::uint8_t q1 = pad ? 128 : st.q1[lo + j];
      const std::uint8_t q2 = pad ? 0 : st.q2[lo + j];
      if (!gj.is_finite()) {
        finite[j] = false;
        s1[j] = Real();
        s2[j] = Real();
      } else {
        s2[j] = dequant(code2, q2, st.a2[b]);
        s2[j] = add(F32, mul(F32, s2[j], s.b2), mul(F32, mul(F32, s.omb2, gj), gj));
        s1[j] = dequant(code1, q1, st.a1[b]);
        s1[j] = add(F32, mul(F32, s1[j], s.b1), mul(F32, s.omb1, gj));
      }
      m1 = fmax(m1, abs(s1[j]));
      m2 = fmax(m2, abs(s2[j]));
    }
    st.a1[b] = m1;
    st.a2[b] = m2;
    // Phases 3 and 4 on the real lanes.
    for (std::size_t j = 0; j < cnt; ++j) {
      if (finite[j]) p[lo + j] = adam_param(s, T, p[lo + j], s1[j], s2[j]);
      st.q1[lo + j] = requantize_signed(code1, s1[j], m1, st.q1_nan[lo + j]);
      st.q2[lo + j] = nearest_even(code2, div(F32, s2[j], m2));
    }
  }
}

void bnb_momentum8_step(const AdamHyper& h, long t, const FloatFormat& T, const Codebook& code1,
                        Tensor& p, const Tensor& g, Bnb8State& st) {
  const std::size_t n = p.size();
  check(n, g.size());
  const Scalars s = scalars(h, t);
  // Coupled decay g ⊕ (p ⊗ wd); s1 = g on t = 1, else (s1_old ⊗ β1) ⊕ g.
  const auto state = [&](const Real& pi, Real gi, const Real& s1_old) {
    if (s.has_wd) gi = add(F32, gi, mul(F32, pi, s.wd));
    return t == 1 ? gi : add(F32, mul(F32, s1_old, s.b1), gi);
  };
  // p ← T(p ⊖ (lr ⊗ s1))
  const auto param = [&](const Real& pi, const Real& s1) {
    return round(T, sub(F32, pi, mul(F32, s.lr, s1)));
  };
  if (!st.is_8bit) {  // kOptimizer32bit1State
    for (std::size_t i = 0; i < n; ++i) {
      st.s1[i] = state(p[i], g[i], st.s1[i]);
      p[i] = param(p[i], st.s1[i]);
    }
    return;
  }
  const std::size_t B = static_cast<std::size_t>(st.block);
  for (std::size_t lo = 0, b = 0; lo < n; lo += B, ++b) {
    const std::size_t cnt = std::min(B, n - lo);
    Tensor s1(B);
    Real m1 = floor_max();
    for (std::size_t j = 0; j < B; ++j) {
      const bool pad = j >= cnt;  // padding lanes: g = p = 0, q1 = 128
      s1[j] = state(pad ? Real() : p[lo + j], pad ? Real() : g[lo + j],
                    dequant(code1, pad ? 128 : st.q1[lo + j], st.a1[b]));
      m1 = fmax(m1, abs(s1[j]));
    }
    st.a1[b] = m1;
    for (std::size_t j = 0; j < cnt; ++j) {
      p[lo + j] = param(p[lo + j], s1[j]);
      st.q1[lo + j] = requantize_signed(code1, s1[j], m1, st.q1_nan[lo + j]);
    }
  }
}

namespace {

// sgn(x) = (0 < x) − (x < 0) as an exact value (NaN: 0).
Real sgn(const Real& x) {
  return Real::of_double(gt(x, Real()) ? 1.0 : lt(x, Real()) ? -1.0 : 0.0);
}

}  // namespace

void bnb1_step(Bnb1Op op, const AdamHyper& h, long t, const FloatFormat& T, const Codebook& code1,
               Tensor& p, const Tensor& g, Bnb8State& st) {
  const std::size_t n = p.size();
  check(n, g.size());
  const Scalars s = scalars(h, t);
  // The step of RMSprop/Adagrad: lr ⊗ (g ⊘ (√s1 ⊕ eps)), g the gradient without the decay term.
  const auto delta = [&](const Real& gi, const Real& s1) {
    return mul(F32, s.lr, div(F32, gi, add(F32, sqrt(F32, s1), s.eps)));
  };
  const auto coupled = [&](const Real& pi, const Real& gi) {
    return s.has_wd ? add(F32, gi, mul(F32, pi, s.wd)) : gi;
  };
  if (!st.is_8bit) {  // kOptimizer32bit1State: the gradient register has type T
    for (std::size_t i = 0; i < n; ++i) {
      Real gi = g[i];
      if (op != Bnb1Op::lion) gi = round(T, coupled(p[i], gi));
      Real& s1 = st.s1[i];
      switch (op) {
        case Bnb1Op::rmsprop:  // s1 ⊗ β1 ⊕ ((1 ⊖ β1) ⊗ g) ⊗ g
          s1 = add(F32, mul(F32, s1, s.b1), mul(F32, mul(F32, s.omb1, gi), gi));
          p[i] = round(T, sub(F32, p[i], delta(gi, s1)));
          break;
        case Bnb1Op::adagrad:
          s1 = add(F32, s1, mul(F32, gi, gi));
          p[i] = round(T, sub(F32, p[i], delta(gi, s1)));
          break;
        case Bnb1Op::lion: {
          if (s.has_wd) p[i] = round(T, mul(F32, p[i], s.decay));
          const Real c = add(F32, mul(F32, s1, s.b1), mul(F32, s.omb1, gi));
          p[i] = round(T, sub(F32, p[i], mul(F32, s.lr, sgn(c))));
          s1 = add(F32, mul(F32, s1, s.b2), mul(F32, s.omb2, gi));
          break;
        }
      }
    }
    return;
  }
  const std::size_t B = static_cast<std::size_t>(st.block);
  for (std::size_t lo = 0, b = 0; lo < n; lo += B, ++b) {
    const std::size_t cnt = std::min(B, n - lo);
    Tensor s1(B), pv(B), l(B);
    Real m1 = floor_max();
    for (std::size_t j = 0; j < B; ++j) {
      const bool pad = j >= cnt;  // padding lanes: g = p = 0, q1 = 128
      Real pj = pad ? Real() : p[lo + j];
      const Real gj = pad ? Real() : g[lo + j];
      Real sj = dequant(code1, pad ? 128 : st.q1[lo + j], st.a1[b]);
      switch (op) {
        case Bnb1Op::rmsprop: {  // s1 ⊗ β1 ⊕ (1 ⊖ β1) ⊗ (g' ⊗ g'), g' = g ⊕ p ⊗ wd
          const Real gc = coupled(pj, gj);
          sj = add(F32, mul(F32, sj, s.b1), mul(F32, s.omb1, mul(F32, gc, gc)));
          break;
        }
        case Bnb1Op::adagrad: {
          const Real gc = coupled(pj, gj);
          sj = add(F32, sj, mul(F32, gc, gc));
          break;
        }
        case Bnb1Op::lion: {  // decoupled decay, the step T(lr ⊗ sgn(c)), then the state
          if (s.has_wd) pj = round(T, mul(F32, pj, s.decay));
          const Real c = add(F32, mul(F32, sj, s.b1), mul(F32, s.omb1, gj));
          l[j] = round(T, mul(F32, s.lr, sgn(c)));
          sj = add(F32, mul(F32, sj, s.b2), mul(F32, s.omb2, gj));
          break;
        }
      }
      s1[j] = sj;
      pv[j] = pj;
      m1 = fmax(m1, abs(sj));
    }
    st.a1[b] = m1;
    for (std::size_t j = 0; j < cnt; ++j) {
      p[lo + j] = op == Bnb1Op::lion ? round(T, sub(F32, pv[j], l[j]))
                                     : round(T, sub(F32, pv[j], delta(g[lo + j], s1[j])));
      st.q1[lo + j] = requantize_signed(code1, s1[j], m1, st.q1_nan[lo + j]);
    }
  }
}

void bnb_ademamix_init(Bnb8State& st, std::size_t n) {
  if (st.is_8bit) {
    st.q1.assign(2 * n, 0);
    st.a1.assign(2 * st.a2.size(), Real());
    st.q1_nan.assign(2 * n, 0);
  } else {
    st.s1.assign(2 * n, Real());
  }
}

void bnb_ademamix_step(const AdamHyper& h, double beta3, double alpha, long t, const FloatFormat& T,
                       const Codebook& code1, const Codebook& code2, Tensor& p, const Tensor& g,
                       Bnb8State& st) {
  const std::size_t n = p.size();
  check(n, g.size());
  const Scalars s = scalars(h, t);
  const Real b3 = round(F32, Real::of_double(beta3));
  const Real al = round(F32, Real::of_double(alpha));
  const Real omb3 = sub(F32, one(), b3);
  const Real tt = Real::of_double(static_cast<double>(t));
  const Real c1 = sub(F32, one(), pow(F32, s.b1, tt));  // 1 ⊖ RN32(β1^t); s.c2 is √(1 ⊖ β2^t)
  // p ← T(p ⊖ lr ⊗ (((m1 ⊘ c1) ⊕ (α ⊗ m2)) ⊘ ((√ν ⊘ c2) ⊕ eps))), then T(p ⊗ decay) (wd > 0)
  const auto param = [&](const Real& pi, const Real& m1, const Real& nu, const Real& m2) {
    const Real num = add(F32, div(F32, m1, c1), mul(F32, al, m2));
    const Real den = add(F32, div(F32, sqrt(F32, nu), s.c2), s.eps);
    Real q = round(T, sub(F32, pi, mul(F32, s.lr, div(F32, num, den))));
    if (s.has_wd) q = round(T, mul(F32, q, s.decay));
    return q;
  };
  if (!st.is_8bit) {  // kOptimizer32bit2State ADEMAMIX: no finiteness test
    for (std::size_t i = 0; i < n; ++i) {
      st.s1[i] = add(F32, mul(F32, st.s1[i], s.b1), mul(F32, s.omb1, g[i]));
      st.s1[n + i] = add(F32, mul(F32, st.s1[n + i], b3), mul(F32, omb3, g[i]));
      st.s2[i] = add(F32, mul(F32, st.s2[i], s.b2), mul(F32, mul(F32, s.omb2, g[i]), g[i]));
      p[i] = param(p[i], st.s1[i], st.s2[i], st.s1[n + i]);
    }
    return;
  }
  const std::size_t B = static_cast<std::size_t>(st.block), nb = st.a2.size();
  for (std::size_t lo = 0, b = 0; lo < n; lo += B, ++b) {
    const std::size_t cnt = std::min(B, n - lo);
    Tensor m1(B), nu(B), m2(B);
    std::vector<bool> finite(B, true);
    Real x1 = floor_max(), x2 = floor_max(), x3 = floor_max();
    for (std::size_t j = 0; j < B; ++j) {
      const bool pad = j >= cnt;  // padding lanes: g = 0, m1 and m2 code 128, ν code 0
      const Real gj = pad ? Real() : g[lo + j];
      if (!gj.is_finite()) {
        finite[j] = false;
      } else {
        m1[j] = dequant(code1, pad ? 128 : st.q1[lo + j], st.a1[b]);
        m1[j] = add(F32, mul(F32, m1[j], s.b1), mul(F32, s.omb1, gj));
        nu[j] = dequant(code2, pad ? 0 : st.q2[lo + j], st.a2[b]);
        nu[j] = add(F32, mul(F32, nu[j], s.b2), mul(F32, mul(F32, s.omb2, gj), gj));
        m2[j] = dequant(code1, pad ? 128 : st.q1[n + lo + j], st.a1[nb + b]);
        m2[j] = add(F32, mul(F32, m2[j], b3), mul(F32, omb3, gj));
      }
      x1 = fmax(x1, abs(m1[j]));
      x2 = fmax(x2, abs(nu[j]));
      x3 = fmax(x3, abs(m2[j]));
    }
    st.a1[b] = x1;
    st.a2[b] = x2;
    st.a1[nb + b] = x3;
    for (std::size_t j = 0; j < cnt; ++j) {
      if (finite[j]) p[lo + j] = param(p[lo + j], m1[j], nu[j], m2[j]);
      st.q1[lo + j] = requantize_signed(code1, m1[j], x1, st.q1_nan[lo + j]);
      st.q2[lo + j] = nearest_even(code2, div(F32, nu[j], x2));
      st.q1[n + lo + j] = requantize_signed(code1, m2[j], x3, st.q1_nan[n + lo + j]);
    }
  }
}

}  // namespace exmy::oracle::steps
