// The GEMM emulation kernel's speed against the CPU reference (one core) on the same operands,
// and its outputs compared bit for bit: `bench_gemm_emulation [--quick]` prints one JSON object
// per case. Ratios are taken in this process; cuBLAS's own time on the same shapes is measured
// by bench/peers/gemm_million_check.py in the same device call (the issue asks for both).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu/gemm/gemm_emulation.hpp"
#include "sim/format/registry.hpp"
#include "sim/gemm/gemm.hpp"

using namespace exmy;

namespace {

gemm::Operand operand(const std::string& fmt, std::size_t rows, std::size_t k,
                      std::mt19937_64& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  if (fmt == "fp32") {
    std::vector<float> v(rows * k);
    for (auto& x : v) x = d(rng);
    return gemm::operand_from_fp32(v, rows, k);
  }
  const Format f = parse_format(fmt);
  std::vector<std::uint16_t> codes(rows * k);
  for (auto& c : codes) {
    std::uint32_t u;
    const float x = d(rng);
    std::memcpy(&u, &x, 4);
    c = static_cast<std::uint16_t>(
        native::convert(formats::fp32, f.fp, Rounding{RoundMode::rne, 0, Overflow::satfinite}, u, 0)
            .code);
  }
  return gemm::operand_from_codes(codes, rows, k, f.fp);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  struct Case {
    const char* fmt;
    std::size_t M, N, K;
    bool cpu;
  };
  const std::vector<Case> cases = {
      {"e4m3fn", 256, 128, 8192, true},  {"bf16", 256, 128, 8192, true},
      {"fp32", 256, 128, 1024, true},    {"e4m3fn", 4096, 4096, 4096, false},
      {"bf16", 4096, 4096, 4096, false}, {"e4m3fn", 128, 64, 65536, false},
  };
  std::mt19937_64 rng(7);
  for (const Case& c : cases) {
    if (quick && !c.cpu) continue;
    const gemm::Operand A = operand(c.fmt, c.M, c.K, rng), B = operand(c.fmt, c.N, c.K, rng);
    const gemm::AccumModel m = gemm::parse_accum_model("cublas-sm90", A.code_bits);
    const double gpu_ms = gpu::gemm_emulate_time_ms(A, B, m, gemm::OutFormat::fp32, 5);
    const double products = double(c.M) * c.N * c.K;
    double cpu_s = -1;
    std::size_t mismatches = 0;
    if (c.cpu) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto want = gemm::gemm(A, B, m, gemm::OutFormat::fp32);
      cpu_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const auto got = gpu::gemm_emulate(A, B, m, gemm::OutFormat::fp32);
      for (std::size_t i = 0; i < want.size(); ++i) mismatches += want[i] != got[i];
    }
    std::printf(
        "{\"format\": \"%s\", \"M\": %zu, \"N\": %zu, \"K\": %zu, \"model\": \"cublas-sm90\", "
        "\"gpu_ms\": %.4f, \"gpu_products_per_s\": %.4g, \"gpu_emulated_tflops\": %.4g, "
        "\"cpu_s\": %.4f, \"cpu_products_per_s\": %.4g, \"speedup_vs_cpu_core\": %.1f, "
        "\"outputs_compared\": %zu, \"mismatches\": %zu}\n",
        c.fmt, c.M, c.N, c.K, gpu_ms, products / (gpu_ms * 1e-3),
        2 * products / (gpu_ms * 1e-3) / 1e12, cpu_s, cpu_s > 0 ? products / cpu_s : 0.0,
        cpu_s > 0 ? cpu_s / (gpu_ms * 1e-3) : 0.0, c.cpu ? c.M * c.N : std::size_t{0}, mismatches);
    std::fflush(stdout);
  }
  return 0;
}
