// bitsandbytes' 4-bit quantization kernels (gpu/quant/bnb4bit.hpp; docs/SEMANTICS.md 7.14):
// the block absmax (one CUDA block per quantization block), the packed codes (one thread per
// byte) and the dequantization (one thread per element), each through sim/native/bnb_4bit.hpp.
// The absmax is a max, exact in any order; the codes depend only on their element and absmax.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/quant/bnb4bit.hpp"
#include "gpu/quant/quantize.hpp"
#include "sim/common/error.hpp"
#include "sim/native/bnb_4bit.hpp"
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

// The fused quantizer (one read of x, one write of the codes and absmax): each thread holds 8
// consecutive elements (two float4 or one uint4 load), the G = block / 8 threads of a
// quantization block combine their maxima (shuffles within a warp, then the warps' partials in
// shared memory when G > 32), and each thread writes its 8 codes as 4 packed bytes. A CTA of
// T = max(256, G) threads covers 8 T elements, a whole number of quantization blocks, per step.
// The codes are those of bnb4_absmax_kernel + bnb4_codes_kernel: the block maximum is exact in
// any order (bnb4_absmax_step never returns NaN, so its partials combine by a plain max), each
// code depends only on its element and the block's absmax, and a padding element (the odd last
// one) is coded from 0.0f as bnb4_codes_kernel does.
template <CastInput In>
__device__ __forceinline__ void load8(const void* __restrict__ x, std::uint64_t i0, std::uint64_t n,
                                      bool vec, float (&v)[8], int& count) {
  count = i0 >= n ? 0 : (n - i0 >= 8 ? 8 : static_cast<int>(n - i0));
  if (vec && count == 8) {
    if constexpr (In == CastInput::fp32) {
      const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(x) + i0);
      const float4 a = __ldg(p), b = __ldg(p + 1);
      v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z,
      v[7] = b.w;
    } else {
      const uint4 w =
          __ldg(reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(x) + i0));
      const std::uint32_t u[4] = {w.x, w.y, w.z, w.w};
      for (int k = 0; k < 8; ++k) {
        const std::uint32_t h = (u[k / 2] >> (16 * (k % 2))) & 0xFFFFu;
        v[k] = In == CastInput::bf16
                   ? native::float_of(h << 16)
                   : __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
      }
    }
    return;
  }
  for (int k = 0; k < 8; ++k) v[k] = k < count ? load_element(x, In, i0 + k) : 0.0f;
}

template <CastInput In>
__global__ void bnb4_fused_kernel(const void* __restrict__ x, std::uint64_t n, int block,
                                  native::Bnb4Type type, bool vec, float* __restrict__ absmax,
                                  std::uint8_t* __restrict__ packed) {
  __shared__ float warp_max[16];
  const int g = block / 8;                       // threads per quantization block
  const std::uint64_t span = 8ull * blockDim.x;  // elements per CTA step
  const std::uint64_t bytes = (n + 1) / 2;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (std::uint64_t base = blockIdx.x * span; base < n; base += gridDim.x * span) {
    const std::uint64_t i0 = base + 8ull * threadIdx.x;
    float v[8];
    int count;
    load8<In>(x, i0, n, vec, v, count);
    float m = native::kBnb4AbsmaxInit;
    for (int k = 0; k < count; ++k) m = native::bnb4_absmax_step(m, v[k]);
    for (int d = 1; d < (g < 32 ? g : 32); d *= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, d));
    if (g > 32) {
      if (lane == 0) warp_max[warp] = m;
      __syncthreads();
      const int w0 = warp / (g / 32) * (g / 32);
      for (int w = w0; w < w0 + g / 32; ++w) m = fmaxf(m, warp_max[w]);
      __syncthreads();
    }
    const std::uint64_t qb = i0 / static_cast<std::uint64_t>(block);  // this thread's block
    const std::uint64_t lo = qb * static_cast<std::uint64_t>(block);
    const std::uint64_t hi = lo + block < n ? lo + block : n;
    const float a = native::bnb4_absmax_finish(m, hi - lo < static_cast<std::uint64_t>(block));
    if (i0 == lo && lo < n) absmax[qb] = a;
    if (count == 0) continue;
    std::uint32_t word = 0;
    for (int k = 0; k < 8; k += 2) {
      const std::uint8_t b =
          native::bnb4_pack(native::bnb4_code(type, v[k], a), native::bnb4_code(type, v[k + 1], a));
      word |= static_cast<std::uint32_t>(b) << (4 * k);
    }
    const std::uint64_t j0 = i0 / 2;
    if (vec && j0 + 4 <= bytes) {
      *reinterpret_cast<std::uint32_t*>(packed + j0) = word;
    } else {
      for (int b = 0; b < 4 && j0 + b < bytes; ++b)
        packed[j0 + b] = static_cast<std::uint8_t>(word >> (8 * b));
    }
  }
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
  const int threads = opt.block / 8 > kThreads ? static_cast<int>(opt.block / 8) : kThreads;
  // Vector loads and word stores need 16-byte aligned elements and a 4-byte aligned output.
  const bool vec = is_aligned(x, 16) && is_aligned(packed, 4);
  const unsigned grid = blocks_for(n, 8 * static_cast<std::size_t>(threads));
  const int b = static_cast<int>(opt.block);
  switch (in_type) {
    case CastInput::fp32:
      bnb4_fused_kernel<CastInput::fp32>
          <<<grid, threads, 0, s>>>(x, n, b, opt.type, vec, absmax, packed);
      break;
    case CastInput::bf16:
      bnb4_fused_kernel<CastInput::bf16>
          <<<grid, threads, 0, s>>>(x, n, b, opt.type, vec, absmax, packed);
      break;
    default:
      bnb4_fused_kernel<CastInput::fp16>
          <<<grid, threads, 0, s>>>(x, n, b, opt.type, vec, absmax, packed);
      break;
  }
  cuda_check_launch("bnb4 fused quantize kernel");
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
