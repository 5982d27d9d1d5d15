// Training loop of the small language model with the registry's adamw8bit step (lm_train.hpp).
#include "reports/lm/lm_train.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "reports/report_context.hpp"
#include "sim/native/bnb_dynamic_map.hpp"
#include "sim/optim/registry.hpp"

namespace exmy::reports::lm {

namespace {

// The 32-bit state of the entry's fallback path, for a tensor of n elements.
void make_state32(optim::Bnb8State& s, std::size_t n) {
  s.is_8bit = false;
  s.q1.clear();
  s.q2.clear();
  s.absmax1.clear();
  s.absmax2.clear();
  s.s1.assign(n, 0.0f);
  s.s2.assign(n, 0.0f);
}

std::vector<VBlock> v_blocks(const std::string& name, const std::vector<float>& v, int bs) {
  const double thr = v_map_min_positive() / 2;
  std::vector<VBlock> out;
  for (std::size_t b0 = 0; b0 < v.size(); b0 += static_cast<std::size_t>(bs)) {
    const std::size_t b1 = std::min(v.size(), b0 + static_cast<std::size_t>(bs));
    VBlock r;
    r.tensor = name;
    r.block_size = bs;
    r.index = static_cast<long long>(b0 / static_cast<std::size_t>(bs));
    double mn = 0;
    long long pos = 0;
    for (std::size_t i = b0; i < b1; ++i) {
      const double x = v[i];
      r.absmax = std::max(r.absmax, x);
      if (x > 0 && (mn == 0 || x < mn)) mn = x;
    }
    r.min_nonzero = mn;
    long long below = 0;
    for (std::size_t i = b0; i < b1; ++i) {
      if (v[i] > 0) {
        ++pos;
        if (v[i] / r.absmax < thr) ++below;
      }
    }
    r.below_map = pos ? static_cast<double>(below) / static_cast<double>(pos) : 0.0;
    out.push_back(r);
  }
  return out;
}

}  // namespace

double v_map_min_positive() {
  std::array<float, 256> m{};
  native::bnb_dynamic_map(false, m);
  double mn = 1;
  for (float x : m) {
    if (x > 0 && x < mn) mn = x;
  }
  return mn;
}

std::string equivalence_verdict(double lo, double hi, double margin, int unstable8,
                                int unstable32) {
  if (unstable8 > unstable32) return "not reproduced (8-bit runs unstable)";
  if (!std::isfinite(lo) || !std::isfinite(hi) || unstable32 > 0) {
    return "inconclusive (unstable fp32 runs)";
  }
  if (lo >= -margin && hi <= margin) return "reproduced";
  if (lo > margin) return "not reproduced";
  if (hi < -margin) return "not reproduced (8-bit lower: better than fp32 beyond the margin)";
  return "inconclusive (interval wider than the margin)";
}

double lr_at(const TrainConfig& c, int t) {
  if (t <= c.warmup) return c.lr * t / std::max(1, c.warmup);
  const double span = std::max(1, c.steps - c.warmup);
  const double f = std::min(1.0, (t - c.warmup) / span);
  const double lo = c.min_lr_frac * c.lr;
  // One scalar per step on the host (the host libm's cos): a device path receives the value.
  return lo + 0.5 * (c.lr - lo) * (1.0 + std::cos(3.141592653589793 * f));
}

std::vector<int> eval_tokens(const Corpus& corpus, int seq, int count) {
  std::vector<int> out(static_cast<std::size_t>(count) * (seq + 1));
  for (int i = 0; i < count; ++i) {
    corpus.sequence(1, static_cast<std::uint64_t>(i), seq,
                    out.data() + static_cast<std::size_t>(i) * (seq + 1));
  }
  return out;
}

std::vector<int> train_batch(const Corpus& corpus, std::uint64_t seed, int step, int batch,
                             int seq) {
  std::vector<int> out(static_cast<std::size_t>(batch) * (seq + 1));
  const std::uint64_t base = (seed & 0xFFFFFFFFull) << 32;
  for (int j = 0; j < batch; ++j) {
    corpus.sequence(0, base + static_cast<std::uint64_t>(step) * batch + j, seq,
                    out.data() + static_cast<std::size_t>(j) * (seq + 1));
  }
  return out;
}

double eval_loss(Model& m, const std::vector<int>& eval, int batch, const GemmPolicy* policy) {
  const int T = m.config().seq;
  const std::size_t per = static_cast<std::size_t>(T + 1);
  const int count = static_cast<int>(eval.size() / per);
  double s = 0;
  int seen = 0;
  for (int b0 = 0; b0 < count; b0 += batch) {
    const int nb = std::min(batch, count - b0);
    std::vector<int> tok(eval.begin() + static_cast<std::ptrdiff_t>(b0 * per),
                         eval.begin() + static_cast<std::ptrdiff_t>((b0 + nb) * per));
    s += m.forward_backward(tok, nb, false, policy) * nb;
    seen += nb;
  }
  return s / seen;
}

TrainResult train_lm(const TrainConfig& cfg, const Corpus& corpus, std::uint64_t seed,
                     const std::vector<int>& eval) {
  Model model(cfg.model, seed);
  auto& ts = model.tensors();
  const optim::Selected sel = optim::find_optimizer("adamw8bit");
  std::vector<optim::Config> oc(ts.size());
  std::vector<optim::State> st(ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i) {
    optim::HyperOptions ho;
    ho.lr = cfg.lr;
    ho.beta1 = cfg.beta1;
    ho.beta2 = cfg.beta2;
    ho.eps = cfg.eps;
    ho.wd = ts[i].matrix && !ts[i].embedding ? cfg.wd : 0.0;
    optim::Config& c = oc[i];
    c.opt = sel;
    c.hyper = optim::resolve_hyper(*sel.entry, ho);
    optim::check_hyper_domains(*sel.entry, c.hyper);
    c.block = cfg.block;
    c.small_fallback = false;
    st[i] = optim::init_state(c, ts[i].w);
    const bool stable32 = cfg.model.stable_embedding && ts[i].embedding;
    const bool eight =
        cfg.state8 && !stable32 && ts[i].w.size() >= static_cast<std::size_t>(cfg.min_8bit_size);
    if (!eight) make_state32(st[i].bnb, ts[i].w.size());
  }
  TrainResult r;
  double win = 0;
  int win_n = 0;
  for (int t = 1; t <= cfg.steps; ++t) {
    throw_if_interrupted();
    const std::vector<int> tok = train_batch(corpus, seed, t, cfg.batch, cfg.model.seq);
    const bool sharp_now = cfg.sharpness_every > 0 && (t == 1 || t % cfg.sharpness_every == 0);
    double sharp = 0;
    const double loss =
        model.forward_backward(tok, cfg.batch, true, cfg.policy, sharp_now ? &sharp : nullptr);
    if (t == 1) r.first_loss = loss;
    r.steps_done = t;
    if (!std::isfinite(loss) || loss > cfg.stop_loss) {
      r.nonfinite = !std::isfinite(loss);
      r.stopped = true;
      r.step.push_back(t);
      r.loss.push_back(loss);
      r.lr.push_back(lr_at(cfg, t));
      break;
    }
    if (sharp_now) {
      r.sharp_step.push_back(t);
      r.sharpness.push_back(sharp);
    }
    const double lr = lr_at(cfg, t);
    for (std::size_t i = 0; i < ts.size(); ++i) {
      oc[i].hyper.adam.lr = lr;
      sel.entry->cpu_step(oc[i], t, ts[i].w, ts[i].g, st[i]);
    }
    win += loss;
    if (++win_n == cfg.log_every || t == cfg.steps) {
      r.step.push_back(t);
      r.loss.push_back(win / win_n);
      r.lr.push_back(lr);
      win = 0;
      win_n = 0;
    }
  }
  r.final_eval = r.stopped ? NAN : eval_loss(model, eval, cfg.batch, cfg.policy);
  if (!std::isfinite(r.final_eval)) r.nonfinite = true;
  // End-of-training second moments.
  std::array<float, 256> vmap{};
  native::bnb_dynamic_map(false, vmap);
  long long zero = 0, codes = 0;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const optim::Bnb8State& b = st[i].bnb;
    if (b.is_8bit) {
      for (std::uint8_t q : b.q2) zero += vmap[q] == 0.0f ? 1 : 0;
      codes += static_cast<long long>(b.q2.size());
    } else if (!cfg.state8 && ts[i].w.size() >= static_cast<std::size_t>(cfg.min_8bit_size)) {
      for (int bs : {256, 2048}) {
        auto vb = v_blocks(ts[i].name, b.s2, bs);
        r.vblocks.insert(r.vblocks.end(), vb.begin(), vb.end());
      }
    }
  }
  r.v_zero_share = codes ? static_cast<double>(zero) / static_cast<double>(codes) : 0.0;
  return r;
}

}  // namespace exmy::reports::lm
