// GPU optimizer-step throughput (Google Benchmark, CUDA-event manual time). Effective bandwidth
// counts the bytes each step must move per parameter (torch fused AdamW: 28 B = p, m, v read and
// written + g read). The anchor, torch.optim.AdamW(fused=True) on the same device and size, is
// timed by a separate torch script in the same device session (bench/results/*-optim.md).
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "bench/common/gpu_bench.hpp"
#include "gpu/optim/optim.hpp"
#include "sim/optim/optim.hpp"

namespace {

using namespace exmy;

void check(cudaError_t e) {
  exmy::bench::cuda_ok(e, "CUDA");
}

struct Buf {
  void* p = nullptr;
  explicit Buf(std::size_t bytes) {
    check(cudaMalloc(&p, bytes));
    check(cudaMemset(p, 0, bytes));
  }
  ~Buf() { cudaFree(p); }
  template <class T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

// Parameters near 1, gradients ~1e-3, so no step meets inf/NaN.
void fill(float* d, std::size_t n, float base, float scale) {
  std::vector<float> h(n);
  std::uint32_t x = 12345;
  for (auto& v : h) {
    x = x * 1664525u + 1013904223u;
    v = base + scale * (static_cast<float>(x >> 8) / 16777216.0f - 0.5f);
  }
  check(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
}

// One step per iteration (bench/common/gpu_bench.hpp); step(t) gets a fresh step number (the
// warm-up is step 1, which also uploads the codebook).
template <class F>
void timed(benchmark::State& state, double bytes_per_param, std::size_t n, F step) {
  exmy::bench::time_cuda(state, 1, step);
  state.counters["TB/s"] = benchmark::Counter(bytes_per_param * n * 1e-12,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.counters["B/param"] = bytes_per_param;
}

std::size_t size_of(const benchmark::State& s) {
  return static_cast<std::size_t>(s.range(0));
}

void BM_adamw_torch_default(benchmark::State& state) {
  const std::size_t n = size_of(state);
  Buf p(n * 4), g(n * 4), m(n * 4), v(n * 4);
  fill(p.as<float>(), n, 1.0f, 0.5f);
  fill(g.as<float>(), n, 0.0f, 2e-3f);
  optim::AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  timed(state, 28, n, [&](long t) {
    gpu::adam_step(h, true, false, t, p.as<float>(), g.as<float>(), m.as<float>(), v.as<float>(),
                   n);
  });
}

void BM_adamw_torch_fused_variant(benchmark::State& state) {
  const std::size_t n = size_of(state);
  Buf p(n * 4), g(n * 4), m(n * 4), v(n * 4);
  fill(p.as<float>(), n, 1.0f, 0.5f);
  fill(g.as<float>(), n, 0.0f, 2e-3f);
  optim::AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  timed(state, 28, n, [&](long t) {
    gpu::adam_step(h, true, true, t, p.as<float>(), g.as<float>(), m.as<float>(), v.as<float>(), n);
  });
}

// bf16/fp16 parameters: p, g, m, v all 16-bit (PyTorch's dtype rule), 14 B per parameter.
void BM_adamw_16bit(benchmark::State& state) {
  const std::size_t n = size_of(state);
  const auto st = state.range(1) == 0 ? native::Storage::bf16 : native::Storage::f16;
  Buf p(n * 2), g(n * 2), m(n * 2), v(n * 2);
  // 0x3C00 is 1.0 in fp16, 0x3F80 in bf16; gradients: the code of ~1e-3 with varied low bits.
  check(cudaMemset(p.p, st == native::Storage::bf16 ? 0x3F : 0x3C, n * 2));
  std::vector<std::uint16_t> hg(n);
  for (std::size_t i = 0; i < n; ++i) {
    hg[i] =
        static_cast<std::uint16_t>((st == native::Storage::bf16 ? 0x3A80u : 0x1400u) + (i & 63));
  }
  check(cudaMemcpy(g.p, hg.data(), n * 2, cudaMemcpyHostToDevice));
  optim::AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  timed(state, 14, n, [&](long t) {
    gpu::adam_step(h, true, false, st, t, p.as<std::uint16_t>(), g.as<std::uint16_t>(),
                   m.as<std::uint16_t>(), v.as<std::uint16_t>(), n);
  });
}

// range(2) = 1: the kernel under --compat bnb-cuda (bitsandbytes' fast-math arithmetic: FTZ,
// FMA, MUFU).
// The 8-bit optimizer's device state over the benchmark's buffers.
gpu::Bnb8DeviceState state_of(int block, const Buf& q1, const Buf& q2, const Buf& a1,
                              const Buf& a2) {
  gpu::Bnb8DeviceState st;
  st.block = block;
  st.q1 = q1.as<std::uint8_t>();
  st.q2 = q2.as<std::uint8_t>();
  st.absmax1 = a1.as<float>();
  st.absmax2 = a2.as<float>();
  return st;
}

void BM_adamw8bit(benchmark::State& state) {
  const std::size_t n = size_of(state);
  const int block = static_cast<int>(state.range(1));
  const std::size_t blocks = (n + block - 1) / block;
  Buf p(n * 4), g(n * 4), q1(n), q2(n), a1(blocks * 4), a2(blocks * 4);
  fill(p.as<float>(), n, 1.0f, 0.5f);
  fill(g.as<float>(), n, 0.0f, 2e-3f);
  const gpu::Bnb8DeviceState st = state_of(block, q1, q2, a1, a2);
  optim::AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  if (state.range(2) == 1) h.bnb = native::BnbKernels::cuda_sm90;
  // p r/w 8 + g 4 + two codes r/w 4 + absmax 2 * 8 / block
  timed(state, 16.0 + 16.0 / block, n, [&](long t) {
    gpu::bnb_adam8_step(optim::bnb8_scalars(h, t, false), p.as<float>(), g.as<float>(), st, n);
  });
}

// bitsandbytes' one-state 8-bit optimizers (range(1): 0 RMSprop8bit, 1 Adagrad8bit, 2 Lion8bit)
// under --compat bnb-cuda, fp32 parameters, block 256: p r/w 8 + g 4 + one code r/w 2 + absmax.
void BM_bnb1_8bit(benchmark::State& state) {
  const std::size_t n = size_of(state);
  const int block = 256;
  const std::size_t blocks = (n + block - 1) / block;
  Buf p(n * 4), g(n * 4), q1(n), q2(n), a1(blocks * 4), a2(blocks * 4);
  fill(p.as<float>(), n, 1.0f, 0.5f);
  fill(g.as<float>(), n, 0.0f, 2e-3f);
  const gpu::Bnb8DeviceState st = state_of(block, q1, q2, a1, a2);
  const native::Bnb1Op op = state.range(1) == 0   ? native::Bnb1Op::rmsprop
                            : state.range(1) == 1 ? native::Bnb1Op::adagrad
                                                  : native::Bnb1Op::lion;
  optim::AdamHyper h{1e-3, 0.9, 0.99, 1e-8, 0.01};
  h.bnb = native::BnbKernels::cuda_sm90;
  timed(state, 14.0 + 8.0 / block, n, [&](long t) {
    gpu::bnb1_step(optim::bnb8_scalars(h, t, false), op, p.as<float>(), g.as<float>(), st, n);
  });
}

// bitsandbytes' AdEMAMix8bit under --compat bnb-cuda, fp32 parameters, block 256: p r/w 8 + g 4
// + three codes r/w 6 (m1, m2, nu) + absmax 3 * 8 / block.
void BM_ademamix8bit(benchmark::State& state) {
  const std::size_t n = size_of(state);
  const int block = 256;
  const std::size_t blocks = (n + block - 1) / block;
  Buf p(n * 4), g(n * 4), q1(2 * n), q2(n), a1(2 * blocks * 4), a2(blocks * 4);
  fill(p.as<float>(), n, 1.0f, 0.5f);
  fill(g.as<float>(), n, 0.0f, 2e-3f);
  const gpu::Bnb8DeviceState st = state_of(block, q1, q2, a1, a2);
  optim::AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  h.bnb = native::BnbKernels::cuda_sm90;
  timed(state, 18.0 + 24.0 / block, n, [&](long t) {
    native::Bnb8Scalars sc = optim::bnb8_scalars(h, t, false);
    sc.beta3 = 0.9999f;
    sc.alpha = 5.0f;
    sc.one_minus_beta3 = 1.0f - 0.9999f;
    gpu::bnb_ademamix_step(sc, p.as<float>(), g.as<float>(), st, n);
  });
}

// bf16 parameters and gradients (bitsandbytes keeps both in the parameter dtype) under
// --compat bnb-cuda: the vectorised 8-bit kernel on 8-byte loads of the 16-bit parameters.
void BM_adamw8bit_bf16(benchmark::State& state) {
  const std::size_t n = size_of(state);
  const int block = 256;
  const std::size_t blocks = (n + block - 1) / block;
  Buf p(n * 2), g(n * 2), q1(n), q2(n), a1(blocks * 4), a2(blocks * 4);
  check(cudaMemset(p.p, 0x3F, n * 2));  // bf16 0x3F3F ~ 0.75
  std::vector<std::uint16_t> hg(n);
  for (std::size_t i = 0; i < n; ++i) hg[i] = static_cast<std::uint16_t>(0x3A80u + (i & 63));
  check(cudaMemcpy(g.p, hg.data(), n * 2, cudaMemcpyHostToDevice));
  const gpu::Bnb8DeviceState st = state_of(block, q1, q2, a1, a2);
  optim::AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  h.bnb = native::BnbKernels::cuda_sm90;
  // p r/w 4 + g 2 + two codes r/w 4 + absmax 2 * 8 / block
  timed(state, 10.0 + 16.0 / block, n, [&](long t) {
    gpu::bnb_adam8_step(optim::bnb8_scalars(h, t, false), native::Storage::bf16,
                        p.as<std::uint16_t>(), g.as<std::uint16_t>(), st, n);
  });
}

void BM_stableadamw(benchmark::State& state) {
  const std::size_t n = size_of(state);
  Buf p(n * 4), g(n * 4), v(n * 4), u(n * 4);
  fill(p.as<float>(), n, 1.0f, 0.5f);
  fill(g.as<float>(), n, 0.0f, 2e-3f);
  optim::AdamHyper h{1e-3, 0.9, 0.99, 1e-6, 0.01};
  // pass 1: g r, v r/w, u r/w (20 B); pass 2: p r/w, v r, u r (16 B)
  timed(state, 36, n, [&](long t) {
    gpu::stable_adamw_step(h, t, p.as<float>(), g.as<float>(), v.as<float>(), u.as<float>(), n);
  });
}

void BM_split_adamw(benchmark::State& state) {
  const std::size_t n = size_of(state);
  native::SplitFormat f{native::Storage::bf16, static_cast<int>(state.range(1)), false};
  const int w = native::split_field_bits(f);
  const std::size_t words = native::split_words(n, w);
  Buf hi(n * 2), ex(words * 4 + 4), g(n * 4), m(n * 4), v(n * 4);
  check(cudaMemset(hi.p, 0x3F, n * 2));  // bf16 0x3F3F ~ 0.75
  fill(g.as<float>(), n, 0.0f, 2e-3f);
  optim::AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  // hi r/w 4 + extra r/w 2w/8 + g 4 + m, v r/w 16
  timed(state, 24.0 + w / 4.0, n, [&](long t) {
    gpu::split_adam_step(h, true, t, 0, f, hi.as<std::uint16_t>(), ex.as<std::uint32_t>(),
                         g.as<float>(), m.as<float>(), v.as<float>(), n);
  });
}

constexpr std::int64_t kN = std::int64_t{1} << 26;  // 64M parameters

BENCHMARK(BM_adamw_torch_default)->Arg(kN)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_adamw_torch_fused_variant)->Arg(kN)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_adamw_16bit)
    ->Args({kN, 0})
    ->Args({kN, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_adamw8bit)
    ->Args({kN, 256, 0})
    ->Args({kN, 2048, 0})
    ->Args({kN, 256, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_bnb1_8bit)
    ->Args({kN, 0})
    ->Args({kN, 1})
    ->Args({kN, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ademamix8bit)->Arg(kN)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_adamw8bit_bf16)->Arg(kN)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_stableadamw)->Arg(kN)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_split_adamw)
    ->Args({kN, 8})
    ->Args({kN, 16})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
