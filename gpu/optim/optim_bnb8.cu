// CUDA kernels of bitsandbytes' 8-bit Adam, Momentum, RMSprop, Adagrad, Lion and AdEMAMix
// (gpu/optim/optim.hpp): blockwise dynamic
// codebook states with fp32 absmax, fp32 or bf16/fp16 parameters; the vectorised fast path for
// full blocks, element-wise kernels for the rest, and the 32-bit fallback steps. Each kernel calls
// the per-element functions of sim/native/optim_*.hpp; what is specific to the GPU is only the
// data movement and the 8-bit block maximum (exact: max of non-NaN values).
#include <cuda_runtime.h>

#include <array>
#include <cfloat>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "gpu/common/launch.hpp"
#include "gpu/optim/optim.hpp"
#include "sim/common/error.hpp"
#include "sim/native/bnb_dynamic_map.hpp"
#include "sim/native/optim_bnb8_ademamix.hpp"
#include "sim/native/optim_bnb8_ops.hpp"
#include "sim/native/optim_bnb8_search.hpp"

namespace exmy::gpu {
namespace {

// CTAs of the 8-bit kernels: enough to fill the device (8 resident per SM), each looping over
// quantization blocks so that the codebooks are loaded once per CTA. Every block's result is
// independent of which CTA computes it, so the count changes only the speed.
unsigned ctas_8bit(std::size_t want) {
  const std::size_t cap = static_cast<std::size_t>(sm_count()) * 8;
  return static_cast<unsigned>(want < cap ? want : cap);
}

// ---- bitsandbytes 8-bit -------------------------------------------------------------------------
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

// Device copies of the two dynamic maps (signed, unsigned), made once.
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

// Block maximum of non-NaN, non-negative values (|s| folded from -FLT_MAX): fmaxf is exact and
// order-free here, so any reduction shape gives the reference's value.
__device__ float block_max(float x, float* smem) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, o));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __syncthreads();
  if (lane == 0) smem[warp] = x;
  __syncthreads();
  float r = smem[0];
  for (int w = 1; w < kThreads / 32; ++w) r = fmaxf(r, smem[w]);
  return r;
}

// Codebook and its fp32 midpoints in shared memory, once per CTA (CTAs loop over many blocks).
__device__ void load_code(const float* codes, float* c, float* mids) {
  c[threadIdx.x] = codes[threadIdx.x];
  __syncthreads();
  mids[threadIdx.x] = native::bnb_midpoint(c, threadIdx.x);
  __syncthreads();
}

// Parameters and gradients of the element-wise 8-bit kernels: fp32 values, or bf16/fp16 codes
// (bitsandbytes keeps both in the parameter's dtype; its states stay 8-bit codes with fp32
// absmax, or fp32 in the 32-bit fallback). Decoding is exact; encoding a result is the RN rounding
// the reference's to_storage already applied, so it is exact too.
template <native::Storage ST>
struct ParamIO {
  using T = std::conditional_t<ST == native::Storage::f32, float, std::uint16_t>;
  __device__ static float load(const T* a, std::size_t i) {
    if constexpr (ST == native::Storage::f32) {
      return a[i];
    } else if constexpr (ST == native::Storage::bf16) {
      return native::f32_from_bf16(a[i]);
    } else {
      return native::f32_from_f16(a[i]);
    }
  }
  __device__ static void store(T* a, std::size_t i, float x) {
    if constexpr (ST == native::Storage::f32) {
      a[i] = x;
    } else if constexpr (ST == native::Storage::bf16) {
      a[i] = native::bf16_from_f32(x);
    } else {
      a[i] = native::f16_from_f32(x);
    }
  }
};

// Four consecutive parameters/gradients k*4 .. k*4+3 as one vector access: a 16-byte float4 for
// fp32, an 8-byte uint2 of codes for bf16/fp16 (pointers aligned to the vector).
template <native::Storage ST>
__device__ __forceinline__ void load4(const typename ParamIO<ST>::T* a, std::size_t k, float v[4]) {
  if constexpr (ST == native::Storage::f32) {
    const float4 x = reinterpret_cast<const float4*>(a)[k];
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else {
    const uint2 x = reinterpret_cast<const uint2*>(a)[k];
    const std::uint16_t h[4] = {
        static_cast<std::uint16_t>(x.x), static_cast<std::uint16_t>(x.x >> 16),
        static_cast<std::uint16_t>(x.y), static_cast<std::uint16_t>(x.y >> 16)};
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = ParamIO<ST>::load(h, j);
  }
}
template <native::Storage ST>
__device__ __forceinline__ void store4(typename ParamIO<ST>::T* a, std::size_t k,
                                       const float v[4]) {
  if constexpr (ST == native::Storage::f32) {
    reinterpret_cast<float4*>(a)[k] = make_float4(v[0], v[1], v[2], v[3]);
  } else {
    std::uint16_t h[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) ParamIO<ST>::store(h, j, v[j]);
    reinterpret_cast<uint2*>(a)[k] =
        make_uint2(h[0] | (std::uint32_t{h[1]} << 16), h[2] | (std::uint32_t{h[3]} << 16));
  }
}

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
__device__ float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xFFFFFFFFu, x, o));
  return x;
}

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

// bitsandbytes' AdEMAMix (section 9.4.2): the element-wise 8-bit Adam kernels with a third state,
// m2 = q1[n + i] with absmax1[nblocks_total + qb]. `n` and `nb_all` are the whole tensor's (the
// host may launch on a tail of blocks: `first` is the index of the kernel's first block).
template <int E, native::Storage ST>
__global__ void __launch_bounds__(kThreads)
    k_bnb_ademamix8(native::Bnb8Scalars s, typename ParamIO<ST>::T* p,
                    const typename ParamIO<ST>::T* g, std::uint8_t* q1, std::uint8_t* q2,
                    float* absmax1, float* absmax2, std::size_t n, std::size_t nblocks,
                    const float* codes) {
  using IO = ParamIO<ST>;
  __shared__ float c1[256], c2[256], mids1[256], mids2[256], red[kThreads / 32];
  load_code(codes, c1, mids1);
  load_code(codes + 256, c2, mids2);
  constexpr std::size_t B = static_cast<std::size_t>(kThreads) * E;
  std::uint8_t* q3 = q1 + n;
  float* absmax3 = absmax1 + nblocks;
  for (std::size_t qb = blockIdx.x; qb < nblocks; qb += gridDim.x) {
    const std::size_t lo = qb * B;
    const float a1 = absmax1[qb], a2 = absmax2[qb], a3 = absmax3[qb];
    float s1[E], s2[E], s3[E];
    bool ok[E];
    float m1 = -FLT_MAX, m2 = -FLT_MAX, m3 = -FLT_MAX;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::size_t i = lo + e * kThreads + threadIdx.x;
      if (i < n) {
        s1[e] = native::bnb_dequant(s, c1, q1[i], a1);
        s2[e] = native::bnb_dequant(s, c2, q2[i], a2);
        s3[e] = native::bnb_dequant(s, c1, q3[i], a3);
        ok[e] = native::bnb_ademamix8_states(s, ST, IO::load(g, i), s1[e], s2[e], s3[e]);
      } else {
        native::bnb_ademamix8_padding(s, ST, c1, c2, a1, a2, a3, s1[e], s2[e], s3[e]);
        ok[e] = false;
      }
      m1 = fmaxf(m1, native::f32_abs(s1[e]));
      m2 = fmaxf(m2, native::f32_abs(s2[e]));
      m3 = fmaxf(m3, native::f32_abs(s3[e]));
    }
    m1 = block_max(m1, red);
    m2 = block_max(m2, red);
    m3 = block_max(m3, red);
    if (threadIdx.x == 0) {
      absmax1[qb] = m1;
      absmax2[qb] = m2;
      absmax3[qb] = m3;
    }
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const std::size_t i = lo + e * kThreads + threadIdx.x;
      if (i >= n) continue;
      if (ok[e]) {
        IO::store(p, i, native::bnb_ademamix_param(s, ST, IO::load(p, i), s1[e], s2[e], s3[e]));
      }
      q1[i] = native::bnb_quant_signed(s, c1, mids1, s1[e], m1);
      q2[i] = native::bnb_quant_unsigned(s, mids2, s2[e], m2);
      q3[i] = native::bnb_quant_signed(s, c1, mids1, s3[e], m3);
    }
  }
}

template <native::Storage ST>
__global__ void k_bnb_ademamix32(native::Bnb8Scalars s, typename ParamIO<ST>::T* p,
                                 const typename ParamIO<ST>::T* g, float* s1, float* s2,
                                 std::size_t n) {
  using IO = ParamIO<ST>;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float pi = IO::load(p, i), a = s1[i], b = s2[i], c = s1[n + i];
    native::bnb_ademamix32_element(s, ST, pi, IO::load(g, i), a, b, c);
    IO::store(p, i, pi);
    s1[i] = a;
    s2[i] = b;
    s1[n + i] = c;
  }
}

// ---- 8-bit Adam, fast path (full blocks, aligned pointers) ----------------------------------
// Both maps with their thresholds (+inf sentinels) and bucket tables
// (sim/native/optim_bnb8_search.hpp), one copy in device memory and one per CTA in shared memory.
struct Bnb8Tables {
  float code[2][256];               // [0] signed (state 1), [1] unsigned (state 2)
  float t[2][native::kBucketMids];  // thresholds
  std::uint8_t start[2][native::kBucketTable];
  int z;  // the signed map's negative codes are 0..z-1
};
static_assert(sizeof(Bnb8Tables) % 4 == 0, "copied as 32-bit words");

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

__device__ void load_tables(const Bnb8Tables* src, Bnb8Tables* dst) {
  const auto* s = reinterpret_cast<const std::uint32_t*>(src);
  auto* d = reinterpret_cast<std::uint32_t*>(dst);
  for (int i = threadIdx.x; i < static_cast<int>(sizeof(Bnb8Tables) / 4); i += kThreads) {
    d[i] = s[i];
  }
  __syncthreads();
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

// CTAs for `nblocks` quantization blocks at `per_cta` blocks per CTA, capped at what the
// kernel keeps resident on every SM (the vectorised kernels loop over the rest): the occupancy of
// this instantiation, queried once per device (it reads the current device).
template <auto Kernel>
unsigned resident_grid(std::size_t nblocks, std::size_t per_cta) {
  static PerDeviceValue resident;
  const int per_sm = resident.get([](int) {
    int r = 0;
    cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&r, Kernel, kThreads, 0), "occupancy");
    return r < 1 ? 1 : r;
  });
  const std::size_t want = (nblocks + per_cta - 1) / per_cta;
  const std::size_t cap = static_cast<std::size_t>(per_sm) * sm_count();
  return static_cast<unsigned>(want < cap ? want : cap);
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
      <<<resident_grid<k_bnb1_8_fast<G, kSm90, ST>>(full, kThreads / G), kThreads, 0, stream>>>(
          s, op, p, g, st.q1, st.absmax1, full, device_tables());
}

// bitsandbytes' AdEMAMix8bit on a tensor of whole blocks (n a multiple of 8G), laid out as
// k_bnb_adam8_fast: a group of G threads per block of 8G elements, two float4 runs per thread, the
// three block maxima order-free (warp shuffles for G = 32), one bnb_norm per state and block.
// Per element the functions of k_bnb_ademamix8 (bnb_ademamix8_states, bnb_ademamix_param); m2
// is q1[n + i] with absmax1[nblocks + qb] as there; the quantizers are the bucketed ones Adam's
// fast kernel uses (equal to bnb_quant_signed / _unsigned on the same maps).
template <int G, bool kSm90, native::Storage ST>
__global__ void __launch_bounds__(kThreads, 2)
    k_bnb_ademamix8_fast(native::Bnb8Scalars sp, typename ParamIO<ST>::T* __restrict__ p,
                         const typename ParamIO<ST>::T* __restrict__ g,
                         std::uint8_t* __restrict__ q1, std::uint8_t* __restrict__ q2,
                         float* __restrict__ absmax1, float* __restrict__ absmax2, std::size_t n,
                         std::size_t nblocks, const Bnb8Tables* tables) {
  __shared__ Bnb8Tables t;
  __shared__ float red[kThreads / 32];
  load_tables(tables, &t);
  native::Bnb8Scalars s = sp;
  s.sm90 = kSm90;
  const int z = t.z;
  constexpr int kGroups = kThreads / G;
  const int lane = threadIdx.x % G;
  std::uint8_t* q3 = q1 + n;
  float* absmax3 = absmax1 + nblocks;
  for (std::size_t qb = blockIdx.x * static_cast<std::size_t>(kGroups) + threadIdx.x / G;
       qb < nblocks; qb += static_cast<std::size_t>(gridDim.x) * kGroups) {
    const std::size_t base4 = qb * (2 * G) + lane;
    float P[2][4], Gv[2][4];
    std::uint32_t C1[2], C2[2], C3[2];
    const float a1 = absmax1[qb], a2 = absmax2[qb], a3 = absmax3[qb];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const std::size_t k = base4 + r * G;
      load4<ST>(g, k, Gv[r]);
      C1[r] = reinterpret_cast<const std::uint32_t*>(q1)[k];
      C2[r] = reinterpret_cast<const std::uint32_t*>(q2)[k];
      C3[r] = reinterpret_cast<const std::uint32_t*>(q3)[k];
    }
    float s1[8], s2[8], s3[8];
    unsigned ok = 0;
    float m1 = -FLT_MAX, m2 = -FLT_MAX, m3 = -FLT_MAX;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int e = 4 * r + j;
        s1[e] = native::bnb_dequant(s, t.code[0], static_cast<std::uint8_t>(C1[r] >> (8 * j)), a1);
        s2[e] = native::bnb_dequant(s, t.code[1], static_cast<std::uint8_t>(C2[r] >> (8 * j)), a2);
        s3[e] = native::bnb_dequant(s, t.code[0], static_cast<std::uint8_t>(C3[r] >> (8 * j)), a3);
        if (native::bnb_ademamix8_states(s, ST, Gv[r][j], s1[e], s2[e], s3[e])) ok |= 1u << e;
        m1 = fmaxf(m1, native::f32_abs(s1[e]));
        m2 = fmaxf(m2, native::f32_abs(s2[e]));
        m3 = fmaxf(m3, native::f32_abs(s3[e]));
      }
    }
    if (G == 32) {
      m1 = warp_max(m1);
      m2 = warp_max(m2);
      m3 = warp_max(m3);
    } else {
      m1 = block_max(m1, red);
      m2 = block_max(m2, red);
      m3 = block_max(m3, red);
    }
    if (lane == 0) {
      absmax1[qb] = m1;
      absmax2[qb] = m2;
      absmax3[qb] = m3;
    }
    const native::BnbNorm n1 = native::bnb_norm(s, m1), n2 = native::bnb_norm(s, m2),
                          n3 = native::bnb_norm(s, m3);
#pragma unroll
    for (int r = 0; r < 2; ++r) load4<ST>(p, base4 + r * G, P[r]);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const std::size_t k = base4 + r * G;
      float* ps = P[r];
      std::uint32_t c1 = 0, c2 = 0, c3 = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int e = 4 * r + j;
        if (ok & (1u << e)) ps[j] = native::bnb_ademamix_param(s, ST, ps[j], s1[e], s2[e], s3[e]);
        c1 |= std::uint32_t{native::bnb_quant_signed_bucketed(n1, z, t.t[0], t.start[0], s1[e])}
              << (8 * j);
        c2 |= std::uint32_t{native::bnb_quant_unsigned_bucketed(n2, t.t[1], t.start[1], s2[e])}
              << (8 * j);
        c3 |= std::uint32_t{native::bnb_quant_signed_bucketed(n3, z, t.t[0], t.start[0], s3[e])}
              << (8 * j);
      }
      store4<ST>(p, k, ps);
      reinterpret_cast<std::uint32_t*>(q1)[k] = c1;
      reinterpret_cast<std::uint32_t*>(q2)[k] = c2;
      reinterpret_cast<std::uint32_t*>(q3)[k] = c3;
    }
  }
}

template <int G, bool kSm90, native::Storage ST>
void launch_ademamix8_fast_as(const native::Bnb8Scalars& s, typename ParamIO<ST>::T* p,
                              const typename ParamIO<ST>::T* g, const Bnb8DeviceState& st,
                              std::size_t n, std::size_t nblocks, cudaStream_t stream) {
  k_bnb_ademamix8_fast<G, kSm90, ST>
      <<<resident_grid<k_bnb_ademamix8_fast<G, kSm90, ST>>(nblocks, kThreads / G), kThreads, 0,
         stream>>>(s, p, g, st.q1, st.q2, st.absmax1, st.absmax2, n, nblocks, device_tables());
}

template <int G, bool kTorchOrder, bool kSm90, native::Storage ST>
unsigned fast_grid(std::size_t nblocks) {
  return resident_grid<k_bnb_adam8_fast<G, kTorchOrder, kSm90, ST>>(nblocks, kThreads / G);
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

template <native::Storage ST>
void launch_bnb_ademamix(const native::Bnb8Scalars& s, typename ParamIO<ST>::T* p,
                         const typename ParamIO<ST>::T* g, const Bnb8DeviceState& st, std::size_t n,
                         cudaStream_t stream) {
  if (n == 0) return;
  if (!st.is_8bit) {
    k_bnb_ademamix32<ST><<<grid_for(n, 4), kThreads, 0, stream>>>(s, p, g, st.s1, st.s2, n);
  } else {
    const std::size_t nb = (n + st.block - 1) / st.block;
    // Whole blocks only (m2 sits at q1 + n: a split launch would move it), aligned, and the
    // kinds Adam's fast kernel takes (fp32, or 16-bit under bnb-cuda).
    const bool fast_kind = ST == native::Storage::f32 || s.sm90;
    const bool vec =
        fast_kind && n % static_cast<std::size_t>(st.block) == 0 &&
        (ST == native::Storage::f32 ? aligned16(p, g) : aligned8(p, g)) &&
        ((reinterpret_cast<std::uintptr_t>(st.q1) | reinterpret_cast<std::uintptr_t>(st.q2)) &
         3u) == 0;
    if (vec && (st.block == 256 || st.block == 2048)) {
      if (st.block == 256) {
        s.sm90 ? launch_ademamix8_fast_as<32, true, ST>(s, p, g, st, n, nb, stream)
               : launch_ademamix8_fast_as<32, false, ST>(s, p, g, st, n, nb, stream);
      } else {
        s.sm90 ? launch_ademamix8_fast_as<256, true, ST>(s, p, g, st, n, nb, stream)
               : launch_ademamix8_fast_as<256, false, ST>(s, p, g, st, n, nb, stream);
      }
    } else if (st.block == 256) {
      k_bnb_ademamix8<1, ST><<<ctas_8bit(nb), kThreads, 0, stream>>>(
          s, p, g, st.q1, st.q2, st.absmax1, st.absmax2, n, nb, device_codes());
    } else if (st.block == 2048) {
      k_bnb_ademamix8<8, ST><<<ctas_8bit(nb), kThreads, 0, stream>>>(
          s, p, g, st.q1, st.q2, st.absmax1, st.absmax2, n, nb, device_codes());
    } else {
      throw InputError("bnb_ademamix_step: block must be 256 or 2048");
    }
  }
  cuda_check_launch("bnb_ademamix_step");
}

// f(std::integral_constant<Storage, ST>{}) for the 16-bit parameter storage pt (bf16 or fp16),
// the one dispatch of the 16-bit overloads below.
template <class F>
void with_storage16(native::Storage pt, const char* what, F&& f) {
  using native::Storage;
  switch (pt) {
    case Storage::bf16:
      return f(std::integral_constant<Storage, Storage::bf16>{});
    case Storage::f16:
      return f(std::integral_constant<Storage, Storage::f16>{});
    default:
      throw InputError(std::string(what) + ": 16-bit codes need bf16 or fp16 parameters");
  }
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

void bnb_ademamix_step(const native::Bnb8Scalars& s, float* p, const float* g,
                       const Bnb8DeviceState& st, std::size_t n, CUstream_st* stream) {
  launch_bnb_ademamix<native::Storage::f32>(s, p, g, st, n, stream);
}
void bnb_ademamix_step(const native::Bnb8Scalars& s, native::Storage pt, std::uint16_t* p,
                       const std::uint16_t* g, const Bnb8DeviceState& st, std::size_t n,
                       CUstream_st* stream) {
  with_storage16(pt, "bnb_ademamix_step", [&](auto ST) {
    launch_bnb_ademamix<decltype(ST)::value>(s, p, g, st, n, stream);
  });
}

}  // namespace exmy::gpu
