// The synthetic Zipfian second-order Markov language (corpus.hpp).
#include "reports/lm/corpus.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/native/philox.hpp"
#include "sim/native/random_normal.hpp"

namespace exmy::reports::lm {

namespace {

// The language model section owns Philox streams 0x0B000000..: 0 the tables, 0x100 + s the
// sequences of stream s.
constexpr std::uint32_t kStreamTables = 0x0B000000u;
constexpr std::uint32_t kStreamSeq = 0x0B000100u;

std::vector<double> cdf_of(const std::vector<double>& p) {
  std::vector<double> c(p.size());
  double s = 0;
  for (std::size_t i = 0; i < p.size(); ++i) c[i] = (s += p[i]);
  for (double& x : c) x /= s;
  c.back() = 1.0;
  return c;
}

double u53(const native::Philox4& w, int half) {
  return native::uniform53(w.w[2 * half], w.w[2 * half + 1]);
}

}  // namespace

double entropy_nats(const std::vector<double>& p) {
  double h = 0;
  for (double x : p) {
    if (x > 0) h -= x * std::log(x);
  }
  return h;
}

int Corpus::draw(const std::vector<double>& cdf, double u) const {
  // The first index whose cumulative probability exceeds u.
  const auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
  return static_cast<int>(
      std::min<std::ptrdiff_t>(it - cdf.begin(), static_cast<std::ptrdiff_t>(cdf.size()) - 1));
}

Corpus::Corpus(const CorpusConfig& cfg, std::uint64_t seed) : cfg_(cfg), seed_(seed) {
  const int V = cfg.vocab, K = cfg.successors;
  if (V < 2 || K < 1 || cfg.w1 < 0 || cfg.w2 < 0 || cfg.w1 + cfg.w2 > 1) {
    throw std::invalid_argument("lm::Corpus: bad configuration");
  }
  zipf_.resize(V);
  double z = 0;
  for (int x = 0; x < V; ++x) z += (zipf_[x] = std::pow(x + 1.0, -cfg.zipf_s));
  for (double& p : zipf_) p /= z;
  zipf_cdf_ = cdf_of(zipf_);
  succ_w_.resize(K);
  double sw = 0;
  for (int r = 0; r < K; ++r) sw += (succ_w_[r] = 1.0 / (r + 1.0));
  for (double& w : succ_w_) w /= sw;
  succ_cdf_ = cdf_of(succ_w_);
  s1_.resize(static_cast<std::size_t>(V) * K);
  s2_.resize(static_cast<std::size_t>(V) * K);
  for (std::size_t i = 0; i < s1_.size(); ++i) {
    const native::Philox4 w = native::philox_block(seed, kStreamTables, i);
    s1_[i] = draw(zipf_cdf_, u53(w, 0));
    s2_[i] = draw(zipf_cdf_, u53(w, 1));
  }
  // The marginal from generated training sequences of 256 tokens.
  marginal_.assign(V, 0.0);
  const int len = 255;
  std::vector<int> seq(len + 1);
  long long n = 0;
  for (std::uint64_t i = 0; n < cfg.marginal_tokens; ++i) {
    sequence(0, i, len, seq.data());
    for (int t : seq) marginal_[t] += 1.0;
    n += len + 1;
  }
  for (double& p : marginal_) p /= static_cast<double>(n);
}

void Corpus::sequence(std::uint32_t stream, std::uint64_t index, int len, int* out) const {
  const int K = cfg_.successors;
  const std::uint64_t base = index * static_cast<std::uint64_t>(len + 1);
  for (int t = 0; t <= len; ++t) {
    const native::Philox4 w = native::philox_block(seed_, kStreamSeq + stream, base + t);
    const double uc = u53(w, 0), ut = u53(w, 1);
    int x;
    if (t >= 1 && uc < cfg_.w1) {
      x = s1_[static_cast<std::size_t>(out[t - 1]) * K + draw(succ_cdf_, ut)];
    } else if (t >= 2 && uc < cfg_.w1 + cfg_.w2) {
      x = s2_[static_cast<std::size_t>(out[t - 2]) * K + draw(succ_cdf_, ut)];
    } else {
      x = draw(zipf_cdf_, ut);
    }
    out[t] = x;
  }
}

double Corpus::prob(int x, int p1, int p2) const {
  const int K = cfg_.successors;
  double s1 = 0, s2 = 0;
  for (int r = 0; r < K; ++r) {
    if (s1_[static_cast<std::size_t>(p1) * K + r] == x) s1 += succ_w_[r];
    if (p2 >= 0 && s2_[static_cast<std::size_t>(p2) * K + r] == x) s2 += succ_w_[r];
  }
  if (p2 < 0) return cfg_.w1 * s1 + (1 - cfg_.w1) * zipf_[x];
  return cfg_.w1 * s1 + cfg_.w2 * s2 + (1 - cfg_.w1 - cfg_.w2) * zipf_[x];
}

double Corpus::unigram_loss(const std::vector<int>& seqs, int len) const {
  double s = 0;
  long long n = 0;
  for (std::size_t b = 0; b + len + 1 <= seqs.size(); b += len + 1) {
    for (int t = 1; t <= len; ++t, ++n) s -= std::log(std::max(marginal_[seqs[b + t]], 1e-300));
  }
  return s / static_cast<double>(n);
}

double Corpus::process_loss(const std::vector<int>& seqs, int len) const {
  double s = 0;
  long long n = 0;
  for (std::size_t b = 0; b + len + 1 <= seqs.size(); b += len + 1) {
    for (int t = 1; t <= len; ++t, ++n) {
      s -= std::log(prob(seqs[b + t], seqs[b + t - 1], t >= 2 ? seqs[b + t - 2] : -1));
    }
  }
  return s / static_cast<double>(n);
}

}  // namespace exmy::reports::lm
