// Optimizer steps on the GPU (docs/SEMANTICS.md 9): the same per-element functions as the host
// reference (sim/native/optim_*.hpp), so K GPU steps equal K reference steps bit for bit in the
// parameters and every state word. Pointers are device pointers, n elements; fp32 parameters,
// bf16/fp16 parameters (Adam/AdamW/SGD: 16-bit codes) or split formats (16-bit codes plus packed
// extra bits). Calls are asynchronous on `stream`
// except stable_adamw_step, which reads RMS_t back. Throws gpu::CudaError when a CUDA call fails.
// Defined only in CUDA builds (gpu/optim/optim_torch32.cu, optim_torch16.cu, optim_bnb8.cu,
// optim_stable_adamw.cu, optim_split.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/optim/optim.hpp"

struct CUstream_st;

namespace exmy::gpu {

// torch.optim.Adam(W): `fused` selects the fused=True variant. vmax: max_exp_avg_sq where
// h.amsgrad (else unused).
void adam_step(const optim::AdamHyper& h, bool decoupled, bool fused, long step, float* p,
               const float* g, float* m, float* v, std::size_t n, CUstream_st* stream = nullptr,
               float* vmax = nullptr);
void sgd_step(const optim::SgdHyper& h, long step, float* p, const float* g, float* buf,
              std::size_t n, CUstream_st* stream = nullptr);

// bf16/fp16 parameters (`st` = Storage::bf16 or f16, else InputError): as PyTorch, the gradient
// and the states have the parameter's dtype, so p, g, m, v (buf) are all 16-bit codes of `st`.
// Bit for bit optim::adam_step / sgd_step with the same storage on the decoded values.
void adam_step(const optim::AdamHyper& h, bool decoupled, bool fused, native::Storage st, long step,
               std::uint16_t* p, const std::uint16_t* g, std::uint16_t* m, std::uint16_t* v,
               std::size_t n, CUstream_st* stream = nullptr, std::uint16_t* vmax = nullptr);
void sgd_step(const optim::SgdHyper& h, native::Storage st, long step, std::uint16_t* p,
              const std::uint16_t* g, std::uint16_t* buf, std::size_t n,
              CUstream_st* stream = nullptr);

// bitsandbytes 8-bit states in device memory (the layout of optim::Bnb8State).
struct Bnb8DeviceState {
  int block = 256;      // 256 or 2048
  bool is_8bit = true;  // false: 32-bit fallback states s1/s2
  std::uint8_t* q1 = nullptr;
  std::uint8_t* q2 = nullptr;
  float* absmax1 = nullptr;
  float* absmax2 = nullptr;
  float* s1 = nullptr;
  float* s2 = nullptr;
};
void bnb_adam8_step(const native::Bnb8Scalars& s, float* p, const float* g,
                    const Bnb8DeviceState& st, std::size_t n, CUstream_st* stream = nullptr);
void bnb_momentum8_step(const native::Bnb8Scalars& s, float* p, const float* g,
                        const Bnb8DeviceState& st, std::size_t n, CUstream_st* stream = nullptr);
// bf16/fp16 parameters (`pt`): p and g are 16-bit codes of pt, as bitsandbytes keeps them; the
// states are those above (8-bit codes with fp32 absmax, or the fp32 states of the fallback).
void bnb_adam8_step(const native::Bnb8Scalars& s, native::Storage pt, std::uint16_t* p,
                    const std::uint16_t* g, const Bnb8DeviceState& st, std::size_t n,
                    CUstream_st* stream = nullptr);
void bnb_momentum8_step(const native::Bnb8Scalars& s, native::Storage pt, std::uint16_t* p,
                        const std::uint16_t* g, const Bnb8DeviceState& st, std::size_t n,
                        CUstream_st* stream = nullptr);

// bitsandbytes' RMSprop/Adagrad/Lion (one state; `op`), fp32 or 16-bit (`pt`) parameters.
void bnb1_step(const native::Bnb8Scalars& s, native::Bnb1Op op, float* p, const float* g,
               const Bnb8DeviceState& st, std::size_t n, CUstream_st* stream = nullptr);
void bnb1_step(const native::Bnb8Scalars& s, native::Bnb1Op op, native::Storage pt,
               std::uint16_t* p, const std::uint16_t* g, const Bnb8DeviceState& st, std::size_t n,
               CUstream_st* stream = nullptr);

// bitsandbytes' AdEMAMix: st.q1 / st.s1 hold m1 then m2 (2n), st.absmax1 2·blocks.
void bnb_ademamix_step(const native::Bnb8Scalars& s, float* p, const float* g,
                       const Bnb8DeviceState& st, std::size_t n, CUstream_st* stream = nullptr);
void bnb_ademamix_step(const native::Bnb8Scalars& s, native::Storage pt, std::uint16_t* p,
                       const std::uint16_t* g, const Bnb8DeviceState& st, std::size_t n,
                       CUstream_st* stream = nullptr);

// Returns RMS_t (synchronizes the stream).
float stable_adamw_step(const optim::AdamHyper& h, long step, float* p, const float* g, float* v,
                        float* u, std::size_t n, CUstream_st* stream = nullptr);

// Split-format parameters: hi[n] codes, extra[split_words(n, field_bits)] words.
void split_adam_step(const optim::AdamHyper& h, bool decoupled, long step, std::uint64_t seed,
                     const native::SplitFormat& f, std::uint16_t* hi, std::uint32_t* extra,
                     const float* g, float* m, float* v, std::size_t n,
                     CUstream_st* stream = nullptr);
void split_sgd_step(const optim::SgdHyper& h, long step, std::uint64_t seed,
                    const native::SplitFormat& f, std::uint16_t* hi, std::uint32_t* extra,
                    const float* g, float* buf, std::size_t n, CUstream_st* stream = nullptr);

}  // namespace exmy::gpu
