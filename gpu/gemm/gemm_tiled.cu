// The tiled fast path of the GEMM emulation (gpu/gemm/gemm_tiled.hpp): the hw (fused k-group)
// model over a register block of outputs per thread, the operands' k-groups staged in shared
// memory as small integers. The algebra, and why it is the CPU model's bit for bit, is
// sim/native/gemm_tile.hpp's; tests/gpu/gemm_layer_test.cpp compares every output byte.
//
// Work per (output, group of G k): the group's exponent maximum (Hopper's DPX viaddmax on two
// outputs at a time), then per product one multiply, one three-way add for the shift, one
// funnel shift, one three-way xor for the sign and an add; the group's tail (the incoming
// accumulator's term and the normalisation) once per output and group, with the reference's
// functions. Units (promotion chunks, split-K parts) are independent until the model's fixed
// fp32 chain over them: a CTA covers the whole K and runs the chain in registers, or (small M x
// N, long K: too few tiles for the GPU) CTAs cover ranges of units and write each unit's value,
// and a second kernel runs the chain over them in the reference's order.
#include <algorithm>
#include <cstdlib>
#include <vector>

#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/gemm/gemm_tiled.hpp"
#include "sim/native/gemm_tile.hpp"

namespace exmy::gpu {

namespace {

using native::kTilePartEnd;
using native::kTileUnitEnd;

// Per-operand facts from the stats pass: OR of significands, exponent range.
struct DevStats {
  unsigned or_m;
  int e_lo, e_hi;
};

// Element (r, k) of an operand of `rows` x K at src[r rs + k ks].
__global__ void k_tile_stats(const double* __restrict__ src, std::size_t rs, std::size_t ks,
                             std::size_t rows, std::size_t K, int emin,
                             std::uint8_t* __restrict__ bad, DevStats* __restrict__ st) {
  unsigned orm = 0;
  int lo = 1 << 20, hi = -(1 << 20);
  const std::size_t n = rows * K;
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t r = t % rows, k = t / rows;
    const double x = src[r * rs + k * ks];
    if (native::tile_special(x)) {
      bad[r] = 1;
    } else if (!native::dot_is_zero(x)) {
      const native::DotSig s = native::dot_sig(x, emin);
      orm |= static_cast<unsigned>(s.m);
      lo = min(lo, s.e);
      hi = max(hi, s.e);
    }
  }
  orm = __reduce_or_sync(0xFFFFFFFFu, orm);
  lo = __reduce_min_sync(0xFFFFFFFFu, lo);
  hi = __reduce_max_sync(0xFFFFFFFFu, hi);
  if ((threadIdx.x & 31) == 0) {
    atomicOr(&st->or_m, orm);
    atomicMin(&st->e_lo, lo);
    atomicMax(&st->e_hi, hi);
  }
}

// enc[(g G + k) Rp + r] (k-major, Rp >= rows padded rows) and the sign bits of each row's group
// mask[g Rp + r] (bit k), zero elements past the rows and past K.
__global__ void k_tile_encode(const double* __restrict__ src, std::size_t rs, std::size_t ks,
                              std::size_t rows, std::size_t K, std::size_t Rp, std::size_t ng,
                              int G, int emin, int p, std::uint32_t* __restrict__ enc,
                              std::uint32_t* __restrict__ mask) {
  const std::size_t n = Rp * ng;
  const std::uint32_t zero = native::tile_pack(0, native::kTileZeroExp, false);
  for (std::size_t t = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t r = t % Rp, g = t / Rp;
    std::uint32_t bits = 0;
    for (int kk = 0; kk < G; ++kk) {
      const std::size_t k = g * G + kk;
      std::uint32_t w = zero;
      if (r < rows && k < K) w = native::tile_encode(src[r * rs + k * ks], emin, p);
      enc[k * Rp + r] = w;
      bits |= (w >> 31) << kk;
    }
    mask[g * Rp + r] = bits;
  }
}

struct TiledParams {
  const std::uint32_t* aenc;    // [Kp][Mp]
  const std::uint32_t* amask;   // [ng][Mp]
  const std::uint32_t* benc;    // [Kp][Np]
  const std::uint32_t* bmask;   // [ng][Np]
  const std::uint8_t* abad;     // [M]
  const std::uint8_t* bbad;     // [N]
  const std::uint8_t* gflags;   // [ng]
  const std::uint32_t* zstart;  // [gridDim.z + 1]: the groups of each K range
  const std::uint32_t* gunit;   // [ng]: the unit of each group (buffer mode)
  std::size_t M, N, Mp, Np;
  int L;
  native::DotModel m;
  bool chunked, split, buffer;
  float* U;  // [units][M][N] (buffer mode)
  GemmEpilogue ep;
  std::uint32_t* c;
  std::uint8_t* only;
  unsigned long long* nflag;
};

// The epilogue, called (not inlined: one copy per kernel, not one per output of the register
// block; it runs once per output).
__device__ __noinline__ std::uint32_t epilogue_call(float acc, std::size_t i, std::size_t j,
                                                    const GemmEpilogue& e) {
  return gemm_epilogue(acc, i, j, e);
}

template <int N>
__device__ inline void lds(const std::uint32_t* p, std::uint32_t (&v)[N]) {
  static_assert(N % 4 == 0, "16-byte loads");
#pragma unroll
  for (int q = 0; q < N / 4; ++q) {
    const uint4 w = reinterpret_cast<const uint4*>(p)[q];
    v[4 * q] = w.x;
    v[4 * q + 1] = w.y;
    v[4 * q + 2] = w.z;
    v[4 * q + 3] = w.w;
  }
}

template <int TM, int TN, int G>
constexpr std::size_t tiled_smem() {
  return sizeof(std::uint32_t) * (4 * G * 16 * TM + 3 * G * 16 * TN + 16 * TM + 16 * TN) +
         sizeof(std::int16_t) * G * 16 * TN;
}

// 256 threads as 16 x 16, thread (ty, tx) the outputs rows ty TM .. +TM, columns tx TN .. +TN of
// the CTA's BM x BN tile; groups [zstart[z], zstart[z + 1]) of K.
template <int TM, int TN, int G>
__global__ void __launch_bounds__(256, 1) k_gemm_tiled(const TiledParams p) {
  constexpr int BM = 16 * TM, BN = 16 * TN;
  static_assert(TN % 4 == 0 && TM % 4 == 0, "16-byte shared loads");
  extern __shared__ __align__(16) unsigned char smem[];
  std::uint32_t* sAe2 = reinterpret_cast<std::uint32_t*>(smem);   // [G][BM] exponent, twice
  std::uint32_t* sAs = sAe2 + G * BM;                             // S_a 2^L
  std::uint32_t* sAn = sAs + G * BM;                              // -e_a
  std::uint32_t* sAm = sAn + G * BM;                              // sign: 0 or ~0
  std::uint32_t* sBs = sAm + G * BM;                              // [G][BN] S_b
  std::uint32_t* sBn = sBs + G * BN;                              // -e_b
  std::uint32_t* sBm = sBn + G * BN;                              // sign: 0 or ~0
  std::uint32_t* sAk = sBm + G * BN;                              // [BM] the group's sign bits
  std::uint32_t* sBk = sAk + BM;                                  // [BN]
  std::int16_t* sBe = reinterpret_cast<std::int16_t*>(sBk + BN);  // [G][BN] exponent
  const int tid = static_cast<int>(threadIdx.x), tx = tid % 16, ty = tid / 16;
  const std::size_t i0 = static_cast<std::size_t>(blockIdx.y) * BM;
  const std::size_t j0 = static_cast<std::size_t>(blockIdx.x) * BN;
  const std::uint32_t g0 = p.zstart[blockIdx.z], g1 = p.zstart[blockIdx.z + 1];
  native::TileChain ch[TM][TN];
  std::uint32_t bad = 0;  // bit t TN + u: output (t, u) flagged
  // The next group's words, loaded into registers while this group computes.
  constexpr int NA = G * BM / 256, NB = G * BN / 256;
  static_assert(NA * 256 == G * BM && NB * 256 == G * BN, "whole loads per thread");
  std::uint32_t wa[NA], wb[NB], ka = 0, kb = 0;
  const auto fetch = [&](std::uint32_t g) {
#pragma unroll
    for (int q = 0; q < NA; ++q) {
      const int e = tid + 256 * q, k = e / BM, r = e % BM;
      wa[q] = p.aenc[(static_cast<std::size_t>(g) * G + k) * p.Mp + i0 + r];
    }
#pragma unroll
    for (int q = 0; q < NB; ++q) {
      const int e = tid + 256 * q, k = e / BN, r = e % BN;
      wb[q] = p.benc[(static_cast<std::size_t>(g) * G + k) * p.Np + j0 + r];
    }
    if (tid < BM) ka = p.amask[static_cast<std::size_t>(g) * p.Mp + i0 + tid];
    if (tid < BN) kb = p.bmask[static_cast<std::size_t>(g) * p.Np + j0 + tid];
  };
  if (g0 < g1) fetch(g0);
  for (std::uint32_t g = g0; g < g1; ++g) {
    __syncthreads();
#pragma unroll
    for (int q = 0; q < NA; ++q) {
      const int e = tid + 256 * q;
      const std::uint32_t w = wa[q];
      sAe2[e] = (w & 0xFFFFu) * 0x10001u;
      sAs[e] = native::tile_sig(w) << p.L;
      sAn[e] = static_cast<std::uint32_t>(-native::tile_exp(w));
      sAm[e] = native::tile_neg(w) ? ~0u : 0u;
    }
#pragma unroll
    for (int q = 0; q < NB; ++q) {
      const int e = tid + 256 * q;
      const std::uint32_t w = wb[q];
      sBe[e] = static_cast<std::int16_t>(w & 0xFFFFu);
      sBs[e] = native::tile_sig(w);
      sBn[e] = static_cast<std::uint32_t>(-native::tile_exp(w));
      sBm[e] = native::tile_neg(w) ? ~0u : 0u;
    }
    if (tid < BM) sAk[tid] = ka;
    if (tid < BN) sBk[tid] = kb;
    __syncthreads();
    if (g + 1 < g1) fetch(g + 1);
    // The group's exponent maximum of every output, two columns a word (int16 halves; zero
    // elements' sums stay far below every real one, sim/native/gemm_tile.hpp).
    std::uint32_t em[TM][TN / 2];
#pragma unroll
    for (int t = 0; t < TM; ++t) {
#pragma unroll
      for (int q = 0; q < TN / 2; ++q) em[t][q] = 0x80008000u;
    }
#pragma unroll 8
    for (int k = 0; k < G; ++k) {
      std::uint32_t ae[TM], be[TN / 2];
      lds<TM>(sAe2 + k * BM + ty * TM, ae);
      if constexpr (TN / 2 >= 4) {
        lds<TN / 2>(reinterpret_cast<const std::uint32_t*>(sBe + k * BN + tx * TN), be);
      } else {
        const uint2 w = *reinterpret_cast<const uint2*>(sBe + k * BN + tx * TN);
        be[0] = w.x;
        be[1] = w.y;
      }
#pragma unroll
      for (int t = 0; t < TM; ++t) {
#pragma unroll
        for (int q = 0; q < TN / 2; ++q) em[t][q] = __viaddmax_s16x2(ae[t], be[q], em[t][q]);
      }
    }
    int E[TM][TN];
#pragma unroll
    for (int t = 0; t < TM; ++t) {
#pragma unroll
      for (int u = 0; u < TN; ++u) {
        const std::uint32_t w = em[t][u / 2];
        const int e = static_cast<std::int16_t>((u & 1) != 0 ? w >> 16 : w & 0xFFFFu);
        E[t][u] = max(e, native::tile_c_exp(ch[t][u].c));
      }
    }
    // The aligned sum: (S_a 2^L S_b) >> d, negative terms as their complement.
    std::uint32_t s[TM][TN];
#pragma unroll
    for (int t = 0; t < TM; ++t) {
#pragma unroll
      for (int u = 0; u < TN; ++u) s[t][u] = 0;
    }
#pragma unroll 4
    for (int k = 0; k < G; ++k) {
      std::uint32_t as[TM], an[TM], am[TM], bs[TN], bn[TN], bm[TN];
      lds<TM>(sAs + k * BM + ty * TM, as);
      lds<TM>(sAn + k * BM + ty * TM, an);
      lds<TM>(sAm + k * BM + ty * TM, am);
      lds<TN>(sBs + k * BN + tx * TN, bs);
      lds<TN>(sBn + k * BN + tx * TN, bn);
      lds<TN>(sBm + k * BN + tx * TN, bm);
#pragma unroll
      for (int t = 0; t < TM; ++t) {
#pragma unroll
        for (int u = 0; u < TN; ++u) {
          const std::uint32_t d = static_cast<std::uint32_t>(E[t][u]) + an[t] + bn[u];
          const std::uint32_t T = __funnelshift_rc(as[t] * bs[u], 0u, d);
          s[t][u] += T ^ am[t] ^ bm[u];
        }
      }
    }
    const std::uint8_t f = p.gflags[g];
#pragma unroll
    for (int t = 0; t < TM; ++t) {
#pragma unroll
      for (int u = 0; u < TN; ++u) {
        native::TileChain& x = ch[t][u];
        const std::uint32_t negs = __popc(sAk[ty * TM + t] ^ sBk[tx * TN + u]);
        x.c = native::tile_group_end_fast(x.c, E[t][u], static_cast<std::int32_t>(s[t][u] + negs),
                                          p.m.frac_bits, p.m.inter_bits, p.m.inter_rne);
        if (!native::tile_c_ok(x.c)) {
          bad |= 1u << (t * TN + u);
          x.c = 0.0f;
        }
        if ((f & kTileUnitEnd) != 0) {
          if (p.buffer) {
            const std::size_t i = i0 + ty * TM + t, j = j0 + tx * TN + u;
            if (i < p.M && j < p.N) p.U[(p.gunit[g] * p.M + i) * p.N + j] = x.c;
            x.c = 0.0f;
          } else {
            native::tile_unit_end(x, (f & kTilePartEnd) != 0, p.chunked, p.split);
          }
        }
      }
    }
  }
  const GemmEpilogue ep = p.ep;  // a local copy: the call takes its address, not the params'
#pragma unroll
  for (int t = 0; t < TM; ++t) {
#pragma unroll
    for (int u = 0; u < TN; ++u) {
      const std::size_t i = i0 + ty * TM + t, j = j0 + tx * TN + u;
      if (i >= p.M || j >= p.N) continue;
      const bool flag = ((bad >> (t * TN + u)) & 1u) != 0 || p.abad[i] != 0 || p.bbad[j] != 0;
      if (p.buffer) {
        if (flag) p.only[i * p.N + j] = 1;
      } else if (flag) {
        p.only[i * p.N + j] = 1;
        atomicAdd(p.nflag, 1ull);
      } else {
        p.c[i * p.N + j] = epilogue_call(native::tile_result(ch[t][u], p.split), i, j, ep);
      }
    }
  }
}

// Buffer mode: the chain over the units' values in the reference's order, then the epilogue.
__global__ void k_tile_combine(const float* __restrict__ U, std::size_t units,
                               const std::uint8_t* __restrict__ uflags, std::size_t M,
                               std::size_t N, bool chunked, bool split, GemmEpilogue ep,
                               std::uint8_t* __restrict__ only, unsigned long long* nflag,
                               std::uint32_t* __restrict__ c) {
  const std::size_t n = M * N;
  for (std::size_t o = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; o < n;
       o += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    if (only[o] != 0) {
      atomicAdd(nflag, 1ull);
      continue;
    }
    native::TileChain s;
    for (std::size_t u = 0; u < units; ++u) {
      s.c = U[u * n + o];
      native::tile_unit_end(s, (uflags[u] & kTilePartEnd) != 0, chunked, split);
    }
    c[o] = gemm_epilogue(native::tile_result(s, split), o / N, o % N, ep);
  }
}

template <int TM, int TN, int G>
void launch_tiled(const TiledParams& p, dim3 grid) {
  constexpr std::size_t bytes = tiled_smem<TM, TN, G>();
  cuda_check(
      cudaFuncSetAttribute(k_gemm_tiled<TM, TN, G>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(bytes)),
      "cudaFuncSetAttribute");
  k_gemm_tiled<TM, TN, G><<<grid, 256, bytes>>>(p);
  cuda_check_launch("k_gemm_tiled");
}

int env_int(const char* name, int dflt) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? std::atoi(v) : dflt;
}

}  // namespace

bool tiled_model_ok(const native::DotModel& m, std::size_t K) {
  if (m.kind != native::DotModel::Kind::hw || m.sub_group != 0 || m.reduce_tree) return false;
  if (m.k_group != 16 && m.k_group != 32) return false;
  if (m.frac_bits > 25) return false;  // tile_group_end_fast's range
  std::vector<std::uint8_t> gf, uf;
  std::vector<std::uint32_t> us;
  return native::tile_layout(K, m, m.k_group, &gf, &uf, &us);
}

bool gemm_tiled(const double* a, const double* bt, std::size_t M, std::size_t N, std::size_t K,
                int emin_a, int emin_b, const native::DotModel& m, const GemmEpilogue& ep,
                std::uint32_t* c, std::uint8_t* only, std::size_t* flagged) {
  if (!tiled_model_ok(m, K) || M * N == 0) return false;
  const int G = m.k_group;
  std::vector<std::uint8_t> gflags, uflags;
  std::vector<std::uint32_t> ustart;
  native::tile_layout(K, m, G, &gflags, &uflags, &ustart);
  const std::size_t ng = gflags.size(), units = uflags.size();
  // Stats: specials per row, the precisions, the exponent range.
  const DevStats init[2] = {{0u, 1 << 20, -(1 << 20)}, {0u, 1 << 20, -(1 << 20)}};
  const DeviceBuffer abad(M), bbad(N), dst(init, sizeof init);
  cuda_check(cudaMemset(abad.get(), 0, M), "memset");
  cuda_check(cudaMemset(bbad.get(), 0, N), "memset");
  DevStats* st = dst.as<DevStats>();
  k_tile_stats<<<grid_for(M * K, 8), kThreads>>>(a, K, 1, M, K, emin_a, abad.as<std::uint8_t>(),
                                                 st);
  cuda_check_launch("k_tile_stats");
  k_tile_stats<<<grid_for(N * K, 8), kThreads>>>(bt, 1, N, N, K, emin_b, bbad.as<std::uint8_t>(),
                                                 st + 1);
  cuda_check_launch("k_tile_stats");
  DevStats hs[2];
  dst.download(hs, sizeof hs);
  const int pa = native::tile_precision(hs[0].or_m), pb = native::tile_precision(hs[1].or_m);
  int L = 0;
  if (!native::tile_shift(m.frac_bits, pa, pb, G, &L)) return false;
  for (const DevStats& s : hs) {
    if (s.e_lo <= s.e_hi && (s.e_lo < native::kTileExpLo || s.e_hi > native::kTileExpHi)) {
      return false;
    }
  }
  // Tile shape and K ranges.
  // 64 x 64 outputs a CTA, 4 x 4 a thread (4 x 8 needs more than 255 registers).
  constexpr int TM = 4, TN = 4;
  const std::size_t BM = 16 * TM, BN = 16 * TN;
  const std::size_t Mp = (M + BM - 1) / BM * BM, Np = (N + BN - 1) / BN * BN;
  const std::size_t tiles = (Mp / BM) * (Np / BN);
  const std::size_t sms = static_cast<std::size_t>(sm_count());
  std::size_t nz = 1;
  if (tiles < 2 * sms && units > 1 && units * M * N * sizeof(float) <= (std::size_t{1} << 30)) {
    nz = std::min(units, (2 * sms + tiles - 1) / tiles);
  }
  nz = static_cast<std::size_t>(env_int("EXMY_GEMM_KSPLIT", static_cast<int>(nz)));
  nz = std::max<std::size_t>(1, std::min(nz, units));
  const bool buffer = nz > 1;
  std::vector<std::uint32_t> zstart(nz + 1), gunit(ng);
  for (std::size_t z = 0; z <= nz; ++z) zstart[z] = ustart[z * units / nz];
  for (std::size_t u = 0; u < units; ++u) {
    for (std::uint32_t g = ustart[u]; g < ustart[u + 1]; ++g)
      gunit[g] = static_cast<std::uint32_t>(u);
  }
  const DeviceBuffer aenc(ng * G * Mp * 4), amask(ng * Mp * 4), benc(ng * G * Np * 4),
      bmask(ng * Np * 4);
  k_tile_encode<<<grid_for(Mp * ng, 1), kThreads>>>(
      a, K, 1, M, K, Mp, ng, G, emin_a, pa, aenc.as<std::uint32_t>(), amask.as<std::uint32_t>());
  cuda_check_launch("k_tile_encode");
  k_tile_encode<<<grid_for(Np * ng, 1), kThreads>>>(
      bt, 1, N, N, K, Np, ng, G, emin_b, pb, benc.as<std::uint32_t>(), bmask.as<std::uint32_t>());
  cuda_check_launch("k_tile_encode");
  const DeviceBuffer dg(gflags.data(), ng), dz(zstart.data(), zstart.size() * 4),
      du(gunit.data(), gunit.size() * 4), duf(uflags.data(), units), dn(8);
  const DeviceBuffer U(buffer ? units * M * N * sizeof(float) : 0);
  cuda_check(cudaMemset(only, 0, M * N), "memset");
  cuda_check(cudaMemset(dn.get(), 0, 8), "memset");
  TiledParams p{};
  p.aenc = aenc.as<std::uint32_t>();
  p.amask = amask.as<std::uint32_t>();
  p.benc = benc.as<std::uint32_t>();
  p.bmask = bmask.as<std::uint32_t>();
  p.abad = abad.as<std::uint8_t>();
  p.bbad = bbad.as<std::uint8_t>();
  p.gflags = dg.as<std::uint8_t>();
  p.zstart = dz.as<std::uint32_t>();
  p.gunit = du.as<std::uint32_t>();
  p.M = M;
  p.N = N;
  p.Mp = Mp;
  p.Np = Np;
  p.L = L;
  p.m = m;
  p.chunked = m.chunk > 0;
  p.split = m.split_k > 1;
  p.buffer = buffer;
  p.U = U.as<float>();
  p.ep = ep;
  p.c = c;
  p.only = only;
  p.nflag = dn.as<unsigned long long>();
  const dim3 grid(static_cast<unsigned>(Np / BN), static_cast<unsigned>(Mp / BM),
                  static_cast<unsigned>(nz));
  if (G == 32) {
    launch_tiled<TM, TN, 32>(p, grid);
  } else {
    launch_tiled<TM, TN, 16>(p, grid);
  }
  if (buffer) {
    k_tile_combine<<<grid_for(M * N, 1), kThreads>>>(U.as<float>(), units, duf.as<std::uint8_t>(),
                                                     M, N, p.chunked, p.split, ep, only,
                                                     dn.as<unsigned long long>(), c);
    cuda_check_launch("k_tile_combine");
  }
  unsigned long long nf = 0;
  dn.download(&nf, 8);
  *flagged = static_cast<std::size_t>(nf);
  return true;
}

}  // namespace exmy::gpu
