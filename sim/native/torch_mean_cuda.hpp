// torch.Tensor.mean() of a contiguous 1-d float32 CUDA tensor, bit for bit with PyTorch 2.11 as
// it runs on an H100/H200 (docs/SEMANTICS.md 7.14.4): what bitsandbytes' double quantization takes
// as its offset (`offset = absmax.mean()`). Host only: a model of the launch, not a kernel.
//
// mean_out on CUDA calls mean_stub -> mean_kernel_impl<float> (ReduceMomentKernel.cu):
// gpu_reduce_kernel<float, float, vt0 = 4, input_vec_size = 4> with MeanOps{factor}, where
//   factor = (float)num_outputs / numel = RN32(1 / RN32(n))     (host float division)
//   reduce = combine = a + b (fp32 FADD, round to nearest even, no FTZ), project = a * factor
// so the mean is RN32(S * factor), a multiplication by a rounded reciprocal, not a division by n.
// S is the sum in the order setReduceConfig and ReduceOp (Reduce.cuh, as of torch 2.11) fix for
// one output that reduces the fastest dimension (num_outputs = 1, so block.y = 1):
//   vectorize_input = n >= 128 (dim0 >= 128); dim0 = vectorize ? n / 4 : n
//   block.x = bw = dim0 < 512 ? last_pow2(dim0) : 512          (MAX_NUM_THREADS 512)
//   values_per_thread vpt = ceil(n / bw); vpt >= 16 splits across warps (block.y = 1: a no-op
//   that enables the next test); global (cross-CTA) reduction when vpt >= 256 (then bw = 512):
//   ctas = max(min(SMs * (maxThreadsPerSM / bw), ceil(vpt / 16)), ceil(vpt / 256)).
//   thread (cta c, lane t), 4 accumulators v[0..3] = 0:
//     vectorized: i = t + c*bw; while 4i + 3 < n: v[k] += x[4i + k] (k = 0..3); i += bw*ctas;
//                 then, CTA 0 only, lane t adds x[n - n%4 + t] to v[0] when that index < n
//     otherwise:  i = t; while i + 3*bw < n: v[k] += x[i + k*bw]; i += 4*bw;
//                 then for k = 0..3 while i < n: v[k] += x[i]; i += bw
//     r = ((v0 + v1) + v2) + v3   (a lane whose first index is >= n keeps r = 0)
//   block_x_reduce: for off = bw/2 down to 32: r[t] += r[t + off] (t < off, shared memory);
//     then the intra-warp shfl_down with **decreasing** offsets off = min(bw, 32)/2, ..., 2, 1
//     (r[t] += r[t + off]: the pairwise tree (t, t + 16), (t, t + 8), ...; torch's CUDA build
//     since "Intra-warp reduction, fix CUDA to have offset decreasing"; ROCm and fbcode builds
//     keep the increasing offsets 1, 2, 4, ..., a named switch here): lane 0's sum
//   global: lane t of the last CTA folds 0 + buf[t] + buf[t + bw] + ... over the CTAs' sums,
//     then the same block_x_reduce.
// The device enters through TorchCudaDevice (the only properties setReduceConfig reads:
// multiProcessorCount and maxThreadsPerMultiProcessor, plus the warp size); they matter only
// when ceil(vpt / 16) > SMs * maxThreadsPerSM / 512, i.e. n > 3,735,552 on a 114-SM H100 PCIe,
// n > 4,325,376 on a 132-SM H100 SXM / H200.
// Assumes the tensor's data pointer is 16-byte aligned (a fresh CUDA allocation, as bitsandbytes'
// absmax is); n < 2^31 (32-bit indexing).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/native/fp32_ops.hpp"

namespace exmy::native {

struct TorchMeanLaunch {
  bool vectorized = false;
  int block_width = 1;  // bw
  int ctas = 1;         // CTAs per output (> 1: global reduction)
};

inline constexpr int kTorchMeanDefaultSms = 132;  // H100 SXM, H200

// The device properties torch's setReduceConfig and block_x_reduce depend on.
struct TorchCudaDevice {
  int sms = kTorchMeanDefaultSms;  // cudaDeviceProp::multiProcessorCount
  int max_threads_per_sm = 2048;   // cudaDeviceProp::maxThreadsPerMultiProcessor (sm_80 .. sm_90)
  int warp_size = 32;              // at::cuda::warp_size()
  bool shuffle_decreasing = true;  // CUDA build; false: the ROCm / fbcode increasing offsets
};

inline int torch_last_pow2(std::int64_t n) {  // Reduce.cuh last_pow2 (floor power of two, >= 1)
  int p = 1;
  while (static_cast<std::int64_t>(p) * 2 <= n) p *= 2;
  return p;
}

inline TorchMeanLaunch torch_cuda_mean_launch(std::size_t n, const TorchCudaDevice& dev) {
  TorchMeanLaunch l;
  const auto ni = static_cast<std::int64_t>(n);
  l.vectorized = ni >= 128;
  const std::int64_t dim0 = l.vectorized ? ni / 4 : ni;
  l.block_width = dim0 < 512 ? torch_last_pow2(dim0) : 512;
  const std::int64_t vpt = (ni + l.block_width - 1) / l.block_width;
  if (vpt >= 16 && vpt >= 256) {
    const std::int64_t target =
        static_cast<std::int64_t>(dev.sms) * (dev.max_threads_per_sm / l.block_width);
    const std::int64_t c1 = target, c2 = (vpt + 15) / 16, c3 = (vpt + 255) / 256;
    l.ctas = static_cast<int>(std::max(std::min(c1, c2), c3));
  }
  return l;
}
inline TorchMeanLaunch torch_cuda_mean_launch(std::size_t n, int sms = kTorchMeanDefaultSms) {
  TorchCudaDevice d;
  d.sms = sms;
  return torch_cuda_mean_launch(n, d);
}

namespace detail {
// block_x_reduce over r[0 .. bw): lane 0's value.
inline float torch_block_x_reduce(std::vector<float> r, const TorchCudaDevice& dev) {
  int dim_x = static_cast<int>(r.size());
  if (dim_x > dev.warp_size) {
    for (int off = dim_x / 2; off >= dev.warp_size; off >>= 1) {
      for (int t = 0; t < off; ++t) r[t] = rn_add(r[t], r[t + off]);
    }
    dim_x = dev.warp_size;
  }
  // shfl_down: all lanes at once (each reads the values before this step's adds); lane 0 only
  // depends on lanes t + off < dim_x.
  const auto step = [&](int off) {
    const std::vector<float> before(r.begin(), r.begin() + dim_x);
    for (int t = 0; t + off < dim_x; ++t) r[t] = rn_add(before[t], before[t + off]);
  };
  if (dev.shuffle_decreasing) {
    for (int off = dim_x >> 1; off > 0; off >>= 1) step(off);
  } else {
    for (int off = 1; off < dim_x; off <<= 1) step(off);
  }
  return r[0];
}
}  // namespace detail

// The sum S of x[0 .. n) in torch's order (the mean is RN32(S * RN32(1 / RN32(n)))).
inline float torch_cuda_mean_sum(const float* x, std::size_t n, const TorchCudaDevice& dev) {
  const TorchMeanLaunch l = torch_cuda_mean_launch(n, dev);
  const std::int64_t ni = static_cast<std::int64_t>(n), bw = l.block_width;
  const std::int64_t stride = bw * l.ctas;
  std::vector<float> cta_sums(static_cast<std::size_t>(l.ctas));
  std::vector<float> r(static_cast<std::size_t>(bw));
  for (int c = 0; c < l.ctas; ++c) {
    for (std::int64_t t = 0; t < bw; ++t) {
      float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const std::int64_t first = t + c * bw;
      if (first >= ni) {
        r[t] = 0.0f;
        continue;
      }
      if (l.vectorized) {
        for (std::int64_t i = first; i * 4 + 3 < ni; i += stride) {
          for (int k = 0; k < 4; ++k) v[k] = rn_add(v[k], x[i * 4 + k]);
        }
        if (c == 0) {
          const std::int64_t j = ni - ni % 4 + t;
          if (j < ni) v[0] = rn_add(v[0], x[j]);
        }
      } else {
        std::int64_t i = t;
        for (; i + 3 * bw < ni; i += 4 * bw) {
          for (int k = 0; k < 4; ++k) v[k] = rn_add(v[k], x[i + k * bw]);
        }
        for (int k = 0; k < 4 && i < ni; ++k, i += bw) v[k] = rn_add(v[k], x[i]);
      }
      r[t] = rn_add(rn_add(rn_add(v[0], v[1]), v[2]), v[3]);
    }
    cta_sums[c] = detail::torch_block_x_reduce(r, dev);
  }
  if (l.ctas == 1) return cta_sums[0];
  for (std::int64_t t = 0; t < bw; ++t) {
    float v = 0.0f;
    for (std::int64_t i = t; i < l.ctas; i += bw) v = rn_add(v, cta_sums[i]);
    r[t] = v;
  }
  return detail::torch_block_x_reduce(r, dev);
}

inline float torch_cuda_mean_sum(const float* x, std::size_t n, int sms = kTorchMeanDefaultSms) {
  TorchCudaDevice d;
  d.sms = sms;
  return torch_cuda_mean_sum(x, n, d);
}

// torch.mean of x[0 .. n) (n >= 1) on CUDA. A NaN result is the GPU's 0x7FFFFFFF.
inline float torch_cuda_mean(const float* x, std::size_t n, const TorchCudaDevice& dev) {
  const float factor = rn_div(1.0f, static_cast<float>(n));
  const float m = rn_mul(torch_cuda_mean_sum(x, n, dev), factor);
  return m != m ? f32_from_bits(0x7FFFFFFFu) : m;
}
inline float torch_cuda_mean(const float* x, std::size_t n, int sms = kTorchMeanDefaultSms) {
  TorchCudaDevice d;
  d.sms = sms;
  return torch_cuda_mean(x, n, d);
}

}  // namespace exmy::native
