// A small ReLU MLP trained with 32-bit Adam on synthetic data, to produce realistic Adam states
// (m, v) for the seed 002 error analysis. Everything is fp32 with one defined summation order
// (single-threaded, so the states are bit-identical for a seed whatever --threads says).
//
// Data (why representative): a teacher classification task. x_j = s_j z_j a_j with z ~ N(0, 1),
// feature scales s_j log-uniform over 3 decades (10^-1.5 .. 10^1.5) and features active with
// probability 1/4 (a_j in {0, 1}); the label is argmax_c sum_j T_cj z_j a_j of a random teacher T.
// Skewed feature scales and sparse activity give second moments spanning several decades inside
// one tensor and many near-zero first moments, the regime seed 002 analyses in language models
// (token-frequency skew); it is not a language model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/format/codebook.hpp"

namespace exmy::reports {

struct MlpConfig {
  int in = 64, hidden = 256, classes = 16;
  int batch = 64;
  int steps = 1000;
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  // PyTorch/bitsandbytes defaults
  std::vector<int> snapshot_steps;  // after these steps (1-based), m and v are recorded
  // 8-bit states (Dettmers et al.'s 8-bit Adam): when set, m and v are stored quantized with
  // these codebooks, absmax-normalised per block of `state_block` elements (0: per tensor).
  // Each step dequantizes them, updates in fp32, steps the parameters with the updated fp32
  // states and quantizes them again for storage (bitsandbytes' order).
  const Codebook* m_book = nullptr;
  const Codebook* v_book = nullptr;
  int state_block = 2048;
  // Tensors with fewer elements keep 32-bit states (bitsandbytes' min_8bit_size default 4096).
  int min_8bit_size = 4096;
  // Dettmers et al.'s stable-embedding rule, as far as the optimizer goes: the input layer (the
  // one that sees sparse inputs, as an embedding does) keeps 32-bit states.
  bool fp32_first_layer = false;
  // The optimizer: `adam` is this file's fp32 Adam (the states the heatmaps analyse, and the
  // 8-bit variants above); `torch_adamw` and `stable_adamw` are exmy's own steps
  // (optim::adam_step with decoupled decay, optim::stable_adamw_step; SEMANTICS 9.2, 9.5) and
  // record RMS_t of the input layer every step (the patch-embedding layer of the appendix-E
  // analysis: the layer that sees the raw, skewed inputs).
  // `bnb_adam8` is exmy's model of bitsandbytes' 8-bit block-wise Adam (optim::bnb_adam8_step,
  // SEMANTICS 9.3) with block `state_block` (256 or 2048) and its 32-bit fallback below 4096
  // elements; fp32_first_layer forces that fallback for the input layer.
  // `split_adamw`: the weights are stored in the split format `split` (Lewandowski and Kosson,
  // "Memory efficient mixed precision optimizers"; "bf16+8", "fp16+8:sr", ...): the forward and
  // backward passes use the 16-bit part, optim::split_adam_step (SEMANTICS 9.6: join, one fp32
  // AdamW step with fp32 states, split with the sr word of step t) updates them.
  enum class Optimizer {
    adam,
    torch_adamw,
    stable_adamw,
    bnb_adam8,
    split_adamw
  } optimizer = Optimizer::adam;
  std::string split;
  float wd = 0.0f;
  int log_every = 10;  // loss (and RMS) logged at step 1 and every log_every steps
  // Late features (the spike section's "learning signal changes"): group g of `late_group`
  // features, counted from the smallest-scale end (features g late_group .. (g+1) late_group
  // - 1: small inputs, so their onset barely moves the activations), is silent (a_j = 0)
  // before step late_onsets[g] and active after; the teacher ignores every late feature, so
  // their onset changes the gradients of their input-layer weights, not the task.
  std::vector<int> late_onsets;
  int late_group = 8;
  // The "fair" task for the 8-bit training comparison: every feature active (no a_j = 0) and
  // leaky ReLU with negative slope 1/64 instead of ReLU, so that no gradient is exactly 0 and
  // the v^ = 0 artefact (an update of lr m / eps when v quantizes to 0 and the next gradient is
  // exactly 0) cannot fire. The skewed feature scales stay.
  bool dense = false;
  // Normalised inputs: every feature scale s_j = 1 instead of 10^-1.5 .. 10^1.5 (the extra-bits
  // training of section 5, where the skewed scales would make the toy's loss, not the weights'
  // precision, the story).
  bool unit_scales = false;
  // Tests only: run the plain loops -- per-sample forward/backward, scalar fp32 Adam -- instead
  // of the batch kernels and the AVX2 Adam loop that train_mlp_adam uses (mlp_adam.cpp: the
  // same operations in the same order per element, so the same bits; the test checks that).
  bool per_sample = false;
};

// Codes and dequantized values of one state tensor under a codebook, group size `block` (0: the
// whole tensor). Per element (SEMANTICS 14.2): a = absmax of the group (fp32),
// n = RN32(x * RN32(1/a)), code = nearest (ties to the even index), x^ = RN32(value[code] * a).
void quantize_state(const std::vector<float>& x, const Codebook& cb, int block,
                    std::vector<std::uint8_t>& codes, std::vector<float>& deq);

struct AdamSnapshot {
  int step = 0;
  std::vector<std::string> names;        // W1 b1 W2 b2 W3 b3
  std::vector<std::vector<float>> m, v;  // one per parameter tensor
};

struct TrainLog {
  std::vector<int> step;
  std::vector<float> loss;      // mean cross-entropy of that step's batch
  std::vector<float> accuracy;  // fraction of that batch classified correctly
  // Element updates with v == 0 and m != 0, i.e. a step of lr m / eps: what 8-bit states do
  // when v quantizes to 0 and the next gradient is exactly 0 (dead ReLU units, inactive inputs).
  long long eps_updates = 0;
  // RMS_t = sqrt(mean(g^2 / max(u, eps^2))) of the input layer's weights at the logged steps
  // (torch_adamw: u = v / (1 - beta2^t); stable_adamw: its own u; empty for adam).
  std::vector<float> rms1;
  // Mean logit sharpness over the batch at the logged steps (To FP8 and back again, eqs. 1-2,
  // eps 5e-4, closed form: reports/sharpness.hpp).
  std::vector<float> sharpness;
};

// Trains and returns the snapshots; `log` receives the loss every 10 steps. Calls
// throw_if_interrupted() between steps.
std::vector<AdamSnapshot> train_mlp_adam(const MlpConfig& cfg, std::uint64_t seed, TrainLog& log);

}  // namespace exmy::reports
