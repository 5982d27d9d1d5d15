// CUDA kernels of bitsandbytes' 8-bit Adam, Momentum, RMSprop, Adagrad and Lion
// (gpu/optim/optim.hpp; AdEMAMix is optim_bnb8_ademamix.cu): blockwise dynamic
// codebook states with fp32 absmax, fp32 or bf16/fp16 parameters; the vectorised fast path for
// full blocks, element-wise kernels for the rest, and the 32-bit fallback steps. Each kernel calls
// the per-element functions of sim/native/optim_*.hpp; what is specific to the GPU is only the
// data movement and the 8-bit block maximum (exact: max of non-NaN values).
#include <cuda_runtime.h>

#include <array>
#include <cfloat>
#include <cstdint>
#include <mutex>

#include "gpu/optim/bnb8_kernels.cuh"
#include "sim/native/bnb_dynamic_map.hpp"

namespace exmy::gpu {
namespace bnb8 {
namespace {
// bitsandbytes' two dynamic maps on the host, built once (the function sim/format's
// dynamic_codebook also names).
const std::array<float, 256>& dynamic_map(bool is_signed) {
  static const std::array<std::array<float, 256>, 2> maps = [] {
    std::array<std::array<float, 256>, 2> m{};
    native::bnb_dynamic_map(true, m[0]);
    native::bnb_dynamic_map(false, m[1]);
    return m;
  }();
  return maps[is_signed ? 0 : 1];
}
}  // namespace

unsigned ctas_8bit(std::size_t want) {
  const std::size_t cap = static_cast<std::size_t>(sm_count()) * 8;
  return static_cast<unsigned>(want < cap ? want : cap);
}

const float* device_codes() {
  // One copy per device (a pointer is valid on its own device only).
  static PerDeviceBuffer buf;
  return static_cast<const float*>(buf.get(512 * sizeof(float), [](void* d) {
    float host[512];
    const auto& s = dynamic_map(true);
    const auto& u = dynamic_map(false);
    for (int i = 0; i < 256; ++i) {
      host[i] = s[i];
      host[256 + i] = u[i];
    }
    cuda_check(cudaMemcpy(d, host, sizeof host, cudaMemcpyHostToDevice), "copy codebooks");
  }));
}

const Bnb8Tables* device_tables() {
  // Built once on the host, copied once to each device that uses them.
  static const Bnb8Tables host = [] {
    Bnb8Tables h;
    for (int map = 0; map < 2; ++map) {
      const auto& values = dynamic_map(map == 0);
      float mids256[256];
      for (int i = 0; i < 256; ++i) h.code[map][i] = values[i];
      native::bnb_midpoints(h.code[map], mids256);
      // The bucketed search equals bnb_nearest only for strictly increasing midpoints and a
      // spread of at most 1 (fixed maps: a failure is a bug in the table parameters).
      if (!native::bnb_thresholds(mids256, h.t[map]) ||
          native::bnb_bucket_build(h.t[map], h.start[map]) > 1) {
        throw CudaError("8-bit tables: the bucketed search does not apply to this map");
      }
    }
    h.z = native::bnb_negative_prefix(h.code[0]);
    if (h.z < 0) throw CudaError("8-bit tables: negative codes are not a prefix");
    return h;
  }();
  static PerDeviceBuffer buf;
  return static_cast<const Bnb8Tables*>(buf.get(sizeof host, [](void* d) {
    cuda_check(cudaMemcpy(d, &host, sizeof host, cudaMemcpyHostToDevice), "copy 8-bit tables");
  }));
}

}  // namespace bnb8

namespace {
using namespace bnb8;

template <int E, native::Storage ST>  // elements per thread: block = 256 * E
__global__ void __launch_bounds__(kThreads)
    k_bnb_adam8(native::Bnb8Scalars s, typename ParamIO<ST>::T* p, const typename ParamIO<ST>::T* g,
                std::uint8_t* q1, std::uint8_t* q2, float* absmax1, float* absmax2, std::size_t n,
                std::size_t nblocks, const float* codes) {
  using IO = ParamIO<ST>;
  __shared__ float c1[256], c2[256], mids1[256], mids2[256], red[kThreads / 32];
  load_code(codes, c1, mids1);
  load_code(codes + 256, c2, mids2);
  constexpr std::size_t B = static_cast<std::size_t>(kThreads) * E;
  for (std::size_t qb = blockIdx.x; qb < nblocks; qb += gridDim.x) {
    const std::size_t lo = qb * B;
    const float a1 = absmax1[qb], a2 = absmax2[qb];
    float s1[E], s2[E];
    bool ok[E];
    float m1 = -FLT_MAX, m2 = -FLT_MAX;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::size_t i = lo + e * kThreads + threadIdx.x;
      if (i < n) {
        s1[e] = native::bnb_dequant(s, c1, q1[i], a1);
        s2[e] = native::bnb_dequant(s, c2, q2[i], a2);
        ok[e] = native::bnb_adam8_states(s, ST, IO::load(g, i), s1[e], s2[e]);
      } else {  // a padding lane of the last, partial block
        native::bnb_adam8_padding(s, ST, c1, c2, a1, a2, s1[e], s2[e]);
        ok[e] = false;
      }
      m1 = fmaxf(m1, native::f32_abs(s1[e]));
      m2 = fmaxf(m2, native::f32_abs(s2[e]));
    }
    m1 = block_max(m1, red);
    m2 = block_max(m2, red);
    if (threadIdx.x == 0) {
      absmax1[qb] = m1;
      absmax2[qb] = m2;
    }
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::size_t i = lo + e * kThreads + threadIdx.x;
      if (i >= n) continue;
      if (ok[e]) IO::store(p, i, native::bnb_adam8_param(s, ST, IO::load(p, i), s1[e], s2[e]));
      q1[i] = native::bnb_quant_signed(s, c1, mids1, s1[e], m1);
      q2[i] = native::bnb_quant_unsigned(s, mids2, s2[e], m2);
    }
  }
}

// B = 256: one warp per quantization block, 8 elements per lane (element lo + 32e + lane), so the
// block maximum is a warp reduction and needs no CTA barrier. Same per-element calls as above.
constexpr int kWarpE = 8;

template <native::Storage ST>
__global__ void __launch_bounds__(kThreads)
    k_bnb_adam8_warp(native::Bnb8Scalars s, typename ParamIO<ST>::T* p,
                     const typename ParamIO<ST>::T* g, std::uint8_t* q1, std::uint8_t* q2,
                     float* absmax1, float* absmax2, std::size_t n, std::size_t nblocks,
                     const float* codes) {
  using IO = ParamIO<ST>;
  __shared__ float c1[256], c2[256], mids1[256], mids2[256];
  load_code(codes, c1, mids1);
  load_code(codes + 256, c2, mids2);
  const int lane = threadIdx.x & 31;
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * (kThreads / 32);
  for (std::size_t qb = (blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x) / 32;
       qb < nblocks; qb += warps) {
    const std::size_t lo = qb * 256;
    const float a1 = absmax1[qb], a2 = absmax2[qb];
    float s1[kWarpE], s2[kWarpE];
    bool ok[kWarpE];
    float m1 = -FLT_MAX, m2 = -FLT_MAX;
#pragma unroll
    for (int e = 0; e < kWarpE; ++e) {
      const std::size_t i = lo + e * 32 + lane;
      if (i < n) {
        s1[e] = native::bnb_dequant(s, c1, q1[i], a1);
        s2[e] = native::bnb_dequant(s, c2, q2[i], a2);
        ok[e] = native::bnb_adam8_states(s, ST, IO::load(g, i), s1[e], s2[e]);
      } else {
        native::bnb_adam8_padding(s, ST, c1, c2, a1, a2, s1[e], s2[e]);
        ok[e] = false;
      }
      m1 = fmaxf(m1, native::f32_abs(s1[e]));
      m2 = fmaxf(m2, native::f32_abs(s2[e]));
    }
    m1 = warp_max(m1);
    m2 = warp_max(m2);
    if (lane == 0) {
      absmax1[qb] = m1;
      absmax2[qb] = m2;
    }
#pragma unroll
    for (int e = 0; e < kWarpE; ++e) {
      const std::size_t i = lo + e * 32 + lane;
      if (i >= n) continue;
      if (ok[e]) IO::store(p, i, native::bnb_adam8_param(s, ST, IO::load(p, i), s1[e], s2[e]));
      q1[i] = native::bnb_quant_signed(s, c1, mids1, s1[e], m1);
      q2[i] = native::bnb_quant_unsigned(s, mids2, s2[e], m2);
    }
  }
}

template <native::Storage ST>
__global__ void __launch_bounds__(kThreads)
    k_bnb_momentum8_warp(native::Bnb8Scalars s, typename ParamIO<ST>::T* p,
                         const typename ParamIO<ST>::T* g, std::uint8_t* q1, float* absmax1,
                         std::size_t n, std::size_t nblocks, const float* codes) {
  using IO = ParamIO<ST>;
  __shared__ float c1[256], mids1[256];
  load_code(codes, c1, mids1);
  const int lane = threadIdx.x & 31;
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * (kThreads / 32);
  for (std::size_t qb = (blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x) / 32;
       qb < nblocks; qb += warps) {
    const std::size_t lo = qb * 256;
    const float a1 = absmax1[qb];
    float s1[kWarpE];
    float m1 = -FLT_MAX;
#pragma unroll
    for (int e = 0; e < kWarpE; ++e) {
      const std::size_t i = lo + e * 32 + lane;
      s1[e] = i < n ? native::bnb_momentum8_state(s, IO::load(p, i), IO::load(g, i),
                                                  native::bnb_dequant(s, c1, q1[i], a1))
                    : native::bnb_momentum8_padding(s, c1, a1);
      m1 = fmaxf(m1, native::f32_abs(s1[e]));
    }
    m1 = warp_max(m1);
    if (lane == 0) absmax1[qb] = m1;
#pragma unroll
    for (int e = 0; e < kWarpE; ++e) {
      const std::size_t i = lo + e * 32 + lane;
      if (i >= n) continue;
      IO::store(p, i, native::bnb_momentum8_param(s, ST, IO::load(p, i), s1[e]));
      q1[i] = native::bnb_quant_signed(s, c1, mids1, s1[e], m1);
    }
  }
}

template <int E, native::Storage ST>
__global__ void __launch_bounds__(kThreads)
    k_bnb_momentum8(native::Bnb8Scalars s, typename ParamIO<ST>::T* p,
                    const typename ParamIO<ST>::T* g, std::uint8_t* q1, float* absmax1,
                    std::size_t n, std::size_t nblocks, const float* codes) {
  using IO = ParamIO<ST>;
  __shared__ float c1[256], mids1[256], red[kThreads / 32];
  load_code(codes, c1, mids1);
  constexpr std::size_t B = static_cast<std::size_t>(kThreads) * E;
  for (std::size_t qb = blockIdx.x; qb < nblocks; qb += gridDim.x) {
    const std::size_t lo = qb * B;
    const float a1 = absmax1[qb];
    float s1[E];
    float m1 = -FLT_MAX;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::size_t i = lo + e * kThreads + threadIdx.x;
      s1[e] = i < n ? native::bnb_momentum8_state(s, IO::load(p, i), IO::load(g, i),
                                                  native::bnb_dequant(s, c1, q1[i], a1))
                    : native::bnb_momentum8_padding(s, c1, a1);
      m1 = fmaxf(m1, native::f32_abs(s1[e]));
    }
    m1 = block_max(m1, red);
    if (threadIdx.x == 0) absmax1[qb] = m1;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::size_t i = lo + e * kThreads + threadIdx.x;
      if (i >= n) continue;
      IO::store(p, i, native::bnb_momentum8_param(s, ST, IO::load(p, i), s1[e]));
      q1[i] = native::bnb_quant_signed(s, c1, mids1, s1[e], m1);
    }
  }
}

// bitsandbytes' one-state RMSprop/Adagrad/Lion (section 9.4.1): the Momentum kernels' data
// movement around the operation's phase functions; Lion's step l per element between phases.
template <native::Storage ST>
__global__ void __launch_bounds__(kThreads)
    k_bnb1_8_warp(native::Bnb8Scalars s, native::Bnb1Op op, typename ParamIO<ST>::T* p,
                  const typename ParamIO<ST>::T* g, std::uint8_t* q1, float* absmax1, std::size_t n,
                  std::size_t nblocks, const float* codes) {
  using IO = ParamIO<ST>;
  __shared__ float c1[256], mids1[256];
  load_code(codes, c1, mids1);
  const int lane = threadIdx.x & 31;
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * (kThreads / 32);
  for (std::size_t qb = (blockIdx.x * static_cast<std::size_t>(kThreads) + threadIdx.x) / 32;
       qb < nblocks; qb += warps) {
    const std::size_t lo = qb * 256;
    const float a1 = absmax1[qb];
    float s1[kWarpE], pv[kWarpE], l[kWarpE];
    float m1 = -FLT_MAX;
#pragma unroll
    for (int e = 0; e < kWarpE; ++e) {
      const std::size_t i = lo + e * 32 + lane;
      if (i < n) {
        pv[e] = IO::load(p, i);
        s1[e] = native::bnb1_state8(s, op, ST, pv[e], IO::load(g, i),
                                    native::bnb_dequant(s, c1, q1[i], a1), l[e]);
      } else {
        s1[e] = native::bnb1_padding8(s, op, ST, c1, a1);
      }
      m1 = fmaxf(m1, native::f32_abs(s1[e]));
    }
    m1 = warp_max(m1);
    if (lane == 0) absmax1[qb] = m1;
#pragma unroll
    for (int e = 0; e < kWarpE; ++e) {
      const std::size_t i = lo + e * 32 + lane;
      if (i >= n) continue;
      IO::store(p, i, native::bnb1_param8(s, op, ST, pv[e], IO::load(g, i), s1[e], l[e]));
      q1[i] = native::bnb_quant_signed(s, c1, mids1, s1[e], m1);
    }
  }
}

template <int E, native::Storage ST>
__global__ void __launch_bounds__(kThreads)
    k_bnb1_8(native::Bnb8Scalars s, native::Bnb1Op op, typename ParamIO<ST>::T* p,
             const typename ParamIO<ST>::T* g, std::uint8_t* q1, float* absmax1, std::size_t n,
             std::size_t nblocks, const float* codes) {
  using IO = ParamIO<ST>;
  __shared__ float c1[256], mids1[256], red[kThreads / 32];
  load_code(codes, c1, mids1);
  constexpr std::size_t B = static_cast<std::size_t>(kThreads) * E;
  for (std::size_t qb = blockIdx.x; qb < nblocks; qb += gridDim.x) {
    const std::size_t lo = qb * B;
    const float a1 = absmax1[qb];
    float s1[E], pv[E], l[E];
    float m1 = -FLT_MAX;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::size_t i = lo + e * kThreads + threadIdx.x;
      if (i < n) {
        pv[e] = IO::load(p, i);
        s1[e] = native::bnb1_state8(s, op, ST, pv[e], IO::load(g, i),
                                    native::bnb_dequant(s, c1, q1[i], a1), l[e]);
      } else {
        s1[e] = native::bnb1_padding8(s, op, ST, c1, a1);
      }
      m1 = fmaxf(m1, native::f32_abs(s1[e]));
    }
    m1 = block_max(m1, red);
    if (threadIdx.x == 0) absmax1[qb] = m1;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::size_t i = lo + e * kThreads + threadIdx.x;
      if (i >= n) continue;
      IO::store(p, i, native::bnb1_param8(s, op, ST, pv[e], IO::load(g, i), s1[e], l[e]));
      q1[i] = native::bnb_quant_signed(s, c1, mids1, s1[e], m1);
    }
  }
}

template <native::Storage ST>
__global__ void k_bnb1_32(native::Bnb8Scalars s, native::Bnb1Op op, typename ParamIO<ST>::T* p,
                          const typename ParamIO<ST>::T* g, float* s1, std::size_t n) {
  using IO = ParamIO<ST>;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float pi = IO::load(p, i), a = s1[i];
    native::bnb1_element32(s, op, ST, pi, IO::load(g, i), a, static_cast<int>(i % 4));
    IO::store(p, i, pi);
    s1[i] = a;
  }
}

// One quantization block of B = 8G elements per G threads (G = 32: a warp per block of 256, no
// barrier; G = 256: the CTA per block of 2048). Thread `lane` of its group owns the two float4
// runs at 4*lane and 4*G + 4*lane, so every load/store is a coalesced 16-byte (p, g) or 4-byte
// (codes) access. The block maximum is order-free (docs/SEMANTICS.md 10), so this assignment of
// elements to threads gives the reference's absmax. At most 64 registers (4 resident CTAs per
// SM): what the kernel needs without spilling. Measured on the H200 and not kept (no gain,
// bench/results/2026-11-22-h200-optim.md): 5 CTAs with spills, prefetching the next block's g and
// codes, and 4 interleaved copies of the tables against bank conflicts.
// The profile (kSm90: --compat bnb-cuda) and the torch-order variant are template arguments, so
// each instantiation holds only its own arithmetic; the block's rcp(absmax) of the bnb-cuda
// normalisation is computed once per block (bnb_norm: the same instruction on the same input as
// per element).
constexpr int kFastMinCtas = 4;
template <int G, bool kTorchOrder, bool kSm90, native::Storage ST>
__global__ void __launch_bounds__(kThreads, kFastMinCtas)
    k_bnb_adam8_fast(native::Bnb8Scalars sp, typename ParamIO<ST>::T* __restrict__ p,
                     const typename ParamIO<ST>::T* __restrict__ g, std::uint8_t* __restrict__ q1,
                     std::uint8_t* __restrict__ q2, float* __restrict__ absmax1,
                     float* __restrict__ absmax2, std::size_t nblocks, const Bnb8Tables* tables) {
  __shared__ Bnb8Tables t;
  __shared__ float red[kThreads / 32];
  load_tables(tables, &t);
  native::Bnb8Scalars s = sp;
  s.torch_order = kTorchOrder;  // compile-time branches in the per-element functions
  s.sm90 = kSm90;
  const int z = t.z;
  constexpr int kGroups = kThreads / G;
  const int lane = threadIdx.x % G;
  for (std::size_t qb = blockIdx.x * static_cast<std::size_t>(kGroups) + threadIdx.x / G;
       qb < nblocks; qb += static_cast<std::size_t>(gridDim.x) * kGroups) {
    const std::size_t base4 = qb * (2 * G) + lane;  // 4-element index of the first run
    float P[2][4], Gv[2][4];
    std::uint32_t C1[2], C2[2];
    const float a1 = absmax1[qb], a2 = absmax2[qb];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const std::size_t k = base4 + r * G;
      load4<ST>(g, k, Gv[r]);
      C1[r] = reinterpret_cast<const std::uint32_t*>(q1)[k];
      C2[r] = reinterpret_cast<const std::uint32_t*>(q2)[k];
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) load4<ST>(p, base4 + r * G, P[r]);
    float s1[8], s2[8];
    unsigned ok = 0;
    float m1 = -FLT_MAX, m2 = -FLT_MAX;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float* gs = Gv[r];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int e = 4 * r + j;
        s1[e] = native::bnb_dequant(s, t.code[0], static_cast<std::uint8_t>(C1[r] >> (8 * j)), a1);
        s2[e] = native::bnb_dequant(s, t.code[1], static_cast<std::uint8_t>(C2[r] >> (8 * j)), a2);
        if (native::bnb_adam8_states(s, ST, gs[j], s1[e], s2[e])) ok |= 1u << e;
        m1 = fmaxf(m1, native::f32_abs(s1[e]));
        m2 = fmaxf(m2, native::f32_abs(s2[e]));
      }
    }
    if (G == 32) {
      m1 = warp_max(m1);
      m2 = warp_max(m2);
    } else {
      m1 = block_max(m1, red);
      m2 = block_max(m2, red);
    }
    if (lane == 0) {
      absmax1[qb] = m1;
      absmax2[qb] = m2;
    }
    const native::BnbNorm n1 = native::bnb_norm(s, m1), n2 = native::bnb_norm(s, m2);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const std::size_t k = base4 + r * G;
      float* ps = P[r];
      std::uint32_t c1 = 0, c2 = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int e = 4 * r + j;
        if (ok & (1u << e)) {
          ps[j] = native::bnb_adam8_param(s, ST, ps[j], s1[e], s2[e]);
        }
        c1 |= std::uint32_t{native::bnb_quant_signed_bucketed(n1, z, t.t[0], t.start[0], s1[e])}
              << (8 * j);
        c2 |= std::uint32_t{native::bnb_quant_unsigned_bucketed(n2, t.t[1], t.start[1], s2[e])}
              << (8 * j);
      }
      store4<ST>(p, k, ps);
      reinterpret_cast<std::uint32_t*>(q1)[k] = c1;
      reinterpret_cast<std::uint32_t*>(q2)[k] = c2;
    }
  }
}

// bitsandbytes' one-state 8-bit optimizers (RMSprop, Adagrad, Lion) on full blocks, laid out as
// k_bnb_adam8_fast: a group of G threads per block of 8G elements, two float4 runs per thread,
// the block maximum order-free, one bnb_norm per block. Per element the same functions as
// k_bnb1_8 / k_bnb1_8_warp (bnb1_state8, bnb1_param8) and the bucketed signed quantizer Adam's
// state 1 uses (equal to bnb_quant_signed on the same map).
template <int G, bool kSm90, native::Storage ST>
__global__ void __launch_bounds__(kThreads, kFastMinCtas)
    k_bnb1_8_fast(native::Bnb8Scalars sp, native::Bnb1Op op,
                  typename ParamIO<ST>::T* __restrict__ p,
                  const typename ParamIO<ST>::T* __restrict__ g, std::uint8_t* __restrict__ q1,
                  float* __restrict__ absmax1, std::size_t nblocks, const Bnb8Tables* tables) {
  __shared__ Bnb8Tables t;
  __shared__ float red[kThreads / 32];
  load_tables(tables, &t);
  native::Bnb8Scalars s = sp;
  s.sm90 = kSm90;
  const int z = t.z;
  constexpr int kGroups = kThreads / G;
  const int lane = threadIdx.x % G;
  for (std::size_t qb = blockIdx.x * static_cast<std::size_t>(kGroups) + threadIdx.x / G;
       qb < nblocks; qb += static_cast<std::size_t>(gridDim.x) * kGroups) {
    const std::size_t base4 = qb * (2 * G) + lane;
    float P[2][4], Gv[2][4];
    std::uint32_t C1[2];
    const float a1 = absmax1[qb];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const std::size_t k = base4 + r * G;
      load4<ST>(g, k, Gv[r]);
      C1[r] = reinterpret_cast<const std::uint32_t*>(q1)[k];
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) load4<ST>(p, base4 + r * G, P[r]);
    float s1[8], l[8];
    float m1 = -FLT_MAX;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int e = 4 * r + j;
        const float d =
            native::bnb_dequant(s, t.code[0], static_cast<std::uint8_t>(C1[r] >> (8 * j)), a1);
        s1[e] = native::bnb1_state8(s, op, ST, P[r][j], Gv[r][j], d, l[e]);
        m1 = fmaxf(m1, native::f32_abs(s1[e]));
      }
    }
    m1 = G == 32 ? warp_max(m1) : block_max(m1, red);
    if (lane == 0) absmax1[qb] = m1;
    const native::BnbNorm n1 = native::bnb_norm(s, m1);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const std::size_t k = base4 + r * G;
      float* ps = P[r];
      std::uint32_t c1 = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int e = 4 * r + j;
        ps[j] = native::bnb1_param8(s, op, ST, ps[j], Gv[r][j], s1[e], l[e]);
        c1 |= std::uint32_t{native::bnb_quant_signed_bucketed(n1, z, t.t[0], t.start[0], s1[e])}
              << (8 * j);
      }
      store4<ST>(p, k, ps);
      reinterpret_cast<std::uint32_t*>(q1)[k] = c1;
    }
  }
}

template <int G, bool kSm90, native::Storage ST>
void launch_bnb1_fast_as(const native::Bnb8Scalars& s, native::Bnb1Op op,
                         typename ParamIO<ST>::T* p, const typename ParamIO<ST>::T* g,
                         const Bnb8DeviceState& st, std::size_t full, cudaStream_t stream) {
  k_bnb1_8_fast<G, kSm90, ST>
      <<<block_grid<k_bnb1_8_fast<G, kSm90, ST>>(full, kThreads / G), kThreads, 0, stream>>>(
          s, op, p, g, st.q1, st.absmax1, full, device_tables());
}

template <int G, bool kTorchOrder, bool kSm90, native::Storage ST>
unsigned fast_grid(std::size_t nblocks) {
  return block_grid<k_bnb_adam8_fast<G, kTorchOrder, kSm90, ST>>(nblocks, kThreads / G);
}

template <int G, bool kTorchOrder, bool kSm90, native::Storage ST>
void launch_adam8_fast_as(const native::Bnb8Scalars& s, typename ParamIO<ST>::T* p,
                          const typename ParamIO<ST>::T* g, const Bnb8DeviceState& st,
                          std::size_t full, cudaStream_t stream) {
  k_bnb_adam8_fast<G, kTorchOrder, kSm90, ST>
      <<<fast_grid<G, kTorchOrder, kSm90, ST>(full), kThreads, 0, stream>>>(
          s, p, g, st.q1, st.q2, st.absmax1, st.absmax2, full, device_tables());
}
// 16-bit parameters: only the bnb-cuda profile without torch-order gets a vectorised kernel
// (the other combinations run the element-wise ones); fp32: every combination.
template <int G, native::Storage ST>
void launch_adam8_fast(const native::Bnb8Scalars& s, typename ParamIO<ST>::T* p,
                       const typename ParamIO<ST>::T* g, const Bnb8DeviceState& st,
                       std::size_t full, cudaStream_t stream) {
  if constexpr (ST == native::Storage::f32) {
    if (s.torch_order) {
      s.sm90 ? launch_adam8_fast_as<G, true, true, ST>(s, p, g, st, full, stream)
             : launch_adam8_fast_as<G, true, false, ST>(s, p, g, st, full, stream);
      return;
    }
    if (!s.sm90) {
      launch_adam8_fast_as<G, false, false, ST>(s, p, g, st, full, stream);
      return;
    }
  }
  launch_adam8_fast_as<G, false, true, ST>(s, p, g, st, full, stream);
}

template <native::Storage ST>
__global__ void k_bnb_adam32(native::Bnb8Scalars s, typename ParamIO<ST>::T* p,
                             const typename ParamIO<ST>::T* g, float* s1, float* s2,
                             std::size_t n) {
  using IO = ParamIO<ST>;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float pi = IO::load(p, i), a = s1[i], b = s2[i];
    native::bnb_adam32_element(s, ST, pi, IO::load(g, i), a, b);
    IO::store(p, i, pi);
    s1[i] = a;
    s2[i] = b;
  }
}
template <native::Storage ST>
__global__ void k_bnb_momentum32(native::Bnb8Scalars s, typename ParamIO<ST>::T* p,
                                 const typename ParamIO<ST>::T* g, float* s1, std::size_t n) {
  using IO = ParamIO<ST>;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float pi = IO::load(p, i), a = s1[i];
    native::bnb_momentum32_element(s, ST, pi, IO::load(g, i), a, static_cast<int>(i % 4));
    IO::store(p, i, pi);
    s1[i] = a;
  }
}

// The 8-bit steps for parameters of storage ST. fp32 parameters with aligned pointers take the
// vectorised kernel for their full blocks; the last partial block, misaligned pointers and 16-bit
// parameters the element-wise kernels. Same per-element functions either way.
template <native::Storage ST>
void launch_bnb_adam8(const native::Bnb8Scalars& s, typename ParamIO<ST>::T* p,
                      const typename ParamIO<ST>::T* g, const Bnb8DeviceState& st, std::size_t n,
                      cudaStream_t stream) {
  if (n == 0) return;
  if (!st.is_8bit) {
    k_bnb_adam32<ST><<<grid_for(n, 4), kThreads, 0, stream>>>(s, p, g, st.s1, st.s2, n);
    cuda_check_launch("bnb_adam8_step (32-bit)");
    return;
  }
  if (st.block != 256 && st.block != 2048) {
    throw InputError("bnb_adam8_step: block must be 256 or 2048");
  }
  const std::size_t B = static_cast<std::size_t>(st.block);
  std::size_t full = 0;
  // The vectorised kernel: fp32 parameters, and 16-bit ones under bnb-cuda (their measured
  // case; the exact-arithmetic and torch-order variants of 16-bit parameters stay element-wise).
  const bool fast_kind = ST == native::Storage::f32 || (s.sm90 && !s.torch_order);
  const bool vec =
      fast_kind && (ST == native::Storage::f32 ? aligned16(p, g) : aligned8(p, g)) &&
      ((reinterpret_cast<std::uintptr_t>(st.q1) | reinterpret_cast<std::uintptr_t>(st.q2)) & 3u) ==
          0;
  full = vec ? n / B : 0;
  if (full > 0) {
    if (st.block == 256) {
      launch_adam8_fast<32, ST>(s, p, g, st, full, stream);
    } else {
      launch_adam8_fast<256, ST>(s, p, g, st, full, stream);
    }
    cuda_check_launch("bnb_adam8_step (full blocks)");
  }
  const std::size_t done = full * B, rest = n - done;
  if (rest > 0) {
    const std::size_t nb = (rest + B - 1) / B;
    auto* pr = p + done;
    const auto* gr = g + done;
    std::uint8_t *q1r = st.q1 + done, *q2r = st.q2 + done;
    float *a1r = st.absmax1 + full, *a2r = st.absmax2 + full;
    if (st.block == 256) {
      const std::size_t ctas = (nb + 7) / 8;
      k_bnb_adam8_warp<ST><<<ctas_8bit(ctas), kThreads, 0, stream>>>(s, pr, gr, q1r, q2r, a1r, a2r,
                                                                     rest, nb, device_codes());
    } else {
      k_bnb_adam8<8, ST><<<ctas_8bit(nb), kThreads, 0, stream>>>(s, pr, gr, q1r, q2r, a1r, a2r,
                                                                 rest, nb, device_codes());
    }
  }
  cuda_check_launch("bnb_adam8_step");
}

template <native::Storage ST>
void launch_bnb_momentum8(const native::Bnb8Scalars& s, typename ParamIO<ST>::T* p,
                          const typename ParamIO<ST>::T* g, const Bnb8DeviceState& st,
                          std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (!st.is_8bit) {
    k_bnb_momentum32<ST><<<grid_for(n, 4), kThreads, 0, stream>>>(s, p, g, st.s1, n);
  } else {
    const std::size_t nb = (n + st.block - 1) / st.block;
    if (st.block == 256) {
      const std::size_t ctas = (nb + 7) / 8;
      k_bnb_momentum8_warp<ST><<<ctas_8bit(ctas), kThreads, 0, stream>>>(s, p, g, st.q1, st.absmax1,
                                                                         n, nb, device_codes());
    } else if (st.block == 2048) {
      k_bnb_momentum8<8, ST><<<ctas_8bit(nb), kThreads, 0, stream>>>(s, p, g, st.q1, st.absmax1, n,
                                                                     nb, device_codes());
    } else {
      throw InputError("bnb_momentum8_step: block must be 256 or 2048");
    }
  }
  cuda_check_launch("bnb_momentum8_step");
}

template <native::Storage ST>
void launch_bnb1(const native::Bnb8Scalars& s, native::Bnb1Op op, typename ParamIO<ST>::T* p,
                 const typename ParamIO<ST>::T* g, const Bnb8DeviceState& st, std::size_t n,
                 cudaStream_t stream) {
  if (n == 0) return;
  if (!st.is_8bit) {
    k_bnb1_32<ST><<<grid_for(n, 4), kThreads, 0, stream>>>(s, op, p, g, st.s1, n);
  } else {
    if (st.block != 256 && st.block != 2048) {
      throw InputError("bnb1_step: block must be 256 or 2048");
    }
    // Full blocks through the vectorised kernel where Adam's runs (fp32, or 16-bit under
    // bnb-cuda, aligned), the rest element-wise.
    const std::size_t B = static_cast<std::size_t>(st.block);
    const bool fast_kind = ST == native::Storage::f32 || s.sm90;
    const bool vec = fast_kind && (ST == native::Storage::f32 ? aligned16(p, g) : aligned8(p, g)) &&
                     (reinterpret_cast<std::uintptr_t>(st.q1) & 3u) == 0;
    const std::size_t full = vec ? n / B : 0;
    if (full > 0) {
      if (st.block == 256) {
        s.sm90 ? launch_bnb1_fast_as<32, true, ST>(s, op, p, g, st, full, stream)
               : launch_bnb1_fast_as<32, false, ST>(s, op, p, g, st, full, stream);
      } else {
        s.sm90 ? launch_bnb1_fast_as<256, true, ST>(s, op, p, g, st, full, stream)
               : launch_bnb1_fast_as<256, false, ST>(s, op, p, g, st, full, stream);
      }
      cuda_check_launch("bnb1_step (full blocks)");
    }
    const std::size_t done = full * B, rest = n - done;
    if (rest > 0) {
      const std::size_t nb = (rest + B - 1) / B;
      auto* pr = p + done;
      const auto* gr = g + done;
      std::uint8_t* q1r = st.q1 + done;
      float* a1r = st.absmax1 + full;
      if (st.block == 256) {
        const std::size_t ctas = (nb + 7) / 8;
        k_bnb1_8_warp<ST><<<ctas_8bit(ctas), kThreads, 0, stream>>>(s, op, pr, gr, q1r, a1r, rest,
                                                                    nb, device_codes());
      } else {
        k_bnb1_8<8, ST><<<ctas_8bit(nb), kThreads, 0, stream>>>(s, op, pr, gr, q1r, a1r, rest, nb,
                                                                device_codes());
      }
    }
  }
  cuda_check_launch("bnb1_step");
}

}  // namespace

void bnb_adam8_step(const native::Bnb8Scalars& s, float* p, const float* g,
                    const Bnb8DeviceState& st, std::size_t n, CUstream_st* stream) {
  launch_bnb_adam8<native::Storage::f32>(s, p, g, st, n, stream);
}
void bnb_adam8_step(const native::Bnb8Scalars& s, native::Storage pt, std::uint16_t* p,
                    const std::uint16_t* g, const Bnb8DeviceState& st, std::size_t n,
                    CUstream_st* stream) {
  with_storage16(pt, "bnb_adam8_step",
                 [&](auto ST) { launch_bnb_adam8<decltype(ST)::value>(s, p, g, st, n, stream); });
}

void bnb_momentum8_step(const native::Bnb8Scalars& s, float* p, const float* g,
                        const Bnb8DeviceState& st, std::size_t n, CUstream_st* stream) {
  launch_bnb_momentum8<native::Storage::f32>(s, p, g, st, n, stream);
}
void bnb_momentum8_step(const native::Bnb8Scalars& s, native::Storage pt, std::uint16_t* p,
                        const std::uint16_t* g, const Bnb8DeviceState& st, std::size_t n,
                        CUstream_st* stream) {
  with_storage16(pt, "bnb_momentum8_step", [&](auto ST) {
    launch_bnb_momentum8<decltype(ST)::value>(s, p, g, st, n, stream);
  });
}

void bnb1_step(const native::Bnb8Scalars& s, native::Bnb1Op op, float* p, const float* g,
               const Bnb8DeviceState& st, std::size_t n, CUstream_st* stream) {
  launch_bnb1<native::Storage::f32>(s, op, p, g, st, n, stream);
}
void bnb1_step(const native::Bnb8Scalars& s, native::Bnb1Op op, native::Storage pt,
               std::uint16_t* p, const std::uint16_t* g, const Bnb8DeviceState& st, std::size_t n,
               CUstream_st* stream) {
  with_storage16(pt, "bnb1_step",
                 [&](auto ST) { launch_bnb1<decltype(ST)::value>(s, op, p, g, st, n, stream); });
}

}  // namespace exmy::gpu
