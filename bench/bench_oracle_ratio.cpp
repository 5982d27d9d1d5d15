// How much slower the oracle of every step (sim/oracle/steps) is than the native engine on the
// same work (the issue asks for the ratio): per element of a quantization (int8 rows, e4m3fn
// absmax, dynamic codebook blocks, MX e4m3fn) and of an AdamW step on fp32, both engines on the
// same inputs in the same process, one thread. The ratio oracle/native is the reported counter.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "sim/optim/optim.hpp"
#include "sim/oracle/steps/quant.hpp"
#include "sim/oracle/steps/steps.hpp"
#include "sim/quant/quantize.hpp"
#include "sim/verify/quant_oracle_spec.hpp"

namespace {

using namespace exmy;
namespace os = exmy::oracle::steps;

constexpr std::size_t kRows = 16, kCols = 256;

std::vector<float> inputs() {
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(kRows * kCols);
  for (float& v : x) v = d(rng);
  return x;
}
os::Tensor to_real(const std::vector<float>& x) {
  os::Tensor r;
  for (float v : x) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    r.push_back(os::Real::of_f32_bits(u));
  }
  return r;
}
quant::Options options(const char* scheme, const char* target) {
  quant::Options o;
  o.scheme = quant::parse_scheme(scheme);
  o.target = quant::parse_target(target);
  return o;
}

void BM_native_quant(benchmark::State& st, const char* scheme, const char* target) {
  const auto x = inputs();
  const auto o = options(scheme, target);
  for (auto _ : st) benchmark::DoNotOptimize(quant::quantize(x, {kRows, kCols}, o));
  st.SetItemsProcessed(st.iterations() * x.size());
}
void BM_oracle_quant(benchmark::State& st, const char* scheme, const char* target) {
  const auto X = to_real(inputs());
  const auto s = verify::oracle_quant_spec(options(scheme, target), kRows, kCols);
  for (auto _ : st) benchmark::DoNotOptimize(os::quant::quantize(X, s.spec));
  st.SetItemsProcessed(st.iterations() * X.size());
}

void BM_native_adamw(benchmark::State& st) {
  auto p = inputs(), g = inputs();
  std::vector<float> m(p.size()), v(p.size());
  optim::AdamHyper h;
  h.wd = 0.01;
  long t = 0;
  for (auto _ : st) optim::adam_step(h, true, native::Storage::f32, ++t, p, g, m, v);
  st.SetItemsProcessed(st.iterations() * p.size());
}
void BM_oracle_adamw(benchmark::State& st) {
  os::Tensor P = to_real(inputs()), G = P, M(P.size()), V(P.size());
  os::AdamHyper h;
  h.wd = 0.01;
  long t = 0;
  for (auto _ : st) os::torch_adam_step(h, true, os::F32, ++t, P, G, M, V);
  st.SetItemsProcessed(st.iterations() * P.size());
}

BENCHMARK_CAPTURE(BM_native_quant, int8_rowwise, "rowwise", "int8");
BENCHMARK_CAPTURE(BM_oracle_quant, int8_rowwise, "rowwise", "int8");
BENCHMARK_CAPTURE(BM_native_quant, e4m3fn_tensor, "tensor", "e4m3fn");
BENCHMARK_CAPTURE(BM_oracle_quant, e4m3fn_tensor, "tensor", "e4m3fn");
BENCHMARK_CAPTURE(BM_native_quant, dynamic_block256, "block:256", "dynamic");
BENCHMARK_CAPTURE(BM_oracle_quant, dynamic_block256, "block:256", "dynamic");
BENCHMARK_CAPTURE(BM_native_quant, mx_e4m3fn, "mx", "e4m3fn");
BENCHMARK_CAPTURE(BM_oracle_quant, mx_e4m3fn, "mx", "e4m3fn");
BENCHMARK(BM_native_adamw);
BENCHMARK(BM_oracle_adamw);

}  // namespace

BENCHMARK_MAIN();
