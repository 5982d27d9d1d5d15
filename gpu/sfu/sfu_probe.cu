// The SFU probe (gpu/sfu/sfu_probe.hpp): each instruction is issued through inline PTX so that
// nvcc emits exactly that instruction (one MUFU operation on sm_90; checked with cuobjdump).
#include <cuda_runtime.h>

#include <memory>

#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/sfu/sfu_probe.hpp"
#include "sim/native/libdevice_powf.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/sfu_digest.hpp"
#include "sim/native/sfu_sm90.hpp"

namespace exmy::gpu {

namespace {

enum Op : int { kRcp, kSqrt, kRsqrt, kEx2, kLg2, kOps };
const char* const kOpNames[kOps] = {"rcp.approx.ftz.f32", "sqrt.approx.ftz.f32",
                                    "rsqrt.approx.ftz.f32", "ex2.approx.ftz.f32",
                                    "lg2.approx.ftz.f32"};

__device__ __forceinline__ std::uint32_t hw(int op, std::uint32_t xb) {
  const float x = __uint_as_float(xb);
  float r;
  switch (op) {
    case kRcp:
      asm volatile("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
      break;
    case kSqrt:
      asm volatile("sqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
      break;
    case kRsqrt:
      asm volatile("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
      break;
    case kEx2:
      asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
      break;
    default:
      asm volatile("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
      break;
  }
  return __float_as_uint(r);
}

__device__ __forceinline__ std::uint32_t model(int op, const native::SfuTables& t,
                                               std::uint32_t x) {
  switch (op) {
    case kRcp:
      return native::sfu_rcp(t, x);
    case kSqrt:
      return native::sfu_sqrt(t, x);
    case kRsqrt:
      return native::sfu_rsqrt(t, x);
    case kEx2:
      return native::sfu_ex2(t, x);
    default:
      return native::sfu_lg2(t, x);
  }
}

__global__ void measure_kernel(int op, const std::uint32_t* inputs, std::uint32_t n,
                               std::uint32_t* out) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    out[i] = hw(op, inputs[i]);
  }
}

struct Tally {
  unsigned long long mismatches;
  unsigned long long digest;
  std::uint32_t examples[24];
};

// One input of a verification pass: its bits (for the digest and the examples), the hardware's
// result and the model's.
struct Outcome {
  std::uint32_t x, hw, model;
};

// Random operand bits for input i of a random pass: words 0 and 1 of Philox4x32-10 block i
// (seed kProbeSeed, the pass's stream), the project's counter-based generator (SEMANTICS 3).
constexpr std::uint64_t kProbeSeed = 0x5346550000000000ull;  // "SFU"
constexpr std::uint32_t kPowfStream = 0x53460001u, kDivStream = 0x53460002u;
__device__ __forceinline__ std::uint64_t random_bits(std::uint64_t i, std::uint32_t stream) {
  const native::Philox4 b = native::philox_block(kProbeSeed, stream, i);
  return (static_cast<std::uint64_t>(b.w[1]) << 32) | b.w[0];
}

// A table instruction on input bits i.
struct InstructionCheck {
  int op;
  native::SfuTables t;
  __device__ Outcome operator()(std::uint64_t i) const {
    const std::uint32_t x = static_cast<std::uint32_t>(i);
    return {x, hw(op, x), model(op, t, x)};
  }
};

// CUDA's powf: x = bits i with y fixed, or (x, y) random when y is NaN.
struct PowfCheck {
  float y_fixed;
  __device__ Outcome operator()(std::uint64_t i) const {
    std::uint32_t xb = static_cast<std::uint32_t>(i);
    float y = y_fixed;
    if (isnan(y_fixed)) {
      const std::uint64_t z = random_bits(i, kPowfStream);
      xb = static_cast<std::uint32_t>(z);
      y = __uint_as_float(static_cast<std::uint32_t>(z >> 32));
    }
    const float x = __uint_as_float(xb);
    const native::SfuTables none{};  // sm_90 device code issues MUFU.RCP itself
    return {xb, __float_as_uint(powf(x, y)), __float_as_uint(native::cuda_powf(none, x, y))};
  }
};

// Composite op k on (a, b); hardware and model.
__device__ __forceinline__ float comp_hw(int k, float a, float b) {
  float r;
  switch (k) {
    case 0:
      asm volatile("rcp.approx.f32 %0, %1;" : "=f"(r) : "f"(a));
      break;
    case 1:
      asm volatile("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(a));
      break;
    case 2:
      asm volatile("div.approx.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      break;
    case 3:
      asm volatile("div.approx.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      break;
    case 4:
      asm volatile("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      break;
    default:
      asm volatile("div.full.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      break;
  }
  return r;
}
__device__ __forceinline__ float comp_model(int k, float a, float b) {
  const native::SfuTables t{};
  switch (k) {
    case 0:
      return native::sfu_rcp_full_f(t, a);
    case 1:
      return native::sfu_sqrt_full_f(t, a);
    case 2:
      return native::sfu_div_approx_ftz_f(t, a, b);
    case 3:
      return native::sfu_div_approx_f(t, a, b);
    case 4:
      return native::sfu_div_full_f(t, a, b);
    default:
      return native::sfu_div_full_ftz_f(t, a, b);
  }
}
// A composite: a = bits i with b fixed, or (a, b) random.
struct CompositeCheck {
  int k;
  bool random;
  float b_fixed;
  __device__ Outcome operator()(std::uint64_t i) const {
    std::uint32_t ab = static_cast<std::uint32_t>(i);
    float b = b_fixed;
    if (random) {
      const std::uint64_t z = random_bits(i, kDivStream);
      ab = static_cast<std::uint32_t>(z);
      b = __uint_as_float(static_cast<std::uint32_t>(z >> 32));
    }
    const float a = __uint_as_float(ab);
    return {ab, __float_as_uint(comp_hw(k, a, b)), __float_as_uint(comp_model(k, a, b))};
  }
};

// Inputs [lo, hi) of one pass: the digest of the hardware's results, the mismatches, the first 8.
template <class Check>
__global__ void verify_kernel(Check check, std::uint64_t lo, std::uint64_t hi, Tally* tally) {
  unsigned long long sum = 0;
  for (std::uint64_t i = lo + blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
       i < hi; i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    const Outcome o = check(i);
    sum += native::sfu_digest_term(o.x, o.hw);
    if (o.hw != o.model) {
      const unsigned long long k = atomicAdd(&tally->mismatches, 1ull);
      if (k < 8) {
        tally->examples[3 * k] = o.x;
        tally->examples[3 * k + 1] = o.hw;
        tally->examples[3 * k + 2] = o.model;
      }
    }
  }
  atomicAdd(&tally->digest, sum);
}

// One pass over 2^32 inputs in 16 launches; progress counts chunks of `passes` passes.
template <class Check>
SfuCheck run_pass(const char* name, const Check& check, int pass, int passes,
                  const std::function<void(int, int)>& progress) {
  constexpr int kChunks = 16;
  const std::uint64_t per = (std::uint64_t{1} << 32) / kChunks;
  DeviceBuffer tally(sizeof(Tally));
  cuda_check(cudaMemset(tally.get(), 0, sizeof(Tally)), "memset");
  const unsigned grid = static_cast<unsigned>(sm_count()) * 16;
  for (int c = 0; c < kChunks; ++c) {
    verify_kernel<<<grid, 256>>>(check, per * c, per * (c + 1), tally.as<Tally>());
    cuda_check_launch(name);
    cuda_check(cudaDeviceSynchronize(), name);
    if (progress) progress(pass * kChunks + c + 1, passes * kChunks);
  }
  Tally h;
  tally.download(&h, sizeof h);
  SfuCheck r;
  r.instruction = name;
  r.inputs = std::uint64_t{1} << 32;
  r.mismatches = h.mismatches;
  r.digest = h.digest;
  const int k = static_cast<int>(h.mismatches < 8 ? h.mismatches : 8);
  r.examples.assign(h.examples, h.examples + 3 * k);
  return r;
}

std::vector<std::uint32_t> measure(int op, const std::vector<std::uint32_t>& inputs) {
  const std::size_t n = inputs.size();
  DeviceBuffer in(inputs.data(), n * 4), out(n * 4);
  measure_kernel<<<1024, 256>>>(op, in.as<std::uint32_t>(), static_cast<std::uint32_t>(n),
                                out.as<std::uint32_t>());
  cuda_check_launch("sfu measure");
  return out.download<std::uint32_t>(n);
}

std::vector<std::uint32_t> inputs_of(sfu::Table t) {
  std::vector<std::uint32_t> v(sfu::table_info(t).entries);
  for (std::uint32_t i = 0; i < v.size(); ++i) v[i] = sfu::table_input(t, i);
  return v;
}

}  // namespace

void sfu_measure(sfu::Bundle& b) {
  using sfu::Table;
  const std::pair<Table, int> direct[] = {
      {Table::rcp, kRcp},  {Table::sqrt, kSqrt}, {Table::rsqrt, kRsqrt}, {Table::ex2p, kEx2},
      {Table::ex2n, kEx2}, {Table::lg2e0, kLg2}, {Table::lg2e1, kLg2}};
  for (const auto& [t, op] : direct) b.tables[static_cast<int>(t)] = measure(op, inputs_of(t));
  // S: lg2 at exponent −2 against −RZ(2 − L0) (sfu_lg2 without S).
  const std::vector<std::uint32_t> e2 = measure(kLg2, inputs_of(Table::lg2s));
  const auto& L0 = b.tables[static_cast<int>(Table::lg2e0)];
  auto& S = b.tables[static_cast<int>(Table::lg2s)];
  S.assign(e2.size(), 0u);
  for (std::size_t m = 0; m < e2.size(); ++m) {
    const std::uint64_t v = (std::uint64_t{2} << native::kSfuFix) - native::sfu_fixed(L0[m]);
    const std::uint32_t r = 0x80000000u | native::sfu_rz_fixed(v);
    S[m] = e2[m] != r ? 1u : 0u;
  }
  sfu::pack_lg2s(b);
}

std::vector<SfuCheck> sfu_verify(const sfu::Bundle& b,
                                 const std::function<void(int, int)>& progress) {
  std::vector<std::unique_ptr<DeviceBuffer>> owned;
  const auto up = [&](const std::vector<std::uint32_t>& v) {
    owned.push_back(std::make_unique<DeviceBuffer>(v.data(), v.size() * 4));
    return static_cast<const std::uint32_t*>(owned.back()->as<std::uint32_t>());
  };
  native::SfuTables t;
  t.rcp = up(b.tables[0]);
  t.sqrt = up(b.tables[1]);
  t.rsqrt = up(b.tables[2]);
  t.ex2p = up(b.tables[3]);
  t.ex2n = up(b.tables[4]);
  t.lg2e0 = up(b.tables[5]);
  t.lg2e1 = up(b.tables[6]);
  t.lg2s = up(b.lg2s_bits);
  std::vector<SfuCheck> out;
  for (int op = 0; op < kOps; ++op) {
    out.push_back(run_pass(kOpNames[op], InstructionCheck{op, t}, op, kOps, progress));
  }
  return out;
}

std::vector<SfuCheck> sfu_verify_powf(const std::function<void(int, int)>& progress) {
  const float ys[5] = {2.0f, 0.5f, -1.5f, 1000.0f, __builtin_nanf("")};
  const char* names[5] = {"powf(x, 2)", "powf(x, 0.5)", "powf(x, -1.5)", "powf(x, 1000)",
                          "powf(x, y) random"};
  std::vector<SfuCheck> out;
  for (int k = 0; k < 5; ++k) out.push_back(run_pass(names[k], PowfCheck{ys[k]}, k, 5, progress));
  return out;
}

std::vector<SfuCheck> sfu_verify_composites(const std::function<void(int, int)>& progress) {
  struct Pass {
    CompositeCheck check;
    const char* name;
  };
  const Pass passes[] = {{{0, false, 0.0f}, "rcp.approx.f32"},
                         {{1, false, 0.0f}, "sqrt.approx.f32"},
                         {{2, false, 3.0f}, "div.approx.ftz.f32(x, 3)"},
                         {{2, true, 0.0f}, "div.approx.ftz.f32 random"},
                         {{3, false, 3.0f}, "div.approx.f32(x, 3)"},
                         {{3, true, 0.0f}, "div.approx.f32 random"},
                         {{4, false, 3.0f}, "div.full.f32(x, 3)"},
                         {{4, true, 0.0f}, "div.full.f32 random"},
                         {{5, false, 3.0f}, "div.full.ftz.f32(x, 3)"},
                         {{5, true, 0.0f}, "div.full.ftz.f32 random"}};
  const int np = static_cast<int>(sizeof passes / sizeof passes[0]);
  std::vector<SfuCheck> out;
  for (int q = 0; q < np; ++q) {
    out.push_back(run_pass(passes[q].name, passes[q].check, q, np, progress));
  }
  return out;
}

}  // namespace exmy::gpu
