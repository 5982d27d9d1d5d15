// Host reference of the optimizer steps (docs/SEMANTICS.md section 9) on host arrays. Each step
// calls the per-element functions of sim/native/optim_*.hpp that the CUDA kernels also call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/native/bnb_kernels.hpp"
#include "sim/native/optim_adamw.hpp"
#include "sim/native/optim_bnb8.hpp"
#include "sim/native/optim_bnb8_ademamix.hpp"
#include "sim/native/optim_bnb8_ops.hpp"
#include "sim/native/optim_split.hpp"
#include "sim/native/optim_stable_adamw.hpp"

namespace exmy::optim {

using native::SplitFormat;
using native::Storage;

struct AdamHyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0.0;
  double beta3 = 0.0, alpha = 0.0;  // AdEMAMix (bitsandbytes' betas[2] and alpha)
  // The PyTorch kernels modelled (`--compat torch-cpu|torch-cuda|torch-cuda-foreach`).
  native::TorchKernels kernels = native::TorchKernels::cpu;
  native::TorchCpuLoop cpu{};  // torch-cpu's capability and threads (`:avx2`, `:tN`)
  // The bitsandbytes kernels modelled by the 8-bit optimizers (`--compat bnb-cuda`).
  native::BnbKernels bnb = native::BnbKernels::exact;
  // torch.optim.Adam/AdamW's amsgrad=True (state3: max_exp_avg_sq) and maximize=True
  // (`--amsgrad`, `--maximize`; docs/SEMANTICS.md 9.2.6).
  bool amsgrad = false, maximize = false;
};
struct SgdHyper {
  double lr = 1e-3, momentum = 0.9, dampening = 0.0, wd = 0.0;
  bool nesterov = false;
  native::TorchKernels kernels = native::TorchKernels::cpu;
  native::TorchCpuLoop cpu{};
  bool maximize = false;  // torch.optim.SGD's maximize=True (`--maximize`, SEMANTICS 9.3)
};

// ---- PyTorch Adam / AdamW / SGD
// ------------------------------------------------------------------
native::TorchAdamScalars torch_adam_scalars(const AdamHyper& h, long step, bool decoupled);
// n: the tensor's element count (the fused kernel's vectorised path needs n % 4 == 0).
native::TorchFusedAdamScalars torch_fused_adam_scalars(const AdamHyper& h, long step,
                                                       bool decoupled, std::size_t n);
native::TorchSgdScalars torch_sgd_scalars(const SgdHyper& h);

// One step t (1-based) of torch.optim.Adam(W) (_single_tensor_adam) on values of storage `st`;
// vmax: max_exp_avg_sq, read and written where h.amsgrad (else unused, may be empty).
void adam_step(const AdamHyper& h, bool decoupled, Storage st, long step, std::span<float> p,
               std::span<const float> g, std::span<float> m, std::span<float> v,
               std::span<float> vmax = {});
// fused=True (`--compat torch-cuda-fused`; `--variant torch-fused` is the same model).
void adam_fused_step(const AdamHyper& h, bool decoupled, Storage st, long step, std::span<float> p,
                     std::span<const float> g, std::span<float> m, std::span<float> v,
                     std::span<float> vmax = {});
void sgd_step(const SgdHyper& h, Storage st, long step, std::span<float> p,
              std::span<const float> g, std::span<float> buf);

// ---- bitsandbytes 8-bit ----------------------------------------------------------------------
struct Bnb8State {
  int block = 256;
  bool is_8bit = true;  // false: the 32-bit fallback of tensors below min_8bit_size
  bool two_states = true;
  std::vector<std::uint8_t> q1, q2;     // codes (8-bit)
  std::vector<float> absmax1, absmax2;  // per block (8-bit)
  std::vector<float> s1, s2;            // fp32 states (fallback)
  // AdEMAMix: state 1 holds m1 then m2 (2n codes or fp32 values, bitsandbytes' (2, *shape)
  // buffer), absmax1 the 2·blocks absmax of m1 then m2.
  bool ademamix = false;
};
inline constexpr std::size_t kMin8bitSize = 4096;  // bitsandbytes' min_8bit_size
// Zero state as bitsandbytes creates it (codes 0, absmax 0). `small_fallback` keeps tensors with
// fewer than 4096 elements in 32-bit as bitsandbytes does.
Bnb8State bnb8_init(std::size_t n, bool two_states, int block, bool small_fallback);
native::Bnb8Scalars bnb8_scalars(const AdamHyper& h, long step, bool torch_order);
void bnb_adam8_step(const native::Bnb8Scalars& s, Storage st, std::span<float> p,
                    std::span<const float> g, Bnb8State& state);
void bnb_momentum8_step(const native::Bnb8Scalars& s, Storage st, std::span<float> p,
                        std::span<const float> g, Bnb8State& state);
// AdEMAMix8bit / AdEMAMix32bit (section 9.4.2): zero state (bnb8_init's two states with state 1
// doubled) and one step.
Bnb8State bnb_ademamix_init(std::size_t n, int block, bool small_fallback);
void bnb_ademamix_step(const native::Bnb8Scalars& s, Storage st, std::span<float> p,
                       std::span<const float> g, Bnb8State& state);
// RMSprop8bit / Adagrad8bit / Lion8bit and their 32-bit states (section 9.4.1).
void bnb1_step(const native::Bnb8Scalars& s, native::Bnb1Op op, Storage st, std::span<float> p,
               std::span<const float> g, Bnb8State& state);

// ---- StableAdamW
// ---------------------------------------------------------------------------------
native::StableAdamWScalars stable_adamw_scalars(const AdamHyper& h, long step);
// Section 10's defined-order fp64 sum of fp32 terms.
double tree_sum(std::span<const float> terms);
// RMS_t = RN32(sqrt(RN64(sum / n))) (0 for n = 0).
float rms_from_sum(double sum, std::size_t n);
// eta = RN32(RN32(lr) / max(1, rms)) (NaN rms gives NaN).
float stable_eta(double lr, float rms);
// One step; returns RMS_t of the tensor.
float stable_adamw_step(const AdamHyper& h, long step, std::span<float> p, std::span<const float> g,
                        std::span<float> v, std::span<float> u);

// ---- split formats (seed 004)
// --------------------------------------------------------------------
struct SplitTensor {
  SplitFormat fmt;
  std::vector<std::uint16_t> hi;
  std::vector<std::uint32_t> extra;  // split_words(n, field_bits) words
};
SplitFormat parse_split_format(const std::string& name);  // "bf16+8", "fp16+13", "bf16+8:sr"
std::string split_format_name(const SplitFormat& f);
SplitTensor split_tensor(std::span<const float> x, const SplitFormat& f, std::uint64_t seed);
std::vector<float> join_tensor(const SplitTensor& t);
void split_adam_step(const AdamHyper& h, bool decoupled, long step, std::uint64_t seed,
                     SplitTensor& p, std::span<const float> g, std::span<float> m,
                     std::span<float> v);
void split_sgd_step(const SgdHyper& h, long step, std::uint64_t seed, SplitTensor& p,
                    std::span<const float> g, std::span<float> buf);

// ---- loss scaling
// ---------------------------------------------------------------------------------
// torch.amp.GradScaler defaults.
struct DynamicScaler {
  float scale = 65536.0f;
  float growth_factor = 2.0f, backoff_factor = 0.5f;
  int growth_interval = 2000;
  int growth_tracker = 0;
};
// _amp_foreach_non_finite_check_and_unscale_: g <- RN32(g * RN32(1/scale)) and whether any input
// element was inf/NaN.
bool unscale_and_check(std::span<float> g, float scale);
// _amp_update_scale_: backoff on inf (tracker reset), growth after growth_interval clean steps.
void update_scale(DynamicScaler& s, bool found_inf);
// Any non-finite element (seed 000's per-tensor check).
bool has_non_finite(std::span<const float> g);

}  // namespace exmy::optim
