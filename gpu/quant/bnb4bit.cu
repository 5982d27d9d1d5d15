// bitsandbytes' 4-bit quantization kernels (gpu/quant/bnb4bit.hpp; docs/SEMANTICS.md 7.14):
// the block absmax (one CUDA block per quantization block), the packed codes (one thread per
// byte) and the dequantization (one thread per element), each through sim/native/bnb_4bit.hpp.
// The absmax is a max, exact in any order; the codes depend only on their element and absmax.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/quant/bnb4bit.hpp"
#include "gpu/quant/detail_input_words.cuh"
#include "gpu/quant/quantize.hpp"
#include "sim/common/error.hpp"
#include "sim/native/bnb_4bit.hpp"
#include "sim/native/bnb_4bit_cells.hpp"
#include "sim/native/fp32_ops.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::gpu {
namespace {

// Element i of the input as fp32 (bf16 and fp16 widened exactly, as (float)vals[j]).
__device__ __forceinline__ float load_element(const void* x, CastInput t, std::uint64_t i) {
  if (t == CastInput::fp32) return static_cast<const float*>(x)[i];
  const std::uint16_t u = static_cast<const std::uint16_t*>(x)[i];
  if (t == CastInput::bf16) return native::float_of(static_cast<std::uint32_t>(u) << 16);
  constexpr FloatFormat kFp16 = formats::fp16;
  return native::to_float(kFp16, u);
}

__global__ void __launch_bounds__(kThreads)
    bnb4_absmax_kernel(const void* __restrict__ x, CastInput t, std::uint64_t n,
                       std::uint64_t block, std::uint64_t blocks, float* __restrict__ absmax) {
  __shared__ float red[kThreads];
  for (std::uint64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const std::uint64_t lo = b * block, hi = min(n, lo + block);
    float acc = native::kBnb4AbsmaxInit;
    for (std::uint64_t i = lo + threadIdx.x; i < hi; i += kThreads) {
      acc = native::bnb4_absmax_step(acc, load_element(x, t, i));
    }
    red[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) {
        const float o = red[threadIdx.x + s];  // never NaN: a plain max
        if (o > red[threadIdx.x]) red[threadIdx.x] = o;
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) absmax[b] = native::bnb4_absmax_finish(red[0], hi - lo < block);
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kThreads)
    bnb4_codes_kernel(const void* __restrict__ x, CastInput t, std::uint64_t n, std::uint64_t block,
                      native::Bnb4Type type, const float* __restrict__ absmax,
                      std::uint8_t* __restrict__ packed) {
  const std::uint64_t bytes = (n + 1) / 2;
  for (std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x; j < bytes;
       j += static_cast<std::uint64_t>(gridDim.x) * kThreads) {
    const std::uint64_t i = 2 * j;
    const float a = absmax[i / block];
    const std::uint8_t hi = native::bnb4_code(type, load_element(x, t, i), a);
    const std::uint8_t lo =
        native::bnb4_code(type, i + 1 < n ? load_element(x, t, i + 1) : 0.0f, a);
    packed[j] = native::bnb4_pack(hi, lo);
  }
}

// The fused quantizer (one read of x, one write of the codes and absmax): each thread holds 16
// consecutive elements (a run of gpu/quant/detail_input_words.cuh: four or two 16-byte loads of
// 32-bit words, widened by value_nan_free), the G = block / 16 threads of a quantization block
// combine their maxima (shuffles within a warp, then the warps' partials in shared memory when
// G > 32), and each thread writes its 16 codes as 8 packed bytes. A tile of kThreads = 256 >= G
// threads covers 4096 elements, a whole number of quantization blocks. The block size is a
// template argument (one kernel for each of bitsandbytes' eight), so that the shuffles, the
// partials' reads and the block index unroll into constants (a runtime block left ~328
// instructions a tile at block 4096, 20 an element). The codes are those of
// bnb4_absmax_kernel + bnb4_codes_kernel:
//   - the block maximum is exact in any order: bnb4_absmax_raw_step (one FMNMX an element) folds
//     |x| unflushed, the partials combine by the same max, and bnb4_absmax_flush then gives
//     bnb4_absmax_step's fold (sim/native/bnb_4bit_cells.hpp says why);
//   - each code depends only on its element and the block's absmax: n = FMUL.FTZ(x, rcp(a)) as
//     codebook_normalize computes it, then bnb4_code_cells, the cell table that equals the
//     reference tree on every n the kernel can produce (tests/quant/test_bnb4_cells.cpp and the
//     GPU's own check, bnb4_cells_mismatches), read from shared memory (35 or 50 entries of 8
//     bytes, built by the CTA from the thresholds): one FFMA.RM, an LEA, an LDS.64, an FADD, an
//     LEA.HI and an LEA a code, FP4's sign included;
//   - a padding element (the odd last one) is coded from 0.0f as bnb4_codes_kernel does;
//   - a NaN element's bits reach neither (the max skips NaN, FMUL.FTZ makes it the canonical
//     NaN, which the cell address folds onto the cell of code 0, and every comparison with it is
//     false), so fp16 widens by the hardware conversion.
constexpr int kPerThread = quant_detail::kRun;
constexpr int kTile = kPerThread * kThreads;  // elements per tile
template <CastInput In>
constexpr int kWords = quant_detail::InT<In>::kWords;

struct FusedArgs {
  const void* x;
  std::uint64_t n;
  bool vec;  // 16-byte aligned x, 4-byte aligned packed
  float* absmax;
  std::uint8_t* packed;
  std::uint32_t table;  // the cell table's shared address less kBnb4CellLo * 8
  float* warp_max;      // two sets (steps alternate) of the warps' kTiles partial maxima
};

// A CTA step is kTiles<In> consecutive tiles: every thread issues the loads of all its runs
// first, then codes the tiles in order, so that the loads of the later tiles are in flight across
// the earlier tiles' code arithmetic (one tile a step left 16-bit inputs at 0.59-0.76 of copy:
// half the bytes of fp32 in flight for the same instructions). Measured on the H200, 2^28
// elements, medians of 3 beside copy/fp32 in one process (bench/results/
// 2026-12-02-h200-optim-nf4-speed-s7.md): 4 tiles for bf16 NF4 block 64 / 4096 184 / 216 us
// (one tile: 215 / 248 us in device call 2 of 2026-12-02), 2 tiles 194 / 220; fp32 keeps 2 tiles
// (64 registers; FP4 block 4096 343 us, was 351). A persistent grid with an L2 prefetch of the
// next step was slower (bf16 NF4 203 / 228 us, fp32 FP4 4096 375 us), and so was a per-warp
// cp.async ring of 4-warp CTAs (h/bnb4b: ~290 us for every 16-bit case, 12 warps an SM). Four
// CTAs of 256 threads an SM (at most 64 registers) keep 32 warps' loads in flight.
template <CastInput In>
constexpr int kTiles = In == CastInput::fp32 ? 2 : 4;

// The unflushed maximum of |x| over a run (never NaN, -FLT_MAX for a run of NaNs), the padding
// elements included: they are +0 (load_words fills them), which only a partial block holds and
// where bnb4_absmax_finish's max with 0 already counts them. fp32: one FMNMX an element. 16-bit:
// the maximum in the input's own format, exact (the widening is monotone and exact) and NaN-
// skipping (max.f16x2 / max.bf16x2 return the non-NaN operand; without .ftz no fp16 subnormal
// is flushed, and a bf16 subnormal is an fp32 subnormal that bnb4_absmax_flush zeroes anyway):
// fp16 4 three-input VHMNMX with |.| a run, bf16 8 abs and 4 VHMNMX.BF16; then the two halves
// widened and folded into -FLT_MAX by FMNMX (which skips a NaN half).
template <CastInput In>
__device__ __forceinline__ float run_max(const std::uint32_t (&w)[kWords<In>]) {
  float m = native::kBnb4AbsmaxInit;
  if constexpr (In == CastInput::fp32) {
#pragma unroll
    for (int k = 0; k < kPerThread; ++k)
      m = native::bnb4_absmax_raw_step(m, quant_detail::value_nan_free<In>(w, k));
  } else {
    using H2 = std::conditional_t<In == CastInput::fp16, __half2, __nv_bfloat162>;
    auto h2 = [](std::uint32_t u) { return __habs2(*reinterpret_cast<const H2*>(&u)); };
    H2 a = h2(w[0]);
#pragma unroll
    for (int k = 1; k < kWords<In>; ++k) a = __hmax2(a, h2(w[k]));
    const std::uint32_t u[1] = {*reinterpret_cast<const std::uint32_t*>(&a)};
    m = native::bnb4_absmax_raw_step(m, quant_detail::value_nan_free<In>(u, 0));
    m = native::bnb4_absmax_raw_step(m, quant_detail::value_nan_free<In>(u, 1));
  }
  return m;
}

// The codes of one tile of 4096 elements from `base` (this thread's run loaded as words w, m its
// block's maximum, unflushed) and the block's absmax. kFull: all of them are below n and the
// input and output are 16- and 8-byte aligned (no counts, no partial block, vector stores).
template <CastInput In, native::Bnb4Type T, int kBlock, bool kFull>
__device__ __forceinline__ void code_tile(const FusedArgs& f, std::uint64_t base, float m,
                                          const std::uint32_t (&w)[kWords<In>]) {
  constexpr int kG = kBlock / kPerThread;  // threads a quantization block: 2..256
  const std::uint64_t i0 = base + std::uint64_t{kPerThread} * threadIdx.x;
  const std::uint64_t qb = i0 / kBlock;  // this thread's block
  bool partial = false;
  if constexpr (!kFull) {
    const std::uint64_t lo = qb * kBlock;
    if (lo >= f.n) return;  // a whole block past the end
    partial = f.n - lo < static_cast<std::uint64_t>(kBlock);
  }
  const float a = native::bnb4_absmax_finish(native::bnb4_absmax_flush(m), partial);
  if (threadIdx.x % kG == 0) f.absmax[qb] = a;  // tiles start at multiples of 4096 >= kBlock
  if (!kFull && i0 >= f.n) return;
  const float r = native::sfu_rcp_f(native::SfuTables{}, a);  // codebook_normalize's rcp
  std::uint32_t word[2] = {0, 0};
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const float nk = native::ftz_mul(quant_detail::value_nan_free<In>(w, k), r);
    native::Bnb4Cell c;
    asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];"
                 : "=f"(c.thr), "=r"(c.rank)
                 : "r"(native::bnb4_cell_addr<T>(nk, f.table)));
    word[k / 8] = native::bnb4_add_rank<T>(word[k / 8], 8 * ((k % 8) / 2) + (k % 2 ? 0 : 4), c, nk);
  }
  word[0] = native::bnb4_codes_of_ranks<T>(word[0]);
  word[1] = native::bnb4_codes_of_ranks<T>(word[1]);
  const std::uint64_t j0 = i0 / 2, bytes = (f.n + 1) / 2;
  if (kFull) {
    *reinterpret_cast<uint2*>(f.packed + j0) = make_uint2(word[0], word[1]);
  } else if (f.vec && j0 + 8 <= bytes) {
    std::uint32_t* p = reinterpret_cast<std::uint32_t*>(f.packed + j0);
    p[0] = word[0], p[1] = word[1];
  } else {
    for (int b = 0; b < 8 && j0 + b < bytes; ++b)
      f.packed[j0 + b] = static_cast<std::uint8_t>(word[b / 4] >> (8 * (b % 4)));
  }
}

// One CTA step of kT tiles from `base`, every run loaded: first the maxima of all tiles (which
// needs every load, so that ptxas cannot sink the later tiles' loads below the earlier tiles'
// codes to save registers: coding a tile at a time, it issued only 3 of a 16-bit step's 8
// 16-byte loads up front), their shuffles interleaved, then for blocks of more than 32 threads
// ONE barrier a step: lane 0 of each warp writes its kT partials as one vector into the set of
// the step's parity, and a warp that writes set p at step s + 2 has passed step s + 1's barrier,
// which every warp reaches only after reading set p at step s. Then the tiles' codes in order.
template <CastInput In, native::Bnb4Type T, int kBlock, bool kFull, int kT>
__device__ __forceinline__ void fused_step(const FusedArgs& f, std::uint64_t base, int parity,
                                           const std::uint32_t (&w)[kT][kWords<In>]) {
  constexpr int kG = kBlock / kPerThread;
  float m[kT];
#pragma unroll
  for (int t = 0; t < kT; ++t) m[t] = run_max<In>(w[t]);
#pragma unroll
  for (int d = 1; d < (kG < 32 ? kG : 32); d *= 2) {
#pragma unroll
    for (int t = 0; t < kT; ++t)
      m[t] = native::f32_fmax_hw(m[t], __shfl_xor_sync(0xFFFFFFFFu, m[t], d));
  }
  if constexpr (kG > 32) {
    constexpr int kW = kG / 32;  // warps a block: 2, 4 or 8
    static_assert(kT == 2 || kT == 4);
    using V = std::conditional_t<kT == 4, float4, float2>;
    V* set = reinterpret_cast<V*>(f.warp_max) + parity * (kThreads / 32);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
      V o;
      o.x = m[0], o.y = m[1];
      if constexpr (kT == 4) o.z = m[2], o.w = m[3];
      set[warp] = o;
    }
    __syncthreads();
    const V* p = set + (warp & ~(kW - 1));  // this block's partials (this warp's among them)
#pragma unroll
    for (int q = 0; q < kW; ++q) {
      const V v = p[q];
      m[0] = q == 0 ? v.x : native::f32_fmax_hw(m[0], v.x);
      m[1] = q == 0 ? v.y : native::f32_fmax_hw(m[1], v.y);
      if constexpr (kT == 4) {
        m[2] = q == 0 ? v.z : native::f32_fmax_hw(m[2], v.z);
        m[3] = q == 0 ? v.w : native::f32_fmax_hw(m[3], v.w);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kT; ++t) code_tile<In, T, kBlock, kFull>(f, base + t * kTile, m[t], w[t]);
}

template <CastInput In, native::Bnb4Type T, int kBlock>
__global__ void __launch_bounds__(kThreads, 4)
    bnb4_fused_kernel(const void* __restrict__ x, std::uint64_t n, bool vec, bool vec8,
                      float* __restrict__ absmax, std::uint8_t* __restrict__ packed) {
  __shared__ native::Bnb4Cell cells[native::kBnb4CellCount<T>];
  __shared__ __align__(16) float warp_max[2 * kThreads / 32 * kTiles<In>];
  // The table is built after the first step's loads are issued, under their latency (a CTA
  // usually runs one step: built first, it delayed every CTA's loads by its build and barrier).
  bool built = false;  // the same for every thread of the CTA
  auto build = [&] {
    if (built) return;
    if (threadIdx.x < native::kBnb4CellCount<T>)
      cells[threadIdx.x] = native::bnb4_cell_entry<T>(threadIdx.x);
    __syncthreads();
    built = true;
  };
  FusedArgs f;
  f.x = x, f.n = n, f.vec = vec, f.absmax = absmax, f.packed = packed, f.warp_max = warp_max;
  // Through a shuffle so that the compiler keeps it one register (it would otherwise split it
  // into the shared window's base and a constant and spend an add per element).
  f.table = __shfl_sync(
      0xFFFFFFFFu,
      static_cast<std::uint32_t>(__cvta_generic_to_shared(cells)) - native::kBnb4CellLo<T> * 8u, 0);
  constexpr int kT = kTiles<In>;
  constexpr std::uint64_t span = std::uint64_t{kTile} * kT;  // elements per CTA step
  int parity = 0;
  for (std::uint64_t base = blockIdx.x * span; base < n; base += gridDim.x * span, parity ^= 1) {
    std::uint32_t w[kT][kWords<In>];
    if (vec8 && n - base >= span) {  // the same for every thread of the CTA
#pragma unroll
      for (int t = 0; t < kT; ++t) {
        const std::uint64_t i0 = base + t * kTile + std::uint64_t{kPerThread} * threadIdx.x;
        quant_detail::load_words<In>(x, i0, i0 + kPerThread, true, w[t]);
      }
      build();
      fused_step<In, T, kBlock, true, kT>(f, base, parity, w);
    } else {
#pragma unroll
      for (int t = 0; t < kT; ++t) {
        const std::uint64_t i0 = base + t * kTile + std::uint64_t{kPerThread} * threadIdx.x;
        quant_detail::load_words<In>(x, i0, n, vec, w[t]);
      }
      build();
      fused_step<In, T, kBlock, false, kT>(f, base, parity, w);
    }
  }
}

// EXMY_BNB4_GRID=N caps the fused kernel's grid at N CTAs, so that a test runs several steps a
// CTA (both sets of partials, a partial last step); read at each call.
unsigned fused_grid(std::uint64_t n, std::size_t span) {
  const unsigned g = blocks_for(n, span);
  const char* e = std::getenv("EXMY_BNB4_GRID");
  const long cap = e != nullptr && *e != 0 ? std::atol(e) : 0;
  return cap > 0 && static_cast<unsigned long>(cap) < g ? static_cast<unsigned>(cap) : g;
}

template <CastInput In, native::Bnb4Type T, int... kBlocks>
void launch_blocks(cudaStream_t s, const void* x, std::uint64_t n, int block, bool vec, bool vec8,
                   float* absmax, std::uint8_t* packed) {
  const unsigned grid = fused_grid(n, std::size_t{kTile} * kTiles<In>);
  const bool launched =
      ((block == kBlocks ? (bnb4_fused_kernel<In, T, kBlocks>
                            <<<grid, kThreads, 0, s>>>(x, n, vec, vec8, absmax, packed),
                            true)
                         : false) ||
       ...);
  if (!launched) throw InputError("bnb4: no fused kernel for block " + std::to_string(block));
}

template <CastInput In>
void launch_fused(bool nf4, cudaStream_t s, const void* x, std::uint64_t n, int block, bool vec,
                  bool vec8, float* absmax, std::uint8_t* packed) {
  if (nf4) {
    launch_blocks<In, native::Bnb4Type::nf4, 32, 64, 128, 256, 512, 1024, 2048, 4096>(
        s, x, n, block, vec, vec8, absmax, packed);
  } else {
    launch_blocks<In, native::Bnb4Type::fp4, 32, 64, 128, 256, 512, 1024, 2048, 4096>(
        s, x, n, block, vec, vec8, absmax, packed);
  }
}

// The cell table's codes against the reference trees on every fp32 pattern n with |n| <=
// kBnb4Reach or NaN (the kernel's FMUL returns every NaN as the canonical one, which this feeds
// raw: the FMA canonicalizes it as well), on the device's own FFMA.RM: bnb4_cells_mismatches.
template <native::Bnb4Type T>
__global__ void __launch_bounds__(kThreads)
    bnb4_cells_check_kernel(unsigned long long* __restrict__ out) {
  __shared__ native::Bnb4Cell cells[native::kBnb4CellCount<T>];
  if (threadIdx.x < native::kBnb4CellCount<T>)
    cells[threadIdx.x] = native::bnb4_cell_entry<T>(threadIdx.x);
  __syncthreads();
  const std::uint32_t table =
      static_cast<std::uint32_t>(__cvta_generic_to_shared(cells)) - native::kBnb4CellLo<T> * 8u;
  const std::uint32_t top = native::f32_bits(native::kBnb4Reach);
  unsigned long long bad = 0, checked = 0;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
       i < (std::uint64_t{1} << 32); i += static_cast<std::uint64_t>(gridDim.x) * kThreads) {
    const std::uint32_t u = static_cast<std::uint32_t>(i), mag = u & 0x7FFFFFFFu;
    if (mag > top && mag <= 0x7F800000u) continue;
    const float n = native::f32_from_bits(u);
    native::Bnb4Cell c;
    asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];"
                 : "=f"(c.thr), "=r"(c.rank)
                 : "r"(native::bnb4_cell_addr<T>(n, table)));
    const std::uint32_t got = native::bnb4_codes_of_ranks<T>(native::bnb4_add_rank<T>(0, 0, c, n));
    const std::uint32_t ref =
        T == native::Bnb4Type::nf4 ? native::bnb_nf4_code(n) : native::bnb_fp4_code(n);
    bad += got != ref;
    ++checked;
  }
  atomicAdd(out, bad);
  atomicAdd(out + 1, checked);
}

__global__ void __launch_bounds__(kThreads)
    bnb4_values_kernel(const std::uint8_t* __restrict__ packed, const float* __restrict__ absmax,
                       std::uint64_t n, std::uint64_t block, native::Bnb4Type type,
                       native::Bnb4Dtype d, void* __restrict__ out) {
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * kThreads) {
    const std::uint32_t y = native::bnb4_store(
        native::bnb4_value(type, native::bnb4_unpack(packed, i), absmax[i / block]), d);
    if (d == native::Bnb4Dtype::fp32) {
      static_cast<std::uint32_t*>(out)[i] = y;
    } else {
      static_cast<std::uint16_t*>(out)[i] = static_cast<std::uint16_t>(y);
    }
  }
}

// absmax - offset as torch's CUDA sub computes it (RN32, no FTZ; NaN 0x7FFFFFFF).
__global__ void __launch_bounds__(kThreads)
    bnb4_centre_kernel(const float* __restrict__ a, float offset, std::uint64_t n,
                       float* __restrict__ out) {
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * kThreads) {
    const float d = native::rn_sub(a[i], offset);
    out[i] = d != d ? native::float_of(0x7FFFFFFFu) : d;
  }
}

// absmax += offset (torch, RN32).
__global__ void __launch_bounds__(kThreads)
    bnb4_add_offset_kernel(float* __restrict__ a, float offset, std::uint64_t n) {
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * kThreads) {
    a[i] = native::rn_add(a[i], offset);
  }
}

// EXMY_BNB4_TWO_PASS=1 selects the two-kernel quantizer (tests compare the two paths' bytes;
// the benchmark measures both in one process).
bool fused_bnb4_enabled() {
  static const bool two_pass = [] {
    const char* e = std::getenv("EXMY_BNB4_TWO_PASS");
    return e != nullptr && e[0] == '1';
  }();
  return !two_pass;
}

void finish(const char* what) {
  cuda_check(cudaGetLastError(), what);
  cuda_check(cudaDeviceSynchronize(), what);
}

// The second level's options (quant::bnb4bit.cpp builds the same: block 256, dynamic, bnb-cuda).
quant::Options stats_options() {
  quant::Options o;
  o.scheme = {quant::Granularity::block, quant::kBnb4StatsBlock};
  o.target = quant::parse_target("dynamic");
  quant::apply_compat(o, "bnb-cuda", {});
  return o;
}

}  // namespace

void bnb4_quantize(const void* x, CastInput in_type, std::size_t n, const quant::Bnb4Options& opt,
                   std::uint8_t* packed, float* absmax, CUstream_st* stream) {
  quant::check_bnb4_block(opt.block);
  if (n == 0) return;
  const std::size_t blocks = (n + opt.block - 1) / opt.block;
  const cudaStream_t s = as_stream(stream);
  if (!fused_bnb4_enabled()) {  // the two-kernel path the fused one is tested against
    bnb4_absmax_kernel<<<blocks_for(blocks, 1), kThreads, 0, s>>>(x, in_type, n, opt.block, blocks,
                                                                  absmax);
    cuda_check_launch("bnb4 absmax kernel");
    bnb4_codes_kernel<<<grid_for((n + 1) / 2, 1), kThreads, 0, s>>>(x, in_type, n, opt.block,
                                                                    opt.type, absmax, packed);
    cuda_check_launch("bnb4 codes kernel");
    return;
  }
  // Vector loads and word stores need 16-byte aligned elements and a 4-byte aligned output.
  const bool vec = is_aligned(x, 16) && is_aligned(packed, 4);
  const bool vec8 = vec && is_aligned(packed, 8);  // the full steps' 8-byte stores
  const int b = static_cast<int>(opt.block);       // one of 32..4096: check_bnb4_block
  const bool nf4 = opt.type == native::Bnb4Type::nf4;
  switch (in_type) {
    case CastInput::fp32:
      launch_fused<CastInput::fp32>(nf4, s, x, n, b, vec, vec8, absmax, packed);
      break;
    case CastInput::bf16:
      launch_fused<CastInput::bf16>(nf4, s, x, n, b, vec, vec8, absmax, packed);
      break;
    default:
      launch_fused<CastInput::fp16>(nf4, s, x, n, b, vec, vec8, absmax, packed);
      break;
  }
  cuda_check_launch("bnb4 fused quantize kernel");
}

std::uint64_t bnb4_cells_mismatches(native::Bnb4Type type, std::uint64_t* checked) {
  const DeviceBuffer counts(2 * sizeof(unsigned long long));
  cuda_check(cudaMemset(counts.get(), 0, 2 * sizeof(unsigned long long)), "bnb4 cells check");
  auto* c = counts.as<unsigned long long>();
  if (type == native::Bnb4Type::nf4) {
    bnb4_cells_check_kernel<native::Bnb4Type::nf4><<<4096, kThreads>>>(c);
  } else {
    bnb4_cells_check_kernel<native::Bnb4Type::fp4><<<4096, kThreads>>>(c);
  }
  finish("bnb4 cells check");
  const std::vector<unsigned long long> h = counts.download<unsigned long long>(2);
  if (checked != nullptr) *checked = h[1];
  return h[0];
}

void bnb4_dequantize(const std::uint8_t* packed, const float* absmax, std::size_t n,
                     native::Bnb4Type type, std::size_t block, native::Bnb4Dtype d, void* out,
                     CUstream_st* stream) {
  quant::check_bnb4_block(block);
  if (n == 0) return;
  bnb4_values_kernel<<<grid_for(n, 1), kThreads, 0, as_stream(stream)>>>(packed, absmax, n, block,
                                                                         type, d, out);
  cuda_check_launch("bnb4 dequantize kernel");
}

quant::Bnb4Quantized bnb4_quantize_host(const void* x, CastInput in_type, std::size_t n,
                                        const quant::Bnb4Options& opt) {
  quant::check_bnb4_block(opt.block);
  if (n == 0) throw InputError("input: bitsandbytes' quantize_4bit needs at least one element");
  const std::size_t blocks = (n + opt.block - 1) / opt.block;
  const DeviceBuffer dx(x, n * input_bytes(in_type));
  const DeviceBuffer packed((n + 1) / 2);
  const DeviceBuffer absmax(blocks * sizeof(float));
  bnb4_quantize(dx.get(), in_type, n, opt, packed.as<std::uint8_t>(), absmax.as<float>());
  finish("bnb4 quantize kernels");
  quant::Bnb4Quantized q;
  q.packed = packed.download<std::uint8_t>((n + 1) / 2);
  q.absmax = absmax.download<float>(blocks);
  if (opt.double_quant) {
    q.offset = native::torch_cuda_mean(q.absmax.data(), blocks, opt.sms);
    const DeviceBuffer centred(blocks * sizeof(float));
    bnb4_centre_kernel<<<grid_for(blocks, 1), kThreads>>>(absmax.as<float>(), q.offset, blocks,
                                                          centred.as<float>());
    const std::size_t groups = (blocks + quant::kBnb4StatsBlock - 1) / quant::kBnb4StatsBlock;
    const DeviceBuffer codes(blocks);
    const DeviceBuffer absmax2(groups * sizeof(float));
    quantize(centred.get(), CastInput::fp32, 1, blocks, stats_options(),
             QuantizedOut{codes.as<std::uint8_t>(), absmax2.as<float>(), nullptr, nullptr});
    finish("bnb4 double quantization");
    q.absmax_codes = codes.download<std::uint8_t>(blocks);
    q.absmax2 = absmax2.download<float>(groups);
    q.absmax.clear();
  }
  return q;
}

std::vector<std::uint32_t> bnb4_dequantize_host(const quant::Bnb4Quantized& q, std::size_t n,
                                                native::Bnb4Dtype d,
                                                const quant::Bnb4Options& opt) {
  quant::check_bnb4_block(opt.block);
  if (q.packed.size() != (n + 1) / 2) {
    throw InputError("codes: " + std::to_string(n) + " values need " + std::to_string((n + 1) / 2) +
                     " bytes, got " + std::to_string(q.packed.size()));
  }
  const std::size_t blocks = (n + opt.block - 1) / opt.block;
  DeviceBuffer absmax(blocks * sizeof(float));
  if (opt.double_quant) {
    const std::size_t groups = (blocks + quant::kBnb4StatsBlock - 1) / quant::kBnb4StatsBlock;
    if (q.absmax_codes.size() != blocks || q.absmax2.size() != groups) {
      throw InputError("state: expected " + std::to_string(blocks) + " absmax codes and " +
                       std::to_string(groups) + " second-level absmax values, got " +
                       std::to_string(q.absmax_codes.size()) + " and " +
                       std::to_string(q.absmax2.size()));
    }
    const DeviceBuffer codes(q.absmax_codes.data(), blocks);
    const DeviceBuffer absmax2(q.absmax2.data(), groups * sizeof(float));
    dequantize(codes.as<std::uint8_t>(), absmax2.as<float>(), nullptr, 1, blocks, stats_options(),
               absmax.as<float>());
    bnb4_add_offset_kernel<<<grid_for(blocks, 1), kThreads>>>(absmax.as<float>(), q.offset, blocks);
  } else {
    if (q.absmax.size() != blocks) {
      throw InputError("state: expected " + std::to_string(blocks) + " fp32 absmax values, got " +
                       std::to_string(q.absmax.size()));
    }
    absmax.upload(q.absmax.data(), blocks * sizeof(float));
  }
  const DeviceBuffer packed(q.packed.data(), q.packed.size());
  const std::size_t width = d == native::Bnb4Dtype::fp32 ? 4 : 2;
  const DeviceBuffer out(n * width);
  bnb4_dequantize(packed.as<std::uint8_t>(), absmax.as<float>(), n, opt.type, opt.block, d,
                  out.get());
  finish("bnb4 dequantize kernels");
  std::vector<std::uint32_t> y(n);
  if (width == 4) {
    out.download(y.data(), n * 4);
  } else {
    const std::vector<std::uint16_t> h = out.download<std::uint16_t>(n);
    for (std::size_t i = 0; i < n; ++i) y[i] = h[i];
  }
  return y;
}

}  // namespace exmy::gpu
