// bitsandbytes' 8-bit optimizer kernels (gpu/optim/optim_bnb8.cu, optim_bnb8_ademamix.cu) on the
// NaN-state table of tests/optim/bnb8_nan_cases.hpp against the CPU reference, every output bit:
// resumed states whose fp32 value before the sign guard is NaN (code 0.0 ⊗ absmax inf, a NaN
// absmax of either sign, a NaN gradient), ±inf and ±0. The reference reads an arithmetic NaN as
// CUDA's 0x7FFFFFFF (f32_nan_as_cuda, docs/SEMANTICS.md 9.4): this test is where the device
// confirms it, by the codes the kernels write (the table's expectation, asserted on the GPU's
// codes directly, not only through the comparison). Layouts: whole aligned blocks (the vectorised
// kernels where they exist), a partial last block, a misaligned parameter pointer (element-wise
// kernels); fp32 and bf16 parameters; blocks 256 and 2048; exact and bnb-cuda. Codes equal,
// floats equal bit for bit with any NaN equal to any NaN (SEMANTICS 9.1: a NaN written inside a
// step is the platform's).
#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu/optim/optim.hpp"
#include "sim/optim/registry.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/optim/bnb8_nan_cases.hpp"

using namespace exmy;
using exmy::gpu::testing::DeviceBytes;
using native::Storage;

namespace {

bool same_float(float a, float b) {
  return native::f32_bits(a) == native::f32_bits(b) || (a != a && b != b);
}
template <class T>
std::size_t first_diff(const std::vector<T>& a, const std::vector<T>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if constexpr (std::is_same_v<T, float>) {
      if (!same_float(a[i], b[i])) return i;
    } else if (a[i] != b[i]) {
      return i;
    }
  }
  return a.size();
}

std::uint16_t encode(float x, Storage st) {
  return st == Storage::bf16 ? native::bf16_from_f32(x) : native::f16_from_f32(x);
}
float decode(std::uint16_t c, Storage st) {
  return st == Storage::bf16 ? native::f32_from_bf16(c) : native::f32_from_f16(c);
}

struct Layout {
  std::size_t blocks;  // whole blocks
  std::size_t extra;   // elements of a partial last block
  std::size_t pad;     // bytes before p and g (4: misaligned for the vector loads)
};

void gpu_step(const bnb8_nan::Row& r, Storage st, DeviceBytes& dp, DeviceBytes& dg,
              const gpu::Bnb8DeviceState& ds, std::size_t n) {
  const native::Bnb8Scalars sc = optim::bnb8_scalars(bnb8_nan::hyper(r), r.step, false);
  const bool f32 = st == Storage::f32;
  auto* p32 = static_cast<float*>(dp.get());
  const auto* g32 = static_cast<const float*>(dg.get());
  auto* p16 = static_cast<std::uint16_t*>(dp.get());
  const auto* g16 = static_cast<const std::uint16_t*>(dg.get());
  switch (r.opt) {
    case bnb8_nan::Opt::adam:
      f32 ? gpu::bnb_adam8_step(sc, p32, g32, ds, n) : gpu::bnb_adam8_step(sc, st, p16, g16, ds, n);
      return;
    case bnb8_nan::Opt::momentum:
      f32 ? gpu::bnb_momentum8_step(sc, p32, g32, ds, n)
          : gpu::bnb_momentum8_step(sc, st, p16, g16, ds, n);
      return;
    case bnb8_nan::Opt::ademamix:
      f32 ? gpu::bnb_ademamix_step(sc, p32, g32, ds, n)
          : gpu::bnb_ademamix_step(sc, st, p16, g16, ds, n);
      return;
    default:
      f32 ? gpu::bnb1_step(sc, bnb8_nan::bnb1_op(r.opt), p32, g32, ds, n)
          : gpu::bnb1_step(sc, bnb8_nan::bnb1_op(r.opt), st, p16, g16, ds, n);
  }
}

// Returns the number of failed comparisons (0: the GPU wrote the reference's bits and, on whole
// blocks, the table's codes).
int run(const bnb8_nan::Row& r, Storage st, int block, const Layout& L) {
  const std::size_t B = static_cast<std::size_t>(block), n = L.blocks * B + L.extra;
  const std::size_t nb = (n + B - 1) / B;
  const bool f32 = st == Storage::f32;
  const std::size_t es = f32 ? 4 : 2;
  optim::Bnb8State S = bnb8_nan::initial_state(r, n, block);
  std::vector<float> p(n, 1.0f);
  const std::vector<float> g = bnb8_nan::gradient(r, n, st);
  DeviceBytes dp(n * es, L.pad), dg(n * es, L.pad), dq1(S.q1.size()), dq2(S.q2.size() + 4),
      da1(S.absmax1.size() * 4), da2(S.absmax2.size() * 4 + 4);
  const auto upload = [&](DeviceBytes& d, const std::vector<float>& v) {
    if (f32) return d.upload(v);
    std::vector<std::uint16_t> h(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) h[i] = encode(v[i], st);
    d.upload(h);
  };
  upload(dp, p);
  upload(dg, g);
  dq1.upload(S.q1);
  if (!S.q2.empty()) dq2.upload(S.q2);
  da1.upload(S.absmax1);
  if (!S.absmax2.empty()) da2.upload(S.absmax2);
  gpu::Bnb8DeviceState ds;
  ds.block = block;
  ds.q1 = static_cast<std::uint8_t*>(dq1.get());
  ds.q2 = static_cast<std::uint8_t*>(dq2.get());
  ds.absmax1 = static_cast<float*>(da1.get());
  ds.absmax2 = static_cast<float*>(da2.get());
  gpu_step(r, st, dp, dg, ds, n);
  bnb8_nan::cpu_step(r, st, p, g, S);

  std::vector<float> gp(n);
  if (f32) {
    gp = dp.download<float>(n);
  } else {
    const auto h = dp.download<std::uint16_t>(n);
    for (std::size_t i = 0; i < n; ++i) gp[i] = decode(h[i], st);
  }
  const auto q1 = dq1.download<std::uint8_t>(S.q1.size());
  int failed = 0;
  const auto check = [&](const char* what, std::size_t at, std::size_t size) {
    if (at == size) return;
    ++failed;
    UNSCOPED_INFO(what << " differs first at " << at);
  };
  check("p", first_diff(gp, p), n);
  check("q1", first_diff(q1, S.q1), q1.size());
  check("absmax1", first_diff(da1.download<float>(S.absmax1.size()), S.absmax1), S.absmax1.size());
  if (!S.q2.empty()) {
    check("q2", first_diff(dq2.download<std::uint8_t>(n), S.q2), n);
    check("absmax2", first_diff(da2.download<float>(nb), S.absmax2), nb);
  }
  // The table's codes on the GPU's own output (whole blocks only: a partial block's padding
  // lanes take part in its absmax).
  const std::size_t whole = L.blocks * B;
  std::size_t wrong = 0;
  for (std::size_t k = 0; k < q1.size(); ++k) {
    const std::size_t i = k % n;
    const int want = i % 2 == 0 ? r.want_even : r.want_odd;
    if (i < whole && want >= 0 && q1[k] != want) {
      if (wrong == 0) UNSCOPED_INFO("GPU code " << int{q1[k]} << " at " << k << ", want " << want);
      ++wrong;
    }
  }
  failed += wrong != 0;
  return failed;
}

std::string describe(const bnb8_nan::Row& r, Storage st, int block, const Layout& L) {
  return std::string(bnb8_nan::opt_name(r.opt)) + (r.sm90 ? " bnb-cuda" : " exact") + ": " +
         r.name + " (t = " + std::to_string(r.step) + ", wd " + std::to_string(r.wd) + "), " +
         std::string(optim::dtype_name(st)) + ", block " + std::to_string(block) + ", " +
         std::to_string(L.blocks) + " blocks + " + std::to_string(L.extra) + ", pad " +
         std::to_string(L.pad);
}

void check_optimizer(bnb8_nan::Opt o) {
  std::size_t runs = 0;
  for (const bnb8_nan::Row& r : bnb8_nan::rows()) {
    if (r.opt != o) continue;
    for (const Storage st : {Storage::f32, Storage::bf16}) {
      for (const int block : {256, 2048}) {
        // 16 (256) / 4 (2048) whole blocks: several warps' or CTAs' blocks of the vectorised
        // kernels; then a partial last block; then a misaligned parameter pointer.
        const std::size_t wb = block == 256 ? 16 : 4;
        for (const Layout L : {Layout{wb, 0, 0}, Layout{wb, 77, 0}, Layout{wb, 0, 4}}) {
          INFO(describe(r, st, block, L));
          CHECK(run(r, st, block, L) == 0);
          ++runs;
        }
      }
    }
  }
  std::printf("%s NaN-state GPU cases: %zu runs\n", bnb8_nan::opt_name(o), runs);
}

}  // namespace

TEST_CASE("GPU adam8bit: NaN states requantize to code 255 as on the CPU", "[gpu][optim][bnb8]") {
  check_optimizer(bnb8_nan::Opt::adam);
}
TEST_CASE("GPU sgd8bit (momentum): NaN states requantize to code 255 as on the CPU",
          "[gpu][optim][bnb8]") {
  check_optimizer(bnb8_nan::Opt::momentum);
}
TEST_CASE("GPU rmsprop8bit: NaN states requantize to code 255 as on the CPU",
          "[gpu][optim][bnb8]") {
  check_optimizer(bnb8_nan::Opt::rmsprop);
}
TEST_CASE("GPU adagrad8bit: NaN states requantize to code 255 as on the CPU",
          "[gpu][optim][bnb8]") {
  check_optimizer(bnb8_nan::Opt::adagrad);
}
TEST_CASE("GPU lion8bit: NaN states requantize to code 255 as on the CPU", "[gpu][optim][bnb8]") {
  check_optimizer(bnb8_nan::Opt::lion);
}
TEST_CASE("GPU ademamix8bit: NaN m1/m2 requantize to code 255 as on the CPU",
          "[gpu][optim][bnb8]") {
  check_optimizer(bnb8_nan::Opt::ademamix);
}
#endif
