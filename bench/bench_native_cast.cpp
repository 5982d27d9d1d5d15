// Single-thread throughput of the host cast engine on normal(0, 100) fp32 inputs, with a memcpy
// baseline and the peers in the same process (issue 15):
//   - exmy: fp32 -> e4m3fn rne and sr:8, fp32 -> bf16 / fp16 rne, bf16 / fp16 -> e4m3fn rne
//     through fast::cast_to_codes on one thread (the call `exmy cast --in` and exmy.cast make),
//     and the 8-bit table path fast::cast_fp32_to_u8, at 2^20 and 2^24 elements; the
//     per-element native::convert loops and the MPFR oracle at 2^20;
//   - CPFloat (optional; cmake/ExmyCpfloat.cmake, scripts/fetch-cpfloat.sh): E4M3 rne, E4M3
//     stochastic rounding (proportional, one pcg32 draw per element), bf16 rne, one thread.
// After the table it prints same-run ratios (exmy over memcpy, exmy over CPFloat) and, when
// CPFloat is there, a bit comparison of the rne rows on the finite inputs where the formats agree
// (CPFloat's E4M3 keeps its top binade, 464 <= |x| < 480 rounds to 480; e4m3fn's largest is 448).
// torch and ml_dtypes are timed by bench/peers/cpu_cast_vs_peers.py (Python, one process).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/common/cpu_bench.hpp"
#include "sim/fast/array_cast.hpp"
#include "sim/fast/fp32_cast_table.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#ifdef EXMY_HAVE_CPFLOAT
#include "cpfloat_peer.h"
#endif

using namespace exmy;

namespace {

constexpr std::size_t kN = 1 << 20;  // the per-element and oracle rows

// normal(0, 100) fp32 bit patterns, 2^log2n of them (the same first 2^20 for every size).
const std::vector<std::uint32_t>& inputs(int log2n = 20) {
  static std::map<int, std::vector<std::uint32_t>> cache;
  auto& v = cache[log2n];
  if (v.empty()) {
    v.resize(std::size_t{1} << log2n);
    std::mt19937 gen(20261121);
    std::normal_distribution<float> d(0.0f, 100.0f);
    for (auto& x : v) x = native::bits_of(d(gen));
  }
  return v;
}
const float* as_floats(const std::vector<std::uint32_t>& v) {
  return reinterpret_cast<const float*>(v.data());
}

// Benchmarks taking a size take log2(n) as their argument: /20 and /24.
void BM_memcpy_baseline(benchmark::State& state) {
  const auto& in = inputs(static_cast<int>(state.range(0)));
  const std::size_t n = in.size();
  std::vector<std::uint8_t> out(n * 4);
  for (auto _ : state) {
    std::memcpy(out.data(), in.data(), n * 4);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * n * 4);
}
BENCHMARK(BM_memcpy_baseline)->Arg(20)->Arg(24);

// The 16-bit fast call (fp32 -> bf16 / fp16 through fast::cast_to_codes, as `exmy cast --in`).
void BM_array_fp32_to_16bit(benchmark::State& state, const FloatFormat* f, RoundMode m) {
  const auto& in = inputs(static_cast<int>(state.range(0)));
  const std::size_t n = in.size();
  std::vector<std::uint16_t> out(n);
  for (auto _ : state) {
    fast::cast_to_codes(in.data(), fast::ArrayInput::fp32, n, out.data(), *f, Rounding{m, 0}, 0, 0,
                        0);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
// fp32 -> 8-bit codes through fast::cast_to_codes (threads = 1): the call `exmy cast --in` and
// exmy.cast make (the vector kernels where the mode-fixed fast cast serves the format).
void BM_array_fp32_to_8bit(benchmark::State& state, const FloatFormat* f, RoundMode m, int bits) {
  const auto& in = inputs(static_cast<int>(state.range(0)));
  const std::size_t n = in.size();
  std::vector<std::uint8_t> out(n);
  for (auto _ : state) {
    fast::cast_to_codes(in.data(), fast::ArrayInput::fp32, n, out.data(), *f, Rounding{m, bits},
                        1234, 0, 0);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK_CAPTURE(BM_array_fp32_to_8bit, e4m3fn_rne, &formats::e4m3fn, RoundMode::rne, 0)
    ->Arg(20)
    ->Arg(24);
BENCHMARK_CAPTURE(BM_array_fp32_to_8bit, e4m3fn_sr8, &formats::e4m3fn, RoundMode::sr, 8)
    ->Arg(20)
    ->Arg(24);

// 16-bit inputs -> e4m3fn rne (fast::cast_to_codes with ArrayInput::bf16 / fp16): the inputs are
// the fp32 values rounded to the input type (rne, by exmy).
void BM_array_16bit_to_e4m3fn(benchmark::State& state, const FloatFormat* from,
                              fast::ArrayInput t) {
  const auto& x = inputs(static_cast<int>(state.range(0)));
  const std::size_t n = x.size();
  std::vector<std::uint16_t> in(n);
  fast::cast_to_codes(x.data(), fast::ArrayInput::fp32, n, in.data(), *from,
                      Rounding{RoundMode::rne, 0}, 0, 0, 0);
  std::vector<std::uint8_t> out(n);
  for (auto _ : state) {
    fast::cast_to_codes(in.data(), t, n, out.data(), formats::e4m3fn, Rounding{RoundMode::rne, 0},
                        0, 0, 0);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK_CAPTURE(BM_array_16bit_to_e4m3fn, bf16, &formats::bf16, fast::ArrayInput::bf16)
    ->Arg(20)
    ->Arg(24);
BENCHMARK_CAPTURE(BM_array_16bit_to_e4m3fn, fp16, &formats::fp16, fast::ArrayInput::fp16)
    ->Arg(20)
    ->Arg(24);

BENCHMARK_CAPTURE(BM_array_fp32_to_16bit, bf16_rne, &formats::bf16, RoundMode::rne)
    ->Arg(20)
    ->Arg(24);
BENCHMARK_CAPTURE(BM_array_fp32_to_16bit, bf16_rtz, &formats::bf16, RoundMode::rtz)->Arg(20);
BENCHMARK_CAPTURE(BM_array_fp32_to_16bit, fp16_rne, &formats::fp16, RoundMode::rne)
    ->Arg(20)
    ->Arg(24);

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

// The 8-bit table / mode-fixed path (fast::cast_fp32_to_u8), which cast_to_codes takes for the
// cases its vector kernels do not serve.
void BM_fast_fp32_to_e4m3fn_rne(benchmark::State& state) {
  const auto& in = inputs(static_cast<int>(state.range(0)));
  const std::size_t n = in.size();
  std::vector<std::uint8_t> out(n);
  const Rounding r{RoundMode::rne, 0, Overflow::none};
  for (auto _ : state) {
    fast::cast_fp32_to_u8(as_floats(in), out.data(), n, formats::e4m3fn, r);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_fast_fp32_to_e4m3fn_rne)->Arg(20)->Arg(24);

void BM_fast_fp32_to_e4m3fn_sr8(benchmark::State& state) {
  const auto& in = inputs(static_cast<int>(state.range(0)));
  const std::size_t n = in.size();
  std::vector<std::uint8_t> out(n);
  const Rounding r{RoundMode::sr, 8, Overflow::none};
  for (auto _ : state) {
    fast::cast_fp32_to_u8(as_floats(in), out.data(), n, formats::e4m3fn, r, 1234);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_fast_fp32_to_e4m3fn_sr8)->Arg(20)->Arg(24);

#ifdef EXMY_HAVE_CPFLOAT
// CPFloat's binary32 -> binary32 rounding (cpfloatf) on the same inputs, one thread; its output is
// 4 bytes per element where exmy writes 1 (e4m3fn codes) or 2 (bf16 codes).
void BM_cpfloat(benchmark::State& state, int target) {
  const auto& in = inputs(static_cast<int>(state.range(0)));
  const std::size_t n = in.size();
  std::vector<float> out(n);
  void* opts = exmy_cpf_new(target);
  if (opts == nullptr) {
    state.SkipWithError("CPFloat rejected the option structure");
    return;
  }
  for (auto _ : state) {
    exmy_cpf_round(opts, out.data(), as_floats(in), n);
    benchmark::DoNotOptimize(out.data());
  }
  exmy_cpf_free(opts);
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK_CAPTURE(BM_cpfloat, e4m3_rne, EXMY_CPF_E4M3_RNE)->Arg(20)->Arg(24);
BENCHMARK_CAPTURE(BM_cpfloat, e4m3_sr, EXMY_CPF_E4M3_SR)->Arg(20)->Arg(24);
BENCHMARK_CAPTURE(BM_cpfloat, bf16_rne, EXMY_CPF_BF16_RNE)->Arg(20)->Arg(24);
#endif

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

#ifdef EXMY_HAVE_CPFLOAT
// CPFloat's rne against exmy's on 2^20 inputs: E4M3 where |x| < 464 (both formats round there the
// same way), bf16 everywhere (all inputs are finite); SR: both results are one of the two
// neighbours of x (exmy rdn / rup). Prints the counts; returns false on any difference.
bool cpfloat_sanity() {
  const auto& in = inputs(20);
  const std::size_t n = in.size();
  std::vector<float> cpf(n);
  std::vector<std::uint8_t> q(n), lo(n), hi(n);
  std::vector<std::uint16_t> b(n);
  const auto& e4 = fast::decode_table(formats::e4m3fn);
  bool ok = true;

  void* o = exmy_cpf_new(EXMY_CPF_E4M3_RNE);
  exmy_cpf_round(o, cpf.data(), as_floats(in), n);
  exmy_cpf_free(o);
  fast::cast_to_codes(in.data(), fast::ArrayInput::fp32, n, q.data(), formats::e4m3fn,
                      Rounding{RoundMode::rne, 0}, 0, 0, 0);
  std::size_t compared = 0, diff = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(std::fabs(as_floats(in)[i]) < 464.0f)) continue;
    ++compared;
    if (native::bits_of(e4[q[i]]) != native::bits_of(cpf[i])) {
      if (diff++ < 5) {
        std::printf("  e4m3 rne differs: x=%a exmy=%a CPFloat=%a\n", as_floats(in)[i], e4[q[i]],
                    cpf[i]);
      }
    }
  }
  std::printf("CPFloat E4M3 rne vs exmy e4m3fn rne, |x| < 464: %zu of %zu differ\n", diff,
              compared);
  ok = ok && diff == 0;

  o = exmy_cpf_new(EXMY_CPF_BF16_RNE);
  exmy_cpf_round(o, cpf.data(), as_floats(in), n);
  exmy_cpf_free(o);
  fast::cast_to_codes(in.data(), fast::ArrayInput::fp32, n, b.data(), formats::bf16,
                      Rounding{RoundMode::rne, 0}, 0, 0, 0);
  diff = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if ((std::uint32_t{b[i]} << 16) != native::bits_of(cpf[i]) && diff++ < 5) {
      std::printf("  bf16 rne differs: x=%a exmy=0x%04x CPFloat=%a\n", as_floats(in)[i], b[i],
                  cpf[i]);
    }
  }
  std::printf("CPFloat bf16 rne vs exmy bf16 rne, all %zu inputs: %zu differ\n", n, diff);
  ok = ok && diff == 0;

  o = exmy_cpf_new(EXMY_CPF_E4M3_SR);
  exmy_cpf_round(o, cpf.data(), as_floats(in), n);
  exmy_cpf_free(o);
  fast::cast_to_codes(in.data(), fast::ArrayInput::fp32, n, q.data(), formats::e4m3fn,
                      Rounding{RoundMode::sr, 8}, 1234, 0, 0);
  fast::cast_fp32_to_u8(as_floats(in), lo.data(), n, formats::e4m3fn, Rounding{RoundMode::rdn, 0});
  fast::cast_fp32_to_u8(as_floats(in), hi.data(), n, formats::e4m3fn, Rounding{RoundMode::rup, 0});
  std::size_t off_exmy = 0, off_cpf = 0, up_exmy = 0, up_cpf = 0, inexact = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(std::fabs(as_floats(in)[i]) < 448.0f)) continue;
    const float l = e4[lo[i]], h = e4[hi[i]];
    if (l == h) continue;
    ++inexact;
    off_exmy += e4[q[i]] != l && e4[q[i]] != h;
    off_cpf += cpf[i] != l && cpf[i] != h;
    up_exmy += e4[q[i]] == h;
    up_cpf += cpf[i] == h;
  }
  std::printf(
      "SR, %zu inexact inputs with |x| < 448: results off the two neighbours: exmy sr:8 "
      "%zu, CPFloat %zu; rounded up: exmy %.4f, CPFloat %.4f\n",
      inexact, off_exmy, off_cpf, double(up_exmy) / inexact, double(up_cpf) / inexact);
  return ok && off_exmy == 0 && off_cpf == 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  exmy::bench::CpuRun run(argc, argv);
#ifdef EXMY_HAVE_CPFLOAT
  run.context("cpfloat", std::string("found, stochastic rounding draws from ") + exmy_cpf_rng());
  if (!cpfloat_sanity()) std::printf("CPFloat sanity check: DIFFERENCES (see above)\n");
#else
  std::printf("CPFloat not found: %s; CPFloat rows skipped\n", EXMY_CPFLOAT_HOW);
  run.context("cpfloat", "not found (rows skipped)");
#endif
  for (const char* s : {"20", "24"}) {
    const std::string n = std::string("/") + s;
    const std::string at = std::string(" 2^") + s;
    const std::string rne = "BM_array_fp32_to_8bit/e4m3fn_rne" + n;
    const std::string sr8 = "BM_array_fp32_to_8bit/e4m3fn_sr8" + n;
    const std::string bf16 = "BM_array_fp32_to_16bit/bf16_rne" + n;
    const std::string copy = "BM_memcpy_baseline" + n;
    run.ratio("e4m3fn rne / memcpy" + at, rne, copy);
    run.ratio("e4m3fn sr:8 / memcpy" + at, sr8, copy);
    run.ratio("e4m3fn sr:8 / e4m3fn rne" + at, sr8, rne);
    run.ratio("e4m3fn rne cast_to_codes / cast_fp32_to_u8" + at, rne,
              "BM_fast_fp32_to_e4m3fn_rne" + n);
    run.ratio("bf16 rne / memcpy" + at, bf16, copy);
    run.ratio("bf16 -> e4m3fn rne / memcpy" + at, "BM_array_16bit_to_e4m3fn/bf16" + n, copy);
    run.ratio("fp16 -> e4m3fn rne / memcpy" + at, "BM_array_16bit_to_e4m3fn/fp16" + n, copy);
#ifdef EXMY_HAVE_CPFLOAT
    run.ratio("e4m3fn rne / CPFloat E4M3 rne" + at, rne, "BM_cpfloat/e4m3_rne" + n);
    run.ratio("e4m3fn sr:8 / CPFloat E4M3 SR" + at, sr8, "BM_cpfloat/e4m3_sr" + n, 3.0);
    run.ratio("bf16 rne / CPFloat bf16 rne" + at, bf16, "BM_cpfloat/bf16_rne" + n);
#endif
  }
  return run.run();
}
