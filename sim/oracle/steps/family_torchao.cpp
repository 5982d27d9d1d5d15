// docs/SEMANTICS.md 9.2.7 on exact values: torchao 0.18's AdamW8bit / AdamW4bit / AdamWFp8 as
// Inductor's C++ code computes torchao's single_param_adam (torchao-cpu), storage T = fp32, bf16
// or fp16. Written from the document; shares nothing with sim/native. The maps are built here
// from their definition (torch.linspace in fp32 with one fused multiply-add per entry, fp32
// means, the fp32 product with RN32(10^e)). h.extra: [0] amsgrad, [1] bf16_stochastic_round (not
// modelled here), [3] the state kind (0 8-bit, 1 4-bit, 2 fp8; the entry's constant). States, in
// the entry's order: per state (exp_avg, exp_avg_sq[, max_exp_avg_sq]) its codes (integer values:
// 8-bit code, packed 4-bit byte, e4m3fn bit pattern) and scales, or its plain values.
// Host scalars: the host libm's powf, as the C++ code calls it.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "sim/oracle/steps/family_table.hpp"

namespace exmy::oracle::steps {
namespace {

Real py(double x) {
  return Real::of_double(x);
}
bool ge(const Real& a, const Real& b) {  // a >= b; false with a NaN
  return !a.is_nan() && !b.is_nan() && !lt(a, b);
}

// torch.linspace(a, b, n) on the CPU in fp32: step = (b - a) / (n - 1); element k < n/2 is
// fma(step, k, a), the rest fma(-step, n - 1 - k, b).
Tensor linspace(double a, double b, int n) {
  const Real s = round(F32, py(a)), e = round(F32, py(b));
  const Real step = div(F32, sub(F32, e, s), py(n - 1));
  Tensor out;
  for (int k = 0; k < n; ++k) {
    out.push_back(k < n / 2 ? fma(F32, step, py(k), s) : fma(F32, neg(step), py(n - 1 - k), e));
  }
  return out;
}

// create_dynamic_map(signed, meb, bits) (additional items are 0 for the maps used) and the 4-bit
// unsigned map linspace(0, 1, 17)[1:].
Tensor qmap(int kind, bool is_signed) {
  if (kind == 1 && !is_signed) {
    Tensor l = linspace(0.0, 1.0, 17);
    return Tensor(l.begin() + 1, l.end());
  }
  const int meb = kind == 0 ? 7 : 3, bits = kind == 0 ? 8 : 4, nsb = bits - 1;
  Tensor d;
  for (int i = 0; i < meb; ++i) {
    const int n = (1 << (i + nsb - meb + (is_signed ? 0 : 1))) + 1;
    const Tensor b = linspace(0.1, 1.0, n);
    const int e = i - (meb - 1);
    const Real scale =
        round(F32, e == 0 ? py(1.0) : py(std::strtod(("1e" + std::to_string(e)).c_str(), nullptr)));
    for (int k = 0; k + 1 < n; ++k) {
      const Real mean = div(F32, add(F32, b[k], b[k + 1]), py(2.0));
      d.push_back(mul(F32, scale, mean));
      if (is_signed) d.push_back(neg(mul(F32, scale, mean)));
    }
  }
  d.push_back(py(0.0));
  d.push_back(py(1.0));
  std::sort(d.begin(), d.end(), [](const Real& a, const Real& b) { return lt(a, b); });
  return d;
}

// The nearest code by the branchless search and the tie rule of 9.2.7 (ties up).
int code_of(const Tensor& q, int bits, const Real& y) {
  const int n = 1 << bits;
  int c = ge(y, q[n / 2]) ? n / 2 : 0;
  for (int s = n / 4; s >= 1; s >>= 1) c += ge(y, q[c + s]) ? s : 0;
  const int up = std::min(c + 1, n - 1);
  return ge(sub(F32, y, q[c]), mul(F32, sub(F32, q[up], q[c]), py(0.5))) ? up : c;
}

constexpr FloatFormat kE4m3fn = formats::e4m3fn;

// An integer-valued Real (a code) as an int.
int as_int(const Real& r) {
  const std::uint32_t b = r.f32_bits();
  float f;
  std::memcpy(&f, &b, sizeof f);
  return static_cast<int>(f);
}

Real dequant(int kind, const Tensor& q, const Tensor& codes, std::size_t i, const Real& scale) {
  if (kind == 2) {
    return mul(F32, Real::of_code(kE4m3fn, static_cast<std::uint64_t>(as_int(codes[i]))), scale);
  }
  const int b = as_int(codes[kind == 1 ? i / 2 : i]);
  const int c = kind == 0 ? b : (i % 2 == 0 ? b >> 4 : b & 15);
  return mul(F32, q[static_cast<std::size_t>(c)], scale);
}

void torchao_step(const FamilyHyper& h, const FloatFormat& T, long t, Tensor& p, const Tensor& g,
                  std::vector<Tensor*>& states) {
  if (h.kernels != Kernels::cpu) throw std::logic_error("torchao oracle: torchao-cpu only");
  if (h.extra[1] != 0.0) throw std::logic_error("torchao oracle: no stochastic rounding");
  const int kind = static_cast<int>(h.extra[3]);
  const int ns = h.extra[0] != 0.0 ? 3 : 2;
  const std::size_t B = kind == 1 ? 128 : 256;
  const std::size_t n = p.size();
  const bool quantized = n >= 4096 && n % B == 0;
  if (states.size() != static_cast<std::size_t>(quantized ? 2 * ns : ns)) {
    throw std::logic_error("torchao oracle: unexpected state arrays");
  }
  const Real one = py(1.0);
  const Real lr = round(F32, py(h.lr)), lr_wd = mul(F32, lr, round(F32, py(h.wd)));
  const Real eps = round(F32, py(h.eps));
  // std::pow(float, float) of the C++ kernel: the host libm's powf, a function of the profile
  // (not correctly rounded: SEMANTICS 9.2.7), called as the kernel calls it
  const auto powf_t = [&](double beta) {
    return py(static_cast<double>(
        std::pow(static_cast<float>(beta), static_cast<float>(static_cast<double>(t)))));
  };
  const Real bc1 = sub(F32, one, powf_t(h.beta1));
  const Real sbc2 = sqrt(F32, sub(F32, one, powf_t(h.beta2)));
  // lerp weights w = RN32(1 - beta) (fp64 subtraction); |w| >= 0.5: coefficient w - 1, base end
  const Real w[2] = {round(F32, sub(F64, one, py(h.beta1))),
                     round(F32, sub(F64, one, py(h.beta2)))};
  const auto lerp = [&](const Real& start, const Real& end, const Real& wt) {
    const bool big = ge(abs(wt), py(0.5));
    const Real coeff = big ? sub(F32, wt, one) : wt;
    return add(F32, mul(F32, coeff, sub(F32, end, start)), big ? end : start);
  };
  Tensor maps[3];
  for (int k = 0; k < ns; ++k) {
    if (kind != 2) maps[k] = qmap(kind, k == 0);
  }
  std::vector<Tensor> nv(static_cast<std::size_t>(ns), Tensor(n));
  for (std::size_t i = 0; i < n; ++i) {
    Real old[3];
    for (int k = 0; k < ns; ++k) {
      old[k] = quantized ? dequant(kind, maps[k], *states[2 * k], i, (*states[2 * k + 1])[i / B])
                         : (*states[k])[i];
    }
    const Real gi = round(T, g[i]);
    const Real p1 = sub(F32, p[i], mul(F32, lr_wd, p[i]));
    const Real m = lerp(old[0], gi, w[0]);
    const Real v = lerp(old[1], mul(F32, gi, gi), w[1]);
    Real vd = v;
    if (ns == 3) {
      old[2] = maximum(old[2], v);
      vd = old[2];
    }
    const Real denom = add(F32, div(F32, sqrt(F32, vd), sbc2), eps);
    p[i] = round(T, sub(F32, p1, div(F32, mul(F32, lr, div(F32, m, bc1)), denom)));
    nv[0][i] = m;
    nv[1][i] = v;
    if (ns == 3) nv[2][i] = old[2];
  }
  for (int k = 0; k < ns; ++k) {
    if (!quantized) {
      for (std::size_t i = 0; i < n; ++i) (*states[k])[i] = round(T, nv[k][i]);
      continue;
    }
    Tensor& codes = *states[2 * k];
    Tensor& scales = *states[2 * k + 1];
    for (std::size_t b = 0; b < n / B; ++b) {
      Real amax = py(0.0);
      bool nan = false;
      for (std::size_t j = 0; j < B; ++j) {
        const Real& x = nv[k][b * B + j];
        nan = nan || x.is_nan();
        if (!nan && gt(abs(x), amax)) amax = abs(x);
      }
      Real scale =
          nan ? Real::nan() : (gt(amax, round(F32, py(1e-12))) ? amax : round(F32, py(1e-12)));
      if (kind == 2) scale = div(F32, scale, py(448.0));
      scales[b] = scale;
      for (std::size_t j = 0; j < B; ++j) {
        const std::size_t i = b * B + j;
        const Real y = div(F32, nv[k][i], scale);
        if (kind == 2) {
          codes[i] = py(static_cast<double>(round(kE4m3fn, y).code(kE4m3fn)));
        } else if (kind == 0) {
          codes[i] = py(code_of(maps[k], 8, y));
        } else if (i % 2 == 0) {
          codes[i / 2] = py(code_of(maps[k], 4, y) * 16);
        } else {
          codes[i / 2] = add(F64, codes[i / 2], py(code_of(maps[k], 4, y)));
        }
      }
    }
  }
}

}  // namespace

EXMY_ORACLE_FAMILY(torchao){"torchao", torchao_step};

}  // namespace exmy::oracle::steps
