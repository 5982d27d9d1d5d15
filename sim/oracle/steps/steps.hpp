// The step oracle: docs/SEMANTICS.md section 9 (optimizer steps), written from the document as
// sequences of exactly-rounded operations on exact values (real.hpp). It shares no code with
// sim/native or sim/optim: the campaign `exmy verify --campaign steps` (sim/verify) runs both and
// compares every parameter and state bit. Each function names the paragraph it implements; the
// notation follows the document: ⊕ ⊗ ⊘ √ are RN32 (`add(F32, …)`), `fma` is rounded once,
// `⊕₆₄` is RN64 (`add(F64, …)`), T(·) rounds to the storage format T (bf16, fp16 or fp32).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/oracle/steps/real.hpp"

namespace exmy::oracle::steps {

using Tensor = std::vector<Real>;

// Hyperparameters as the user gives them (Python floats).
// The PyTorch kernels a step models (9.2 "PyTorch CUDA kernels", `--compat`): the ATen CPU kernels,
// the CUDA TensorIterator kernels (foreach=False) or the CUDA multi-tensor kernels (foreach=True).
// The PyTorch kernel family (native::TorchKernels, same order): cuda_fused is modelled for SGD
// here (9.3); fused Adam/AdamW are checked against torch itself (golden/peers/torch-cuda).
enum class Kernels { cpu, cuda, cuda_foreach, cuda_fused };
struct AdamHyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0.0;
  Kernels kernels = Kernels::cpu;
  bool amsgrad = false, maximize = false;  // 9.2.6
};
struct SgdHyper {
  double lr = 1e-3, momentum = 0.9, dampening = 0.0, wd = 0.0;
  bool nesterov = false;
  Kernels kernels = Kernels::cpu;
  bool maximize = false;  // grad ← −grad first (9.3)
};

// ---- 9.2.2 the ATen CPU kernels' scalar tails -------------------------------------------------
// Whether element i of an n-element tensor of T is left to the kernel's scalar lambda: the tensor
// in ceil(n / 32768) equal chunks of ceil(n / chunks) (one below 32768 elements; as many threads
// as chunks), in each the elements past the last whole group of 64 bytes.
bool cpu_scalar_tail(std::size_t i, std::size_t n, const FloatFormat& T);
// a.add(b, alpha) with α the alpha as the kernel holds it: T(fma(b, α, a)), except on the CPU's
// scalar tail of a 16-bit T: T(a ⊕ T(α ⊗ b)).
Real cpu_add_alpha(const Real& a, const Real& b, const Real& alpha, const FloatFormat& T,
                   bool tail);

// addcmul(a, b, c, value=w) as a tensor op computes it before the rounding to T (9.2): CPU
// fma(w ⊗ b, c, a); CUDA fma(b, c, a) when w = 1, else fma(w, b ⊗ c, a).
Real torch_addcmul(const Real& a, const Real& b, const Real& c, const Real& w, bool cpu);

// ---- 9.2 torch.optim.Adam / AdamW (_single_tensor_adam) -----------------------------------
struct TorchAdamScalars {
  bool has_wd = false, decoupled = true;
  Kernels kernels = Kernels::cpu;
  Real decay, lambda, w1, w1m1, b2, w2, ns, c, e;
  Real inv_c;  // cuda: RN32(1 ⊘₆₄ (bc2 ** 0.5)), the reciprocal of the Python float
  bool amsgrad = false, maximize = false;
};
TorchAdamScalars torch_adam_scalars(const AdamHyper& h, long t, bool decoupled);
// One element at step t; p, m, v and g are values of T; vmax (max_exp_avg_sq) is read and written
// where s.amsgrad (else it may be null).
void torch_adam_element(const TorchAdamScalars& s, const FloatFormat& T, Real& p, Real g, Real& m,
                        Real& v, bool tail = false, Real* vmax = nullptr);
void torch_adam_step(const AdamHyper& h, bool decoupled, const FloatFormat& T, long t, Tensor& p,
                     const Tensor& g, Tensor& m, Tensor& v, Tensor* vmax = nullptr);

// ---- 9.3 torch.optim.SGD (_single_tensor_sgd) ---------------------------------------------
void torch_sgd_element(const SgdHyper& h, const FloatFormat& T, long t, Real& p, Real g, Real& buf,
                       bool tail = false);
void torch_sgd_step(const SgdHyper& h, const FloatFormat& T, long t, Tensor& p, const Tensor& g,
                    Tensor& buf);

// ---- 5.3 nearest code, 9.4 bitsandbytes 8-bit ----------------------------------------------
// A 256-entry codebook (the table is data: the fp32 values of sim/format/codebook.cpp, passed
// in by the caller) with its fp32 midpoints m_k = RN32(c_k + c_{k+1}) ⊗ 0.5.
struct Codebook {
  Tensor c, mid;
};
Codebook make_codebook(std::span<const float> values);
// 5.3 with TieRule::even_index: #{k : m_k < x}, an exact midpoint goes to the even index of
// k, k+1; NaN → 0.
std::uint8_t nearest_even(const Codebook& cb, const Real& x);

// 9.4 step 4 for state 1: nearest code of s ⊘ absmax, then the sign guard (uint8 wrap).
// `nan_state` is set when s is NaN: the guard then reads a NaN's sign bit, which 9.1 leaves
// unspecified, so the code is 0 (sign bit 1) or 255 (sign bit 0).
std::uint8_t requantize_signed(const Codebook& cb, const Real& s, const Real& absmax,
                               std::uint8_t& nan_state);

struct Bnb8State {
  int block = 256;
  bool is_8bit = true;
  std::vector<std::uint8_t> q1, q2;
  Tensor a1, a2;  // per-block absmax
  Tensor s1, s2;  // fp32 states of the < 4096 fallback
  // Elements whose state 1 was NaN at requantization: the sign guard reads the NaN's sign bit,
  // which section 9.1 leaves unspecified, so q1 is one of two codes (see the campaign).
  std::vector<std::uint8_t> q1_nan;
};
// Zero state as bitsandbytes creates it; n < 4096 keeps fp32 states unless !small_fallback.
Bnb8State bnb8_init(std::size_t n, bool two_states, int block, bool small_fallback);
void bnb_adam8_step(const AdamHyper& h, long t, const FloatFormat& T, const Codebook& code1,
                    const Codebook& code2, Tensor& p, const Tensor& g, Bnb8State& st);
// Momentum: h.beta1 is the momentum (9.9).
void bnb_momentum8_step(const AdamHyper& h, long t, const FloatFormat& T, const Codebook& code1,
                        Tensor& p, const Tensor& g, Bnb8State& st);
// 9.4.1 RMSprop / Adagrad / Lion (one state; RMSprop's alpha is h.beta1), 8-bit blocks or the
// fp32 states (kOptimizer32bit1State) when st.is_8bit is false.
enum class Bnb1Op { rmsprop, adagrad, lion };
void bnb1_step(Bnb1Op op, const AdamHyper& h, long t, const FloatFormat& T, const Codebook& code1,
               Tensor& p, const Tensor& g, Bnb8State& st);
// 9.4.2 AdEMAMix: st.q1 / st.a1 / st.s1 hold m1 then m2 (2n codes, 2·blocks absmax, 2n fp32);
// beta3 and alpha as given. bnb8_init(n, true, ...) then ademamix_init doubles state 1.
void bnb_ademamix_init(Bnb8State& st, std::size_t n);
void bnb_ademamix_step(const AdamHyper& h, double beta3, double alpha, long t, const FloatFormat& T,
                       const Codebook& code1, const Codebook& code2, Tensor& p, const Tensor& g,
                       Bnb8State& st);

// ---- 9.5 StableAdamW, 10 the fixed sum tree -------------------------------------------------
// Section 10's fp64 sum of fp32 terms.
Real tree_sum(const Tensor& terms);
// One step; returns RMS_t.
Real stable_adamw_step(const AdamHyper& h, long t, Tensor& p, const Tensor& g, Tensor& v,
                       Tensor& u);

// ---- 6 split formats, 9.6 -----------------------------------------------------------------
struct SplitFmt {
  bool bf16 = true;  // else fp16
  int k = 8;
  bool sr = false;
  bool fp8 = false;  // with bf16 = false: the stored part is e5m2 (fp16's top 8 bits)
};
struct SplitElem {
  std::uint16_t hi = 0;
  std::uint32_t field = 0;  // the k extra bits, the rounded-up bit above them under :sr
};
// split(x) of an fp32 value; `word` is the element's 32-bit Philox word (used under :sr).
SplitElem split(const Real& x, const SplitFmt& f, std::uint32_t word);
Real join(const SplitElem& e, const SplitFmt& f);
// The random word of element i at step t (stream 9, key seed + t).
std::uint32_t split_word(std::uint64_t seed, long t, std::uint64_t i);
// Section 6's packing of the fields into little-endian 32-bit words.
std::vector<std::uint32_t> pack_fields(const std::vector<SplitElem>& e, const SplitFmt& f);
void split_adam_step(const AdamHyper& h, bool decoupled, const SplitFmt& f, long t,
                     std::uint64_t seed, std::vector<SplitElem>& p, const Tensor& g, Tensor& m,
                     Tensor& v);
void split_sgd_step(const SgdHyper& h, const SplitFmt& f, long t, std::uint64_t seed,
                    std::vector<SplitElem>& p, const Tensor& g, Tensor& buf);

// ---- 9.7 loss scaling ---------------------------------------------------------------------
struct DynamicScaler {
  Real scale = Real::of_double(65536.0);
  int growth_interval = 2000, tracker = 0;
};
// found_inf on the scaled gradient; g ← g ⊗ RN32(1/scale) (fp64 reciprocal) unless that is 1.
bool unscale(Tensor& g, const Real& scale);
void update_scale(DynamicScaler& s, bool found_inf);

}  // namespace exmy::oracle::steps
