// CUDA kernels of Adam/AdamW and SGD on split-format parameters (gpu/optim/optim.hpp): 16-bit
// codes plus packed extra bits, one warp per group of 32 elements assembling the packed words by
// shuffles, or the byte-aligned fields' kernel. Each kernel calls the per-element functions of
// sim/native/optim_*.hpp.
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
#include "sim/native/optim_bnb8_search.hpp"

namespace exmy::gpu {
namespace {

// ---- split formats ------------------------------------------------------------------------------
// One warp per group of 32 elements (w words): lane l owns element l. Fields are read from the
// group's words (1-2 per lane). Lane j < w assembles word j from the fields that overlap it
// (elements floor(32j/w) .. floor((32j+31)/w), at most 32/w + 2 of them) by shuffles, so no word
// is written by two lanes.
__device__ void split_store_words(std::uint32_t* words, std::uint32_t field, int w) {
  const int lane = threadIdx.x & 31;
  const int e0 = lane < w ? (32 * lane) / w : 0;
  const int count = 32 / w + 2;
  std::uint64_t acc = 0;
  for (int c = 0; c < count; ++c) {
    const int e = e0 + c;
    const std::uint32_t v = __shfl_sync(0xFFFFFFFFu, field, e & 31);
    const int shift = e * w - 32 * lane;  // element e's first bit, relative to word `lane`
    if (lane < w && e < 32) {
      if (shift < 0) {
        acc |= static_cast<std::uint64_t>(v >> (-shift));
      } else if (shift < 32) {
        acc |= static_cast<std::uint64_t>(v) << shift;
      }
    }
  }
  if (lane < w) words[lane] = static_cast<std::uint32_t>(acc);
}

template <bool kAdam>
__global__ void k_split(native::TorchAdamScalars sa, native::TorchSgdScalars ss,
                        native::SplitFormat f, std::uint64_t step, std::uint64_t seed,
                        std::uint16_t* hi, std::uint32_t* extra, const float* g, float* m, float* v,
                        std::size_t n) {
  const int w = native::split_field_bits(f);
  const int lane = threadIdx.x & 31;
  const std::size_t groups = (n + 31) / 32;
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * (blockDim.x / 32);
  for (std::size_t grp = (blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x) / 32;
       grp < groups; grp += warps) {
    std::uint32_t* words = extra + grp * w;
    const std::size_t i = grp * 32 + lane;
    std::uint32_t field = 0;
    if (i < n) {
      field = native::field_get(words, lane, w);
      std::uint16_t h = hi[i];
      const std::uint32_t r = f.sr ? native::split_sr_word(seed, step, i) : 0u;
      float mi = m[i];
      if (kAdam) {
        float vi = v[i];
        native::split_adam_element(sa, f, h, field, g[i], mi, vi, r);
        v[i] = vi;
      } else {
        native::split_sgd_element(ss, f, h, field, g[i], mi, step == 1, r);
      }
      m[i] = mi;
      hi[i] = h;
    }
    __syncwarp();
    if (w > 0) split_store_words(words, field, w);
  }
}

// k = 8 or 16 without sr: element i's field is byte (halfword) i of the little-endian word stream
// (bits [i*w, i*w + w) of word i*w/32 start at byte i*w/8), so the packing needs no assembly across
// lanes. Four elements per thread with 16-byte (g, m, v), 8-byte (hi) and 4/8-byte (fields)
// accesses where every pointer is aligned, then a scalar tail. Same per-element call as k_split.
template <class T>
struct Vec4;
template <>
struct Vec4<std::uint8_t> {
  using type = uchar4;
};
template <>
struct Vec4<std::uint16_t> {
  using type = ushort4;
};

template <bool kAdam, class FieldT>
__device__ void split_bytes_one(const native::TorchAdamScalars& sa,
                                const native::TorchSgdScalars& ss, const native::SplitFormat& f,
                                bool first, std::uint16_t& h, FieldT& field, float g, float& m,
                                float& v) {
  std::uint32_t fw = field;
  if (kAdam) {
    native::split_adam_element(sa, f, h, fw, g, m, v, 0u);
  } else {
    native::split_sgd_element(ss, f, h, fw, g, m, first, 0u);
  }
  field = static_cast<FieldT>(fw);
}

template <bool kAdam, class FieldT>
__global__ void __launch_bounds__(kThreads)
    k_split_bytes(native::TorchAdamScalars sa, native::TorchSgdScalars ss, native::SplitFormat f,
                  bool first, bool vec, std::uint16_t* __restrict__ hi, FieldT* __restrict__ extra,
                  const float* __restrict__ g, float* __restrict__ m, float* __restrict__ v,
                  std::size_t n) {
  using F4 = typename Vec4<FieldT>::type;
  const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t n4 = vec ? n / 4 : 0;
  for (std::size_t k = tid; k < n4; k += stride) {
    ushort4 H = reinterpret_cast<ushort4*>(hi)[k];
    F4 X = reinterpret_cast<F4*>(extra)[k];
    const float4 G = reinterpret_cast<const float4*>(g)[k];
    float4 M = reinterpret_cast<float4*>(m)[k];
    float4 V = kAdam ? reinterpret_cast<float4*>(v)[k] : float4{};
    split_bytes_one<kAdam>(sa, ss, f, first, H.x, X.x, G.x, M.x, V.x);
    split_bytes_one<kAdam>(sa, ss, f, first, H.y, X.y, G.y, M.y, V.y);
    split_bytes_one<kAdam>(sa, ss, f, first, H.z, X.z, G.z, M.z, V.z);
    split_bytes_one<kAdam>(sa, ss, f, first, H.w, X.w, G.w, M.w, V.w);
    reinterpret_cast<ushort4*>(hi)[k] = H;
    reinterpret_cast<F4*>(extra)[k] = X;
    reinterpret_cast<float4*>(m)[k] = M;
    if (kAdam) reinterpret_cast<float4*>(v)[k] = V;
  }
  for (std::size_t i = n4 * 4 + tid; i < n; i += stride) {
    float mi = m[i], vi = kAdam ? v[i] : 0.0f;
    split_bytes_one<kAdam>(sa, ss, f, first, hi[i], extra[i], g[i], mi, vi);
    m[i] = mi;
    if (kAdam) v[i] = vi;
  }
}

// Launches the byte/halfword-field kernel when the format allows it; false otherwise.
template <bool kAdam>
bool launch_split_bytes(const native::TorchAdamScalars& sa, const native::TorchSgdScalars& ss,
                        const native::SplitFormat& f, long step, std::uint16_t* hi,
                        std::uint32_t* extra, const float* g, float* m, float* v, std::size_t n,
                        cudaStream_t stream) {
  if (f.sr || (f.k != 8 && f.k != 16)) return false;
  const auto a = [](const void* x, unsigned mask) {
    return x == nullptr || (reinterpret_cast<std::uintptr_t>(x) & mask) == 0;
  };
  const bool vec = a(hi, 7) && a(extra, f.k == 8 ? 3 : 7) && a(g, 15) && a(m, 15) && a(v, 15);
  const unsigned grid = grid_for(n, 4);
  if (f.k == 8) {
    k_split_bytes<kAdam, std::uint8_t><<<grid, kThreads, 0, stream>>>(
        sa, ss, f, step == 1, vec, hi, reinterpret_cast<std::uint8_t*>(extra), g, m, v, n);
  } else {
    k_split_bytes<kAdam, std::uint16_t><<<grid, kThreads, 0, stream>>>(
        sa, ss, f, step == 1, vec, hi, reinterpret_cast<std::uint16_t*>(extra), g, m, v, n);
  }
  return true;
}

}  // namespace

void split_adam_step(const optim::AdamHyper& h, bool decoupled, long step, std::uint64_t seed,
                     const native::SplitFormat& f, std::uint16_t* hi, std::uint32_t* extra,
                     const float* g, float* m, float* v, std::size_t n, CUstream_st* stream) {
  if (n == 0) return;
  const native::TorchAdamScalars sa = optim::torch_adam_scalars(h, step, decoupled);
  if (!launch_split_bytes<true>(sa, native::TorchSgdScalars{}, f, step, hi, extra, g, m, v, n,
                                stream)) {
    k_split<true><<<blocks_for((n + 31) / 32, kThreads / 32), kThreads, 0, stream>>>(
        sa, native::TorchSgdScalars{}, f, static_cast<std::uint64_t>(step), seed, hi, extra, g, m,
        v, n);
  }
  cuda_check_launch("split_adam_step");
}

void split_sgd_step(const optim::SgdHyper& h, long step, std::uint64_t seed,
                    const native::SplitFormat& f, std::uint16_t* hi, std::uint32_t* extra,
                    const float* g, float* buf, std::size_t n, CUstream_st* stream) {
  if (n == 0) return;
  const native::TorchSgdScalars ss = optim::torch_sgd_scalars(h);
  if (!launch_split_bytes<false>(native::TorchAdamScalars{}, ss, f, step, hi, extra, g, buf,
                                 nullptr, n, stream)) {
    k_split<false><<<blocks_for((n + 31) / 32, kThreads / 32), kThreads, 0, stream>>>(
        native::TorchAdamScalars{}, ss, f, static_cast<std::uint64_t>(step), seed, hi, extra, g,
        buf, nullptr, n);
  }
  cuda_check_launch("split_sgd_step");
}

}  // namespace exmy::gpu
