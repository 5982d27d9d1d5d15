// The tiled fast path of the GEMM emulation (gpu/gemm/gemm_tiled.hpp): the hw (fused k-group)
// model over a register block of outputs per thread, the operands' k-groups staged in shared
// memory as small integers. The algebra, and why it is the CPU model's bit for bit, is
// sim/native/gemm_tile.hpp's; tests/gpu/gemm_layer_test.cpp compares every output byte.
//
// Work per (output, group of G k): the group's exponent maximum (Hopper's DPX viaddmax on two
// outputs at a time), then per product one multiply, one three-way add for the shift, one
// funnel shift, one three-way xor for the sign and an add; the group's tail (the incoming
// accumulator's term and the normalisation) once per output and group, branch-free
// (tile_group_end_fast: about 50 instructions, the 16 outputs of a thread interleaved; at k_group
// 16 it is a sixteenth of the products' count per product, not more than their whole cost as its
// branchy form was). Units (promotion chunks, split-K parts) are independent until the model's
// fixed fp32 chain over them: a CTA covers the whole K and runs the chain in registers, or (small
// M x N, long K: too few tiles for the GPU) CTAs cover ranges of units and write each unit's
// value, and a second kernel runs the chain over them in the reference's order; k_group 16 with
// still too few CTAs takes 32 x 32 tiles of 64 threads (gemm_tiled's plan).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
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
  int L, pa, pb;
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

template <int TM, int TN, int G, int TD>
constexpr std::size_t tiled_smem() {
  return sizeof(std::uint32_t) * (4 * G * TD * TM + 3 * G * TD * TN + TD * TM + TD * TN) +
         sizeof(std::int16_t) * G * TD * TN;
}

// TD x TD threads (16: 256, a 64 x 64 tile; 8: 64, a 32 x 32 tile), thread (ty, tx) the outputs
// rows ty TM .. +TM, columns tx TN .. +TN of the CTA's BM x BN tile; groups [zstart[z], zstart[z +
// 1]) of K. kF: the float pass (sim/native/gemm_tile.hpp's tile_float_ok; FP8): sAs / sBs hold the
// fp32 values, the terms trunc(a b 2^(frac - E)) by a round-toward-zero FMA; otherwise the integer
// pass. kRne: the model's inter_rne as a constant (the truncating models, cublas-sm90's, drop
// the rounding's instructions from the group tail).
template <int TM, int TN, int G, bool kF, bool kRne, int TD>
__global__ void __launch_bounds__(TD* TD, 1) k_gemm_tiled(const TiledParams p) {
  constexpr int NT = TD * TD, BM = TD * TM, BN = TD * TN;
  static_assert(NT >= BM && NT >= BN, "one thread per row's sign word");
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
  const int tid = static_cast<int>(threadIdx.x), tx = tid % TD, ty = tid / TD;
  const std::size_t i0 = static_cast<std::size_t>(blockIdx.y) * BM;
  const std::size_t j0 = static_cast<std::size_t>(blockIdx.x) * BN;
  const std::uint32_t g0 = p.zstart[blockIdx.z], g1 = p.zstart[blockIdx.z + 1];
  native::TileChain ch[TM][TN];
  std::uint32_t bad = 0;  // bit t TN + u: output (t, u) flagged
  // The next group's words, loaded into registers while this group computes.
  constexpr int NA = G * BM / NT, NB = G * BN / NT;
  static_assert(NA * NT == G * BM && NB * NT == G * BN, "whole loads per thread");
  std::uint32_t wa[NA], wb[NB], ka = 0, kb = 0, fg = 0;
  const auto fetch = [&](std::uint32_t g) {
    fg = p.gflags[g];  // read with the words: its latency hides behind the group's products
#pragma unroll
    for (int q = 0; q < NA; ++q) {
      const int e = tid + NT * q, k = e / BM, r = e % BM;
      wa[q] = p.aenc[(static_cast<std::size_t>(g) * G + k) * p.Mp + i0 + r];
    }
#pragma unroll
    for (int q = 0; q < NB; ++q) {
      const int e = tid + NT * q, k = e / BN, r = e % BN;
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
      const int e = tid + NT * q;
      const std::uint32_t w = wa[q];
      sAe2[e] = (w & 0xFFFFu) * 0x10001u;
      if constexpr (kF) {
        sAs[e] = native::f32_bits(native::tile_value(w, p.pa));
      } else {
        sAs[e] = native::tile_sig(w) << p.L;
        sAn[e] = static_cast<std::uint32_t>(-native::tile_exp(w));
        sAm[e] = native::tile_neg(w) ? ~0u : 0u;
      }
    }
#pragma unroll
    for (int q = 0; q < NB; ++q) {
      const int e = tid + NT * q;
      const std::uint32_t w = wb[q];
      sBe[e] = static_cast<std::int16_t>(w & 0xFFFFu);
      if constexpr (kF) {
        sBs[e] = native::f32_bits(native::tile_value(w, p.pb));
      } else {
        sBs[e] = native::tile_sig(w);
        sBn[e] = static_cast<std::uint32_t>(-native::tile_exp(w));
        sBm[e] = native::tile_neg(w) ? ~0u : 0u;
      }
    }
    if (tid < BM) sAk[tid] = ka;
    if (tid < BN) sBk[tid] = kb;
    const std::uint32_t f = fg;
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
    // The aligned sum: (S_a 2^L S_b) >> d, negative terms as their complement; or (kF) the
    // fp32 terms trunc(a b 2^(frac - E)).
    std::uint32_t s[TM][TN];
#pragma unroll
    for (int t = 0; t < TM; ++t) {
#pragma unroll
      for (int u = 0; u < TN; ++u) s[t][u] = 0;
    }
    if constexpr (kF) {
      float sc[TM][TN], fs[TM][TN];
#pragma unroll
      for (int t = 0; t < TM; ++t) {
#pragma unroll
        for (int u = 0; u < TN; ++u) {
          sc[t][u] = native::tile_float_scale(p.m.frac_bits, E[t][u]);
          fs[t][u] = 0.0f;
        }
      }
#pragma unroll 4
      for (int k = 0; k < G; ++k) {
        std::uint32_t as[TM], bs[TN];
        lds<TM>(sAs + k * BM + ty * TM, as);
        lds<TN>(sBs + k * BN + tx * TN, bs);
#pragma unroll
        for (int t = 0; t < TM; ++t) {
#pragma unroll
          for (int u = 0; u < TN; ++u) {
            const float pr = __fmul_rn(__uint_as_float(as[t]), __uint_as_float(bs[u]));
            const float cs = __uint_as_float((__float_as_uint(pr) & 0x80000000u) | 0x4B000000u);
            const float v = __fmaf_rz(pr, sc[t][u], cs);
            fs[t][u] = __fadd_rn(fs[t][u], __fsub_rn(v, cs));
          }
        }
      }
#pragma unroll
      for (int t = 0; t < TM; ++t) {
#pragma unroll
        for (int u = 0; u < TN; ++u) s[t][u] = static_cast<std::uint32_t>(__float2int_rz(fs[t][u]));
      }
    } else {
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
    }
    // The group's tail, branch-free (tile_group_end_fast), so the 16 outputs' chains
    // interleave; a flagged output restarts from +0 (its value is the generic kernel's).
#pragma unroll
    for (int t = 0; t < TM; ++t) {
#pragma unroll
      for (int u = 0; u < TN; ++u) {
        native::TileChain& x = ch[t][u];
        const std::uint32_t negs = kF ? 0u : __popc(sAk[ty * TM + t] ^ sBk[tx * TN + u]);
        const float v =
            native::tile_group_end_fast(x.c, E[t][u], static_cast<std::int32_t>(s[t][u] + negs),
                                        p.m.frac_bits, p.m.inter_bits, kRne);
        const bool ok = native::tile_c_ok(v);
        bad |= (ok ? 0u : 1u) << (t * TN + u);
        x.c = ok ? v : 0.0f;
      }
    }
    // A unit ends (the same group for the whole CTA: one uniform branch, not one per output).
    if ((f & kTileUnitEnd) != 0) {
      if (p.buffer) {
        const std::size_t base = static_cast<std::size_t>(p.gunit[g]) * p.M;
#pragma unroll
        for (int t = 0; t < TM; ++t) {
#pragma unroll
          for (int u = 0; u < TN; ++u) {
            const std::size_t i = i0 + ty * TM + t, j = j0 + tx * TN + u;
            if (i < p.M && j < p.N) p.U[(base + i) * p.N + j] = ch[t][u].c;
            ch[t][u].c = 0.0f;
          }
        }
      } else {
        const bool part_end = (f & kTilePartEnd) != 0;
#pragma unroll
        for (int t = 0; t < TM; ++t) {
#pragma unroll
          for (int u = 0; u < TN; ++u)
            native::tile_unit_end(ch[t][u], part_end, p.chunked, p.split);
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

template <int TM, int TN, int G, bool kF, bool kRne, int TD>
void launch_tiled(const TiledParams& p, dim3 grid) {
  constexpr std::size_t bytes = tiled_smem<TM, TN, G, TD>();
  cuda_check(
      cudaFuncSetAttribute(k_gemm_tiled<TM, TN, G, kF, kRne, TD>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
      "cudaFuncSetAttribute");
  k_gemm_tiled<TM, TN, G, kF, kRne, TD><<<grid, TD * TD, bytes>>>(p);
  cuda_check_launch("k_gemm_tiled");
}

template <int TM, int TN, int G, bool kF, int TD>
void launch_tiled(const TiledParams& p, dim3 grid) {
  if (p.m.inter_rne) {
    launch_tiled<TM, TN, G, kF, true, TD>(p, grid);
  } else {
    launch_tiled<TM, TN, G, kF, false, TD>(p, grid);
  }
}

// Device scratch of the tiled path, kept between calls and grown when a call needs more (issue
// 37): at tall K a call's dozen cudaMalloc / cudaFree pairs (each free a device
// synchronisation) and its five small uploads cost about as much host time as the products'
// kernel takes, and the events of a timed run count that idle device time. One per device,
// used under scratch_mutex() for a whole call; the memory stays with the process (at most the
// encoded operands of the largest GEMM run: 4 bytes an element of A and B, and the K split's
// unit values).
struct TileScratch {
  enum Slot { kMeta, kAenc, kAmask, kBenc, kBmask, kUnits, kSlots };
  std::unique_ptr<DeviceBuffer> buf[kSlots];
  std::size_t bytes[kSlots] = {};
  void* get(Slot s, std::size_t n) {
    if (n == 0) return nullptr;
    if (n > bytes[s]) {
      buf[s].reset();  // free first: the old and new copies need not fit together
      bytes[s] = 0;
      buf[s] = std::make_unique<DeviceBuffer>(n);
      bytes[s] = n;
    }
    return buf[s]->get();
  }
};
std::mutex& scratch_mutex() {
  static std::mutex mu;
  return mu;
}
TileScratch& tile_scratch() {
  static std::map<int, TileScratch> per_device;  // under scratch_mutex()
  return per_device[current_device()];
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
  // Tile shape and K ranges (host facts only: decided before the stats pass, so that every
  // small array goes up in one copy). 64 x 64 outputs a CTA, 4 x 4 a thread (4 x 8 needs more
  // than 255 registers); K split over CTAs (buffer mode) when the tiles are too few for the GPU.
  // k_group 16 (the integer pass) where 64 x 64 tiles and the K split still leave SMs idle
  // (bf16 128 x 64 x 65,536 under cublas-sm90: 2 tiles x 47 promotion chunks = 94 CTAs on 132
  // SMs, each a chain of 88 groups that cannot be cut): 32 x 32 tiles of 64 threads and a CTA
  // per unit, 4x the CTAs, several resident on an SM, so the longest SM's share of the work
  // falls from one tile-unit to about three quarter-tiles. EXMY_GEMM_TILE32=0 / 1: never /
  // always where k_group is 16 (tests).
  constexpr int TM = 4, TN = 4;
  const std::size_t sms = static_cast<std::size_t>(sm_count());
  const bool u_fits = units * M * N * sizeof(float) <= (std::size_t{1} << 30);
  const auto tiles_of = [&](std::size_t bm) { return ((M + bm - 1) / bm) * ((N + bm - 1) / bm); };
  std::size_t nz = 1;
  if (tiles_of(64) < 2 * sms && units > 1 && u_fits) {
    nz = std::min(units, (2 * sms + tiles_of(64) - 1) / tiles_of(64));
  }
  const int t32 = env_int("EXMY_GEMM_TILE32", -1);
  const bool small = G == 16 && (t32 < 0 ? tiles_of(64) * nz < sms : t32 != 0);
  if (small) {
    nz = units > 1 && u_fits ? std::min(units, (4 * sms + tiles_of(32) - 1) / tiles_of(32)) : 1;
  }
  const std::size_t BM = small ? 32 : 16 * TM, BN = BM;
  const std::size_t Mp = (M + BM - 1) / BM * BM, Np = (N + BN - 1) / BN * BN;
  nz = static_cast<std::size_t>(env_int("EXMY_GEMM_KSPLIT", static_cast<int>(nz)));
  nz = std::max<std::size_t>(1, std::min({nz, units, std::size_t{65535}}));  // gridDim.z
  const bool buffer = nz > 1;
  // The call's small arrays in one host block, one upload: the stats' initial values, the flag
  // counter, the K ranges, each group's unit and flags, each unit's flags, the row flags
  // (zeros).
  const DevStats init[2] = {{0u, 1 << 20, -(1 << 20)}, {0u, 1 << 20, -(1 << 20)}};
  const auto up16 = [](std::size_t b) { return (b + 15) / 16 * 16; };
  const std::size_t o_st = 0, o_nf = up16(sizeof init), o_z = o_nf + 16;
  const std::size_t o_gu = o_z + up16((nz + 1) * 4), o_gf = o_gu + up16(ng * 4);
  const std::size_t o_uf = o_gf + up16(ng), o_ab = o_uf + up16(units), o_bb = o_ab + up16(M);
  const std::size_t meta_bytes = o_bb + up16(N);
  std::vector<unsigned char> meta(meta_bytes, 0);
  std::memcpy(meta.data() + o_st, init, sizeof init);
  auto* zstart = reinterpret_cast<std::uint32_t*>(meta.data() + o_z);
  auto* gunit = reinterpret_cast<std::uint32_t*>(meta.data() + o_gu);
  for (std::size_t z = 0; z <= nz; ++z) zstart[z] = ustart[z * units / nz];
  for (std::size_t u = 0; u < units; ++u) {
    for (std::uint32_t g = ustart[u]; g < ustart[u + 1]; ++g)
      gunit[g] = static_cast<std::uint32_t>(u);
  }
  std::memcpy(meta.data() + o_gf, gflags.data(), ng);
  std::memcpy(meta.data() + o_uf, uflags.data(), units);
  // The device scratch, kept between calls (held until the last kernel below has finished: the
  // flag count's download waits for it).
  const std::lock_guard<std::mutex> lock(scratch_mutex());
  TileScratch& ws = tile_scratch();
  auto* dmeta = static_cast<unsigned char*>(ws.get(TileScratch::kMeta, meta_bytes));
  cuda_check(cudaMemcpy(dmeta, meta.data(), meta_bytes, cudaMemcpyHostToDevice), "upload");
  DevStats* st = reinterpret_cast<DevStats*>(dmeta + o_st);
  auto* nflag = reinterpret_cast<unsigned long long*>(dmeta + o_nf);
  std::uint8_t* abad = dmeta + o_ab;
  std::uint8_t* bbad = dmeta + o_bb;
  // Stats: specials per row, the precisions, the exponent range.
  k_tile_stats<<<grid_for(M * K, 8), kThreads>>>(a, K, 1, M, K, emin_a, abad, st);
  cuda_check_launch("k_tile_stats");
  k_tile_stats<<<grid_for(N * K, 8), kThreads>>>(bt, 1, N, N, K, emin_b, bbad, st + 1);
  cuda_check_launch("k_tile_stats");
  DevStats hs[2];
  cuda_check(cudaMemcpy(hs, st, sizeof hs, cudaMemcpyDeviceToHost), "download");
  const int pa = native::tile_precision(hs[0].or_m), pb = native::tile_precision(hs[1].or_m);
  int L = 0;
  if (!native::tile_shift(m.frac_bits, pa, pb, G, &L)) return false;
  for (const DevStats& s : hs) {
    if (s.e_lo <= s.e_hi && (s.e_lo < native::kTileExpLo || s.e_hi > native::kTileExpHi)) {
      return false;
    }
  }
  auto* aenc = static_cast<std::uint32_t*>(ws.get(TileScratch::kAenc, ng * G * Mp * 4));
  auto* amask = static_cast<std::uint32_t*>(ws.get(TileScratch::kAmask, ng * Mp * 4));
  auto* benc = static_cast<std::uint32_t*>(ws.get(TileScratch::kBenc, ng * G * Np * 4));
  auto* bmask = static_cast<std::uint32_t*>(ws.get(TileScratch::kBmask, ng * Np * 4));
  k_tile_encode<<<grid_for(Mp * ng, 1), kThreads>>>(a, K, 1, M, K, Mp, ng, G, emin_a, pa, aenc,
                                                    amask);
  cuda_check_launch("k_tile_encode");
  k_tile_encode<<<grid_for(Np * ng, 1), kThreads>>>(bt, 1, N, N, K, Np, ng, G, emin_b, pb, benc,
                                                    bmask);
  cuda_check_launch("k_tile_encode");
  auto* U =
      static_cast<float*>(ws.get(TileScratch::kUnits, buffer ? units * M * N * sizeof(float) : 0));
  cuda_check(cudaMemset(only, 0, M * N), "memset");
  TiledParams p{};
  p.aenc = aenc;
  p.amask = amask;
  p.benc = benc;
  p.bmask = bmask;
  p.abad = abad;
  p.bbad = bbad;
  p.gflags = dmeta + o_gf;
  p.zstart = reinterpret_cast<const std::uint32_t*>(dmeta + o_z);
  p.gunit = reinterpret_cast<const std::uint32_t*>(dmeta + o_gu);
  p.M = M;
  p.N = N;
  p.Mp = Mp;
  p.Np = Np;
  p.L = L;
  p.pa = pa;
  p.pb = pb;
  p.m = m;
  p.chunked = m.chunk > 0;
  p.split = m.split_k > 1;
  p.buffer = buffer;
  p.U = U;
  p.ep = ep;
  p.c = c;
  p.only = only;
  p.nflag = nflag;
  const dim3 grid(static_cast<unsigned>(Np / BN), static_cast<unsigned>(Mp / BM),
                  static_cast<unsigned>(nz));
  // The float pass where its exactness conditions hold (FP8 under cublas-sm90 and sm90;
  // EXMY_GEMM_TILE_FLOAT=0 keeps the integer pass, for the benchmark's comparison).
  const bool fl =
      env_int("EXMY_GEMM_TILE_FLOAT", 1) != 0 &&
      native::tile_float_ok(m.frac_bits, pa, pb, G, hs[0].e_lo, hs[0].e_hi, hs[1].e_lo, hs[1].e_hi);
  if (G == 32 && fl) {
    launch_tiled<TM, TN, 32, true, 16>(p, grid);
  } else if (G == 32) {
    launch_tiled<TM, TN, 32, false, 16>(p, grid);
  } else if (small) {
    launch_tiled<TM, TN, 16, false, 8>(p, grid);
  } else {
    launch_tiled<TM, TN, 16, false, 16>(p, grid);
  }
  if (buffer) {
    k_tile_combine<<<grid_for(M * N, 1), kThreads>>>(U, units, dmeta + o_uf, M, N, p.chunked,
                                                     p.split, ep, only, nflag, c);
    cuda_check_launch("k_tile_combine");
  }
  unsigned long long nf = 0;
  cuda_check(cudaMemcpy(&nf, nflag, 8, cudaMemcpyDeviceToHost), "download");
  *flagged = static_cast<std::size_t>(nf);
  return true;
}

}  // namespace exmy::gpu
