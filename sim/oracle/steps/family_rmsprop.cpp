// docs/SEMANTICS.md 9.2.1 on exact values: torch.optim.RMSprop on the ATen CPU kernels and the
// CUDA kernels (foreach=True computes the CUDA bits), storage T = fp32, bf16 or fp16 (every tensor
// op computes in fp32 and rounds to T). Written from the document; shares nothing with
// sim/native. states: square_avg, then momentum_buffer (momentum > 0), then grad_avg (centered),
// as the registry entry saves them. h.extra[0]: centered, [1]: maximize.
#include <stdexcept>

#include "sim/oracle/steps/family_table.hpp"

namespace exmy::oracle::steps {
namespace {

Real py(double x) {
  return Real::of_double(x);
}

void rmsprop_step(const FamilyHyper& h, const FloatFormat& T, long, Tensor& p, const Tensor& g,
                  std::vector<Tensor*>& states) {
  const bool cpu = h.kernels == Kernels::cpu;
  const bool centered = h.extra[0] != 0.0, has_mom = h.momentum > 0.0, has_wd = h.wd != 0.0;
  if (states.size() != 1u + (has_mom ? 1u : 0u) + (centered ? 1u : 0u)) {
    throw std::logic_error("rmsprop oracle: state arrays do not match the hyperparameters");
  }
  Tensor& sq = *states[0];
  Tensor* buf = has_mom ? states[1] : nullptr;
  Tensor* ga = centered ? states[has_mom ? 2 : 1] : nullptr;
  // Scalars: RN32 of the Python floats; w = RN32(1 −₆₄ α), w − 1 in fp32 (exact for w ≥ 0.5).
  const Real one = py(1.0), half = py(0.5);
  const Real lambda = round(F32, py(h.wd)), a = round(F32, py(h.alpha));
  const Real w = round(F32, sub(F64, one, py(h.alpha)));
  const Real wm1 = sub(F32, w, one);
  const Real e = round(F32, py(h.eps)), mu = round(F32, py(h.momentum));
  const Real nlr = round(F32, neg(py(h.lr)));
  // The alpha of add and a Python-number operand: T(x) on the CPU, the fp32 x on CUDA.
  const auto scalar = [&](const Real& x) { return cpu ? round(T, x) : x; };
  for (std::size_t i = 0; i < p.size(); ++i) {
    // the CPU kernels' scalar tail (9.2.2): the adds with alpha, 1 and 5, round α ⊗ b to T first
    const bool tail = cpu && cpu_scalar_tail(i, p.size(), T);
    Real gi = round(T, g[i]);
    if (h.extra[1] != 0.0) gi = neg(gi);  // 0. maximize: g ← −g
    // 1. g ← T(fma(p, T(λ), g))
    if (has_wd) gi = cpu_add_alpha(gi, p[i], scalar(lambda), T, tail);
    // 2. s ← T(s ⊗ α); CPU s ← T(fma(w ⊗ g, g, s)), CUDA s ← T(fma(w, g ⊗ g, s))
    sq[i] = round(T, mul(F32, sq[i], a));
    sq[i] = round(T, torch_addcmul(sq[i], gi, gi, w, cpu));
    Real avg;
    if (centered) {
      // 3. ḡ ← T(lerp(ḡ, g, w)); v ← CPU T(fma(−ḡ, ḡ, s)), CUDA T(s ⊖ (ḡ ⊗ ḡ)); avg ← T(√v)
      Real& gb = (*ga)[i];
      const Real d = sub(F32, gi, gb);
      gb = round(T, lt(abs(w), half) ? fma(F32, w, d, gb) : fma(F32, wm1, d, gi));
      const Real v =
          round(T, cpu ? fma(F32, neg(gb), gb, sq[i]) : sub(F32, sq[i], mul(F32, gb, gb)));
      avg = round(T, sqrt(F32, v));
    } else {
      avg = round(T, sqrt(F32, sq[i]));
    }
    avg = round(T, add(F32, avg, scalar(e)));  // 4. avg ← T(avg ⊕ T(eps))
    if (has_mom) {
      // 5. b ← T(b ⊗ μ); b ← T(b ⊕ (g ⊘ avg)); p ← T(fma(b, T(−lr), p))
      Real& b = (*buf)[i];
      b = round(T, mul(F32, b, mu));
      b = round(T, add(F32, b, div(F32, gi, avg)));
      p[i] = cpu_add_alpha(p[i], b, scalar(nlr), T, tail);
    } else {
      // 5'. CPU p ← T(p ⊕ ((−lr ⊗ g) ⊘ avg)), CUDA p ← T(fma(−lr, g ⊘ avg, p))
      p[i] = round(T, cpu ? add(F32, p[i], div(F32, mul(F32, nlr, gi), avg))
                          : fma(F32, nlr, div(F32, gi, avg), p[i]));
    }
  }
}

}  // namespace

EXMY_ORACLE_FAMILY(rmsprop){"rmsprop", rmsprop_step};

}  // namespace exmy::oracle::steps
