// CUDA kernels of bitsandbytes' AdEMAMix8bit and its 32-bit fallback (gpu/optim/optim.hpp): the
// 8-bit Adam layout with a third state (m2 after m1 in q1, its absmax after absmax1), the
// vectorised kernel for whole blocks and the element-wise one for the rest. Per element the
// functions of sim/native/optim_bnb8_ademamix.hpp; the shared maps, tables and block maxima are
// gpu/optim/bnb8_kernels.cuh's.
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "gpu/optim/bnb8_kernels.cuh"
#include "sim/native/optim_bnb8_ademamix.hpp"

namespace exmy::gpu {
namespace {
using namespace bnb8;

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

// bitsandbytes' AdEMAMix8bit on a tensor of whole blocks (n a multiple of 8G), laid out as
// k_bnb_adam8_fast: a group of G threads per block of 8G elements, two float4 runs per thread, the
// three block maxima order-free (warp shuffles for G = 32), one bnb_norm per state and block.
// Per element the functions of k_bnb_ademamix8 (bnb_ademamix8_states, bnb_ademamix_param); m2
// is q1[n + i] with absmax1[nblocks + qb] as there; the quantizers are the bucketed ones Adam's
// fast kernel uses (equal to bnb_quant_signed / _unsigned on the same maps).
// Occupancy: with G = 32 (block 256) the kernel fits 64 registers, so 4 CTAs per SM; with
// G = 256 a 64-register cap spills 8-32 bytes, so it keeps 80 registers (3 CTAs per SM).
// Measured on the H200: 445 -> 430 us a step on 2^26 parameters (bench/results/
// 2026-12-02-h200-s6-call2.md).
// kPUp (G = 32): the parameters are loaded with g and the codes, before the block maxima, so a
// block waits for memory once instead of twice (4-20 bytes of spill at the 64-register cap, by
// ptxas, sm_90). Measured on the H200 in one process, 2^26 fp32 parameters under bnb-cuda: 429
// -> 420 us. Variants measured beside it and dropped (bench/results/
// 2026-12-02-h200-optim-nf4-speed-s7.md): an L2 prefetch of the next grid-stride block on top
// (434 us), two warps a block with 4 elements a thread at 5 CTAs per SM (499 us).
template <int G>
constexpr int kAdemamixMinCtas = G == 32 ? 4 : 2;
template <int G, bool kSm90, native::Storage ST>
__global__ void __launch_bounds__(kThreads, kAdemamixMinCtas<G>)
    k_bnb_ademamix8_fast(native::Bnb8Scalars sp, typename ParamIO<ST>::T* __restrict__ p,
                         const typename ParamIO<ST>::T* __restrict__ g,
                         std::uint8_t* __restrict__ q1, std::uint8_t* __restrict__ q2,
                         float* __restrict__ absmax1, float* __restrict__ absmax2, std::size_t n,
                         std::size_t nblocks, const Bnb8Tables* tables) {
  constexpr bool kPUp = G == 32;
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
      if constexpr (kPUp) load4<ST>(p, k, P[r]);
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
    if constexpr (!kPUp) {
#pragma unroll
      for (int r = 0; r < 2; ++r) load4<ST>(p, base4 + r * G, P[r]);
    }
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
      <<<block_grid<k_bnb_ademamix8_fast<G, kSm90, ST>>(nblocks, kThreads / G), kThreads, 0,
         stream>>>(s, p, g, st.q1, st.q2, st.absmax1, st.absmax2, n, nblocks, device_tables());
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

}  // namespace

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
