// Single-thread throughput of the native engine, fp32 -> e4m3fn (rne and sr:8), with a memcpy
// baseline in the same process. Anchors measured elsewhere (see bench/results/): CPFloat
// ~0.69 G elem/s (rne) and 72 M elem/s (sr); torch CPU ~1.1 G elem/s (rne, e4m3fn).
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "sim/fast/array_cast.hpp"
#include "sim/fast/fp32_cast_table.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/oracle/mpfr_engine.hpp"

using namespace exmy;

namespace {

constexpr std::size_t kN = 1 << 20;

const std::vector<std::uint32_t>& inputs() {
  static const std::vector<std::uint32_t> v = [] {
    std::vector<std::uint32_t> out(kN);
    std::mt19937 gen(20261121);
    std::normal_distribution<float> d(0.0f, 100.0f);
    for (auto& x : out) x = native::bits_of(d(gen));
    return out;
  }();
  return v;
}

void BM_memcpy_baseline(benchmark::State& state) {
  const auto& in = inputs();
  std::vector<std::uint8_t> out(kN * 4);
  for (auto _ : state) {
    std::memcpy(out.data(), in.data(), kN * 4);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK(BM_memcpy_baseline);

// The 16-bit fast call (fp32 -> bf16 / fp16 through fast::cast_to_codes, as `exmy cast --in`).
void BM_array_fp32_to_16bit(benchmark::State& state, const FloatFormat* f, RoundMode m) {
  const auto& in = inputs();
  std::vector<std::uint16_t> out(kN);
  for (auto _ : state) {
    fast::cast_to_codes(in.data(), fast::ArrayInput::fp32, kN, out.data(), *f, Rounding{m, 0}, 0, 0,
                        0);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK_CAPTURE(BM_array_fp32_to_16bit, bf16_rne, &formats::bf16, RoundMode::rne);
BENCHMARK_CAPTURE(BM_array_fp32_to_16bit, bf16_rtz, &formats::bf16, RoundMode::rtz);
BENCHMARK_CAPTURE(BM_array_fp32_to_16bit, fp16_rne, &formats::fp16, RoundMode::rne);

template <const FloatFormat& F>
void BM_fp32_to_fixed_rne(benchmark::State& state) {
  const auto& in = inputs();
  std::vector<std::uint8_t> out(kN);
  constexpr Rounding r{RoundMode::rne, 0, Overflow::none};
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) {
      out[i] = static_cast<std::uint8_t>(native::convert(formats::fp32, F, r, in[i]).code);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK_TEMPLATE(BM_fp32_to_fixed_rne, formats::e4m3fn);

// The host fast path users call: cast_fp32_to_u8 (table for the deterministic modes).
void BM_fast_fp32_to_e4m3fn_rne(benchmark::State& state) {
  const auto& in = inputs();
  std::vector<std::uint8_t> out(kN);
  const Rounding r{RoundMode::rne, 0, Overflow::none};
  const float* src = reinterpret_cast<const float*>(in.data());
  for (auto _ : state) {
    fast::cast_fp32_to_u8(src, out.data(), kN, formats::e4m3fn, r);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK(BM_fast_fp32_to_e4m3fn_rne);

void BM_fast_fp32_to_e4m3fn_sr8(benchmark::State& state) {
  const auto& in = inputs();
  std::vector<std::uint8_t> out(kN);
  const Rounding r{RoundMode::sr, 8, Overflow::none};
  const float* src = reinterpret_cast<const float*>(in.data());
  for (auto _ : state) {
    fast::cast_fp32_to_u8(src, out.data(), kN, formats::e4m3fn, r, 1234);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK(BM_fast_fp32_to_e4m3fn_sr8);

void BM_fp32_to_runtime_e4m3fn_rne(benchmark::State& state) {
  const auto& in = inputs();
  std::vector<std::uint8_t> out(kN);
  volatile int bias = 7;
  FloatFormat f = formats::e4m3fn;
  f.bias = bias;
  const Rounding r{RoundMode::rne, 0, Overflow::none};
  for (auto _ : state) {
    for (std::size_t i = 0; i < kN; ++i) {
      out[i] = static_cast<std::uint8_t>(native::convert(formats::fp32, f, r, in[i]).code);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK(BM_fp32_to_runtime_e4m3fn_rne);

void BM_fp32_to_e4m3fn_sr8(benchmark::State& state) {
  const auto& in = inputs();
  std::vector<std::uint8_t> out(kN);
  constexpr Rounding r{RoundMode::sr, 8, Overflow::none};
  for (auto _ : state) {
    for (std::size_t b = 0; b < kN / 4; ++b) {
      const auto words = native::philox_block(1234, 0, b);
      for (int j = 0; j < 4; ++j) {
        const std::size_t i = 4 * b + j;
        out[i] = static_cast<std::uint8_t>(native::convert(formats::fp32, formats::e4m3fn, r, in[i],
                                                           native::sr_word(words.w[j], 8))
                                               .code);
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kN);
}
BENCHMARK(BM_fp32_to_e4m3fn_sr8);

// The MPFR oracle on the same inputs: the denominator of the "native vs oracle" ratio.
void BM_oracle_fp32_to_e4m3fn_rne(benchmark::State& state) {
  const auto& in = inputs();
  std::vector<std::uint8_t> out(kN);
  const Rounding r{RoundMode::rne, 0, Overflow::none};
  constexpr std::size_t kSubset = 1 << 14;  // the oracle is ~300x slower; a subset suffices
  for (auto _ : state) {
    for (std::size_t i = 0; i < kSubset; ++i) {
      out[i] = static_cast<std::uint8_t>(oracle::encode_f32(in[i], formats::e4m3fn, r).code);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kSubset);
}
BENCHMARK(BM_oracle_fp32_to_e4m3fn_rne);

void BM_oracle_fp32_to_e4m3fn_sr8(benchmark::State& state) {
  const auto& in = inputs();
  std::vector<std::uint8_t> out(kN);
  const Rounding r{RoundMode::sr, 8, Overflow::none};
  constexpr std::size_t kSubset = 1 << 14;
  for (auto _ : state) {
    for (std::size_t i = 0; i < kSubset; ++i) {
      const auto w = native::sr_word(native::philox_word(1234, 0, i), 8);
      out[i] = static_cast<std::uint8_t>(oracle::encode_f32(in[i], formats::e4m3fn, r, w).code);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kSubset);
}
BENCHMARK(BM_oracle_fp32_to_e4m3fn_sr8);

}  // namespace

BENCHMARK_MAIN();
