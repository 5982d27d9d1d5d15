// Internal to gpu/quant/quantize_block_scaled.cu: the NVFP4 single pass (docs/SEMANTICS.md 7.11:
// e2m1fn elements in blocks of 16, one e4m3fn block scale each, torchao's or TE's arithmetic, one
// or two levels) as a kernel of its own. fused_group_kernel's lean NVFP4 run took 452 us for 2^28
// fp32 elements on an H200 (0.64 of copy; two-level 728 us with the 242 us absmax pass,
// bench/results/2026-12-03-h200-s10-merged.md): torchao's integer e2m1 encoder with both branches
// per element, a shared-memory level and a barrier before every block's loads. Here:
// - One thread per block of 16, no shared memory and no barrier. The block's absmax is one
//   max.NaN.f32 per fp32 element (|x| as the operand modifier; for non-NaN magnitudes the fp32
//   order is the order of their bit patterns, so the max is 7.2's bits); a NaN max is the
//   canonical kNanAbsBits under NanPolicy::propagate and, under ignore, the (rare) block is
//   reduced again without its NaNs, as run_absmax does.
// - The block scale code and the element factor r are the native functions of 7.11 with the fp8
//   instructions (nvfp4_scale_code_as / nvfp4_factor_as, as the other kernels compute them).
// - The two-level level is derived per thread from the tensor's absmax bits in device memory
//   (QArgs::tensor_amax_dev; the same native functions as nvfp4_level_kernel and
//   quant::nvfp4_tensor_level), read after the thread's input loads are issued, so its latency
//   and arithmetic hide under theirs; the element-0 thread stores the tensor scale. The absmax
//   pass and this one are then the only kernels between the memset and the free.
// - Each element is p = RN32(x * r), then e2m1 of min(|p|, 6) by mx_e2m1_kernel's magic-number
//   rounding (detail_mx_e2m1.cuh's file comment: exact RNE-satfinite to e2m1 for every fp32
//   u in [0, 6], exhaustively checked there; torchao's encoder is RNE-satfinite on |y| <= 6, and
//   TE's comparison cast is that encoder for every non-zero, non-NaN y: 7.11). min(|p|, 6) is the
//   magnitude of 7.11's clamp(p, +-6) for every non-NaN p (+-inf included).
//   The sign: torchao keeps p's sign (-0 -> 0x8); TE's cast gives 0 for p = +-0, so its sign is
//   that of RN32(p + 0), which is +0 for either zero and p itself otherwise. The sign bits of four
//   products go to the code bytes by three prmt (selectors 8 | byte: the byte's sign replicated),
//   and the magnitudes are summed into the packed word with their bias removed once per word.
// - Blocks whose products can be NaN (a NaN element; r NaN, zero or infinite, which gives NaN for
//   an infinite or zero x) are recomputed element by element after the store by the native
//   nvfp4_{torchao,te}_scaled (nvfp4_fixup). Every other product is a non-NaN fp32 number, so the
//   run above gives 7.11's codes. Every code and scale byte is compared with the CPU reference by
//   tests/gpu/quantize_nvfp4_test.cpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/detail_code_kernels.cuh"
#include "gpu/quant/detail_element.cuh"
#include "gpu/quant/detail_input_words.cuh"
#include "gpu/quant/detail_launch.cuh"
#include "sim/native/quant_nvfp4.hpp"

namespace exmy::gpu::quant_detail {
namespace {

// Resident blocks per SM the kernel is compiled for (registers <= 65536 / (256 * this)): the
// pass waits on its loads, so more resident threads keep more bytes in flight. fp32: 6 (40
// registers; held to 8, i.e. 32, its fp32 kernels spilled 12-24 bytes); bf16 / fp16: 8 (32
// registers, no spill; nvcc 13.0, sm_90).
template <CastInput In>
constexpr int kNvfp4Blocks = In == CastInput::fp32 ? 6 : 8;

// The per-tensor level: derived from the device's tensor absmax (QArgs::tensor_amax_dev, as
// nvfp4_level_kernel does), read from the device (QArgs::tensor_dev), or the plan's.
template <bool Te>
__device__ __forceinline__ native::Nvfp4Tensor nvfp4_level(const QArgs& a) {
  if (a.tensor_amax_dev != nullptr) {
    const float amax = native::float_of(__ldg(a.tensor_amax_dev));
    if constexpr (Te) {
      return native::nvfp4_te_tensor(amax);
    } else {
      native::Nvfp4Tensor t;
      t.two_level = true;
      t.per_tensor_scale = native::nvfp4_torchao_tensor_scale(amax);
      return t;
    }
  }
  return a.tensor_dev != nullptr ? *a.tensor_dev : a.p.tensor;
}

// fp32 max that propagates NaN (max.NaN.f32, sm_80+).
__device__ __forceinline__ float max_nan(float a, float b) {
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

// The block's absmax bits without dropping NaN: run_absmax_as<In, false>'s value.
template <CastInput In>
__device__ __forceinline__ std::uint32_t nvfp4_absmax_raw(const std::uint32_t* w) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (In == CastInput::fp32) {
    float m = 0.0f;
#pragma unroll
    for (int k = 0; k < kRun; ++k) m = max_nan(m, fabsf(native::float_of(w[k])));
    return m != m ? kNanAbsBits : native::bits_of(m);
  }
#endif
  return run_absmax_as<In, false>(w);
}

// d = (e2m1 magnitude code of min(|p|, 6)) + 0xFE for a non-NaN p: detail_mx_e2m1.cuh's
// e2m1_magnitude on u = min(|p|, 6), whose term 2 log2(e) = (bits(e) - bits(1)) >> 22 is
// (bits(e) >> 22) - 0xFE (bits(e) is a multiple of 2^23 from bits(1) = 0xFE << 22); the 0xFE of
// every element comes off its packed word at once.
__device__ __forceinline__ std::uint32_t e2m1_biased(float p) {
  const float u = fminf(fabsf(p), 6.0f);
  const std::uint32_t e = max(native::bits_of(u) & 0x7F800000u, 0x3F800000u);  // >= 1.0
  const std::uint32_t mg = e + (22u << 23);
  const std::uint32_t t = native::bits_of(__fadd_rn(native::float_of(mg), u));
  return t - mg + (e >> 22);
}

__device__ __forceinline__ std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t s) {
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(s));
  return d;
}
// Byte k = 0xFF where word s_k has its sign bit set, else 0: prmt selector 0xB replicates the
// sign of byte 3 of the first operand, 0xF that of byte 3 (byte 7 of the pair) of the second.
__device__ __forceinline__ std::uint32_t sign_bytes(std::uint32_t s0, std::uint32_t s1,
                                                    std::uint32_t s2, std::uint32_t s3) {
  const std::uint32_t s01 = prmt(s0, s1, 0x00FBu);  // bytes 0, 1
  const std::uint32_t s23 = prmt(s2, s3, 0xFB00u);  // bytes 2, 3
  return prmt(s01, s23, 0x7610u);                   // bytes 0, 1 of s01; 2, 3 of s23
}

// The codes of one block of 16 under the factor r, for products that are not NaN: Packed, two
// words of 4-bit codes (sim/native/pack4.hpp: element 2i in the low nibble); else four words of
// byte codes (element 4q + k at byte k of word q).
template <CastInput In, bool Te, bool Packed>
__device__ __forceinline__ void nvfp4_codes(const std::uint32_t* w, float r,
                                            std::uint32_t (&out)[Packed ? 2 : 4]) {
  std::uint32_t d[kRun], s[kRun];
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    const float p = __fmul_rn(value_nan_free<In>(w, k), r);
    d[k] = e2m1_biased(p);
    s[k] = native::bits_of(Te ? __fadd_rn(p, 0.0f) : p);  // the code's sign: bit 31
  }
  if constexpr (Packed) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      std::uint32_t acc = 0u - 0xFEu * 0x11111111u;  // minus the 8 nibbles' bias (mod 2^32)
#pragma unroll
      for (int k = 0; k < 8; ++k) acc += d[8 * j + k] << (4 * k);
      // Element 8j + 2i: bit 3 of byte i; element 8j + 2i + 1: bit 7 of byte i.
      const std::uint32_t ev = sign_bytes(s[8 * j], s[8 * j + 2], s[8 * j + 4], s[8 * j + 6]);
      const std::uint32_t od = sign_bytes(s[8 * j + 1], s[8 * j + 3], s[8 * j + 5], s[8 * j + 7]);
      out[j] = acc | (ev & 0x08080808u) | (od & 0x80808080u);
    }
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      std::uint32_t acc = 0u - 0xFEu * 0x01010101u;  // minus the 4 bytes' bias (mod 2^32)
#pragma unroll
      for (int k = 0; k < 4; ++k) acc += d[4 * q + k] << (8 * k);
      out[q] = acc | (sign_bytes(s[4 * q], s[4 * q + 1], s[4 * q + 2], s[4 * q + 3]) & 0x08080808u);
    }
  }
}

template <bool Packed>
__device__ __forceinline__ void nvfp4_store(std::uint8_t* codes, std::uint64_t base,
                                            std::uint64_t n, bool vec,
                                            const std::uint32_t (&v)[Packed ? 2 : 4]) {
  if (vec && base + kRun <= n) {
    if constexpr (Packed) {
      *reinterpret_cast<uint2*>(codes + base / 2) = make_uint2(v[0], v[1]);
    } else {
      *reinterpret_cast<uint4*>(codes + base) = make_uint4(v[0], v[1], v[2], v[3]);
    }
    return;
  }
  std::uint8_t c[kRun];
#pragma unroll
  for (int k = 0; k < kRun; ++k) {
    c[k] = static_cast<std::uint8_t>(Packed ? (v[k / 8] >> (4 * (k % 8))) & 0xFu
                                            : (v[k / 4] >> (8 * (k % 4))) & 0xFFu);
  }
  if constexpr (Packed) {
    store_run_packed4(codes, base, n, false, c);
  } else {
    store_run(codes, base, n, false, c);
  }
}

// The native codes of the block at base (7.11's element cast under the factor r) over those
// already stored: the input read again, one element per iteration (as mx_fixup: indexing the
// block's registers by k would move them to local memory).
template <CastInput In, bool Te, bool Packed>
__device__ __forceinline__ void nvfp4_fixup(const void* x, std::uint8_t* codes, std::uint64_t base,
                                            std::uint64_t n, float r) {
  const auto* xs = static_cast<const InputElem<In>*>(x);
#pragma unroll 1
  for (std::uint64_t i = base; i < base + kRun && i < n; ++i) {
    const float v = native::float_of(widen_input<In>(xs[i]));
    const std::uint8_t c =
        Te ? native::nvfp4_te_scaled(v, r).code : native::nvfp4_torchao_scaled(v, r).code;
    if constexpr (Packed) {  // element 2j in the low nibble of byte j
      const std::uint8_t b = codes[i / 2];
      codes[i / 2] = (i & 1) ? static_cast<std::uint8_t>((b & 0x0Fu) | (c << 4))
                             : static_cast<std::uint8_t>((b & 0xF0u) | (c & 0x0Fu));
    } else {
      codes[i] = c;
    }
  }
}

// One block of 16 at element base (< n), its words w loaded.
template <CastInput In, bool Te, bool Packed>
__device__ __forceinline__ void nvfp4_block(const QArgs& a, const native::Nvfp4Tensor& t,
                                            const void* x, std::uint8_t* codes,
                                            std::uint8_t* scales, bool vec, std::uint64_t base,
                                            const std::uint32_t* w) {
  const std::uint32_t raw = nvfp4_absmax_raw<In>(w);
  const bool nan = raw == kNanAbsBits;
  const std::uint32_t amax =
      nan && a.p.nan != native::NanPolicy::propagate ? run_absmax_as<In, true>(w) : raw;
  const std::uint8_t sc = nvfp4_scale_code_as<Te>(native::float_of(amax), t);
  const float r = nvfp4_factor_as<Te>(sc, t);
  scales[base / kRun] = sc;
  std::uint32_t v[Packed ? 2 : 4];
  nvfp4_codes<In, Te, Packed>(w, r, v);
  nvfp4_store<Packed>(codes, base, a.n, vec, v);
  // NaN products: a NaN element, or r NaN, +-0 or +-inf (|r| - 1 wraps for 0).
  const std::uint32_t rm = native::bits_of(r) & 0x7FFFFFFFu;
  if (nan || rm - 1u >= 0x7F7FFFFFu) nvfp4_fixup<In, Te, Packed>(x, codes, base, a.n, r);
}

// One thread per block of 16 (a.G == kRun), one block of threads per tile of kTile elements; the
// grid strides only where it is capped (blocks_for: past 2^32 elements). The tiles are taken from
// the end of x: the blocks of low index start first, and the two-level absmax pass before this one
// read the end of x last, so up to an L2's worth of it (50 MB on an H200) is read again from
// there rather than from DRAM (likewise for a tensor its producer wrote from the front).
template <CastInput In, bool Te, bool Packed>
__global__ void __launch_bounds__(kThreads, kNvfp4Blocks<In>)
    nvfp4_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                 std::uint8_t* __restrict__ scales, bool vec, const __grid_constant__ QArgs a) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * kTile;
  // The reversed block index through an opaque subtraction: written as gridDim.x - 1 - blockIdx.x,
  // nvcc 13.0 compiled the loop below into a form that spilled 150-500 bytes at 40 registers.
  unsigned block;
  asm("sub.u32 %0, %1, %2;" : "=r"(block) : "r"(gridDim.x - 1u), "r"(blockIdx.x));
  std::uint64_t base = (static_cast<std::uint64_t>(block) * kThreads + threadIdx.x) * kRun;
  if (base >= a.n) return;
  std::uint32_t w[InT<In>::kWords];
  load_words<In>(x, base, a.n, vec, w);
  // After the first loads: the level's read and arithmetic overlap their latency.
  const native::Nvfp4Tensor t = nvfp4_level<Te>(a);
  if (base == 0 && a.tensor_scale_out != nullptr) {
    *a.tensor_scale_out = Te ? t.global_decode : t.per_tensor_scale;  // quant::nvfp4_stored_scale
  }
  for (;;) {
    nvfp4_block<In, Te, Packed>(a, t, x, codes, scales, vec, base, w);
    base += stride;
    if (base >= a.n) break;
    load_words<In>(x, base, a.n, vec, w);
  }
}

template <CastInput In>
void launch_nvfp4(const void* x, const QArgs& a, std::uint8_t* codes, std::uint8_t* scales,
                  bool vec, cudaStream_t s) {
  const dim3 grid(blocks_for(tile_count(a), 1));
  const bool te = a.p.rule == native::ScaleRule::nvfp4_te;
  if (te && a.packed4) {
    nvfp4_kernel<In, true, true><<<grid, kThreads, 0, s>>>(x, codes, scales, vec, a);
  } else if (te) {
    nvfp4_kernel<In, true, false><<<grid, kThreads, 0, s>>>(x, codes, scales, vec, a);
  } else if (a.packed4) {
    nvfp4_kernel<In, false, true><<<grid, kThreads, 0, s>>>(x, codes, scales, vec, a);
  } else {
    nvfp4_kernel<In, false, false><<<grid, kThreads, 0, s>>>(x, codes, scales, vec, a);
  }
}

}  // namespace
}  // namespace exmy::gpu::quant_detail
