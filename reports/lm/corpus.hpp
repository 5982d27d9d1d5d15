// A synthetic language for the report's small decoder language model (reports/lm/lm_model.hpp):
// a fixed second-order Markov process with Zipfian marginals, generated from a seed with exmy's
// Philox (sim/native/philox.hpp), so that every batch is a pure function of (seed, step) and a
// model can train below the unigram entropy.
//
// The process. Z is the Zipf distribution over the vocabulary, Z(x) proportional to 1/(x+1)^s.
// Every token a has K "successors" S1[a] (K tokens drawn from Z, weights proportional to
// 1/(rank+1)) and K "skip successors" S2[a] (drawn the same way, independently). Token t >= 2
// given the two before it (p1 = x_{t-1}, p2 = x_{t-2}) is drawn from
//   P(x | p1, p2) = w1 S1[p1](x) + w2 S2[p2](x) + (1 - w1 - w2) Z(x),
// token 1 from w1 S1[x0] + (1 - w1) Z, token 0 from Z. The bigram part is learnable from the
// previous token alone, the skip part needs attention to the token two back, and the Z part is
// irreducible noise. Because successors are drawn from Z, the marginal stays close to Zipfian.
//
// The floors reported beside a model's loss (nats per token, on the evaluation tokens):
//   - unigram: the cross-entropy of the evaluation targets under the process's marginal,
//     estimated from `marginal_tokens` generated tokens (a model that ignores context can do no
//     better, up to that estimate);
//   - process: the cross-entropy of the evaluation targets under the true P above (the best any
//     model can do on those tokens).
#pragma once

#include <cstdint>
#include <vector>

namespace exmy::reports::lm {

struct CorpusConfig {
  int vocab = 256;
  double zipf_s = 1.1;
  int successors = 4;  // K
  double w1 = 0.5;     // bigram weight
  double w2 = 0.3;     // skip-bigram weight (token two back)
  int marginal_tokens = 1 << 20;
};

class Corpus {
 public:
  Corpus(const CorpusConfig& cfg, std::uint64_t seed);
  const CorpusConfig& config() const { return cfg_; }
  int vocab() const { return cfg_.vocab; }
  // Sequence `index` of stream `stream` (0: training, 1: evaluation; any value works), length
  // len + 1 (inputs are the first len tokens, targets the last len).
  void sequence(std::uint32_t stream, std::uint64_t index, int len, int* out) const;
  // P(x | p1, p2) of the process; p2 < 0 for token 1 (only x0 before it).
  double prob(int x, int p1, int p2) const;
  // The marginal estimated from marginal_tokens generated tokens (training stream sequences).
  const std::vector<double>& marginal() const { return marginal_; }
  // Cross-entropy (nats per target) of `seqs` (each len + 1 tokens, targets at 1..len) under the
  // marginal and under the process.
  double unigram_loss(const std::vector<int>& seqs, int len) const;
  double process_loss(const std::vector<int>& seqs, int len) const;

 private:
  int draw(const std::vector<double>& cdf, double u) const;
  CorpusConfig cfg_;
  std::uint64_t seed_;
  std::vector<double> zipf_, zipf_cdf_;
  std::vector<int> s1_, s2_;               // vocab x K successor tokens
  std::vector<double> succ_w_, succ_cdf_;  // K weights and their cdf
  std::vector<double> marginal_;
};

// Entropy in nats of a distribution (terms with p = 0 skipped; summed in index order).
double entropy_nats(const std::vector<double>& p);

}  // namespace exmy::reports::lm
