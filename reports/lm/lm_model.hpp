// A small decoder-only language model in fp32 for the report's training experiments (the 8-bit
// optimizer comparison, reports/lm8bit_section.cpp; the next one, "To FP8 and back again"'s
// mantissa sweep, reuses it through the GEMM operand hook below).
//
// Architecture (GPT-2 style, pre-layer-norm):
//   x0 = E'[tok] + P[pos],  E' = E (standard embedding) or LN_e(E[tok]) (the stable embedding of
//        Dettmers et al., "8-bit optimizers via block-wise quantization", section 2.3: Xavier-
//        uniform init and a layer norm after the embedding; its 32-bit optimizer states are the
//        trainer's business, reports/lm/lm_train.hpp)
//   per layer: x = x + Attn(LN1(x)) ;  x = x + W2 GELU(W1 LN2(x) + b1) + b2
//   Attn: one fused QKV linear (d x 3d, bias), H heads of dh = d / H, causal softmax of
//         RN32(Q K^T) * RN32(1/sqrt(dh)), output linear (d x d, bias)
//   logits = LN_f(x) W_head (untied head, d x V, no bias); loss = mean token cross-entropy.
// GELU is the exact erf form 0.5 u (1 + erf(u / sqrt 2)). Init: E ~ N(0, 1) (torch.nn.Embedding)
// or U(-a, a), a = sqrt(6 / (V + d)) (stable, torch.nn.init.xavier_uniform_); P, linear weights
// and the head ~ N(0, 0.02^2), the residual projections (attention output, W2) N(0, (0.02 /
// sqrt(2 L))^2); biases 0; layer norms gain 1, bias 0, eps 1e-5.
//
// Numerics. Everything is fp32 with one fixed evaluation order, single-threaded within a model
// (the report parallelises over independent runs), so a run is a pure function of its inputs on
// any thread count. Products and sums are separate fp32 operations (no contraction, no
// fast-math). Every matrix product goes through one GEMM, C[i][j] = sum_k A[i][k] B[k][j] summed
// in fp32 in k order 0, 1, ..., K-1 from +0. Layer-norm mean and variance, bias gradients, the
// softmax normaliser and the loss are sums in fixed index order (layer-norm statistics and the
// loss in fp64, the rest in fp32).
//
// The numerics hook (GemmPolicy): each GEMM call names its site (which product of the model) and
// its pass, and the policy may cast or mask each of its two operands, elementwise, before the
// product (the product itself stays fp32 as above). Operands per pass, for a linear layer
// Y = X W (W stored in x out):
//   fwd:   A = X (activations),        B = W (weights)         -> Y
//   dgrad: A = dY (output gradients),  B = W (used as W^T)     -> dX
//   wgrad: A = X (used as X^T),        B = dY                  -> dW
// and for the attention products (per batch row and head):
//   scores S = Q K^T:  fwd A = Q, B = K;  dgrad (dQ = dS K) A = dS, B = K;
//                      wgrad (dK = dS^T Q) A = dS, B = Q
//   values O = P V:    fwd A = P, B = V;  dgrad (dP = dO V^T) A = dO, B = V;
//                      wgrad (dV = P^T dO) A = P, B = dO
// A cast is identity (no change), rne (round to the nearest ExMy value, ties to even, IEEE-style
// format E, M with bias 2^(E-1) - 1 and subnormals, overflow saturating to +-max: the native
// engine's convert, docs/SEMANTICS.md 2-4) or mask (docs/SEMANTICS.md 2.1, sim/native/mask.hpp:
// the low 23 - M mantissa bits cleared, with the outer/inner rules). The default policy is
// identity everywhere, which is bit-identical to a model without the hook (tested).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/native/mask.hpp"

namespace exmy::reports::lm {

enum class CastMode : std::uint8_t { identity, rne, mask };
struct OperandCast {
  CastMode mode = CastMode::identity;
  int exp_bits = 8, man_bits = 23;
  MaskOuter outer = MaskOuter::clamp;  // mask only
  MaskInner inner = MaskInner::keep;   // mask only
};

// A tally of the operand elements a mask cast meets in the regions its limit rules act on (the
// E7M7 inner/outer ablation of "To FP8 and back again", section 4.2, changes results only through
// these elements): every element of a masked operand, those with |x| > max (inf included: what
// `outer` decides) and those with 0 < |x| < min_normal (what `inner` decides), docs/SEMANTICS.md
// 2.1. NaN is in neither region.
struct MaskLimitCounts {
  long long elements = 0;
  long long above_max = 0;
  long long below_min_normal = 0;
};

enum class GemmSite : int { qkv, scores, values, attn_out, mlp_up, mlp_down, head };
inline constexpr int kGemmSites = 7;
enum class Pass : int { fwd, dgrad, wgrad };
inline constexpr int kPasses = 3;
const char* site_name(GemmSite s);
const char* pass_name(Pass p);

// The magnitudes of one operand's elements, binned by binade: bin[2 f + t] counts the elements
// whose fp32 exponent field is f (0: zero and subnormals, 255: inf and NaN) and t = 1 when the
// mantissa field exceeds 0x7F0000, i.e. a normal |x| > (2 - 2^-7) 2^(f - 127), the top of its
// binade that no value with 7 mantissa bits reaches. That resolves every ExMy limit of
// docs/SEMANTICS.md 2.1 with E <= 8 and M = 7 exactly (max (2 - 2^-7) 2^bias lies in binade
// bias, min normal 2^(1 - bias) starts one): reports/lm/operand_range.hpp reads them. Zeros and
// NaNs are counted apart (inf = bins 510 + 511 - nans, subnormals = bins 0 + 1 - zeros). Integer
// tallies: sums over runs are the same in any order.
struct OperandHistogram {
  std::array<long long, 512> bin{};
  long long zeros = 0, nans = 0;
};
// Adds the n elements of x to h.
void add_to_histogram(const float* x, std::size_t n, OperandHistogram& h);
// One histogram per GEMM operand: [site][pass][operand], operand 0 = A, 1 = B.
struct RangeHistograms {
  std::array<OperandHistogram, kGemmSites * kPasses * 2> h{};
  OperandHistogram& at(GemmSite s, Pass p, int operand) {
    return h[(static_cast<int>(s) * kPasses + static_cast<int>(p)) * 2 + operand];
  }
  const OperandHistogram& at(GemmSite s, Pass p, int operand) const {
    return h[(static_cast<int>(s) * kPasses + static_cast<int>(p)) * 2 + operand];
  }
};

struct GemmPolicy {
  // [site][pass][operand], operand 0 = A, 1 = B.
  std::array<OperandCast, kGemmSites * kPasses * 2> cast{};
  OperandCast& at(GemmSite s, Pass p, int operand) {
    return cast[(static_cast<int>(s) * kPasses + static_cast<int>(p)) * 2 + operand];
  }
  const OperandCast& at(GemmSite s, Pass p, int operand) const {
    return cast[(static_cast<int>(s) * kPasses + static_cast<int>(p)) * 2 + operand];
  }
  // When set, every GEMM adds its masked operands' limit regions here (one run's policy, one
  // thread: the tally is not synchronised).
  MaskLimitCounts* counts = nullptr;
  // When set, every GEMM adds both operands' elements, before their casts, to the histogram of
  // its site, pass and operand (likewise one run, one thread).
  RangeHistograms* range = nullptr;
  // The same cast on both operands of every site and pass.
  static GemmPolicy all(const OperandCast& c);
};

// Adds to k the n elements of x and those of them in the limit regions of c's format (c masks).
void count_mask_limits(const float* x, std::size_t n, const OperandCast& c, MaskLimitCounts& k);

// x cast as c says (identity returns x).
float cast_operand(float x, const OperandCast& c);
// x[i] = cast_operand(x[i], c) for i < n, with the mode and format chosen once (the GEMM's
// operand casts: each operand matrix is cast once per product).
void cast_operands(float* x, std::size_t n, const OperandCast& c);

struct ModelConfig {
  int vocab = 256;
  int d = 64;
  int heads = 2;
  int layers = 2;
  int seq = 32;  // context length T
  bool stable_embedding = false;
};

// One parameter tensor: values, gradient (same length) and what the trainer needs to know.
struct Tensor {
  std::string name;
  int rows = 1, cols = 1;
  std::vector<float> w, g;
  bool embedding = false;  // the token embedding and its layer norm (stable: 32-bit states)
  bool matrix = false;     // a 2-d weight (weight decay applies)
};

class Model {
 public:
  Model(const ModelConfig& cfg, std::uint64_t init_seed);
  const ModelConfig& config() const { return cfg_; }
  std::vector<Tensor>& tensors() { return t_; }
  const std::vector<Tensor>& tensors() const { return t_; }
  std::size_t parameter_count() const;

  // tokens: `batch` sequences of seq + 1 tokens (inputs 0..seq-1, targets 1..seq). Returns the
  // mean cross-entropy over batch x seq targets (fp64 sum of fp32 per-token losses in order,
  // divided by the count). With grads, every Tensor::g is overwritten with d loss / d w. With
  // sharpness, *sharpness is the mean over the batch x seq output rows of the logit sharpness of
  // "To FP8 and back again" (reports/sharpness.hpp, eps 5e-4) of that row and its target (fp64
  // sum in row order, divided by the count).
  double forward_backward(const std::vector<int>& tokens, int batch, bool grads,
                          const GemmPolicy* policy = nullptr, double* sharpness = nullptr);

 private:
  struct LayerIdx {
    int ln1g, ln1b, qkvw, qkvb, outw, outb, ln2g, ln2b, upw, upb, downw, downb;
  };
  int add(const std::string& name, int rows, int cols);
  ModelConfig cfg_;
  std::vector<Tensor> t_;
  int emb_ = 0, pos_ = 0, embg_ = -1, embb_ = -1, lnfg_ = 0, lnfb_ = 0, head_ = 0;
  std::vector<LayerIdx> L_;
};

}  // namespace exmy::reports::lm
