// Training the small language model (lm_model.hpp) on the synthetic corpus (corpus.hpp) with
// exmy's own optimizer steps: every tensor is stepped by the registry entry `adamw8bit`
// (sim/optim/registry.hpp: the same cpu_step `exmy step --optimizer adamw8bit` runs, bitsandbytes'
// AdamW8bit kernel order, docs/SEMANTICS.md 9.4). Its states are
//   - 8-bit block-wise (dynamic maps, one fp32 absmax per block of `block` elements) for a
//     tensor with at least min_8bit_size elements when state8 is set, and
//   - fp32 (the entry's 32-bit kernel, bitsandbytes' kOptimizer32bit2State: the path its
//     min_8bit_size fallback takes) otherwise: every tensor of an fp32 run, the small tensors
//     of an 8-bit run, and the embedding (and its layer norm) of a stable-embedding 8-bit run
//     (bitsandbytes' StableEmbedding registers its weight for 32-bit states).
// So an fp32 run and an 8-bit run differ in the state storage only: same update formula, same
// scalars. Weight decay (decoupled, the kernel's p <- p (1 - lr wd)) applies to 2-d weights.
// Learning rate: linear warmup from lr / warmup to lr over `warmup` steps, then cosine decay
// to min_lr_frac lr at the last step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reports/lm/corpus.hpp"
#include "reports/lm/lm_model.hpp"

namespace exmy::reports::lm {

struct TrainConfig {
  ModelConfig model;
  int batch = 16;  // sequences per step (batch x seq tokens)
  int steps = 200;
  int warmup = 20;
  double lr = 1e-3, min_lr_frac = 0.1;
  double beta1 = 0.9, beta2 = 0.995, eps = 1e-8, wd = 0.01;
  bool state8 = false;
  int block = 2048;
  int min_8bit_size = 4096;  // bitsandbytes' min_8bit_size
  int log_every = 10;        // mean training loss of each window of log_every steps
  // Stop a run once a training loss is non-finite or exceeds this (a diverged run; the loss at
  // initialisation is about ln V).
  double stop_loss = 20.0;
  // Logit sharpness (Model::forward_backward) of the training batch at step 1 and every
  // sharpness_every-th step (0: never): computed in the step's own forward pass, so it costs
  // the metric only.
  int sharpness_every = 0;
  const GemmPolicy* policy = nullptr;
};

// Per-block statistics of a second-moment state at the end of training.
struct VBlock {
  std::string tensor;
  int block_size = 0;
  long long index = 0;
  double absmax = 0;       // max v of the block
  double min_nonzero = 0;  // smallest v > 0 of the block (0 if none)
  double below_map = 0;    // share of the block's v > 0 with v / absmax below half the map's
                           // smallest nonzero value (they quantize to 0)
};

struct TrainResult {
  std::vector<int> step;          // last step of each logged window
  std::vector<double> loss, lr;   // window mean training loss, lr at that step
  std::vector<int> sharp_step;    // steps of the sharpness trajectory (sharpness_every)
  std::vector<double> sharpness;  // the training batch's mean logit sharpness at those steps
  double first_loss = 0;          // training loss of step 1
  double final_eval = 0;          // eval loss after the last step (NaN when stopped)
  int steps_done = 0;
  bool nonfinite = false;  // a non-finite training loss was seen (run stopped)
  bool stopped = false;    // stopped early (nonfinite or above stop_loss)
  // Share of 8-bit v codes whose value is 0 at the end (8-bit tensors only; 0 for fp32 runs).
  double v_zero_share = 0;
  // fp32 runs: v of every tensor with at least min_8bit_size elements, per block of 256 and of
  // 2048 (the states an 8-bit run would have to represent).
  std::vector<VBlock> vblocks;
};

// The learning rate of step t (1-based).
double lr_at(const TrainConfig& c, int t);

// Evaluation sequences: `count` sequences of stream 1, seq + 1 tokens each.
std::vector<int> eval_tokens(const Corpus& corpus, int seq, int count);
// Training batch of `step` for seed `seed`: sequences (seed mod 2^32) 2^32 + step batch + j of
// stream 0.
std::vector<int> train_batch(const Corpus& corpus, std::uint64_t seed, int step, int batch,
                             int seq);
// Mean loss of the model on eval tokens (batches of `batch` sequences, averaged over all).
double eval_loss(Model& m, const std::vector<int>& eval, int batch, const GemmPolicy* policy);

TrainResult train_lm(const TrainConfig& cfg, const Corpus& corpus, std::uint64_t seed,
                     const std::vector<int>& eval);

// The equivalence rule of the 8-bit comparison: [lo, hi] is the 95% interval of the mean paired
// difference L8 - L32, margin the fp32 seed SD, unstable8/32 the unstable runs of each side.
// "not reproduced (8-bit runs unstable)" if unstable8 > unstable32; "inconclusive (unstable fp32
// runs)" if fp32 runs are unstable or the interval is not finite; "reproduced" if
// -margin <= lo and hi <= margin; "not reproduced" if lo > margin, "not reproduced (8-bit lower:
// ...)" if hi < -margin (not equivalent, in 8-bit's favour); else
// "inconclusive (interval wider than the margin)".
std::string equivalence_verdict(double lo, double hi, double margin, int unstable8, int unstable32);

// The unsigned dynamic map's smallest positive value (bitsandbytes' v map; 3.25e-7).
double v_map_min_positive();

}  // namespace exmy::reports::lm
