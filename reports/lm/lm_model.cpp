// The small decoder language model: init, forward and backward (lm_model.hpp).
#include "reports/lm/lm_model.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <span>
#include <stdexcept>

#include "reports/lm/gemm.hpp"
#include "reports/sharpness.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/portable_math.hpp"
#include "sim/native/random_normal.hpp"

namespace exmy::reports::lm {

namespace {

// Streams 0x0B001000 + tensor index: the initial values of that tensor.
constexpr std::uint32_t kStreamInit = 0x0B001000u;
constexpr float kLnEps = 1e-5f;

// Layer norm over rows of width d: y = ((x - mean) * rstd) * g + b, with mean and variance
// summed in fp64 in index order and rounded to fp32 once (mean, rstd = RN32(1 / sqrt(var +
// eps))); the rest fp32. 1.0 / std::sqrt(double) is two correctly rounded IEEE operations on the
// host (sqrtsd, divsd) and on the device (__dsqrt_rn, __ddiv_rn), so it needs no portable form;
// the transcendental functions of the model (exp, log, erf) are sim/native/portable_math.hpp's,
// whose bits host and device share (the host libm's and CUDA's differ).
void ln_forward(const float* x, int rows, int d, const float* g, const float* b, float* xhat,
                float* rstd, float* y) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * d;
    double s = 0;
    for (int j = 0; j < d; ++j) s += xr[j];
    const double mean = s / d;
    double v = 0;
    for (int j = 0; j < d; ++j) v += (xr[j] - mean) * (xr[j] - mean);
    const float mf = static_cast<float>(mean);
    const float rs = static_cast<float>(1.0 / std::sqrt(v / d + kLnEps));
    rstd[r] = rs;
    float* hr = xhat + static_cast<std::size_t>(r) * d;
    float* yr = y + static_cast<std::size_t>(r) * d;
    for (int j = 0; j < d; ++j) {
      hr[j] = (xr[j] - mf) * rs;
      yr[j] = hr[j] * g[j] + b[j];
    }
  }
}

// dx (+)= rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * g; dg, db
// accumulate over rows in row order. The row means are fp64 sums rounded to fp32.
void ln_backward(const float* dy, const float* xhat, const float* rstd, int rows, int d,
                 const float* g, float* dg, float* db, float* dx, bool accumulate) {
  std::vector<float> dh(d);
  for (int r = 0; r < rows; ++r) {
    const float* dyr = dy + static_cast<std::size_t>(r) * d;
    const float* hr = xhat + static_cast<std::size_t>(r) * d;
    double s1 = 0, s2 = 0;
    for (int j = 0; j < d; ++j) {
      dh[j] = dyr[j] * g[j];
      s1 += dh[j];
      s2 += static_cast<double>(dh[j]) * hr[j];
      dg[j] += dyr[j] * hr[j];
      db[j] += dyr[j];
    }
    const float m1 = static_cast<float>(s1 / d), m2 = static_cast<float>(s2 / d);
    float* dxr = dx + static_cast<std::size_t>(r) * d;
    for (int j = 0; j < d; ++j) {
      const float v = rstd[r] * ((dh[j] - m1) - hr[j] * m2);
      dxr[j] = accumulate ? dxr[j] + v : v;
    }
  }
}

// GELU(u) = 0.5 u (1 + erf(u / sqrt 2)) and its derivative Phi(u) + u phi(u), both from the
// forward's e1 = RN32(1 + erf(u / sqrt 2)) (kept for the backward: one erf per element).
float gelu_e1(float u) {
  return 1.0f + native::portable_erff(u * 0.70710678118654752f);
}
float gelu(float u, float e1) {
  return 0.5f * u * e1;
}
float gelu_grad(float u, float e1) {
  const float cdf = 0.5f * e1;
  const float pdf = native::portable_expf(-0.5f * u * u) * 0.39894228040143268f;
  return cdf + u * pdf;
}

// Column sums of rows x cols into out (+=), rows in order.
void add_col_sums(const float* x, int rows, int cols, float* out) {
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * cols;
    for (int j = 0; j < cols; ++j) out[j] += xr[j];
  }
}

// y[r] = x[r] + b for every row.
void add_bias(float* y, int rows, int cols, const float* b) {
  for (int r = 0; r < rows; ++r) {
    float* yr = y + static_cast<std::size_t>(r) * cols;
    for (int j = 0; j < cols; ++j) yr[j] += b[j];
  }
}

}  // namespace

int Model::add(const std::string& name, int rows, int cols) {
  Tensor t;
  t.name = name;
  t.rows = rows;
  t.cols = cols;
  t.w.assign(static_cast<std::size_t>(rows) * cols, 0.0f);
  t.g.assign(t.w.size(), 0.0f);
  t.matrix = rows > 1 && cols > 1;
  t_.push_back(std::move(t));
  return static_cast<int>(t_.size()) - 1;
}

Model::Model(const ModelConfig& cfg, std::uint64_t seed) : cfg_(cfg) {
  if (cfg.d % cfg.heads != 0 || cfg.vocab < 2 || cfg.seq < 1 || cfg.layers < 1) {
    throw std::invalid_argument("lm::Model: bad configuration");
  }
  const int d = cfg.d, V = cfg.vocab;
  emb_ = add("emb", V, d);
  t_[emb_].embedding = true;
  pos_ = add("pos", cfg.seq, d);
  if (cfg.stable_embedding) {
    embg_ = add("emb_ln.g", 1, d);
    embb_ = add("emb_ln.b", 1, d);
    t_[embg_].embedding = t_[embb_].embedding = true;
  }
  for (int l = 0; l < cfg.layers; ++l) {
    const std::string p = "l" + std::to_string(l) + ".";
    LayerIdx x;
    x.ln1g = add(p + "ln1.g", 1, d);
    x.ln1b = add(p + "ln1.b", 1, d);
    x.qkvw = add(p + "qkv.w", d, 3 * d);
    x.qkvb = add(p + "qkv.b", 1, 3 * d);
    x.outw = add(p + "out.w", d, d);
    x.outb = add(p + "out.b", 1, d);
    x.ln2g = add(p + "ln2.g", 1, d);
    x.ln2b = add(p + "ln2.b", 1, d);
    x.upw = add(p + "up.w", d, 4 * d);
    x.upb = add(p + "up.b", 1, 4 * d);
    x.downw = add(p + "down.w", 4 * d, d);
    x.downb = add(p + "down.b", 1, d);
    L_.push_back(x);
  }
  lnfg_ = add("lnf.g", 1, d);
  lnfb_ = add("lnf.b", 1, d);
  head_ = add("head.w", d, V);
  // Initial values: stream kStreamInit + tensor index, element j.
  const double resid_sd = 0.02 / std::sqrt(2.0 * cfg.layers);
  for (std::size_t i = 0; i < t_.size(); ++i) {
    Tensor& t = t_[i];
    const std::uint32_t stream = kStreamInit + static_cast<std::uint32_t>(i);
    const bool gain = t.name.size() > 2 && t.name.compare(t.name.size() - 2, 2, ".g") == 0;
    const bool resid =
        t.name.find("out.w") != std::string::npos || t.name.find("down.w") != std::string::npos;
    for (std::size_t j = 0; j < t.w.size(); ++j) {
      if (static_cast<int>(i) == emb_ && cfg.stable_embedding) {
        const double a = std::sqrt(6.0 / (V + d));
        const native::Philox4 w = native::philox_block(seed, stream, j);
        t.w[j] = static_cast<float>(a * (2.0 * native::uniform53(w.w[0], w.w[1]) - 1.0));
      } else if (static_cast<int>(i) == emb_) {
        t.w[j] = static_cast<float>(native::normal_fp64(seed, stream, j));
      } else if (gain) {
        t.w[j] = 1.0f;
      } else if (t.matrix) {
        t.w[j] =
            static_cast<float>((resid ? resid_sd : 0.02) * native::normal_fp64(seed, stream, j));
      }
    }
  }
}

std::size_t Model::parameter_count() const {
  std::size_t n = 0;
  for (const auto& t : t_) n += t.w.size();
  return n;
}

double Model::forward_backward(const std::vector<int>& tokens, int B, bool grads,
                               const GemmPolicy* pol, double* sharpness) {
  const int T = cfg_.seq, d = cfg_.d, H = cfg_.heads, dh = d / H, V = cfg_.vocab;
  const int N = B * T, F = 4 * d;
  if (tokens.size() != static_cast<std::size_t>(B) * (T + 1)) {
    throw std::invalid_argument("lm::Model: token count");
  }
  const auto W = [&](int i) { return t_[i].w.data(); };
  const auto G = [&](int i) { return t_[i].g.data(); };
  const std::size_t Nd = static_cast<std::size_t>(N) * d;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dh)));
  auto tok = [&](int n) { return tokens[static_cast<std::size_t>(n / T) * (T + 1) + n % T]; };
  auto tgt = [&](int n) { return tokens[static_cast<std::size_t>(n / T) * (T + 1) + n % T + 1]; };

  // Activations kept for the backward pass.
  struct LayerAct {
    std::vector<float> x, h1, r1, a1, qkv, p, ctx, xm, h2, r2, a2, u, e1, gu;
  };
  // Every buffer below is per-thread scratch kept between calls (a step allocates and faults in
  // no pages): zeros(n) is a buffer holding n zeros, as a fresh std::vector<float>(n) would.
  thread_local std::vector<LayerAct> act;
  act.resize(L_.size());
  thread_local std::deque<std::vector<float>> pool;  // growing keeps references valid
  std::size_t used = 0;
  const auto zeros = [&](std::size_t n) -> std::vector<float>& {
    if (used == pool.size()) pool.emplace_back();
    std::vector<float>& b = pool[used++];
    b.assign(n, 0.0f);
    return b;
  };
  auto& e0 = zeros(Nd);
  auto& eh = zeros(0);
  auto& er = zeros(0);
  auto& x = zeros(Nd);
  // Embedding.
  for (int n = 0; n < N; ++n) {
    std::copy_n(W(emb_) + static_cast<std::size_t>(tok(n)) * d, d, e0.data() + n * d);
  }
  if (cfg_.stable_embedding) {
    eh.resize(Nd);
    er.resize(N);
    ln_forward(e0.data(), N, d, W(embg_), W(embb_), eh.data(), er.data(), x.data());
  } else {
    x = e0;
  }
  for (int n = 0; n < N; ++n) {
    const float* pr = W(pos_) + static_cast<std::size_t>(n % T) * d;
    for (int j = 0; j < d; ++j) x[static_cast<std::size_t>(n) * d + j] += pr[j];
  }
  const std::size_t Tdh = static_cast<std::size_t>(T) * dh;
  auto& q = zeros(Tdh);
  auto& k = zeros(Tdh);
  auto& v = zeros(Tdh);
  for (std::size_t l = 0; l < L_.size(); ++l) {
    const LayerIdx& I = L_[l];
    LayerAct& A = act[l];
    A.x = x;
    A.h1.resize(Nd);
    A.r1.resize(N);
    A.a1.resize(Nd);
    ln_forward(x.data(), N, d, W(I.ln1g), W(I.ln1b), A.h1.data(), A.r1.data(), A.a1.data());
    A.qkv.resize(static_cast<std::size_t>(N) * 3 * d);
    gemm({GemmSite::qkv, Pass::fwd, pol}, N, 3 * d, d, A.a1.data(), d, false, W(I.qkvw), 3 * d,
         false, A.qkv.data(), 3 * d);
    add_bias(A.qkv.data(), N, 3 * d, W(I.qkvb));
    A.p.assign(static_cast<std::size_t>(B) * H * T * T, 0.0f);
    A.ctx.resize(Nd);
    for (int b = 0; b < B; ++b) {
      for (int h = 0; h < H; ++h) {
        for (int t = 0; t < T; ++t) {
          const float* row = A.qkv.data() + static_cast<std::size_t>(b * T + t) * 3 * d + h * dh;
          std::copy_n(row, dh, q.data() + t * dh);
          std::copy_n(row + d, dh, k.data() + t * dh);
          std::copy_n(row + 2 * d, dh, v.data() + t * dh);
        }
        float* P = A.p.data() + static_cast<std::size_t>(b * H + h) * T * T;
        gemm({GemmSite::scores, Pass::fwd, pol}, T, T, dh, q.data(), dh, false, k.data(), dh, true,
             P, T);
        for (int i = 0; i < T; ++i) {
          float* pr = P + static_cast<std::size_t>(i) * T;
          float mx = -INFINITY;
          for (int j = 0; j <= i; ++j) mx = std::max(mx, pr[j] = pr[j] * scale);
          float s = 0;
          for (int j = 0; j <= i; ++j) s += (pr[j] = native::portable_expf(pr[j] - mx));
          for (int j = 0; j <= i; ++j) pr[j] = pr[j] / s;
          for (int j = i + 1; j < T; ++j) pr[j] = 0.0f;
        }
        gemm({GemmSite::values, Pass::fwd, pol}, T, dh, T, P, T, false, v.data(), dh, false,
             A.ctx.data() + static_cast<std::size_t>(b * T) * d + h * dh, d);
      }
    }
    A.xm = x;
    gemm({GemmSite::attn_out, Pass::fwd, pol}, N, d, d, A.ctx.data(), d, false, W(I.outw), d, false,
         A.xm.data(), d, true);
    add_bias(A.xm.data(), N, d, W(I.outb));
    A.h2.resize(Nd);
    A.r2.resize(N);
    A.a2.resize(Nd);
    ln_forward(A.xm.data(), N, d, W(I.ln2g), W(I.ln2b), A.h2.data(), A.r2.data(), A.a2.data());
    A.u.resize(static_cast<std::size_t>(N) * F);
    gemm({GemmSite::mlp_up, Pass::fwd, pol}, N, F, d, A.a2.data(), d, false, W(I.upw), F, false,
         A.u.data(), F);
    add_bias(A.u.data(), N, F, W(I.upb));
    A.e1.resize(A.u.size());
    A.gu.resize(A.u.size());
    for (std::size_t i = 0; i < A.u.size(); ++i) {
      A.e1[i] = gelu_e1(A.u[i]);
      A.gu[i] = gelu(A.u[i], A.e1[i]);
    }
    x = A.xm;
    gemm({GemmSite::mlp_down, Pass::fwd, pol}, N, d, F, A.gu.data(), F, false, W(I.downw), d, false,
         x.data(), d, true);
    add_bias(x.data(), N, d, W(I.downb));
  }
  auto& fh = zeros(Nd);
  auto& fr = zeros(N);
  auto& af = zeros(Nd);
  auto& logits = zeros(static_cast<std::size_t>(N) * V);
  ln_forward(x.data(), N, d, W(lnfg_), W(lnfb_), fh.data(), fr.data(), af.data());
  gemm({GemmSite::head, Pass::fwd, pol}, N, V, d, af.data(), d, false, W(head_), V, false,
       logits.data(), V);
  // Cross-entropy; logits become d loss / d logits.
  // The row's exp(l_j - max) are computed once, for the normaliser and the gradient.
  double loss = 0, sharp = 0;
  const float inv_n = static_cast<float>(1.0 / N);
  auto& ex = zeros(V);
  for (int n = 0; n < N; ++n) {
    float* lr = logits.data() + static_cast<std::size_t>(n) * V;
    float mx = -INFINITY;
    for (int j = 0; j < V; ++j) mx = std::max(mx, lr[j]);
    float s = 0;
    for (int j = 0; j < V; ++j) s += (ex[j] = native::portable_expf(lr[j] - mx));
    const float lse = mx + native::portable_logf(s);
    loss += static_cast<double>(lse - lr[tgt(n)]);
    if (sharpness) {
      // A host-only metric (fp64, the host libm; reports/sharpness.hpp): it reads the logits and
      // feeds nothing back into training, so a device path may compute it on the host.
      sharp += logit_sharpness(std::span<const float>(lr, static_cast<std::size_t>(V)),
                               static_cast<std::size_t>(tgt(n)), 5e-4);
    }
    if (grads) {
      for (int j = 0; j < V; ++j) lr[j] = ex[j] / s * inv_n;
      lr[tgt(n)] -= inv_n;
    }
  }
  loss /= N;
  if (sharpness) *sharpness = sharp / N;
  if (!grads) return loss;

  for (auto& t : t_) std::fill(t.g.begin(), t.g.end(), 0.0f);
  // Head and final layer norm.
  gemm({GemmSite::head, Pass::wgrad, pol}, d, V, N, af.data(), d, true, logits.data(), V, false,
       G(head_), V);
  auto& daf = zeros(Nd);
  auto& dx = zeros(Nd);
  gemm({GemmSite::head, Pass::dgrad, pol}, N, d, V, logits.data(), V, false, W(head_), V, true,
       daf.data(), d);
  ln_backward(daf.data(), fh.data(), fr.data(), N, d, W(lnfg_), G(lnfg_), G(lnfb_), dx.data(),
              false);
  auto& dgu = zeros(0);
  auto& du = zeros(0);
  auto& da = zeros(Nd);
  auto& dctx = zeros(Nd);
  auto& dqkv = zeros(0);
  auto& dp = zeros(static_cast<std::size_t>(T) * T);
  auto& dq = zeros(Tdh);
  auto& dk = zeros(Tdh);
  auto& dv = zeros(Tdh);
  auto& dO = zeros(Tdh);
  for (std::size_t li = L_.size(); li-- > 0;) {
    const LayerIdx& I = L_[li];
    LayerAct& A = act[li];
    // MLP: x = xm + gu W2 + b2.
    add_col_sums(dx.data(), N, d, G(I.downb));
    gemm({GemmSite::mlp_down, Pass::wgrad, pol}, F, d, N, A.gu.data(), F, true, dx.data(), d, false,
         G(I.downw), d);
    dgu.resize(static_cast<std::size_t>(N) * F);
    gemm({GemmSite::mlp_down, Pass::dgrad, pol}, N, F, d, dx.data(), d, false, W(I.downw), d, true,
         dgu.data(), F);
    du.resize(dgu.size());
    for (std::size_t i = 0; i < du.size(); ++i) du[i] = dgu[i] * gelu_grad(A.u[i], A.e1[i]);
    add_col_sums(du.data(), N, F, G(I.upb));
    gemm({GemmSite::mlp_up, Pass::wgrad, pol}, d, F, N, A.a2.data(), d, true, du.data(), F, false,
         G(I.upw), F);
    gemm({GemmSite::mlp_up, Pass::dgrad, pol}, N, d, F, du.data(), F, false, W(I.upw), F, true,
         da.data(), d);
    // dx now holds d loss / d xm: the residual plus the layer norm's path.
    ln_backward(da.data(), A.h2.data(), A.r2.data(), N, d, W(I.ln2g), G(I.ln2g), G(I.ln2b),
                dx.data(), true);
    // Attention: xm = x + ctx Wo + bo.
    add_col_sums(dx.data(), N, d, G(I.outb));
    gemm({GemmSite::attn_out, Pass::wgrad, pol}, d, d, N, A.ctx.data(), d, true, dx.data(), d,
         false, G(I.outw), d);
    gemm({GemmSite::attn_out, Pass::dgrad, pol}, N, d, d, dx.data(), d, false, W(I.outw), d, true,
         dctx.data(), d);
    dqkv.assign(static_cast<std::size_t>(N) * 3 * d, 0.0f);
    for (int b = 0; b < B; ++b) {
      for (int h = 0; h < H; ++h) {
        for (int t = 0; t < T; ++t) {
          const float* row = A.qkv.data() + static_cast<std::size_t>(b * T + t) * 3 * d + h * dh;
          std::copy_n(row, dh, q.data() + t * dh);
          std::copy_n(row + d, dh, k.data() + t * dh);
          std::copy_n(row + 2 * d, dh, v.data() + t * dh);
          std::copy_n(dctx.data() + static_cast<std::size_t>(b * T + t) * d + h * dh, dh,
                      dO.data() + t * dh);
        }
        const float* P = A.p.data() + static_cast<std::size_t>(b * H + h) * T * T;
        // dP = dO V^T, dV = P^T dO.
        gemm({GemmSite::values, Pass::dgrad, pol}, T, T, dh, dO.data(), dh, false, v.data(), dh,
             true, dp.data(), T);
        gemm({GemmSite::values, Pass::wgrad, pol}, T, dh, T, P, T, true, dO.data(), dh, false,
             dv.data(), dh);
        // dS = P (dP - sum_j P dP) over the causal row, times the score scale.
        for (int i = 0; i < T; ++i) {
          const float* pr = P + static_cast<std::size_t>(i) * T;
          float* dr = dp.data() + static_cast<std::size_t>(i) * T;
          float s = 0;
          for (int j = 0; j <= i; ++j) s += pr[j] * dr[j];
          for (int j = 0; j <= i; ++j) dr[j] = pr[j] * (dr[j] - s) * scale;
          for (int j = i + 1; j < T; ++j) dr[j] = 0.0f;
        }
        // dQ = dS K, dK = dS^T Q.
        gemm({GemmSite::scores, Pass::dgrad, pol}, T, dh, T, dp.data(), T, false, k.data(), dh,
             false, dq.data(), dh);
        gemm({GemmSite::scores, Pass::wgrad, pol}, T, dh, T, dp.data(), T, true, q.data(), dh,
             false, dk.data(), dh);
        for (int t = 0; t < T; ++t) {
          float* row = dqkv.data() + static_cast<std::size_t>(b * T + t) * 3 * d + h * dh;
          std::copy_n(dq.data() + t * dh, dh, row);
          std::copy_n(dk.data() + t * dh, dh, row + d);
          std::copy_n(dv.data() + t * dh, dh, row + 2 * d);
        }
      }
    }
    add_col_sums(dqkv.data(), N, 3 * d, G(I.qkvb));
    gemm({GemmSite::qkv, Pass::wgrad, pol}, d, 3 * d, N, A.a1.data(), d, true, dqkv.data(), 3 * d,
         false, G(I.qkvw), 3 * d);
    gemm({GemmSite::qkv, Pass::dgrad, pol}, N, d, 3 * d, dqkv.data(), 3 * d, false, W(I.qkvw),
         3 * d, true, da.data(), d);
    ln_backward(da.data(), A.h1.data(), A.r1.data(), N, d, W(I.ln1g), G(I.ln1g), G(I.ln1b),
                dx.data(), true);
  }
  // Embeddings: rows in token order n = 0, 1, ...
  for (int n = 0; n < N; ++n) {
    float* pg = G(pos_) + static_cast<std::size_t>(n % T) * d;
    for (int j = 0; j < d; ++j) pg[j] += dx[static_cast<std::size_t>(n) * d + j];
  }
  if (cfg_.stable_embedding) {
    auto& de = zeros(Nd);
    ln_backward(dx.data(), eh.data(), er.data(), N, d, W(embg_), G(embg_), G(embb_), de.data(),
                false);
    dx.swap(de);
  }
  for (int n = 0; n < N; ++n) {
    float* eg = G(emb_) + static_cast<std::size_t>(tok(n)) * d;
    for (int j = 0; j < d; ++j) eg[j] += dx[static_cast<std::size_t>(n) * d + j];
  }
  return loss;
}

}  // namespace exmy::reports::lm
