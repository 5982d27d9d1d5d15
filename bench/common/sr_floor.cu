// The floor kernels of bench/common/sr_floor.hpp: Philox words as the sr casts draw them (the
// round-1/2 prefix, keys from the launch arguments, as sr_span_kernel in
// gpu/cast/cast_span_paths.cu), 16-byte loads, a resident grid-stride loop with four vectors in
// flight per thread.
#include <cuda_runtime.h>

#include <string>

#include "bench/common/sr_floor.hpp"
#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "sim/common/error.hpp"
#include "sim/native/philox.hpp"

namespace exmy::gpu {
namespace {

constexpr int kUnroll = 4;  // vectors per thread per iteration: loads issued before any use

// Elems = elements per 16-byte vector (4 fp32, 8 bf16 / fp16); Elems / 4 Philox blocks each.
template <int Elems, SrFloor What>
__global__ void __launch_bounds__(kThreads)
    sr_floor_kernel(const uint4* in, std::size_t nvec, std::uint8_t* out,
                    const native::PhiloxKeys keys) {
  constexpr int kBlocks = Elems / 4;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kThreads;
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x;
  std::uint32_t prefix_hi = 0;
  native::PhiloxPrefix prefix = native::philox_prefix(keys, 0, 0);
  std::uint32_t fold = 0;
  for (std::size_t base = tid; base < nvec; base += stride * kUnroll) {
    uint4 x[kUnroll];
    if constexpr (What != SrFloor::philox_only) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const std::size_t v = base + u * stride;
        if (v < nvec) x[u] = __ldg(in + v);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::size_t v = base + u * stride;
      if (v >= nvec) break;
      std::uint32_t w[Elems] = {};
      if constexpr (What != SrFloor::io_only) {
#pragma unroll
        for (int b = 0; b < kBlocks; ++b) {
          const std::uint64_t block = v * kBlocks + b;
          const auto hi = static_cast<std::uint32_t>(block >> 32);
          if (hi != prefix_hi) {  // once per 2^32 blocks
            prefix = native::philox_prefix(keys, 0, hi);
            prefix_hi = hi;
          }
          const native::Philox4 p =
              native::philox_block(keys, prefix, static_cast<std::uint32_t>(block));
#pragma unroll
          for (int j = 0; j < 4; ++j) w[4 * b + j] = p.w[j];
        }
      }
      if constexpr (What == SrFloor::philox_only) {
#pragma unroll
        for (int j = 0; j < Elems; ++j) fold ^= w[j];
      } else {
        const std::uint32_t lanes[4] = {x[u].x, x[u].y, x[u].z, x[u].w};
        if constexpr (Elems == 4) {
          std::uint32_t codes = 0;
#pragma unroll
          for (int j = 0; j < 4; ++j) codes |= ((lanes[j] ^ w[j]) >> 24) << (8 * j);
          reinterpret_cast<std::uint32_t*>(out)[v] = codes;
        } else {
          std::uint32_t codes[2] = {0, 0};
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const std::uint32_t h = (j & 1) ? lanes[j / 2] >> 16 : lanes[j / 2] & 0xFFFFu;
            codes[j / 4] |= (((h << 16) ^ w[j]) >> 24) << (8 * (j % 4));
          }
          reinterpret_cast<uint2*>(out)[v] = make_uint2(codes[0], codes[1]);
        }
      }
    }
  }
  if constexpr (What == SrFloor::philox_only) {
    if (tid < nvec) reinterpret_cast<std::uint32_t*>(out)[tid] = fold;  // 4 bytes <= one vector's
  }
}

template <int Elems, SrFloor What>
void launch(const void* in, std::size_t nvec, std::uint8_t* out, std::uint64_t seed,
            cudaStream_t s) {
  constexpr auto k = sr_floor_kernel<Elems, What>;
  k<<<resident_grid<k>(0, blocks_for(nvec, kThreads)), kThreads, 0, s>>>(
      static_cast<const uint4*>(in), nvec, out, native::philox_keys(seed));
  cuda_check_launch("sr_floor");
}

template <int Elems>
void launch_for(SrFloor what, const void* in, std::size_t nvec, std::uint8_t* out,
                std::uint64_t seed, cudaStream_t s) {
  switch (what) {
    case SrFloor::philox_only:
      return launch<Elems, SrFloor::philox_only>(in, nvec, out, seed, s);
    case SrFloor::philox_io:
      return launch<Elems, SrFloor::philox_io>(in, nvec, out, seed, s);
    case SrFloor::io_only:
      return launch<Elems, SrFloor::io_only>(in, nvec, out, seed, s);
  }
}

}  // namespace

void sr_floor(const void* in, CastInput in_type, std::size_t n, std::uint8_t* out,
              std::uint64_t seed, SrFloor what, CUstream_st* stream) {
  const std::size_t per_vec = 16 / input_bytes(in_type);
  if (n % per_vec != 0) {
    throw InputError("sr_floor: n = " + std::to_string(n) + " is not a multiple of " +
                     std::to_string(per_vec) + " (one 16-byte input vector)");
  }
  if (per_vec == 4) {
    launch_for<4>(what, in, n / 4, out, seed, as_stream(stream));
  } else {
    launch_for<8>(what, in, n / 8, out, seed, as_stream(stream));
  }
}

}  // namespace exmy::gpu
