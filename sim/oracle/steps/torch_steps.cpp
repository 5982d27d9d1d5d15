// docs/SEMANTICS.md 9.1-9.3 on exact values: torch.optim.Adam/AdamW and SGD on the ATen CPU
// kernels and on the CUDA kernels (9.2 "PyTorch CUDA kernels": `--compat torch-cuda`,
// `torch-cuda-foreach`), storage T = fp32, bf16 or fp16 (every tensor op computes in fp32 and
// rounds to T).
#include <algorithm>
#include <stdexcept>

#include "sim/oracle/steps/steps.hpp"

namespace exmy::oracle::steps {
namespace {

const Real& one() {
  static const Real r = Real::of_double(1.0);
  return r;
}
const Real& half() {
  static const Real r = Real::of_double(0.5);
  return r;
}
Real py(double x) {
  return Real::of_double(x);
}
void check(std::size_t n, std::size_t a) {
  if (a != n) throw std::logic_error("step oracle: tensor sizes differ");
}

}  // namespace

bool cpu_scalar_tail(std::size_t i, std::size_t n, const FloatFormat& T) {
  const std::size_t chunks = n < 32768 ? 1 : (n + 32767) / 32768;
  const std::size_t size = (n + chunks - 1) / chunks;  // every chunk but the last
  const std::size_t first = i - i % size;
  const std::size_t len = std::min(n, first + size) - first;
  const std::size_t group = 64 / (T.total_bits() / 8);  // two 32-byte vectors
  return i - first >= len - len % group;
}

Real cpu_add_alpha(const Real& a, const Real& b, const Real& alpha, const FloatFormat& T,
                   bool tail) {
  if (tail && T.total_bits() == 16) return round(T, add(F32, a, round(T, mul(F32, alpha, b))));
  return round(T, fma(F32, b, alpha, a));
}

Real torch_addcmul(const Real& a, const Real& b, const Real& c, const Real& w, bool cpu) {
  if (cpu) return fma(F32, mul(F32, w, b), c, a);
  return eq(w, one()) ? fma(F32, b, c, a) : fma(F32, w, mul(F32, b, c), a);
}

// 9.2 host scalars: CPython doubles (each Python operation RN64; pow correctly rounded here, the
// C library's in CPython), then RN32 where the tensor op receives them.
TorchAdamScalars torch_adam_scalars(const AdamHyper& h, long t, bool decoupled) {
  TorchAdamScalars s;
  s.has_wd = h.wd != 0.0;
  s.decoupled = decoupled;
  const Real lr = py(h.lr), b1 = py(h.beta1), b2 = py(h.beta2), wd = py(h.wd);
  const Real tt = py(static_cast<double>(t));
  s.decay = round(F32, sub(F64, one(), mul(F64, lr, wd)));  // RN32(1 − lr·wd)
  s.w1 = round(F32, sub(F64, one(), b1));                   // RN32(1 − β1)
  s.w1m1 = sub(F32, s.w1, one());                           // RN32(w1 − 1)
  s.w2 = round(F32, sub(F64, one(), b2));                   // RN32(1 − β2)
  s.b2 = round(F32, b2);                                    // RN32(β2)
  const Real bc1 = sub(F64, one(), pow(F64, b1, tt));       // 1 − β1^t
  s.ns = round(F32, neg(div(F64, lr, bc1)));                // RN32(−(lr / bc1))
  const Real bc2 = sub(F64, one(), pow(F64, b2, tt));       // 1 − β2^t
  const Real c64 = pow(F64, bc2, half());                   // bc2 ** 0.5 (a Python float)
  s.c = round(F32, c64);                                    // RN32(bc2 ** 0.5)
  s.inv_c = round(F32, div(F64, one(), c64));  // RN32(1 ⊘₆₄ c), CUDA single-tensor
  s.e = round(F32, py(h.eps));                 // RN32(eps)
  s.lambda = round(F32, wd);                   // RN32(wd)
  s.kernels = h.kernels;
  s.amsgrad = h.amsgrad;
  s.maximize = h.maximize;
  return s;
}

void torch_adam_element(const TorchAdamScalars& s, const FloatFormat& T, Real& p, Real g, Real& m,
                        Real& v, bool tail, Real* vmax) {
  const bool cpu = s.kernels == Kernels::cpu;
  if (s.maximize) g = neg(g);  // 0. grad ← −grad (9.2.6)
  // The alpha of add and a Python-number operand: T(x) on the CPU, the fp32 x on CUDA.
  const auto scalar = [&](const Real& x) { return cpu ? round(T, x) : x; };
  // 1. weight decay
  if (s.has_wd) {
    if (s.decoupled) {
      p = round(T, mul(F32, p, s.decay));  // p ← p ⊗ decay
    } else {
      g = cpu_add_alpha(g, p, scalar(s.lambda), T, cpu && tail);  // g ← fma(p, T(λ), g)
    }
  }
  // 2. m ← lerp(m, g, w1): fma(w1, g ⊖ m, m) if |w1| < 0.5, else fma(w1 − 1, g ⊖ m, g)
  const Real d = sub(F32, g, m);
  if (lt(abs(s.w1), half())) {
    m = round(T, fma(F32, s.w1, d, m));
  } else {
    m = round(T, fma(F32, s.w1m1, d, g));
  }
  // 3. v ← v ⊗ b2; CPU v ← fma(w2 ⊗ g, g, v), CUDA v ← fma(w2, g ⊗ g, v)
  v = round(T, mul(F32, v, s.b2));
  v = round(T, torch_addcmul(v, g, g, s.w2, cpu));  // CUDA w = 1: fma(g, g, v)
  // 3'. amsgrad: v̂ ← torch.maximum(v̂, v) (NaN if either is), and v̂ takes v's place in 4
  if (s.amsgrad) *vmax = maximum(*vmax, v);
  // 4. d ← ((√v) ⊘ c) ⊕ T(e), three tensor ops; CUDA single-tensor: (√v) ⊗ inv_c
  Real den = round(T, sqrt(F32, s.amsgrad ? *vmax : v));
  den = round(T, s.kernels == Kernels::cuda ? mul(F32, den, s.inv_c) : div(F32, den, s.c));
  den = round(T, add(F32, den, scalar(s.e)));
  // 5. CPU p ← p ⊕ ((ns ⊗ m) ⊘ d), addcdiv unfused; CUDA p ← fma(ns, m ⊘ d, p)
  p = round(
      T, cpu ? add(F32, p, div(F32, mul(F32, s.ns, m), den)) : fma(F32, s.ns, div(F32, m, den), p));
}

void torch_adam_step(const AdamHyper& h, bool decoupled, const FloatFormat& T, long t, Tensor& p,
                     const Tensor& g, Tensor& m, Tensor& v, Tensor* vmax) {
  check(p.size(), g.size());
  check(p.size(), m.size());
  check(p.size(), v.size());
  if (h.amsgrad) {
    if (vmax == nullptr) throw std::logic_error("step oracle: amsgrad without max_exp_avg_sq");
    check(p.size(), vmax->size());
  }
  const TorchAdamScalars s = torch_adam_scalars(h, t, decoupled);
  const bool cpu = h.kernels == Kernels::cpu;
  for (std::size_t i = 0; i < p.size(); ++i) {
    torch_adam_element(s, T, p[i], g[i], m[i], v[i], cpu && cpu_scalar_tail(i, p.size(), T),
                       h.amsgrad ? &(*vmax)[i] : nullptr);
  }
}

// 9.3 fused=True (FusedSgdMathFunctor): every scalar RN32 of the Python double once, the element
// update in fp32 with four FMAs, T only for what is stored (buf, p).
void torch_fused_sgd_element(const SgdHyper& h, const FloatFormat& T, long t, Real& p, Real g,
                             Real& buf) {
  if (h.maximize) g = neg(g);
  const Real wd = round(F32, py(h.wd)), mu = round(F32, py(h.momentum));
  if (h.wd != 0.0) g = fma(F32, wd, p, g);  // g += wd * p
  if (h.momentum != 0.0) {
    const Real omd = sub(F32, one(), round(F32, py(h.dampening)));  // 1 - dampening, fp32
    const Real mb = t == 1 ? g : fma(F32, omd, g, mul(F32, mu, buf));
    buf = round(T, mb);
    g = h.nesterov ? fma(F32, mu, mb, g) : mb;
  }
  p = round(T, fma(F32, neg(round(F32, py(h.lr))), g, p));  // p -= lr * g
}

// 9.3. The `T(·)` scalars are the alphas of add (9.1): RN32 of the Python double, then T.
void torch_sgd_element(const SgdHyper& h, const FloatFormat& T, long t, Real& p, Real g, Real& buf,
                       bool tail) {
  if (h.kernels == Kernels::cuda_fused) return torch_fused_sgd_element(h, T, t, p, g, buf);
  if (h.maximize) g = neg(g);  // grad ← −grad
  const Real mu = round(F32, py(h.momentum));
  // The alphas of add: T(x) on the CPU, the fp32 x on CUDA.
  const auto alpha = [&](const Real& x) { return h.kernels == Kernels::cpu ? round(T, x) : x; };
  tail = tail && h.kernels == Kernels::cpu;
  if (h.wd != 0.0) g = cpu_add_alpha(g, p, alpha(round(F32, py(h.wd))), T, tail);
  if (h.momentum != 0.0) {
    if (t == 1) {
      buf = g;
    } else {
      buf = round(T, mul(F32, buf, mu));
      const Real omd = round(F32, sub(F64, one(), py(h.dampening)));  // RN32(1 − dampening)
      buf = cpu_add_alpha(buf, g, alpha(omd), T, tail);
    }
    g = h.nesterov ? cpu_add_alpha(g, buf, alpha(mu), T, tail) : buf;
  }
  const Real neg_lr = round(F32, neg(py(h.lr)));  // RN32(−lr)
  p = cpu_add_alpha(p, g, alpha(neg_lr), T, tail);
}

void torch_sgd_step(const SgdHyper& h, const FloatFormat& T, long t, Tensor& p, const Tensor& g,
                    Tensor& buf) {
  check(p.size(), g.size());
  check(p.size(), buf.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    torch_sgd_element(h, T, t, p[i], g[i], buf[i], cpu_scalar_tail(i, p.size(), T));
  }
}

}  // namespace exmy::oracle::steps
