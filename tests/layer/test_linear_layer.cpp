// The layers of sim/layer/ against references written from docs/SEMANTICS.md 16 (plain fp32
// arithmetic of the host, one operation per line, rounding to nearest even where the document
// says RN32), plus the properties the papers' algorithms imply (the erratum, SwitchBackM's
// sharing, masked outputs on the grid), and the CLI contract (exit 2, nothing written).
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/io/npy.hpp"
#include "sim/layer/linear_layer.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/sfu_sm90.hpp"
#include "sim/sfu/sfu_tables.hpp"

using namespace exmy;
using namespace exmy::layer;

namespace {

// Normal values rounded to the dtype, from a fixed seed per call site.
std::vector<float> bf16_values(std::size_t n, std::uint32_t seed, float scale,
                               DType dt = DType::bf16) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = to_dtype(d(rng), dt);
  return v;
}

LayerConfig config(const std::string& kind, DType d = DType::bf16,
                   const std::string& accum = "fp32-seq") {
  LayerConfig c;
  parse_kind(kind, c);
  c.dtype = d;
  c.accum = gemm::parse_accum_model(accum, dtype_bits(d));
  return c;
}

// --- references from the document -------------------------------------------------------------
// SEMANTICS 7.3: q = rne(y), y = RN32(127 RN32(x / a)) (div-mul) or RN32(127 RN32(x RN32(1/a)))
// (recip-mul) or RN32(x RN32(127 / a)) (mul-recip) or, bitsandbytes' kInt8VectorQuant,
// x ⊗ (127 ⊗ rcp.approx(a)) (fdividef-mul; rcp.approx is the measured instruction of 17.2; the
// FTZ of its multiplies never acts on fp16 inputs), clamped to [-127, 127]; a = 0 gives 0.
int q8(float x, float a, int order) {
  if (a == 0.0f) return 0;
  float y;
  if (order == 3) {
    const float s = 127.0f * native::sfu_rcp_f(sfu::sm90_rcp_view(), a);
    y = x * s;
  } else if (order == 0) {
    const float t = x / a;
    y = 127.0f * t;
  } else if (order == 1) {
    const float r = 1.0f / a;
    const float t = x * r;
    y = 127.0f * t;
  } else {
    const float s = 127.0f / a;
    y = x * s;
  }
  const float q = std::nearbyint(y);
  return static_cast<int>(std::fmax(-127.0f, std::fmin(127.0f, q)));
}
float absmax(const std::vector<float>& v, std::size_t begin, std::size_t end, std::size_t step) {
  float a = 0.0f;
  for (std::size_t i = begin; i < end; i += step) a = std::fmax(a, std::fabs(v[i]));
  return a;
}
// SEMANTICS 8.2, switchback order: RN32(sc RN32(sr RN32(RN32(acc) d))), d = RN32(1/16129).
float deq_switchback(long acc, float sr, float sc) {
  const float d = static_cast<float>(1.0 / 16129.0);
  const float t1 = static_cast<float>(acc) * d;
  const float t2 = sr * t1;
  return sc * t2;
}
// bnb order: fma(RN32(RN32(RN32(acc) sr) sc), 6.200012e-05f, +0).
float deq_bnb(long acc, float sr, float sc) {
  const float t1 = static_cast<float>(acc) * sr;
  const float t2 = t1 * sc;
  return std::fma(t2, 6.200012e-05f, 0.0f);
}

}  // namespace

TEST_CASE("SwitchBack forward and X_grad equal the document's formulas (erratum: G's state)",
          "[layer]") {
  const std::size_t b = 5, n = 7, m = 3;
  const std::vector<float> x = bf16_values(b * n, 1, 2.0f), w = bf16_values(m * n, 2, 0.1f),
                           g = bf16_values(b * m, 3, 1e-3f);
  const LayerResult r = run_layer(config("switchback"), {b, n, m}, x, w, g);
  const float aw = absmax(w, 0, w.size(), 1);
  for (std::size_t i = 0; i < b; ++i) {
    const float ax = absmax(x, i * n, (i + 1) * n, 1);
    const float ag = absmax(g, i * m, (i + 1) * m, 1);
    for (std::size_t j = 0; j < m; ++j) {
      long acc = 0;
      for (std::size_t k = 0; k < n; ++k)
        acc += long{q8(x[i * n + k], ax, 0)} * q8(w[j * n + k], aw, 1);
      REQUIRE(r.y[i * m + j] == to_dtype(deq_switchback(acc, ax, aw), DType::bf16));
    }
    for (std::size_t j = 0; j < n; ++j) {
      long acc = 0;
      for (std::size_t k = 0; k < m; ++k)
        acc += long{q8(g[i * m + k], ag, 0)} * q8(w[k * n + j], aw, 1);
      REQUIRE(r.x_grad[i * n + j] == to_dtype(deq_switchback(acc, ag, aw), DType::bf16));
    }
  }
  // The erratum matters: G's scale is 1e-3 of X's, so dequantizing with state_X would be off by
  // orders of magnitude; with state_G the result is within int8 noise of G W.
  for (std::size_t i = 0; i < b; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double exact = 0, mag = 0;
      for (std::size_t k = 0; k < m; ++k) {
        exact += double{g[i * m + k]} * w[k * n + j];
        mag += std::fabs(double{g[i * m + k]} * w[k * n + j]);
      }
      // int8 noise: each operand within 1/254 of its row's / tensor's absmax, relative.
      REQUIRE(std::fabs(r.x_grad[i * n + j] - exact) <=
              0.03 * mag + std::ldexp(std::fabs(exact), -8));
    }
}

TEST_CASE("SwitchBack's W_grad is the 16-bit product G^T X under the accumulation model",
          "[layer]") {
  const std::size_t b = 9, n = 4, m = 3;
  // Small integers: every product and sum is exact in fp32 and bf16, whatever the order.
  std::vector<float> x(b * n), w(m * n), g(b * m);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(int(i % 7) - 3);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(int(i % 5) - 2);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(int(i % 3) - 1);
  for (const char* accum : {"fp32-seq", "pairwise", "exact", "cublas-sm90"}) {
    const LayerResult r = run_layer(config("switchback", DType::bf16, accum), {b, n, m}, x, w, g);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        float s = 0;
        for (std::size_t k = 0; k < b; ++k) s += g[k * m + i] * x[k * n + j];
        REQUIRE(r.w_grad[i * n + j] == s);
      }
    // plain: all three products exact here.
    const LayerResult p = run_layer(config("plain", DType::bf16, accum), {b, n, m}, x, w, g);
    REQUIRE(p.w_grad == r.w_grad);
    for (std::size_t i = 0; i < b; ++i)
      for (std::size_t j = 0; j < m; ++j) {
        float s = 0;
        for (std::size_t k = 0; k < n; ++k) s += x[i * n + k] * w[j * n + k];
        REQUIRE(p.y[i * m + j] == s);
      }
  }
}

TEST_CASE("SwitchBackM shares SwitchBack's forward and X_grad; its W_grad reads dequantized X",
          "[layer]") {
  const std::size_t b = 16, n = 8, m = 4;
  const std::vector<float> x = bf16_values(b * n, 4, 1.0f), w = bf16_values(m * n, 5, 0.2f),
                           g = bf16_values(b * m, 6, 0.01f);
  const LayerResult sb = run_layer(config("switchback"), {b, n, m}, x, w, g);
  const LayerResult sm = run_layer(config("switchback-m"), {b, n, m}, x, w, g);
  REQUIRE(sm.y == sb.y);
  REQUIRE(sm.x_grad == sb.x_grad);
  // W_grad from x^ = RN32(RN32(a q) RN32(1/127)) rounded to bf16 (SEMANTICS 7.3): recompute.
  const float inv127 = 1.0f / 127.0f;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      float s = 0;
      for (std::size_t k = 0; k < b; ++k) {
        const float a = absmax(x, k * n, (k + 1) * n, 1);
        const float t = a * static_cast<float>(q8(x[k * n + j], a, 0));
        const float xh = to_dtype(t * inv127, DType::bf16);
        s = std::fma(g[k * m + i], xh, s);
      }
      REQUIRE(sm.w_grad[i * n + j] == to_dtype(s, DType::bf16));
    }
}

TEST_CASE("SwitchBackQ: row-wise W forward, column-wise W backward (eq. 4)", "[layer]") {
  const std::size_t b = 3, n = 6, m = 4;
  const std::vector<float> x = bf16_values(b * n, 7, 1.0f), w = bf16_values(m * n, 8, 0.5f),
                           g = bf16_values(b * m, 9, 0.1f);
  const LayerResult r = run_layer(config("switchback-q"), {b, n, m}, x, w, g);
  for (std::size_t i = 0; i < b; ++i) {
    const float ax = absmax(x, i * n, (i + 1) * n, 1), ag = absmax(g, i * m, (i + 1) * m, 1);
    for (std::size_t j = 0; j < m; ++j) {
      const float aw = absmax(w, j * n, (j + 1) * n, 1);
      long acc = 0;
      for (std::size_t k = 0; k < n; ++k)
        acc += long{q8(x[i * n + k], ax, 0)} * q8(w[j * n + k], aw, 0);
      REQUIRE(r.y[i * m + j] == to_dtype(deq_switchback(acc, ax, aw), DType::bf16));
    }
    for (std::size_t j = 0; j < n; ++j) {
      const float awc = absmax(w, j, w.size(), n);  // column j of W
      long acc = 0;
      for (std::size_t k = 0; k < m; ++k)
        acc += long{q8(g[i * m + k], ag, 0)} * q8(w[k * n + j], awc, 0);
      REQUIRE(r.x_grad[i * n + j] == to_dtype(deq_switchback(acc, ag, awc), DType::bf16));
    }
  }
}

TEST_CASE("LLM.int8(): all three products int8 with bitsandbytes' epilogue", "[layer]") {
  const std::size_t b = 6, n = 5, m = 4;
  const DType h = DType::fp16;
  const std::vector<float> x = bf16_values(b * n, 10, 1.0f, h), w = bf16_values(m * n, 11, 0.5f, h),
                           g = bf16_values(b * m, 12, 0.1f, h);
  const LayerResult r = run_layer(config("llm-int8", h), {b, n, m}, x, w, g);
  for (std::size_t i = 0; i < b; ++i) {
    const float ax = absmax(x, i * n, (i + 1) * n, 1);
    for (std::size_t j = 0; j < m; ++j) {
      const float aw = absmax(w, j * n, (j + 1) * n, 1);
      long acc = 0;
      for (std::size_t k = 0; k < n; ++k)
        acc += long{q8(x[i * n + k], ax, 3)} * q8(w[j * n + k], aw, 3);
      REQUIRE(r.y[i * m + j] == to_dtype(deq_bnb(acc, ax, aw), DType::fp16));
    }
  }
  // W_grad[i][j] = sum_k G[k][i] X[k][j] with G and X quantized column-wise (inner dim b).
  for (std::size_t i = 0; i < m; ++i) {
    const float agc = absmax(g, i, g.size(), m);
    for (std::size_t j = 0; j < n; ++j) {
      const float axc = absmax(x, j, x.size(), n);
      long acc = 0;
      for (std::size_t k = 0; k < b; ++k)
        acc += long{q8(g[k * m + i], agc, 3)} * q8(x[k * n + j], axc, 3);
      REQUIRE(r.w_grad[i * n + j] == to_dtype(deq_bnb(acc, agc, axc), DType::fp16));
    }
  }
}

TEST_CASE("LLM.int8(): __fdividef's scale differs from the correctly rounded 127/absmax",
          "[layer]") {
  // Regression for the llm-int8 kind's quantization order (it used mul-recip): over every
  // positive normal fp16 absmax, count where 127 ⊗ rcp.approx(a) != RN32(127 / a), and where
  // that changes a code of an input placed half a code step from a rounding boundary.
  int scale_differs = 0, code_differs = 0;
  for (std::uint32_t h = 0x0400; h < 0x7C00; ++h) {
    const float a =
        std::ldexp(static_cast<float>(1024 + (h & 0x3FF)), static_cast<int>(h >> 10) - 25);
    const float s_bnb = 127.0f * native::sfu_rcp_f(sfu::sm90_rcp_view(), a);
    const float s_ieee = 127.0f / a;
    if (s_bnb != s_ieee) ++scale_differs;
    // x = a (k + 0.5) / 127 for k = 0..126: exactly halfway in exact arithmetic.
    for (int k = 0; k < 127; k += 7) {
      const float x = a * (static_cast<float>(k) + 0.5f) / 127.0f;
      if (q8(x, a, 3) != q8(x, a, 2)) ++code_differs;
    }
  }
  INFO("scale differs for " << scale_differs << " of 30720 absmax values, codes in "
                            << code_differs);
  CHECK(scale_differs > 0);
  CHECK(code_differs > 0);
}

TEST_CASE("bitsandbytes' MM_DEQUANT_CONST is RN32(1/127^2); its fma turns a -0 product into +0",
          "[layer]") {
  REQUIRE(6.200012e-05f == static_cast<float>(1.0 / 16129.0));
  // acc = -1, sr = 1e-38 (subnormal product RN32(-1e-38 * 2^-30) = -0): fma(-0, c, +0) = +0.
  const float v =
      native::dequant_int8_product(-1, 1e-38f, std::ldexp(1.0f, -30), native::DequantOrder::bnb);
  REQUIRE(v == 0.0f);
  REQUIRE(!std::signbit(v));
  REQUIRE(std::signbit(native::dequant_int8_product(-1, 1e-38f, std::ldexp(1.0f, -30),
                                                    native::DequantOrder::switchback)));
}

TEST_CASE(
    "masked layers (figure 11): every output on the grid; e8m7 on bf16 is the plain layer "
    "for normal values",
    "[layer]") {
  const std::size_t b = 8, n = 8, m = 8;
  const std::vector<float> x = bf16_values(b * n, 13, 1.0f), w = bf16_values(m * n, 14, 1.0f),
                           g = bf16_values(b * m, 15, 1.0f);
  const LayerConfig c = config("masked:e4m3");
  const LayerResult r = run_layer(c, {b, n, m}, x, w, g);
  auto on_grid = [&](float v) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    return exmy::mask_fp32(u, 4, 3, MaskOuter::clamp, MaskInner::min) == u;
  };
  for (const auto* out : {&r.y, &r.x_grad, &r.w_grad})
    for (float v : *out) REQUIRE(on_grid(v));
  const LayerResult e87 = run_layer(config("masked:e8m7"), {b, n, m}, x, w, g);
  const LayerResult plain = run_layer(config("plain"), {b, n, m}, x, w, g);
  REQUIRE(e87.y == plain.y);
  REQUIRE(e87.x_grad == plain.x_grad);
  REQUIRE(e87.w_grad == plain.w_grad);
}

TEST_CASE("float8 baselines: tensor-wise X, W, G; SwitchBack-fp8 keeps W_grad in 16 bits",
          "[layer]") {
  const std::size_t b = 12, n = 10, m = 6;
  const std::vector<float> x = bf16_values(b * n, 16, 1.0f), w = bf16_values(m * n, 17, 0.3f),
                           g = bf16_values(b * m, 18, 0.01f);
  const LayerResult t = run_layer(config("fp8-tensorwise"), {b, n, m}, x, w, g);
  const LayerResult s = run_layer(config("switchback-fp8"), {b, n, m}, x, w, g);
  const LayerResult p = run_layer(config("plain"), {b, n, m}, x, w, g);
  REQUIRE(s.w_grad == p.w_grad);
  // Within float8 noise of the plain layer (e4m3: 2^-4 relative per operand; e5m2: 2^-3).
  double num = 0, den = 0;
  for (std::size_t i = 0; i < p.y.size(); ++i) {
    num += (t.y[i] - p.y[i]) * double(t.y[i] - p.y[i]);
    den += p.y[i] * double(p.y[i]);
  }
  REQUIRE(num / den < 0.01);
  REQUIRE(num / den > 0.0);
}

TEST_CASE("layers reject values outside the dtype, bad shapes and bad kinds", "[layer]") {
  LayerConfig c = config("switchback");
  const std::vector<float> ok(4, 1.0f);
  REQUIRE_THROWS_AS(run_layer(c, {2, 2, 2}, std::vector<float>{1.0f, 1.0f, 1.0f, 1.1f}, ok, ok),
                    InputError);
  REQUIRE_THROWS_AS(run_layer(c, {2, 2, 2}, std::vector<float>(3, 1.0f), ok, ok), InputError);
  REQUIRE_THROWS_AS(parse_kind("switchback-z", c), InputError);
  REQUIRE_THROWS_AS(parse_kind("masked:e9m2", c), InputError);
  REQUIRE_THROWS_AS(parse_kind("masked:e4m3x", c), InputError);
  REQUIRE_THROWS_AS(parse_dtype("fp8"), InputError);
}

TEST_CASE("exmy layer: outputs as dtype codes, together or not at all", "[cli][layer]") {
  const char* cli = std::getenv("EXMY_CLI");
  if (!cli) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  namespace fs = std::filesystem;
  const fs::path d = fs::temp_directory_path() / ("exmy_test_layer_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string s = d.string();
  const std::size_t b = 4, n = 3, m = 2;
  const std::vector<float> x = bf16_values(b * n, 19, 1.0f), w = bf16_values(m * n, 20, 1.0f),
                           g = bf16_values(b * m, 21, 1.0f);
  io::write_npy(s + "/x.npy", io::make_npy(x, {b, n}));
  io::write_npy(s + "/w.npy", io::make_npy(w, {m, n}));
  io::write_npy(s + "/g.npy", io::make_npy(g, {b, m}));
  io::write_npy(s + "/g_bad.npy", io::make_npy(g, {m, b}));
  auto run = [&](const std::string& args) {
    const int rc = std::system((std::string(cli) + " layer " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  const std::string in = "--x " + s + "/x.npy --w " + s + "/w.npy ";
  REQUIRE(run("--kind switchback " + in + "--g " + s + "/g.npy --out-dir " + s + "/out") == 0);
  const LayerResult want = run_layer(config("switchback"), {b, n, m}, x, w, g);
  const auto y = io::as_u16(io::read_npy(s + "/out/y.npy"), "y");
  REQUIRE(y.size() == b * m);
  for (std::size_t i = 0; i < y.size(); ++i) {
    std::uint32_t u = std::uint32_t{y[i]} << 16;
    float f;
    std::memcpy(&f, &u, 4);
    REQUIRE(f == want.y[i]);
  }
  REQUIRE(fs::exists(s + "/out/x_grad.npy"));
  REQUIRE(fs::exists(s + "/out/w_grad.npy"));
  // Existing output directory, shape mismatch, bad kind, bad accum: exit 2, nothing written.
  REQUIRE(run("--kind switchback " + in + "--g " + s + "/g.npy --out-dir " + s + "/out") == 2);
  REQUIRE(run("--kind switchback " + in + "--g " + s + "/g_bad.npy --out-dir " + s + "/o2") == 2);
  REQUIRE(run("--kind nope " + in + "--g " + s + "/g.npy --out-dir " + s + "/o3") == 2);
  REQUIRE(run("--kind plain --accum hw:k=2 " + in + "--g " + s + "/g.npy --out-dir " + s + "/o4") ==
          2);
  for (const char* o : {"/o2", "/o3", "/o4", "/o2.partial"}) REQUIRE(!fs::exists(s + o));
  // cublas-sm90 on these tiny products (4 x 2 x 3 ...) lies outside its verified set: one line
  // per product on stderr naming the rule; --strict refuses (exit 2) and writes nothing.
  const std::string err = s + "/err.txt";
  const int plain =
      std::system((std::string(cli) + " layer --kind plain --accum cublas-sm90 " + in + "--g " + s +
                   "/g.npy --out-dir " + s + "/o5 >/dev/null 2>" + err)
                      .c_str());
  REQUIRE(WIFEXITED(plain));
  REQUIRE(WEXITSTATUS(plain) == 0);
  std::ifstream e(err);
  const std::string said((std::istreambuf_iterator<char>(e)), std::istreambuf_iterator<char>());
  REQUIRE(said.find("exmy layer: Y: warning: --accum cublas-sm90") != std::string::npos);
  REQUIRE(said.find("lies outside the verified set") != std::string::npos);
  REQUIRE(run("--kind plain --accum cublas-sm90 --strict " + in + "--g " + s + "/g.npy --out-dir " +
              s + "/o6") == 2);
  REQUIRE(!fs::exists(s + "/o6"));
  fs::remove_all(d);
}

namespace {
// The vector primitives of the CPU reference with LayerEngine's default view forms: the layer as
// it ran before it streamed (contiguous copies, whole outputs), and as the GPU engine runs it.
class VectorEngine final : public LayerEngine {
 public:
  Int8 quantize_int8(const std::vector<float>& x, std::size_t rows, std::size_t cols, Gran gran,
                     native::ScaleOrder order) override {
    return cpu_engine().quantize_int8(x, rows, cols, gran, order);
  }
  std::vector<float> int8_product(const Int8& a, std::size_t rows, const Int8& b, std::size_t cols,
                                  std::size_t k, native::DequantOrder order, DType d) override {
    return cpu_engine().int8_product(a, rows, b, cols, k, order, d);
  }
  std::vector<float> dequantize_int8_rows(const Int8& q, std::size_t rows, std::size_t cols,
                                          DType d) override {
    return cpu_engine().dequantize_int8_rows(q, rows, cols, d);
  }
  std::vector<float> fake_float8(const std::vector<float>& x, std::size_t rows, std::size_t cols,
                                 Gran gran, const FloatFormat& f, DType d) override {
    return cpu_engine().fake_float8(x, rows, cols, gran, f, d);
  }
  std::vector<float> gemm(const std::vector<float>& a, std::size_t rows,
                          const std::vector<float>& b, std::size_t cols, std::size_t k,
                          const gemm::AccumModel& m, DType d) override {
    return cpu_engine().gemm(a, rows, b, cols, k, m, d);
  }
  std::vector<float> mask(const std::vector<float>& v, const LayerConfig& cfg) override {
    return cpu_engine().mask(v, cfg);
  }
};

std::vector<std::uint32_t> bits_of_all(const std::vector<float>& v) {
  std::vector<std::uint32_t> r(v.size());
  if (!v.empty()) std::memcpy(r.data(), v.data(), v.size() * 4);
  return r;
}

// The dtype's code of each value (exact: values of the dtype).
std::vector<std::uint16_t> codes_of(const std::vector<float>& v, DType d) {
  std::vector<std::uint16_t> c(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    c[i] = static_cast<std::uint16_t>(
        native::convert(formats::fp32, dtype_format(d), Rounding{}, native::bits_of(v[i]), 0).code);
  }
  return c;
}
}  // namespace

// Issue 36: the CPU reference streams (prepared operands computed where the products read them,
// int8 tiles, outputs a block of rows at a time); its bits must be those of the vector
// primitives. Shapes with several blocks of rows in every product (b 70 > the 32 and 64 rows of
// a block at n = 16384, W_grad's B in 3 blocks), NaN / inf / -0 / subnormal inputs, and 16-bit
// inputs read as codes (view_of_codes) against the same values as fp32.
TEST_CASE("the streamed layer equals the vector primitives, and codes equal their values",
          "[layer][stream]") {
  const std::size_t b = 70, n = 16384, m = 5;
  VectorEngine vec;
  int compared = 0;
  for (const DType dt : {DType::fp32, DType::bf16, DType::fp16}) {
    std::vector<float> x = bf16_values(b * n, 31, 3.0f, dt), w = bf16_values(m * n, 32, 0.5f, dt),
                       g = bf16_values(b * m, 33, 0.01f, dt);
    x[5] = NAN;
    x[n + 7] = INFINITY;
    x[2 * n + 1] = -0.0f;
    w[3] = to_dtype(1e-40f, dt);
    g[4] = -INFINITY;
    for (std::size_t k = 0; k < n; ++k) x[3 * n + k] = 0.0f;  // a zero row
    for (const std::string kind : {"plain", "switchback", "switchback-m", "switchback-q",
                                   "llm-int8", "fp8-tensorwise", "switchback-fp8", "masked:e4m3"}) {
      for (const std::string accum : {"fp32-seq", "sm90"}) {
        if (accum == "sm90" && kind != "plain" && kind != "fp8-tensorwise" &&
            kind != "switchback") {
          continue;
        }
        INFO(kind << " " << dtype_name(dt) << " " << accum);
        const LayerConfig c = config(kind, dt, accum);
        const LayerResult want = run_layer(c, {b, n, m}, x, w, g, vec);
        const LayerResult got = run_layer(c, {b, n, m}, x, w, g);
        REQUIRE(bits_of_all(got.y) == bits_of_all(want.y));
        REQUIRE(bits_of_all(got.x_grad) == bits_of_all(want.x_grad));
        REQUIRE(bits_of_all(got.w_grad) == bits_of_all(want.w_grad));
        ++compared;
        if (dt == DType::fp32) continue;
        const std::vector<std::uint16_t> xc = codes_of(x, dt), wc = codes_of(w, dt),
                                         gc = codes_of(g, dt);
        LayerResult r;
        const auto into = [](std::vector<float>& v, std::size_t rows, std::size_t cols) {
          v.assign(rows * cols, 0.0f);
          return [&v, cols](std::size_t i0, std::size_t i1, const float* p) {
            std::copy(p, p + (i1 - i0) * cols, v.begin() + static_cast<std::ptrdiff_t>(i0 * cols));
          };
        };
        run_layer_rows(c, {b, n, m}, view_of_codes(xc.data(), b, n, dt),
                       view_of_codes(wc.data(), m, n, dt), view_of_codes(gc.data(), b, m, dt),
                       {into(r.y, b, m), into(r.x_grad, b, n), into(r.w_grad, m, n)});
        REQUIRE(bits_of_all(r.y) == bits_of_all(want.y));
        REQUIRE(bits_of_all(r.x_grad) == bits_of_all(want.x_grad));
        REQUIRE(bits_of_all(r.w_grad) == bits_of_all(want.w_grad));
      }
    }
  }
  REQUIRE(compared == 3 * (8 + 3));
}
