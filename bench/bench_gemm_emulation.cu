// The GEMM emulation's speed under `cublas-sm90` (issue 37's targets: 4096^3 FP8 and bf16, the
// tall-K 128 x 64 x 65,536) as products per second, on both kernels in one process: `generic`
// (one thread per output running sim/native/gemm_dot.hpp: the kernel before the tiles, the
// baseline) and `auto` (gpu/gemm/gemm_emulation.cu's choice: the tiled kernel where it applies).
// The auto rows also count their output bytes that differ from the generic kernel's (every
// output) and from the CPU reference (every output of the fp32 shape; of the others the first
// and last two rows of A, run under the whole GEMM's model): mismatches_vs_generic,
// mismatches_vs_cpu, outputs_vs_cpu. `tiled` says whether the tiled kernel ran. Times are
// CUDA-event times of whole runs on staged operands (the tiled path's stats and encoding
// passes included).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/common/gpu_bench.hpp"
#include "gpu/gemm/gemm_emulation.hpp"
#include "sim/format/registry.hpp"
#include "sim/gemm/gemm.hpp"

using namespace exmy;

namespace {

struct Case {
  const char* fmt;
  std::size_t M, N, K;
  bool cpu_full;  // compare every output with the CPU reference (else the sampled rows)
};
const Case kCases[] = {
    {"e4m3fn", 256, 128, 8192, false}, {"bf16", 256, 128, 8192, false},
    {"fp32", 256, 128, 1024, true},    {"e4m3fn", 4096, 4096, 4096, false},
    {"bf16", 4096, 4096, 4096, false}, {"e4m3fn", 128, 64, 65536, false},
    {"bf16", 128, 64, 65536, false},
};

// Normal(0, 1) values in the format (rne, saturating), as codes (fp32: the values' bits).
struct Operands {
  std::vector<std::uint16_t> ca, cb;
  std::vector<float> fa, fb;
  gemm::Operand A, B;
};

gemm::Operand make(const std::string& fmt, const std::vector<std::uint16_t>& c,
                   const std::vector<float>& f, std::size_t rows, std::size_t k) {
  if (fmt == "fp32") return gemm::operand_from_fp32(f, rows, k);
  return gemm::operand_from_codes(c, rows, k, parse_format(fmt).fp);
}

void fill(const std::string& fmt, std::size_t n, std::mt19937_64& rng,
          std::vector<std::uint16_t>* c, std::vector<float>* f) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  if (fmt == "fp32") {
    f->resize(n);
    for (auto& x : *f) x = d(rng);
    return;
  }
  const Format fm = parse_format(fmt);
  c->resize(n);
  for (auto& v : *c) {
    std::uint32_t u;
    const float x = d(rng);
    std::memcpy(&u, &x, 4);
    v = static_cast<std::uint16_t>(native::convert(formats::fp32, fm.fp,
                                                   Rounding{RoundMode::rne, 0, Overflow::satfinite},
                                                   u, 0)
                                       .code);
  }
}

const Operands& operands(const Case& c) {
  static std::map<const Case*, std::unique_ptr<Operands>> cache;
  auto& slot = cache[&c];
  if (!slot) {
    slot = std::make_unique<Operands>();
    std::mt19937_64 rng(7 + c.M + c.K);
    fill(c.fmt, c.M * c.K, rng, &slot->ca, &slot->fa);
    fill(c.fmt, c.N * c.K, rng, &slot->cb, &slot->fb);
    slot->A = make(c.fmt, slot->ca, slot->fa, c.M, c.K);
    slot->B = make(c.fmt, slot->cb, slot->fb, c.N, c.K);
  }
  return *slot;
}

gemm::AccumModel model(const Operands& o) {
  return gemm::parse_accum_model("cublas-sm90", o.A.code_bits);
}

std::map<const Case*, std::vector<std::uint32_t>>& generic_codes() {
  static std::map<const Case*, std::vector<std::uint32_t>> m;
  return m;
}

const std::vector<std::uint32_t>& generic_of(const Case& c) {
  auto& m = generic_codes();
  auto it = m.find(&c);
  if (it == m.end()) {
    const Operands& o = operands(c);
    gpu::PreparedGemm g(o.A, o.B, model(o), gemm::OutFormat::fp32);
    g.run(gpu::GemmPath::generic);
    it = m.emplace(&c, g.codes()).first;
  }
  return it->second;
}

// The CPU reference on every output (cpu_full) or on rows {0, 1, M-2, M-1} of A under the
// whole GEMM's model (ShapeModel::spec); mismatches against `got` (M x N).
void cpu_check(const Case& c, const std::vector<std::uint32_t>& got, std::size_t* outputs,
               std::size_t* mismatches) {
  const Operands& o = operands(c);
  const gemm::AccumModel m = model(o);
  *outputs = *mismatches = 0;
  if (c.cpu_full) {
    const auto want = gemm::gemm(o.A, o.B, m, gemm::OutFormat::fp32);
    for (std::size_t i = 0; i < want.size(); ++i) *mismatches += want[i] != got[i];
    *outputs = want.size();
    return;
  }
  const std::string spec = gemm::operand_model(o.A, o.B, m, gemm::OutFormat::fp32).spec;
  const std::vector<std::size_t> rows = {0, 1, c.M - 2, c.M - 1};
  std::vector<std::uint16_t> ca;
  std::vector<float> fa;
  for (std::size_t r : rows) {
    if (!o.ca.empty()) ca.insert(ca.end(), o.ca.begin() + r * c.K, o.ca.begin() + (r + 1) * c.K);
    if (!o.fa.empty()) fa.insert(fa.end(), o.fa.begin() + r * c.K, o.fa.begin() + (r + 1) * c.K);
  }
  const gemm::Operand As = make(c.fmt, ca, fa, rows.size(), c.K);
  const auto want =
      gemm::gemm(As, o.B, gemm::parse_accum_model(spec, o.A.code_bits), gemm::OutFormat::fp32);
  for (std::size_t q = 0; q < rows.size(); ++q) {
    for (std::size_t j = 0; j < c.N; ++j) {
      *mismatches += want[q * c.N + j] != got[rows[q] * c.N + j];
    }
  }
  *outputs = want.size();
}

void bm_gemm(benchmark::State& state, const Case* c, gpu::GemmPath path) {
  const Operands& o = operands(*c);
  gpu::PreparedGemm g(o.A, o.B, model(o), gemm::OutFormat::fp32);
  bool tiled = false;
  exmy::bench::time_cuda(state, 1, [&](long) { tiled = g.run(path); });
  const double products = double(c->M) * c->N * c->K;
  state.counters["products_per_s"] =
      benchmark::Counter(products, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tiled"] = tiled ? 1 : 0;
  const std::vector<std::uint32_t> got = g.codes();
  if (path == gpu::GemmPath::generic) {
    generic_codes()[c] = got;
    return;
  }
  const auto& gen = generic_of(*c);
  std::size_t mg = 0;
  for (std::size_t i = 0; i < got.size(); ++i) mg += got[i] != gen[i];
  std::size_t outputs = 0, mc = 0;
  cpu_check(*c, got, &outputs, &mc);
  state.counters["mismatches_vs_generic"] = static_cast<double>(mg);
  state.counters["mismatches_vs_cpu"] = static_cast<double>(mc);
  state.counters["outputs_vs_cpu"] = static_cast<double>(outputs);
}

}  // namespace

int main(int argc, char** argv) {
  for (const Case& c : kCases) {
    const std::string name = std::string("gemm_cublas_sm90/") + c.fmt + "/" + std::to_string(c.M) +
                             "x" + std::to_string(c.N) + "x" + std::to_string(c.K);
    benchmark::RegisterBenchmark((name + "/generic").c_str(), bm_gemm, &c, gpu::GemmPath::generic)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((name + "/auto").c_str(), bm_gemm, &c, gpu::GemmPath::automatic)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  exmy::bench::add_gpu_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
