// torch.optim.Adam/AdamW/SGD on bf16/fp16 parameters (docs/SEMANTICS.md 9.1-9.3). PyTorch keeps
// the gradient and the states in the parameter's dtype (zeros_like(param)), so every tensor here
// is 16-bit codes; each element is decoded exactly to fp32, run through the same per-element
// function as the host reference (whose to_storage rounds every tensor-op result), and encoded
// back (exact: the value is already representable).
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "gpu/common/launch.hpp"
#include "gpu/optim/optim.hpp"
#include "sim/common/error.hpp"

namespace exmy::gpu {
namespace {

using native::Storage;

constexpr int kPerThread = 4;  // one 8-byte ushort4 per tensor per thread

template <Storage ST>
__device__ float decode16(std::uint16_t c) {
  return ST == Storage::bf16 ? native::f32_from_bf16(c) : native::f32_from_f16(c);
}
template <Storage ST>
__device__ std::uint16_t encode16(float x) {
  return ST == Storage::bf16 ? native::bf16_from_f32(x) : native::f16_from_f32(x);
}

// Under torch-cpu, whether element i is in an ATen CPU chunk's scalar tail (SEMANTICS 9.2.2).
// `cpu` is false where no tail changes a bit (every CUDA profile; Adam's tails differ only in
// grad.add(param, alpha=wd), which AdamW and a zero weight decay never run), so those runs skip
// the index arithmetic.
// The kernels are instantiated with and without it (TAIL), so that the runs without tails carry
// no per-element branch (bench_optim_gpu's BM_adamw_16bit, H200, 2026-12-02: 1.08x over 3436d35
// with the branch and the runtime amsgrad/maximize tests, see adam16_one).
struct Tails {
  bool cpu;
  native::TorchCpuTails idx;
  template <bool TAIL>
  __device__ bool at(std::size_t i) const {
    if constexpr (TAIL) return idx.at(i);
    return false;
  }
};

// x: max_exp_avg_sq's code, decoded and written only where AMS (s.amsgrad): without amsgrad the
// fourth software encode per element cost the 16-bit AdamW kernel 14% (bench_optim_gpu, H200,
// 2026-12-01), so the kernel is instantiated for both.
// AMS is s.amsgrad, known at compile time (the launch picks the instantiation).
template <Storage ST, bool AMS>
__device__ void adam16_one(const native::TorchAdamScalars& s, std::uint16_t& p, std::uint16_t g,
                           std::uint16_t& m, std::uint16_t& v, std::uint16_t& x, bool tail) {
  float pf = decode16<ST>(p), mf = decode16<ST>(m), vf = decode16<ST>(v);
  float xf = AMS ? decode16<ST>(x) : 0.0f;
  native::torch_adam_element<AMS ? 1 : 0>(s, ST, pf, decode16<ST>(g), mf, vf, xf, tail);
  p = encode16<ST>(pf);
  m = encode16<ST>(mf);
  v = encode16<ST>(vf);
  if constexpr (AMS) x = encode16<ST>(xf);
}

template <Storage ST>
__device__ void sgd16_one(const native::TorchSgdScalars& s, bool first, std::uint16_t& p,
                          std::uint16_t g, std::uint16_t& b, bool tail) {
  float pf = decode16<ST>(p), bf = decode16<ST>(b);
  native::torch_sgd_element(s, ST, pf, decode16<ST>(g), bf, first, tail);
  p = encode16<ST>(pf);
  b = encode16<ST>(bf);
}

// Grid-stride over groups of four (ushort4 where all pointers are 8-byte aligned), scalar tail.
// vm: max_exp_avg_sq where AMS (s.amsgrad), else null.
template <Storage ST, bool AMS, bool TAIL>
__global__ void __launch_bounds__(kThreads)
    k_adam16(native::TorchAdamScalars s, Tails t, bool vec, std::uint16_t* p,
             const std::uint16_t* g, std::uint16_t* m, std::uint16_t* v, std::uint16_t* vm,
             std::size_t n) {
  const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t n4 = vec ? n / kPerThread : 0;
  for (std::size_t k = tid; k < n4; k += stride) {
    ushort4 P = reinterpret_cast<ushort4*>(p)[k], M = reinterpret_cast<ushort4*>(m)[k];
    ushort4 V = reinterpret_cast<ushort4*>(v)[k];
    ushort4 X = AMS ? reinterpret_cast<ushort4*>(vm)[k] : ushort4{0, 0, 0, 0};
    const ushort4 G = reinterpret_cast<const ushort4*>(g)[k];
    adam16_one<ST, AMS>(s, P.x, G.x, M.x, V.x, X.x, t.template at<TAIL>(k * kPerThread + 0));
    adam16_one<ST, AMS>(s, P.y, G.y, M.y, V.y, X.y, t.template at<TAIL>(k * kPerThread + 1));
    adam16_one<ST, AMS>(s, P.z, G.z, M.z, V.z, X.z, t.template at<TAIL>(k * kPerThread + 2));
    adam16_one<ST, AMS>(s, P.w, G.w, M.w, V.w, X.w, t.template at<TAIL>(k * kPerThread + 3));
    reinterpret_cast<ushort4*>(p)[k] = P;
    reinterpret_cast<ushort4*>(m)[k] = M;
    reinterpret_cast<ushort4*>(v)[k] = V;
    if constexpr (AMS) reinterpret_cast<ushort4*>(vm)[k] = X;
  }
  for (std::size_t i = n4 * kPerThread + tid; i < n; i += stride) {
    std::uint16_t pi = p[i], mi = m[i], vi = v[i], xi = AMS ? vm[i] : 0;
    adam16_one<ST, AMS>(s, pi, g[i], mi, vi, xi, t.template at<TAIL>(i));
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
    if constexpr (AMS) vm[i] = xi;
  }
}

// fused=True: the element's flat index decides one contraction (torch_fused_adam_element).
template <Storage ST>
__global__ void __launch_bounds__(kThreads)
    k_fused_adam16(native::TorchFusedAdamScalars s, std::uint16_t* p, const std::uint16_t* g,
                   std::uint16_t* m, std::uint16_t* v, std::uint16_t* vm, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float pf = decode16<ST>(p[i]), mf = decode16<ST>(m[i]), vf = decode16<ST>(v[i]);
    float xf = vm ? decode16<ST>(vm[i]) : 0.0f;
    native::torch_fused_adam_element(s, ST, pf, decode16<ST>(g[i]), mf, vf, xf, i);
    p[i] = encode16<ST>(pf);
    m[i] = encode16<ST>(mf);
    v[i] = encode16<ST>(vf);
    if (vm) vm[i] = encode16<ST>(xf);
  }
}

template <Storage ST, bool TAIL>
__global__ void __launch_bounds__(kThreads)
    k_sgd16(native::TorchSgdScalars s, Tails t, bool first, bool vec, std::uint16_t* p,
            const std::uint16_t* g, std::uint16_t* buf, std::size_t n) {
  const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t n4 = vec ? n / kPerThread : 0;
  for (std::size_t k = tid; k < n4; k += stride) {
    ushort4 P = reinterpret_cast<ushort4*>(p)[k], B = reinterpret_cast<ushort4*>(buf)[k];
    const ushort4 G = reinterpret_cast<const ushort4*>(g)[k];
    sgd16_one<ST>(s, first, P.x, G.x, B.x, t.template at<TAIL>(k * kPerThread + 0));
    sgd16_one<ST>(s, first, P.y, G.y, B.y, t.template at<TAIL>(k * kPerThread + 1));
    sgd16_one<ST>(s, first, P.z, G.z, B.z, t.template at<TAIL>(k * kPerThread + 2));
    sgd16_one<ST>(s, first, P.w, G.w, B.w, t.template at<TAIL>(k * kPerThread + 3));
    reinterpret_cast<ushort4*>(p)[k] = P;
    reinterpret_cast<ushort4*>(buf)[k] = B;
  }
  for (std::size_t i = n4 * kPerThread + tid; i < n; i += stride) {
    std::uint16_t pi = p[i], bi = buf[i];
    sgd16_one<ST>(s, first, pi, g[i], bi, t.template at<TAIL>(i));
    p[i] = pi;
    buf[i] = bi;
  }
}

void check_storage16(Storage st, const char* what) {
  if (st != Storage::bf16 && st != Storage::f16) {
    throw InputError(std::string(what) + ": storage must be bf16 or fp16 for 16-bit parameters");
  }
}

}  // namespace

void adam_step(const optim::AdamHyper& h, bool decoupled, bool fused, Storage st, long step,
               std::uint16_t* p, const std::uint16_t* g, std::uint16_t* m, std::uint16_t* v,
               std::size_t n, CUstream_st* stream, std::uint16_t* vmax) {
  check_storage16(st, "adam_step");
  if (n == 0) return;
  if (h.amsgrad && vmax == nullptr) throw InputError("adam_step: amsgrad needs max_exp_avg_sq");
  std::uint16_t* vm = h.amsgrad ? vmax : nullptr;
  if (fused) {
    const native::TorchFusedAdamScalars s = optim::torch_fused_adam_scalars(h, step, decoupled, n);
    if (st == Storage::bf16) {
      k_fused_adam16<Storage::bf16><<<grid_for(n, 4), kThreads, 0, stream>>>(s, p, g, m, v, vm, n);
    } else {
      k_fused_adam16<Storage::f16><<<grid_for(n, 4), kThreads, 0, stream>>>(s, p, g, m, v, vm, n);
    }
    cuda_check_launch("adam_step (16-bit, fused)");
    return;
  }
  const native::TorchAdamScalars s = optim::torch_adam_scalars(h, step, decoupled);
  const Tails t{h.kernels == native::TorchKernels::cpu && s.has_wd && !s.decoupled,
                native::torch_cpu_tails(n, 2, h.cpu)};
  const bool vec = aligned8(p, g, m, v) && (vm == nullptr || aligned8(vm));
  const dim3 grid = grid_for(n, kPerThread);
  // One instantiation per (storage, amsgrad, tails).
  auto launch = [&](auto st_c, auto ams_c, auto tail_c) {
    k_adam16<decltype(st_c)::value, decltype(ams_c)::value, decltype(tail_c)::value>
        <<<grid, kThreads, 0, stream>>>(s, t, vec, p, g, m, v, vm, n);
  };
  auto by_tail = [&](auto st_c, auto ams_c) {
    if (t.cpu) {
      launch(st_c, ams_c, std::true_type{});
    } else {
      launch(st_c, ams_c, std::false_type{});
    }
  };
  auto by_ams = [&](auto st_c) {
    if (vm != nullptr) {
      by_tail(st_c, std::true_type{});
    } else {
      by_tail(st_c, std::false_type{});
    }
  };
  if (st == Storage::bf16) {
    by_ams(std::integral_constant<Storage, Storage::bf16>{});
  } else {
    by_ams(std::integral_constant<Storage, Storage::f16>{});
  }
  cuda_check_launch("adam_step (16-bit)");
}

void sgd_step(const optim::SgdHyper& h, Storage st, long step, std::uint16_t* p,
              const std::uint16_t* g, std::uint16_t* buf, std::size_t n, CUstream_st* stream) {
  check_storage16(st, "sgd_step");
  if (n == 0) return;
  const native::TorchSgdScalars s = optim::torch_sgd_scalars(h);
  const Tails t{h.kernels == native::TorchKernels::cpu, native::torch_cpu_tails(n, 2, h.cpu)};
  const bool vec = aligned8(p, g, buf);
  const dim3 grid = grid_for(n, kPerThread);
  auto launch = [&](auto st_c, auto tail_c) {
    k_sgd16<decltype(st_c)::value, decltype(tail_c)::value>
        <<<grid, kThreads, 0, stream>>>(s, t, step == 1, vec, p, g, buf, n);
  };
  auto by_tail = [&](auto st_c) {
    if (t.cpu) {
      launch(st_c, std::true_type{});
    } else {
      launch(st_c, std::false_type{});
    }
  };
  if (st == Storage::bf16) {
    by_tail(std::integral_constant<Storage, Storage::bf16>{});
  } else {
    by_tail(std::integral_constant<Storage, Storage::f16>{});
  }
  cuda_check_launch("sgd_step (16-bit)");
}

}  // namespace exmy::gpu
