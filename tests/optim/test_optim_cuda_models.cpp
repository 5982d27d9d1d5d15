// The CUDA-side models of issue 33's last optimizers, on the CPU engine: ATen's CUDA reduction
// kernel (sim/native/torch_reduce_cuda.hpp) against reductions torch 2.11 computed on an H200
// (golden/peers/torch-cuda-adafactor-reduce, written by
// bench/peers/torch_adafactor_reduce_corpus.py from the probes of
// bench/peers/torch_adafactor_capture.py) and against the independently written one-output sum of
// sim/native/torch_mean_cuda.hpp; CUDA's rsqrtf (rsqrt.approx.f32) and Triton's libdevice powf
// (docs/SEMANTICS.md 9.2.7, 9.2.8) by invariants and the values the captures pinned; torchao-cuda's
// second-moment contraction per kernel form.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sim/io/npy.hpp"
#include "sim/native/libdevice_powf_triton.hpp"
#include "sim/native/optim_storage.hpp"
#include "sim/native/optim_torchao.hpp"
#include "sim/native/sfu_sm90.hpp"
#include "sim/native/torch_mean_cuda.hpp"
#include "sim/native/torch_reduce_cuda.hpp"
#include "sim/sfu/sfu_tables.hpp"
#include "tests/support/source_tree.hpp"

using namespace exmy;
using native::Storage;

namespace {

const std::filesystem::path kCorpus =
    exmy::testing::source_root() / "golden" / "peers" / "torch-cuda-adafactor-reduce";

std::vector<float> floats(const io::NpyArray& a) {
  std::vector<float> v(a.count());
  std::memcpy(v.data(), a.data.data(), v.size() * 4);
  return v;
}

// The output's bits in the capture's form: fp32 bits, or the 16-bit code.
std::uint32_t out_bits(float y, Storage st) {
  const float r = native::to_storage(y, st);
  std::uint32_t u;
  std::memcpy(&u, &r, 4);
  if (st == Storage::f32) return u;
  if (st == Storage::bf16) return u >> 16;
  return native::f16_from_f32(r);
}

}  // namespace

TEST_CASE("torch CUDA reductions: the H200 corpus (rows, columns, whole tensors, means)",
          "[optim][adafactor][cuda]") {
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(kCorpus)) {
    const std::string fn = e.path().filename().string();
    if (fn.rfind("x_", 0) != 0) continue;
    const std::string name = fn.substr(2, fn.size() - 6);  // kind_dtype_shape
    // kind: norm_last | norm_prev | norm_all | mean_prev
    const std::string kind = name.substr(0, name.find('_', 5));
    std::string rest = name.substr(kind.size() + 1);
    const std::string dt = rest.substr(0, rest.find('_'));
    std::vector<std::size_t> shape;
    std::stringstream ss(rest.substr(dt.size() + 1));
    for (std::string d; std::getline(ss, d, 'x');) shape.push_back(std::stoul(d));
    const Storage st = dt == "fp32" ? Storage::f32 : dt == "bf16" ? Storage::bf16 : Storage::f16;
    const std::vector<float> x = floats(io::read_npy(e.path().string()));
    const io::NpyArray y = io::read_npy((kCorpus / ("y_" + name + ".npy")).string());
    std::size_t total = 1;
    for (std::size_t d : shape) total *= d;
    REQUIRE(x.size() == total);
    // the geometry TensorIterator hands the kernel
    const std::size_t last = shape.back(), prev = shape.size() > 1 ? shape[shape.size() - 2] : 1;
    native::TorchReduceShape s;
    std::vector<std::int64_t> first;
    std::int64_t istride = 1;
    native::TorchReduceOp op = native::TorchReduceOp::norm2;
    if (kind == "norm_all") {
      s.outputs = 1;
      s.n = total;
    } else if (kind == "norm_last" || kind == "mean_prev") {
      // mean_prev reduces R of (..., R, 1): contiguous
      s.n = kind == "norm_last" ? last : prev;
      s.outputs = total / s.n;
      if (kind == "mean_prev") op = native::TorchReduceOp::sum;
    } else {  // norm_prev: columns (contiguous when the last dimension is 1)
      s.n = prev;
      s.outputs = total / prev;
      s.inner = last == 1;
      s.output_vec = s.inner ? 1 : native::torch_output_vec_size(last);
    }
    for (std::size_t o = 0; o < s.outputs; ++o) {
      first.push_back(s.inner ? static_cast<std::int64_t>(o * s.n)
                              : static_cast<std::int64_t>((o / last) * prev * last + o % last));
    }
    if (!s.inner) istride = static_cast<std::int64_t>(last);
    std::vector<float> acc;
    if (s.n == 1) {  // a size-1 reduced dimension: one fma(x, x, 0) (or 0 + x) per output
      for (std::size_t o = 0; o < s.outputs; ++o) {
        const float v = x[static_cast<std::size_t>(first[o])];
        acc.push_back(op == native::TorchReduceOp::norm2 ? native::rn_fma(v, v, 0.0f)
                                                         : native::rn_add(0.0f, v));
      }
    } else {
      acc =
          native::torch_cuda_reduce_acc(op, s, x.data(), first, istride, native::TorchCudaDevice{});
    }
    const float factor =
        native::rn_div(static_cast<float>(s.outputs), static_cast<float>(s.outputs * s.n));
    int differ = 0;
    for (std::size_t o = 0; o < s.outputs; ++o) {
      const float r = op == native::TorchReduceOp::norm2 ? native::rn_sqrt(acc[o])
                                                         : native::rn_mul(acc[o], factor);
      const std::uint32_t want = y.item_size() == 4
                                     ? reinterpret_cast<const std::uint32_t*>(y.data.data())[o]
                                     : reinterpret_cast<const std::uint16_t*>(y.data.data())[o];
      differ += out_bits(r, st) != want;
    }
    INFO(name);
    CHECK(differ == 0);
    ++files;
  }
  CHECK(files == 17);
}

TEST_CASE("torch CUDA reductions: one output equals torch_mean_cuda's sum",
          "[optim][adafactor][cuda]") {
  const unsigned seed = 20261202;
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  std::student_t_distribution<float> t2(2.0f);
  const std::size_t sizes[] = {1,   2,   3,    7,    31,    127,    128,    129,     511,
                               512, 513, 2047, 4099, 65537, 131073, 262147, 1000003, 4325377};
  for (std::size_t n : sizes) {
    std::vector<float> x(n);
    for (float& v : x) v = t2(rng);
    native::TorchReduceShape s;
    s.n = n;
    const float a = native::torch_cuda_reduce_acc(native::TorchReduceOp::sum, s, x.data(), {0}, 1,
                                                  native::TorchCudaDevice{})[0];
    INFO(n);
    CHECK(native::f32_bits(a) == native::f32_bits(native::torch_cuda_mean_sum(x.data(), n)));
  }
}

TEST_CASE("torch CUDA reductions: setReduceConfig's geometry", "[optim][adafactor][cuda]") {
  const native::TorchCudaDevice dev;
  native::TorchReduceShape s;
  // columns of (160, 1000) fp32: output_vec 4 caps the block at 128 threads: 32 x 4, block.y
  // splits the 160 rows (found on the capture: 0 of 1,000 differ; 16 rows per warp: 338)
  s.inner = false;
  s.outputs = 1000;
  s.n = 160;
  s.output_vec = native::torch_output_vec_size(1000);
  native::TorchReduceConfig c = native::torch_cuda_reduce_config(s, dev);
  CHECK(s.output_vec == 4);
  CHECK((c.bw == 32 && c.bh == 4 && c.y_reduce && !c.x_reduce && c.ctas == 1));
  // rows of (3, 128): vectorized at dim0 = 128 (>= 128; > 128 differs from the capture)
  s = {};
  s.outputs = 3;
  s.n = 128;
  c = native::torch_cuda_reduce_config(s, dev);
  CHECK((c.vectorize_input && c.bw == 32 && c.bh == 2 && c.y_splits_output));
  // one output of 4,325,377: 512 lanes, a global reduction
  s = {};
  s.n = 4325377;
  c = native::torch_cuda_reduce_config(s, dev);
  CHECK((c.bw == 512 && c.bh == 1 && c.ctas > 1));
}

TEST_CASE("CUDA rsqrtf: rsqrt.approx.f32 near 1/sqrt(x), subnormals scaled",
          "[optim][adafactor][cuda][sfu]") {
  const native::SfuTables& t = sfu::sm90_view();
  CHECK(std::isinf(native::sfu_rsqrt_full_f(t, 0.0f)));
  CHECK(native::sfu_rsqrt_full_f(t, INFINITY) == 0.0f);
  CHECK(std::isnan(native::sfu_rsqrt_full_f(t, -1.0f)));
  CHECK(native::sfu_rsqrt_full_f(t, 4.0f) == 0.5f);
  const unsigned seed = 33;
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::uint32_t> u(1, 0x7F7FFFFFu);
  int far = 0;
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t b = i < 1000 ? (u(rng) & 0x007FFFFFu) | 1u : u(rng);  // subnormals first
    const float x = native::f32_from_bits(b);
    const double want = 1.0 / std::sqrt(static_cast<double>(x));
    const double got = native::sfu_rsqrt_full_f(t, x);
    far += std::fabs(got - want) > 2.0 * std::ldexp(1.0, std::ilogb(want) - 23);  // 2 ulp
  }
  CHECK(far == 0);
}

TEST_CASE("Triton libdevice powf: the captured value, accuracy, special operands",
          "[torchao][pow]") {
  const native::SfuTables& t = sfu::sm90_view();
  // regression (the H200 capture of torchao AdamW8bit): pow(0.999f, 1) is one ulp below 0.999f
  CHECK(native::f32_bits(native::triton_powf(t, 0.999f, 1.0f)) == 0x3f7fbe76u);
  CHECK(native::triton_powf(t, 1.0f, NAN) == 1.0f);
  CHECK(native::triton_powf(t, 0.5f, 0.0f) == 1.0f);
  CHECK(native::triton_powf(t, 0.0f, 3.0f) == 0.0f);
  CHECK(std::isinf(native::triton_powf(t, 0.0f, -1.0f)));
  CHECK(std::isnan(native::triton_powf(t, -0.5f, 0.5f)));
  CHECK(native::triton_powf(t, -2.0f, 3.0f) < 0.0f);
  // near beta^t for the bases optimizers use (e = 0 and e != 0 reductions) and the steps of a
  // long run: the model's largest error there is 4.6 ulp (0.9 at t = 803; CUDA documents 4 ulp
  // for its powf); the device probe bench/peers/triton_pow_probe.py checks every value
  const float bases[] = {0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 0.95f, 0.99f, 0.999f, 0.9999f, 1.5f};
  int far = 0, off = 0, n = 0;
  for (float b : bases) {
    for (int s = 1; s <= 20000; s += (s < 100 ? 1 : 37)) {
      const float r = native::triton_powf(t, b, static_cast<float>(s));
      const double want = std::pow(static_cast<double>(b), s);
      if (want < 1e-37 || want > 1e37) continue;
      const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
      far += std::fabs(r - want) > 5.0 * ulp;
      off += r != static_cast<float>(want);
      ++n;
    }
  }
  std::printf("triton_powf: %d of %d differ from RN32(beta^t)\n", off, n);
  CHECK(far == 0);
}

TEST_CASE("torchao-cuda: the second moment's contraction per kernel form", "[torchao][cuda]") {
  // v_old = q*s quantized, g fp32: the state takes fma(w2, fma(-q, s, RN(g*g)), RN(q*s)); the
  // update of the two-kernel form fma(w2, fma(g, g, -RN(q*s)), RN(q*s)) (SEMANTICS 9.2.7)
  const native::SfuTables& t = sfu::sm90_view();
  native::TorchaoScalars sc;
  sc.eng = native::TorchaoEngine::inductor_triton;
  sc.sfu = &t;
  sc.lr = 1e-3f;
  sc.w1 = 0.1f;
  sc.w2 = 0.3f;  // a weight where the two contractions' difference reaches v's last bit
  sc.bc1 = 0.1f;
  sc.sbc2 = 0.0316227766f;
  sc.eps = 1e-8f;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> ug(0.5f, 2.0f);
  int state_diff = 0, split_same = 0, contraction_differs = 0, state_g_diff = 0, n = 0;
  for (int i = 0; i < 20000; ++i) {
    const float g = ug(rng) * 1e-2f, q = ug(rng) * 0.5f, s = 3e-4f * ug(rng);
    native::TorchaoOld m0, v0, vm;
    v0.q = q;
    v0.s = s;
    v0.v = native::rn_mul(q, s);
    v0.split = true;
    const float want_state =
        native::rn_fma(0.3f, native::rn_fma(-q, s, native::rn_mul(g, g)), native::rn_mul(q, s));
    float m, v, vmax;
    sc.v_param_split = false;
    const float p2 = native::torchao_adam_element(sc, 0.25f, g, m0, v0, vm, m, v, vmax);
    state_diff += native::f32_bits(v) != native::f32_bits(want_state);
    sc.v_param_split = true;
    float v1;
    const float p1 = native::torchao_adam_element(sc, 0.25f, g, m0, v0, vm, m, v1, vmax);
    state_diff += native::f32_bits(v1) != native::f32_bits(want_state);
    split_same += p1 == p2;
    // the two contractions differ (why the kernel form matters)
    const float other =
        native::rn_fma(0.3f, native::rn_fma(g, g, -native::rn_mul(q, s)), native::rn_mul(q, s));
    contraction_differs += native::f32_bits(other) != native::f32_bits(want_state);
    // fp32 AdamWFp8 on a (-1, 256) view (v_state_g): the state takes the recomputed form too
    // (regression: the H200 captures of 4096 and 17x256 differed in 2-6 parameters and 2-3
    // exp_avg_sq scales at step 4 while the state took the split form)
    sc.v_param_split = false;
    sc.v_state_g = true;
    float v2;
    native::torchao_adam_element(sc, 0.25f, g, m0, v0, vm, m, v2, vmax);
    state_g_diff += native::f32_bits(v2) != native::f32_bits(other);
    sc.v_state_g = false;
    ++n;
  }
  std::printf("contractions differ in %d of %d; updates in %d\n", contraction_differs, n,
              n - split_same);
  CHECK(state_diff == 0);
  CHECK(state_g_diff == 0);
  CHECK(contraction_differs > 0);
}

TEST_CASE("Triton libdevice powf: the H200 probe, 12 constant bases x t = 1..2000",
          "[torchao][pow][golden]") {
  const native::SfuTables& t = sfu::sm90_view();
  const std::filesystem::path dir = kCorpus.parent_path() / "triton-libdevice-pow";
  int files = 0, differ = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string fn = e.path().filename().string();
    if (fn.rfind("y_", 0) != 0) continue;
    const std::uint32_t base = static_cast<std::uint32_t>(std::stoul(fn.substr(2, 8), nullptr, 16));
    const io::NpyArray y = io::read_npy(e.path().string());
    const auto* want = reinterpret_cast<const std::uint32_t*>(y.data.data());
    for (std::size_t i = 0; i < y.count(); ++i) {
      const float r =
          native::triton_powf(t, native::f32_from_bits(base), static_cast<float>(i + 1));
      differ += native::f32_bits(r) != want[i];
    }
    ++files;
  }
  CHECK(files == 12);
  CHECK(differ == 0);
}
