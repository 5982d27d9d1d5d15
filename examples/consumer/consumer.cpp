// A consumer of the installed exmy package (examples/consumer/CMakeLists.txt): a cast with the
// header-only engine, a row-wise int8 quantization and three AdamW steps, written to OUT_DIR.
//   exmy_consumer OUT_DIR
// writes p.npy and g.npy (the inputs of `exmy step --optimizer adamw --lr 0.01 --wd 0.01
// --steps 3 --compat torch-cpu|torch-cuda`), and in OUT_DIR/torch-cpu and OUT_DIR/torch-cuda
// (which must exist) params.npy, state1.npy, state2.npy: the parameters, exp_avg and exp_avg_sq
// after those steps, computed here by the engine's element function (docs/SEMANTICS.md 9.2).
// Exit 0 when the pinned cast and quantization values hold, 1 otherwise, 2 on bad usage.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/io/npy.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/optim_adamw.hpp"
#include "sim/optim/optim.hpp"
#include "sim/quant/quantize.hpp"

namespace {

namespace native = exmy::native;

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "exmy_consumer: %s\n", what.c_str());
    ++failures;
  }
}

// fp32 -> e4m3fn, round to nearest even, no saturation (docs/SEMANTICS.md 2, 3): 448 is the
// largest finite value (0x7E); 464 is the tie between 448 and 480 (0x7E, even); 465 lies above it
// and overflows to the NaN code 0x7F (e4m3fn has no infinity); -0 keeps its sign (0x80).
void cast_check() {
  const float in[] = {448.0f, 464.0f, 465.0f, -0.0f};
  const std::uint64_t want[] = {0x7E, 0x7E, 0x7F, 0x80};
  for (int i = 0; i < 4; ++i) {
    const auto e = native::convert(exmy::formats::fp32, exmy::formats::e4m3fn, exmy::Rounding{},
                                   native::bits_of(in[i]));
    std::printf("cast e4m3fn %g -> 0x%02llX\n", static_cast<double>(in[i]),
                static_cast<unsigned long long>(e.code));
    expect(e.code == want[i], "cast of " + std::to_string(in[i]) + " to e4m3fn");
  }
}

// Row-wise absmax int8 (docs/SEMANTICS.md 7): q = RNE(x / absmax * 127) per row.
void quantize_check() {
  exmy::quant::Options opt;
  opt.scheme = exmy::quant::parse_scheme("rowwise");
  opt.target = exmy::quant::parse_target("int8");
  const std::vector<float> x = {2.0f, 1.0f, -0.5f, 0.0f, 0.1f, -3.0f, 0.25f, 1e-3f};
  const auto q = exmy::quant::quantize(x, {2, 4}, opt);
  const std::int8_t want[] = {127, 64, -32, 0, 4, -127, 11, 0};
  for (std::size_t i = 0; i < 8; ++i) {
    expect(static_cast<std::int8_t>(q.codes[i]) == want[i],
           "rowwise int8 code " + std::to_string(i));
  }
  expect(q.state.size() == 2 && q.state[0] == 2.0f && q.state[1] == 3.0f, "rowwise int8 absmax");
  std::printf("quantize rowwise int8: %zu codes, absmax %g %g\n", q.codes.size(),
              static_cast<double>(q.state[0]), static_cast<double>(q.state[1]));
}

// Inputs spread over many binades, zeros and sign changes (a deterministic generator: no seed).
float value(std::uint64_t& s, int lo, int hi) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  const std::uint32_t r = static_cast<std::uint32_t>(s >> 32);
  if ((r & 0xFF) == 0) return 0.0f;
  const int e = lo + static_cast<int>((r >> 8) % static_cast<std::uint32_t>(hi - lo + 1));
  const float m = 1.0f + static_cast<float>((r >> 16) & 0x7FFF) / 32768.0f;
  const float v = m * static_cast<float>(std::uint64_t{1} << (e + 40)) / 1099511627776.0f;
  return (r & 0x100) ? -v : v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: exmy_consumer OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  cast_check();
  quantize_check();

  constexpr std::size_t n = 4096;
  constexpr long steps = 3;
  std::uint64_t s = 20261201;
  std::vector<float> p0(n), g(n * steps);
  for (auto& x : p0) x = value(s, -12, 3);
  for (auto& x : g) x = value(s, -30, 2);
  try {
    exmy::io::write_npy(dir + "/p.npy", exmy::io::make_npy(p0));
    exmy::io::write_npy(dir + "/g.npy", exmy::io::make_npy(g, {steps, n}));
    // torch.optim.AdamW's CPU kernels (torch-cpu) and its CUDA kernels (torch-cuda), whose
    // denominator sqrt(v) * RN32(1/sqrt(bc2)) + eps is a multiply and an add that a contracting
    // build would fuse.
    for (const auto k : {native::TorchKernels::cpu, native::TorchKernels::cuda}) {
      const std::string sub = dir + (k == native::TorchKernels::cpu ? "/torch-cpu" : "/torch-cuda");
      std::vector<float> p = p0, m(n, 0.0f), v(n, 0.0f);
      exmy::optim::AdamHyper h;
      h.lr = 0.01;
      h.wd = 0.01;
      h.kernels = k;
      for (long t = 1; t <= steps; ++t) {
        // The step's scalars from the library (fp64 on the host, as CPython); the element
        // function is compiled in this file.
        const native::TorchAdamScalars sc = exmy::optim::torch_adam_scalars(h, t, true);
        for (std::size_t i = 0; i < n; ++i) {
          native::torch_adam_element(sc, native::Storage::f32, p[i], g[(t - 1) * n + i], m[i],
                                     v[i]);
        }
      }
      exmy::io::write_npy(sub + "/params.npy", exmy::io::make_npy(p));
      exmy::io::write_npy(sub + "/state1.npy", exmy::io::make_npy(m));
      exmy::io::write_npy(sub + "/state2.npy", exmy::io::make_npy(v));
      std::printf("adamw: %zu elements, %ld steps -> %s/params.npy state1.npy state2.npy\n", n,
                  steps, sub.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exmy_consumer: %s\n", e.what());
    return 2;
  }
  return failures == 0 ? 0 : 1;
}
