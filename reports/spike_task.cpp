#include "reports/spike_task.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <span>

#include "reports/report_context.hpp"
#include "reports/sharpness.hpp"
#include "sim/native/random_normal.hpp"
#include "sim/optim/optim.hpp"

namespace exmy::reports {

namespace {

// Section 4 owns Philox streams 0x04000000..: 1 weights, 2 data z, 3 teacher.
constexpr std::uint32_t kStreamInit = 0x04000001u;
constexpr std::uint32_t kStreamZ = 0x04000002u;
constexpr std::uint32_t kStreamTeacher = 0x04000003u;

// y = W^T x + b, W stored in-major (W[j * out + o]); the sum over j runs in order 0..in-1.
struct Dense {
  int in = 0, out = 0;
  std::vector<float> w, b, gw, gb, mw, vw, mb, vb;
};

void init_dense(Dense& L, int in, int out, double sd, std::uint64_t seed, std::uint64_t& counter) {
  L.in = in;
  L.out = out;
  const std::size_t n = static_cast<std::size_t>(in) * static_cast<std::size_t>(out);
  L.w.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    L.w[i] = static_cast<float>(sd * native::normal_fp64(seed, kStreamInit, counter++));
  }
  L.b.assign(static_cast<std::size_t>(out), 0.0f);
  L.gw.assign(n, 0.0f);
  L.gb.assign(static_cast<std::size_t>(out), 0.0f);
  L.mw.assign(n, 0.0f);
  L.vw.assign(n, 0.0f);
  L.mb.assign(static_cast<std::size_t>(out), 0.0f);
  L.vb.assign(static_cast<std::size_t>(out), 0.0f);
}

void forward(const Dense& L, const float* x, float* y, bool relu) {
  for (int o = 0; o < L.out; ++o) y[o] = L.b[static_cast<std::size_t>(o)];
  for (int j = 0; j < L.in; ++j) {
    const float xj = x[j];
    if (xj == 0.0f) continue;  // a +-0 product changes y only in the sign of a zero sum
    const float* wr = &L.w[static_cast<std::size_t>(j) * static_cast<std::size_t>(L.out)];
    for (int o = 0; o < L.out; ++o) y[o] += wr[o] * xj;
  }
  if (relu) {
    for (int o = 0; o < L.out; ++o) y[o] = y[o] > 0.0f ? y[o] : 0.0f;
  }
}

// gw += x dy^T, gb += dy; dx = W dy when dx is given.
void backward(Dense& L, const float* x, const float* dy, float* dx) {
  for (int j = 0; j < L.in; ++j) {
    const float xj = x[j];
    float* g = &L.gw[static_cast<std::size_t>(j) * static_cast<std::size_t>(L.out)];
    for (int o = 0; o < L.out; ++o) g[o] += xj * dy[o];
  }
  for (int o = 0; o < L.out; ++o) L.gb[static_cast<std::size_t>(o)] += dy[o];
  if (dx == nullptr) return;
  for (int j = 0; j < L.in; ++j) {
    const float* wr = &L.w[static_cast<std::size_t>(j) * static_cast<std::size_t>(L.out)];
    float s = 0.0f;
    for (int o = 0; o < L.out; ++o) s += wr[o] * dy[o];
    dx[j] = s;
  }
}

double sum_squares(const std::vector<float>& g) {
  double s = 0;
  for (float v : g) s += static_cast<double>(v) * static_cast<double>(v);
  return s;
}

// RMS_t of AdamW's step on one tensor (after adam_step: v updated, g intact): the terms
// RN32(g^2) / max(RN32(v / RN32(1 - beta2^t)), RN32(eps^2)) summed in SEMANTICS 10's tree.
float adamw_rms(const std::vector<float>& g, const std::vector<float>& v, float beta2, float eps,
                long t) {
  const float bc = static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), t));
  const float e2 = static_cast<float>(static_cast<double>(eps) * static_cast<double>(eps));
  std::vector<float> terms(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    const float u = v[i] / bc;
    terms[i] = (g[i] * g[i]) / (u > e2 ? u : e2);
  }
  return optim::rms_from_sum(optim::tree_sum(terms), terms.size());
}

}  // namespace

float clip_coefficient(double total_norm, float max_norm) {
  const double c = static_cast<double>(max_norm) / (total_norm + 1e-6);
  return c < 1.0 ? static_cast<float>(c) : 1.0f;
}

std::vector<long> spike_lead_times(const std::vector<long>& loss_spikes,
                                   const std::vector<long>& rms_spikes, long horizon) {
  std::vector<long> lead;
  for (long s : loss_spikes) {
    long best = -1;
    for (long r : rms_spikes) {
      if (r <= s && s - r <= horizon) best = s - r;  // rms_spikes increase: the last one wins
    }
    lead.push_back(best);
  }
  return lead;
}

RateInterval wilson_interval(long k, long n) {
  if (n <= 0) return {};
  const double z = 1.959963984540054, nn = static_cast<double>(n);
  const double p = static_cast<double>(k) / nn;
  const double den = 1 + z * z / nn;
  const double mid = (p + z * z / (2 * nn)) / den;
  const double half = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / den;
  return {std::max(0.0, mid - half), std::min(1.0, mid + half)};
}

namespace {
double poisson_cdf(long k, double lam) {  // P(X <= k)
  if (lam <= 0) return 1.0;
  double s = 0;
  for (long i = 0; i <= k; ++i) s += std::exp(i * std::log(lam) - lam - std::lgamma(i + 1.0));
  return std::min(1.0, s);
}
double bisect(double lo, double hi, const std::function<bool(double)>& above) {
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    (above(mid) ? hi : lo) = mid;
  }
  return 0.5 * (lo + hi);
}
}  // namespace

RateInterval poisson_interval(long k) {
  RateInterval r;
  const double top = 10.0 + 4.0 * static_cast<double>(k);
  // P(X >= k; lam) = 1 - P(X <= k - 1) increases with lam; P(X <= k; lam) decreases.
  r.lo =
      k == 0 ? 0.0 : bisect(0.0, top, [&](double l) { return 1 - poisson_cdf(k - 1, l) > 0.025; });
  r.hi = bisect(0.0, top, [&](double l) { return poisson_cdf(k, l) < 0.025; });
  return r;
}

RateRatio rate_ratio(long k1, long n1, long k2, long n2) {
  RateRatio r;
  const double scale = static_cast<double>(n2) / static_cast<double>(n1);
  const auto to_ratio = [&](double pi) { return pi >= 1 ? INFINITY : pi / (1 - pi) * scale; };
  r.ratio = k2 > 0   ? static_cast<double>(k1) / static_cast<double>(k2) * scale
            : k1 > 0 ? INFINITY
                     : NAN;
  if (k1 + k2 == 0) {
    r.lo = 0;
    r.hi = INFINITY;
    return r;
  }
  const RateInterval w = wilson_interval(k1, k1 + k2);
  r.lo = to_ratio(w.lo);
  r.hi = to_ratio(w.hi);
  return r;
}

SpikeTaskLog train_spike_task(const SpikeTaskConfig& cfg, std::uint64_t seed) {
  const int late = static_cast<int>(cfg.late_onsets.size()) * cfg.late_group;
  const int D = cfg.in + late, H = cfg.hidden, C = cfg.classes, B = cfg.batch;
  std::uint64_t counter = 0;
  Dense L[3];
  // He initialisation N(0, 2 / fan_in) for the ReLU layers, N(0, 1 / fan_in) for the logits.
  init_dense(L[0], D, H, std::sqrt(2.0 / D), seed, counter);
  if (cfg.late_rows_zero) {
    std::fill(L[0].w.begin() + static_cast<std::ptrdiff_t>(cfg.in) * H, L[0].w.end(), 0.0f);
  }
  init_dense(L[1], H, H, std::sqrt(2.0 / H), seed, counter);
  init_dense(L[2], H, C, std::sqrt(1.0 / H), seed, counter);
  const int TD = cfg.late_informative ? D : cfg.in;  // features the teacher reads
  std::vector<float> teacher(static_cast<std::size_t>(C) * static_cast<std::size_t>(TD));
  for (std::size_t i = 0; i < teacher.size(); ++i) {
    teacher[i] = static_cast<float>(native::normal_fp64(seed, kStreamTeacher, i));
  }
  std::vector<float> x(static_cast<std::size_t>(D)), h1(static_cast<std::size_t>(H)),
      h2(static_cast<std::size_t>(H)), z(static_cast<std::size_t>(C)), dz(z.size()), dh2(h2.size()),
      dh1(h1.size());
  std::vector<float> ramp(cfg.late_onsets.size()), zfull(static_cast<std::size_t>(D));
  SpikeTaskLog log;
  optim::AdamHyper h;
  h.beta1 = cfg.beta1;
  h.beta2 = cfg.beta2;
  h.eps = cfg.eps;
  h.wd = cfg.wd;
  for (int t = 1; t <= cfg.steps; ++t) {
    throw_if_interrupted();
    for (std::size_t g = 0; g < ramp.size(); ++g) {
      const int since = t - cfg.late_onsets[g] + 1;
      ramp[g] = since <= 0          ? 0.0f
                : since >= cfg.ramp ? 1.0f
                                    : static_cast<float>(static_cast<double>(since) / cfg.ramp);
    }
    float loss = 0.0f;
    double sharp = 0.0;
    for (int b = 0; b < B; ++b) {
      // Sample b of step t: normal index ((t - 1) B + b) D + j.
      const std::uint64_t base =
          (static_cast<std::uint64_t>(t - 1) * static_cast<std::uint64_t>(B) +
           static_cast<std::uint64_t>(b)) *
          static_cast<std::uint64_t>(D);
      for (int j = 0; j < D; ++j) {
        const float zj = static_cast<float>(
            native::normal_fp64(seed, kStreamZ, base + static_cast<std::uint64_t>(j)));
        zfull[static_cast<std::size_t>(j)] = zj;
        if (j < cfg.in) {
          x[static_cast<std::size_t>(j)] = zj;
        } else {
          const float r = ramp[static_cast<std::size_t>((j - cfg.in) / cfg.late_group)];
          x[static_cast<std::size_t>(j)] = r == 0.0f ? 0.0f : (r * cfg.late_scale) * zj;
        }
      }
      int label = 0;
      float best = -INFINITY;
      for (int c = 0; c < C; ++c) {
        float s = 0.0f;
        for (int j = 0; j < TD; ++j) {
          s += teacher[static_cast<std::size_t>(c) * static_cast<std::size_t>(TD) +
                       static_cast<std::size_t>(j)] *
               zfull[static_cast<std::size_t>(j)];
        }
        if (s > best) {
          best = s;
          label = c;
        }
      }
      forward(L[0], x.data(), h1.data(), true);
      forward(L[1], h1.data(), h2.data(), true);
      forward(L[2], h2.data(), z.data(), false);
      float zmax = z[0];
      for (int c = 1; c < C; ++c) zmax = z[static_cast<std::size_t>(c)] > zmax ? z[c] : zmax;
      float se = 0.0f;
      for (int c = 0; c < C; ++c) se += std::exp(z[static_cast<std::size_t>(c)] - zmax);
      loss += (std::log(se) + zmax - z[static_cast<std::size_t>(label)]) / static_cast<float>(B);
      sharp += logit_sharpness(std::span<const float>(z.data(), z.size()),
                               static_cast<std::size_t>(label), 5e-4) /
               B;
      for (int c = 0; c < C; ++c) {
        dz[static_cast<std::size_t>(c)] =
            (std::exp(z[static_cast<std::size_t>(c)] - zmax) / se - (c == label ? 1.0f : 0.0f)) /
            static_cast<float>(B);
      }
      backward(L[2], h2.data(), dz.data(), dh2.data());
      for (int o = 0; o < H; ++o) dh2[o] = h2[o] > 0.0f ? dh2[o] : 0.0f;
      backward(L[1], h1.data(), dh2.data(), dh1.data());
      for (int o = 0; o < H; ++o) dh1[o] = h1[o] > 0.0f ? dh1[o] : 0.0f;
      backward(L[0], x.data(), dh1.data(), nullptr);
    }
    // The global gradient norm over every parameter tensor (fp64 sums in tensor order W0 b0 W1
    // b1 W2 b2, each in element order), and clipping when asked.
    double ss = 0;
    for (const Dense& l : L) ss += sum_squares(l.gw) + sum_squares(l.gb);
    const double norm = std::sqrt(ss);
    log.grad_norm.push_back(static_cast<float>(norm));
    if (cfg.optimizer == SpikeTaskConfig::Optimizer::adamw_clip) {
      const float coef = clip_coefficient(norm, cfg.clip_norm);
      if (coef < 1.0f) {
        for (Dense& l : L) {
          for (float& g : l.gw) g *= coef;
          for (float& g : l.gb) g *= coef;
        }
      }
    }
    h.lr = t < cfg.warmup ? static_cast<double>(cfg.lr) * t / cfg.warmup : cfg.lr;
    for (int li = 0; li < 3; ++li) {
      Dense& l = L[li];
      for (int part = 0; part < 2; ++part) {
        std::vector<float>& p = part ? l.b : l.w;
        std::vector<float>& g = part ? l.gb : l.gw;
        std::vector<float>& m = part ? l.mb : l.mw;
        std::vector<float>& v = part ? l.vb : l.vw;
        float r = 0.0f;
        if (cfg.optimizer == SpikeTaskConfig::Optimizer::stable_adamw) {
          r = optim::stable_adamw_step(h, t, p, g, m, v);
        } else {
          optim::adam_step(h, /*decoupled=*/true, native::Storage::f32, t, p, g, m, v);
          if (part == 0) r = adamw_rms(g, v, cfg.beta2, cfg.eps, t);
        }
        if (part == 0) log.rms[li].push_back(r);
        std::fill(g.begin(), g.end(), 0.0f);
      }
    }
    log.loss.push_back(loss);
    log.sharpness.push_back(static_cast<float>(sharp));
  }
  return log;
}

}  // namespace exmy::reports
