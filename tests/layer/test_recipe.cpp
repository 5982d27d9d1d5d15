// exmy layer --recipe (sim/layer/recipe.cpp) against references written from the libraries'
// source, not from exmy's code: torchao 0.18.0 torchao/float8/float8_utils.py (amax_to_scale,
// _round_scale_down_to_power_of_2, to_fp8_saturated), float8_training_tensor.py
// (_ToFloat8ConstrFunc: tensor.to(float32) * scale), float8_ops.py (addmm_float8_unwrapped: the
// reciprocal scales, the row-wise post-scaling), config.py (which tensor is cast how); and
// TransformerEngine's pytorch/quantization.py (_update_amax_history,
// _default_get_amax_and_update_history, _default_sf_compute) and
// TransformerEngine/tests/pytorch/references/quantize_scale_calc.py (current scaling). The FP8
// elements are encoded by a nearest-value search over the format's decoded codes (written here from
// the OCP FP8 definitions), the products are fp32 FMA chains in k order (the `fp32-seq` model the
// configs below select).
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/layer/recipe.hpp"

using namespace exmy;
using namespace exmy::layer;

namespace {

float bf16(float x) {  // fp32 -> bf16 (round to nearest even), finite x
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// OCP FP8: e4m3fn (bias 7, no infinities, S.1111.111 NaN, max 448) and e5m2 (bias 15, IEEE).
struct Fp8 {
  int e_bits, m_bits, bias;
  bool fn;
  double value(int code) const {
    const int e = (code >> m_bits) & ((1 << e_bits) - 1), m = code & ((1 << m_bits) - 1);
    const double s = (code >> 7) ? -1.0 : 1.0;
    if (!fn && e == (1 << e_bits) - 1) return std::nan("");
    if (fn && e == (1 << e_bits) - 1 && m == (1 << m_bits) - 1) return std::nan("");
    if (e == 0) return s * std::ldexp(m, 1 - bias - m_bits);
    return s * std::ldexp((1 << m_bits) + m, e - bias - m_bits);
  }
  double max() const {
    double mx = 0;
    for (int c = 0; c < 128; ++c)
      if (!std::isnan(value(c))) mx = std::max(mx, value(c));
    return mx;
  }
  // Nearest finite value, ties to the even code; |y| beyond max saturates (satfinite).
  int encode(float y) const {
    int best = 0;
    double bd = std::numeric_limits<double>::infinity();
    const double a = std::min<double>(std::fabs(y), max());
    for (int c = 0; c < 128; ++c) {
      const double v = value(c);
      if (std::isnan(v)) continue;
      const double dd = std::fabs(v - a);
      if (dd < bd || (dd == bd && (c & 1) == 0)) {
        bd = dd;
        best = c;
      }
    }
    return (std::signbit(y) ? 0x80 : 0) | best;
  }
};
const Fp8 kE4{4, 3, 7, true}, kE5{5, 2, 15, false};

std::vector<float> values(std::size_t rows, std::size_t cols, std::uint32_t seed, float base) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> rs(rows), cs(cols);
  for (float& r : rs) r = std::exp2(std::round(u(rng)));
  for (float& c : cs) c = std::exp2(std::round(u(rng)));
  std::vector<float> v(rows * cols);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) v[i * cols + j] = bf16(nd(rng) * base * rs[i] * cs[j]);
  return v;
}

// A matrix (rows x cols) cast per torchao: groups `axis` 0 tensor, 1 per row, 2 per column;
// scale s = RN32(RN64(fmax / max(amax, 1e-12))), optionally 2^floor(log2 s); elements
// code(clamp(RN32(x * s))). Returns decoded element values and the per-element scale.
struct Ref8 {
  std::vector<double> v;   // decoded codes, rows x cols
  std::vector<float> s;    // the group scale of each element, rows x cols
  std::vector<float> grp;  // the group scales (tensor: 1, row: rows, column: cols)
};
Ref8 torchao_cast(const std::vector<float>& x, std::size_t rows, std::size_t cols, int axis,
                  const Fp8& f, bool pow2) {
  const std::size_t groups = axis == 0 ? 1 : axis == 1 ? rows : cols;
  std::vector<float> amax(groups, 0.0f);
  const auto gi = [&](std::size_t r, std::size_t c) { return axis == 0 ? 0 : axis == 1 ? r : c; };
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      amax[gi(r, c)] = std::max(amax[gi(r, c)], std::fabs(x[r * cols + c]));
  Ref8 out;
  for (float a : amax) {
    float s = static_cast<float>(f.max() / std::max<double>(a, 1e-12));
    if (pow2) {
      int e = 0;
      (void)std::frexp(s, &e);  // s = m 2^e, m in [0.5, 1): floor(log2 s) = e - 1
      s = std::ldexp(1.0f, e - 1);
    }
    out.grp.push_back(s);
  }
  out.v.resize(rows * cols);
  out.s.resize(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const float s = out.grp[gi(r, c)];
      const float y = x[r * cols + c] * s;
      out.v[r * cols + c] = f.value(f.encode(y));
      out.s[r * cols + c] = s;
    }
  return out;
}

// The fp32 FMA chain of row i of A (M x K, a(i, k)) and row j of B (N x K, b(j, k)).
template <class A, class B>
float dot(A a, B b, std::size_t i, std::size_t j, std::size_t K) {
  float acc = 0.0f;
  for (std::size_t k = 0; k < K; ++k)
    acc = std::fma(static_cast<float>(a(i, k)), static_cast<float>(b(j, k)), acc);
  return acc;
}

RecipeConfig config(Recipe r) {
  RecipeConfig c;
  c.recipe = r;
  c.fp8 = c.fp8_fast = gemm::parse_accum_model("fp32-seq", 8);
  c.hp = gemm::parse_accum_model("fp32-seq", 16);
  return c;
}

struct Inputs {
  std::size_t b = 32, n = 48, m = 16;
  std::vector<float> x, w, g;
  Inputs() {
    x = values(b, n, 11, 1.0f);
    w = values(m, n, 12, 0.05f);
    g = values(b, m, 13, 1e-3f);
    for (std::size_t k = 0; k < n; ++k) x[5 * n + k] = 0.0f;  // amax 0: torchao's EPS clamp
  }
  RecipeResult run(const RecipeConfig& c, const DelayedState* st = nullptr) const {
    return run_recipe(c, {b, n, m}, view_of(x.data(), b, n), view_of(w.data(), m, n),
                      view_of(g.data(), b, m), st);
  }
};

float rn_inv(float s) {
  return 1.0f / s;
}

}  // namespace

TEST_CASE("torchao tensorwise: per-tensor e4m3fn X, W and e5m2 G; alpha = RN32(1/sa 1/sb)",
          "[layer][recipe]") {
  const Inputs in;
  const std::size_t b = in.b, n = in.n, m = in.m;
  const RecipeResult r = in.run(config(Recipe::torchao_tensorwise));
  const Ref8 X = torchao_cast(in.x, b, n, 0, kE4, false),
             W = torchao_cast(in.w, m, n, 0, kE4, false),
             G = torchao_cast(in.g, b, m, 0, kE5, false);
  const auto xv = [&](std::size_t i, std::size_t k) { return X.v[i * n + k]; };
  const auto wv = [&](std::size_t j, std::size_t k) { return W.v[j * n + k]; };
  const auto gv = [&](std::size_t i, std::size_t j) { return G.v[i * m + j]; };
  const float axw = rn_inv(X.grp[0]) * rn_inv(W.grp[0]), agw = rn_inv(G.grp[0]) * rn_inv(W.grp[0]),
              agx = rn_inv(G.grp[0]) * rn_inv(X.grp[0]);
  for (std::size_t i = 0; i < b; ++i)
    for (std::size_t j = 0; j < m; ++j) REQUIRE(r.y[i * m + j] == bf16(axw * dot(xv, wv, i, j, n)));
  // X_grad = G W: B = W^T (rows k of W^T = columns of W).
  const auto wt = [&](std::size_t k, std::size_t j) { return W.v[j * n + k]; };
  for (std::size_t i = 0; i < b; ++i)
    for (std::size_t k = 0; k < n; ++k)
      REQUIRE(r.x_grad[i * n + k] == bf16(agw * dot(gv, wt, i, k, m)));
  // W_grad = G^T X: A = G^T, B = X^T.
  const auto gt = [&](std::size_t j, std::size_t i) { return G.v[i * m + j]; };
  const auto xt = [&](std::size_t k, std::size_t i) { return X.v[i * n + k]; };
  for (std::size_t j = 0; j < m; ++j)
    for (std::size_t k = 0; k < n; ++k)
      REQUIRE(r.w_grad[j * n + k] == bf16(agx * dot(gt, xt, j, k, b)));
  REQUIRE(r.state.size() == 3);
  REQUIRE(r.state[0].v == X.grp);
  REQUIRE(r.state[1].v == W.grp);
  REQUIRE(r.state[2].v == G.grp);
}

TEST_CASE(
    "torchao rowwise: power-of-two row scales; forward scales in the epilogue, backward "
    "post-scaled in bf16",
    "[layer][recipe]") {
  const Inputs in;
  const std::size_t b = in.b, n = in.n, m = in.m;
  for (const bool hp : {false, true}) {
    CAPTURE(hp);
    const RecipeResult r =
        in.run(config(hp ? Recipe::torchao_rowwise_gw_hp : Recipe::torchao_rowwise));
    // Y: X per row, W per row (axiswise_dim 0 of W^T), RN32(RN32(ia ib) acc) then bf16.
    const Ref8 X = torchao_cast(in.x, b, n, 1, kE4, true),
               W = torchao_cast(in.w, m, n, 1, kE4, true);
    REQUIRE(X.grp[5] == std::ldexp(1.0f, 48));  // 448 / 1e-12 = 4.48e14 -> 2^48
    const auto xv = [&](std::size_t i, std::size_t k) { return X.v[i * n + k]; };
    const auto wv = [&](std::size_t j, std::size_t k) { return W.v[j * n + k]; };
    for (std::size_t i = 0; i < b; ++i)
      for (std::size_t j = 0; j < m; ++j) {
        const float p = rn_inv(X.grp[i]) * rn_inv(W.grp[j]);
        REQUIRE(r.y[i * m + j] == bf16(p * dot(xv, wv, i, j, n)));
      }
    // X_grad: G per row (e4m3fn: ROWWISE casts G to e4m3 too), W per column (gw-hp: per tensor);
    // bf16(acc) first (scales 1), then bf16(RN32(out RN32(ia ib))).
    const Ref8 G = torchao_cast(in.g, b, m, 1, kE4, true);
    const Ref8 Wc = torchao_cast(in.w, m, n, hp ? 0 : 2, kE4, true);
    const auto gv = [&](std::size_t i, std::size_t j) { return G.v[i * m + j]; };
    const auto wt = [&](std::size_t k, std::size_t j) { return Wc.v[j * n + k]; };
    for (std::size_t i = 0; i < b; ++i)
      for (std::size_t k = 0; k < n; ++k) {
        const float out = bf16(dot(gv, wt, i, k, m));
        const float post = rn_inv(G.grp[i]) * rn_inv(hp ? Wc.grp[0] : Wc.grp[k]);
        REQUIRE(r.x_grad[i * n + k] == bf16(out * post));
      }
    if (hp) {
      // W_grad = G^T X in bf16 (the high-precision GEMM of rowwise_with_gw_hp).
      const auto gt = [&](std::size_t j, std::size_t i) { return in.g[i * m + j]; };
      const auto xt = [&](std::size_t k, std::size_t i) { return in.x[i * n + k]; };
      for (std::size_t j = 0; j < m; ++j)
        for (std::size_t k = 0; k < n; ++k)
          REQUIRE(r.w_grad[j * n + k] == bf16(dot(gt, xt, j, k, b)));
    } else {
      // W_grad: G per column (axiswise_dim 0), X per column; post-scaled like X_grad.
      const Ref8 Gc = torchao_cast(in.g, b, m, 2, kE4, true),
                 Xc = torchao_cast(in.x, b, n, 2, kE4, true);
      const auto gt = [&](std::size_t j, std::size_t i) { return Gc.v[i * m + j]; };
      const auto xt = [&](std::size_t k, std::size_t i) { return Xc.v[i * n + k]; };
      for (std::size_t j = 0; j < m; ++j)
        for (std::size_t k = 0; k < n; ++k) {
          const float out = bf16(dot(gt, xt, j, k, b));
          REQUIRE(r.w_grad[j * n + k] == bf16(out * (rn_inv(Gc.grp[j]) * rn_inv(Xc.grp[k]))));
        }
    }
  }
}

TEST_CASE("te-delayed: casts use the previous scales; the update rolls the history (TE's Python)",
          "[layer][recipe]") {
  const Inputs in;
  const std::size_t b = in.b, n = in.n, m = in.m, L = 4;
  for (const bool amax_max : {true, false}) {
    for (const int margin : {0, 2}) {
      CAPTURE(amax_max, margin);
      RecipeConfig c = config(Recipe::te_delayed);
      c.amax_max = amax_max;
      c.margin = margin;
      DelayedState st;
      st.history = L;
      st.amax_history = {0.0f,   0.0f,  0.0f,  7.5f, 0.2f, 1e-3f,
                         100.0f, 0.01f, 5e-4f, 2.0f, 0.3f, 0.0f};
      st.scale = {32.0f, 512.0f, 65536.0f};
      const RecipeResult r = in.run(c, &st);
      // Forward: per-tensor codes of RN32(x * scale) with the previous scale (satfinite).
      const auto code = [](const Fp8& f, float x, float s) { return f.value(f.encode(x * s)); };
      const float ax = 1.0f / st.scale[0], aw = 1.0f / st.scale[1];
      const auto xv = [&](std::size_t i, std::size_t k) {
        return code(kE4, in.x[i * n + k], st.scale[0]);
      };
      const auto wv = [&](std::size_t j, std::size_t k) {
        return code(kE4, in.w[j * n + k], st.scale[1]);
      };
      for (std::size_t i = 0; i < b; ++i)
        for (std::size_t j = 0; j < m; ++j)
          REQUIRE(r.y[i * m + j] == bf16((ax * aw) * dot(xv, wv, i, j, n)));
      // The state after the step: TE's _default_get_amax_and_update_history and
      // _default_sf_compute, per tensor, with this step's amax written into row 0.
      float amax_now[3] = {0, 0, 0};
      for (float v : in.x) amax_now[0] = std::max(amax_now[0], std::fabs(v));
      for (float v : in.w) amax_now[1] = std::max(amax_now[1], std::fabs(v));
      for (float v : in.g) amax_now[2] = std::max(amax_now[2], std::fabs(v));
      const double fmax[3] = {448.0, 448.0, 57344.0};
      const StateArray& hist = r.state[0];
      const StateArray& scale = r.state[1];
      REQUIRE(hist.name == "amax_history");
      REQUIRE(hist.shape == std::vector<std::size_t>{L, 3});
      for (int t = 0; t < 3; ++t) {
        std::vector<float> h(L);
        for (std::size_t i = 0; i < L; ++i) h[i] = st.amax_history[i * 3 + t];
        h[0] = std::max(h[0], amax_now[t]);
        const float amax = amax_max ? *std::max_element(h.begin(), h.end()) : h[0];
        std::vector<float> rolled(L);  // torch.roll(h, -1, 0); rolled[0] = 0
        for (std::size_t i = 0; i < L; ++i) rolled[i] = h[(i + 1) % L];
        rolled[0] = 0.0f;
        float sf = static_cast<float>(fmax[t]) / amax / std::ldexp(1.0f, margin);
        if (!(amax > 0.0f) || !std::isfinite(amax)) sf = st.scale[t];
        if (std::isinf(sf)) sf = std::numeric_limits<float>::max();
        for (std::size_t i = 0; i < L; ++i) REQUIRE(hist.v[i * 3 + t] == rolled[i]);
        REQUIRE(scale.v[t] == sf);
      }
    }
  }
}

TEST_CASE("te-delayed: a fresh state scales by 1 and leaves zeros but for the last row",
          "[layer][recipe]") {
  const Inputs in;
  RecipeConfig c = config(Recipe::te_delayed);
  c.history = 3;
  const RecipeResult r = in.run(c);
  const StateArray& hist = r.state[0];
  REQUIRE(hist.v.size() == 9);
  for (std::size_t i = 0; i < 6; ++i) REQUIRE(hist.v[i] == 0.0f);
  float ax = 0.0f;
  for (float v : in.x) ax = std::max(ax, std::fabs(v));
  REQUIRE(hist.v[6] == ax);                 // the step's amax, rolled to the end
  REQUIRE(r.state[1].v[0] == 448.0f / ax);  // max over the history
  REQUIRE(r.state[2].v[0] == 1.0f);         // scale_inv used: the fresh scale 1
}

TEST_CASE("te-current: per-tensor scales from this step's amax (quantize_scale_calc.py)",
          "[layer][recipe]") {
  const Inputs in;
  const std::size_t b = in.b, n = in.n, m = in.m;
  for (const bool pow2 : {false, true}) {
    CAPTURE(pow2);
    RecipeConfig c = config(Recipe::te_current);
    c.pow2 = pow2;
    const RecipeResult r = in.run(c);
    // scale = fmax / max(amax, eps); pow2: ldexp(1, frexp exponent - 1); codes of RN32(x scale).
    const auto sc = [&](const std::vector<float>& v, float fmax) {
      float a = 0.0f;
      for (float x : v) a = std::max(a, std::fabs(x));
      float s = fmax / a;
      if (pow2) {
        int e = 0;
        (void)std::frexp(s, &e);
        s = std::ldexp(1.0f, e - 1);
      }
      return s;
    };
    const float sx = sc(in.x, 448.0f), sw = sc(in.w, 448.0f), sg = sc(in.g, 57344.0f);
    REQUIRE(r.state[0].v[0] == sx);
    REQUIRE(r.state[1].v[0] == sw);
    REQUIRE(r.state[2].v[0] == sg);
    const auto gv = [&](std::size_t i, std::size_t j) {
      return kE5.value(kE5.encode(in.g[i * m + j] * sg));
    };
    const auto wt = [&](std::size_t k, std::size_t j) {
      return kE4.value(kE4.encode(in.w[j * n + k] * sw));
    };
    const float a = (1.0f / sg) * (1.0f / sw);
    for (std::size_t i = 0; i < b; ++i)
      for (std::size_t k = 0; k < n; ++k)
        REQUIRE(r.x_grad[i * n + k] == bf16(a * dot(gv, wt, i, k, m)));
  }
}

TEST_CASE("recipes: the fast-accumulation model is cublas-sm90's FP8 model without promotion",
          "[layer][recipe]") {
  const gemm::AccumModel f = gemm::parse_accum_model("cublas-sm90", 8);
  REQUIRE(f.chunk == 128);
  const gemm::AccumModel fast = fast_accum_model(f);
  REQUIRE(fast.chunk == 0);
  REQUIRE(fast.k_group == 32);
  REQUIRE(fast.frac_bits == 13);
  REQUIRE(fast.inter_bits == 13);
  const gemm::AccumModel seq = gemm::parse_accum_model("fp32-seq", 8);
  REQUIRE(fast_accum_model(seq).kind == gemm::AccumKind::fp32_seq);
}

TEST_CASE("recipes refuse shapes _scaled_mm refuses, other dtypes and bad states",
          "[layer][recipe]") {
  const Inputs in;
  // n = 40: Y's K is not a multiple of 16.
  std::vector<float> x(32 * 40, 1.0f), w(16 * 40, 1.0f), g(32 * 16, 1.0f);
  REQUIRE_THROWS_AS(
      run_recipe(config(Recipe::torchao_tensorwise), {32, 40, 16}, view_of(x.data(), 32, 40),
                 view_of(w.data(), 16, 40), view_of(g.data(), 32, 16)),
      InputError);
  RecipeConfig c = config(Recipe::torchao_rowwise);
  c.dtype = DType::fp16;
  REQUIRE_THROWS_AS(in.run(c), InputError);
  DelayedState bad;
  bad.history = 2;
  bad.amax_history.assign(6, 0.0f);
  bad.scale.assign(2, 1.0f);
  REQUIRE_THROWS_AS(in.run(config(Recipe::te_delayed), &bad), InputError);
  REQUIRE_THROWS_AS(parse_recipe("torchao-blockwise"), InputError);
  REQUIRE(recipe_name(parse_recipe("torchao-rowwise-gw-hp")) == "torchao-rowwise-gw-hp");
}

TEST_CASE("exmy layer --recipe: outputs and state files together, exit 2 on bad input",
          "[cli][layer][recipe]") {
  const char* cli = std::getenv("EXMY_CLI");
  if (!cli) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  namespace fs = std::filesystem;
  const fs::path d = fs::temp_directory_path() / ("exmy_test_recipe_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string s = d.string();
  const Inputs in;
  io::write_npy(s + "/x.npy", io::make_npy(in.x, {in.b, in.n}));
  io::write_npy(s + "/w.npy", io::make_npy(in.w, {in.m, in.n}));
  io::write_npy(s + "/g.npy", io::make_npy(in.g, {in.b, in.m}));
  const auto run = [&](const std::string& args) {
    const int rc = std::system((std::string(cli) + " layer " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  const std::string io3 = "--x " + s + "/x.npy --w " + s + "/w.npy --g " + s + "/g.npy ";
  REQUIRE(run("--recipe te-delayed --accum fp32-seq --history 4 " + io3 + "--out " + s + "/o1") ==
          0);
  for (const char* f : {"y", "x_grad", "w_grad", "amax_history", "scale", "scale_inv_used"})
    REQUIRE(fs::exists(s + "/o1/" + f + ".npy"));
  // The state written is the state read: a second step from it.
  REQUIRE(run("--recipe te-delayed --accum fp32-seq --state " + s + "/o1 " + io3 + "--out " + s +
              "/o2") == 0);
  const io::NpyArray h = io::read_npy(s + "/o2/amax_history.npy");
  REQUIRE(h.shape == std::vector<std::size_t>{4, 3});
  REQUIRE(run("--recipe torchao-rowwise --accum fp32-seq " + io3 + "--out " + s + "/o3") == 0);
  REQUIRE(fs::exists(s + "/o3/scale_x_wgrad.npy"));
  // Both --kind and --recipe, an unknown recipe, --state for a stateless recipe, --device cuda.
  REQUIRE(run("--kind plain --recipe te-current " + io3 + "--out " + s + "/e1") == 2);
  REQUIRE(run("--recipe nope " + io3 + "--out " + s + "/e2") == 2);
  REQUIRE(run("--recipe te-current --state " + s + "/o1 " + io3 + "--out " + s + "/e3") == 2);
  REQUIRE(run("--recipe te-current --device cuda " + io3 + "--out " + s + "/e4") == 2);
  REQUIRE(run("--recipe te-delayed --margin x " + io3 + "--out " + s + "/e5") == 2);
  // te-block / te-mxfp8 (b = 32: not a multiple of 128 -> exit 2 for te-block; --fp32-scales is
  // te-block's), te-mxfp8's E8M0 state as |u1 codes.
  REQUIRE(run("--recipe te-block " + io3 + "--out " + s + "/e6") == 2);
  REQUIRE(run("--recipe te-current --fp32-scales " + io3 + "--out " + s + "/e7") == 2);
  for (const char* o : {"/e1", "/e2", "/e3", "/e4", "/e5", "/e6", "/e7"})
    REQUIRE(!fs::exists(s + o));
  {
    std::vector<float> x(64 * 96), w(32 * 96), g(64 * 32);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = in.x[i % in.x.size()];
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = in.w[i % in.w.size()];
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = in.g[i % in.g.size()];
    io::write_npy(s + "/x2.npy", io::make_npy(x, {64, 96}));
    io::write_npy(s + "/w2.npy", io::make_npy(w, {32, 96}));
    io::write_npy(s + "/g2.npy", io::make_npy(g, {64, 32}));
    REQUIRE(run("--recipe te-mxfp8 --x " + s + "/x2.npy --w " + s + "/w2.npy --g " + s +
                "/g2.npy --out " + s + "/o4") == 0);
    const io::NpyArray sx = io::read_npy(s + "/o4/scale_x.npy");
    CHECK(sx.descr == "|u1");
    CHECK(sx.shape == std::vector<std::size_t>{64, 3});
    CHECK(io::read_npy(s + "/o4/scale_w_t.npy").shape == std::vector<std::size_t>{96, 1});
  }
  fs::remove_all(d);
}

// ---- te-block and te-mxfp8 ----------------------------------------------------------------------
// References written from TransformerEngine d0067d0:
// TransformerEngine/tests/pytorch/references/quantize_scale_calc.py scale_from_amax_tensor and
// blockwise_quantizer_reference.py (tiles, clamp, cast, transposes),
// blockwise_fp8_gemm_reference.py CuBLASRefBlockwiseGemm (the promotion equations),
// common/recipe/__init__.py (which tensor is tiled how); TransformerEngine/tests/cpp/test_common.h
// float_to_e8m0 / exp2f_rcp with common/cast/mxfp8/quantize_mxfp8.cuh (MXFP8). The per-k-block
// partial is the fp32 FMA chain of the unscaled codes (the model fp32-seq:promote=te: one chain
// of 128 k per k-block from +0).

namespace {

struct TileRef {
  std::vector<double> v;   // decoded codes, rows x cols
  std::vector<float> inv;  // scale_inv per tile, ceil(rows / R) x (cols / 128)
  std::size_t R = 1, tc = 0;
  float tile_inv(std::size_t r, std::size_t kb) const { return inv[(r / R) * tc + kb]; }
};

// scale_from_amax_tensor: a = max(amax, eps); s = fmax / a; inf -> bf16 max; pow2: 2^(frexp e -
// 1), 0 where a = inf; 1 where a = 0; codes of clamp(x s); scale_inv = 1 / s.
TileRef te_tiles(const std::vector<float>& x, std::size_t rows, std::size_t cols, std::size_t R,
                 const Fp8& f, bool pow2, float eps) {
  TileRef t;
  t.R = R;
  t.tc = cols / 128;
  const std::size_t tr = (rows + R - 1) / R;
  std::vector<float> s(tr * t.tc);
  for (std::size_t i = 0; i < tr; ++i)
    for (std::size_t j = 0; j < t.tc; ++j) {
      float amax = 0.0f;
      for (std::size_t r = i * R; r < std::min(rows, (i + 1) * R); ++r)
        for (std::size_t c = j * 128; c < (j + 1) * 128; ++c)
          amax = std::max(amax, std::fabs(x[r * cols + c]));
      const float a = std::max(amax, eps);
      float sc = static_cast<float>(f.max()) / a;
      if (std::isinf(sc)) sc = 3.3895313892515355e38f;  // torch.finfo(torch.bfloat16).max
      if (pow2) {
        int e = 0;
        (void)std::frexp(sc, &e);
        sc = std::ldexp(1.0f, e - 1);
        if (std::isinf(a)) sc = 0.0f;
      }
      if (a == 0.0f) sc = 1.0f;
      s[i * t.tc + j] = sc;
    }
  t.inv.resize(s.size());
  for (std::size_t k = 0; k < s.size(); ++k) t.inv[k] = 1.0f / s[k];
  t.v.resize(rows * cols);
  const float fm = static_cast<float>(f.max());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const float y = std::clamp(x[r * cols + c] * s[(r / R) * t.tc + c / 128], -fm, fm);
      t.v[r * cols + c] = f.value(f.encode(y));
    }
  return t;
}

std::vector<float> transpose_f(const std::vector<float>& v, std::size_t rows, std::size_t cols) {
  std::vector<float> t(v.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = v[r * cols + c];
  return t;
}

// CuBLASRefBlockwiseGemm.qgemm_blockwise_2d with fp32 FMA-chain partials: y = 0; per k-block
// p = chain of a_k b_k; 1-D A: y = fma(RN32(p sa), sb, y); 2-D A, 1-D B: y = fma(RN32(p sb), sa,
// y). C = A B^T (A: M x K with at(i, k), B: N x K), output bf16.
template <class AV, class BV, class SA, class SB>
std::vector<float> te_block_gemm(std::size_t M, std::size_t N, std::size_t K, AV a, BV bb, SA sa,
                                 SB sb, bool a_1d) {
  std::vector<float> out(M * N);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < N; ++j) {
      float y = 0.0f;
      for (std::size_t kb = 0; kb < K / 128; ++kb) {
        float p = 0.0f;
        for (std::size_t k = kb * 128; k < kb * 128 + 128; ++k)
          p = std::fma(static_cast<float>(a(i, k)), static_cast<float>(bb(j, k)), p);
        y = a_1d ? std::fma(p * sa(i, kb), sb(j, kb), y) : std::fma(p * sb(j, kb), sa(i, kb), y);
      }
      out[i * N + j] = bf16(y);
    }
  return out;
}

struct BlockInputs {
  std::size_t b = 256, n = 256, m = 128;
  std::vector<float> x, w, g;
  BlockInputs() {
    x = values(b, n, 21, 1.0f);
    w = values(m, n, 22, 0.05f);
    g = values(b, m, 23, 1e-3f);
    for (std::size_t k = 0; k < 128; ++k) x[7 * n + k] = 0.0f;  // an all-zero 1x128 tile
  }
  RecipeResult run(const RecipeConfig& c) const {
    return run_recipe(c, {b, n, m}, view_of(x.data(), b, n), view_of(w.data(), m, n),
                      view_of(g.data(), b, m));
  }
};

RecipeConfig block_config(Recipe r, const char* model) {
  RecipeConfig c = config(r);
  c.fp8 = c.fp8_fast = gemm::parse_accum_model(model, 8);
  c.te_hybrid = false;
  return c;
}

void check_equal(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    bad += a != b;
  }
  INFO(what);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("te-block: 1x128 X/G and 128x128 W tiles, TE's promotion order, scale_inv state",
          "[layer][recipe][te-block]") {
  const BlockInputs in;
  for (const bool pow2 : {true, false}) {
    for (const bool hybrid : {false, true}) {
      for (const float eps : {0.0f, 1e-3f}) {
        RecipeConfig c = block_config(Recipe::te_block, "fp32-seq:promote=te");
        c.fp32_scales = !pow2;
        c.te_hybrid = hybrid;
        c.amax_epsilon = eps;
        INFO("pow2 " << pow2 << " hybrid " << hybrid << " eps " << eps);
        const RecipeResult r = in.run(c);
        const Fp8& fg = hybrid ? kE5 : kE4;
        const std::size_t b = in.b, n = in.n, m = in.m;
        const TileRef X = te_tiles(in.x, b, n, 1, kE4, pow2, eps);
        const TileRef W = te_tiles(in.w, m, n, 128, kE4, pow2, eps);
        const TileRef G = te_tiles(in.g, b, m, 1, fg, pow2, eps);
        const TileRef Xt = te_tiles(transpose_f(in.x, b, n), n, b, 1, kE4, pow2, eps);
        const TileRef Gt = te_tiles(transpose_f(in.g, b, m), m, b, 1, fg, pow2, eps);
        // Y = X W^T: 1x128 . 128x128.
        check_equal(r.y,
                    te_block_gemm(
                        b, m, n, [&](std::size_t i, std::size_t k) { return X.v[i * n + k]; },
                        [&](std::size_t j, std::size_t k) { return W.v[j * n + k]; },
                        [&](std::size_t i, std::size_t kb) { return X.tile_inv(i, kb); },
                        [&](std::size_t j, std::size_t kb) { return W.tile_inv(j, kb); }, true),
                    "y");
        // X_grad = G W: B = W^T, its codes and 128x128 scales transposed.
        check_equal(
            r.x_grad,
            te_block_gemm(
                b, n, m, [&](std::size_t i, std::size_t k) { return G.v[i * m + k]; },
                [&](std::size_t j, std::size_t k) { return W.v[k * n + j]; },
                [&](std::size_t i, std::size_t kb) { return G.tile_inv(i, kb); },
                [&](std::size_t j, std::size_t kb) { return W.tile_inv(kb * 128, j / 128); }, true),
            "x_grad");
        // W_grad = G^T X: G^T and X^T in 1x128 tiles along b.
        check_equal(r.w_grad,
                    te_block_gemm(
                        m, n, b, [&](std::size_t i, std::size_t k) { return Gt.v[i * b + k]; },
                        [&](std::size_t j, std::size_t k) { return Xt.v[j * b + k]; },
                        [&](std::size_t i, std::size_t kb) { return Gt.tile_inv(i, kb); },
                        [&](std::size_t j, std::size_t kb) { return Xt.tile_inv(j, kb); }, true),
                    "w_grad");
        REQUIRE(r.state.size() == 5);
        CHECK(r.state[0].name == "scale_inv_x");
        CHECK(r.state[0].shape == std::vector<std::size_t>{b, n / 128});
        check_equal(r.state[0].v, X.inv, "scale_inv_x");
        check_equal(r.state[1].v, W.inv, "scale_inv_w");
        check_equal(r.state[2].v, G.inv, "scale_inv_g");
        check_equal(r.state[3].v, Xt.inv, "scale_inv_x_t");
        check_equal(r.state[4].v, Gt.inv, "scale_inv_g_t");
        if (pow2 && !hybrid && eps == 0.0f) CHECK(X.inv[7 * (n / 128)] == 1.0f);  // zero tile
      }
    }
  }
}

TEST_CASE("te-block: with power-of-two scales every promotion order gives the same bits",
          "[layer][recipe][te-block]") {
  // Scaling a partial by a power of two is exact (inside fp32's normal range), so cuBLAS's
  // measured order (cublas), TE's reference (te) and the others agree under the recipe's default
  // scales; with fp32 scales they need not.
  const BlockInputs in;
  const RecipeResult te =
      in.run(block_config(Recipe::te_block, "hw:k=32,frac=13,inter=13,chunk=128,promote=te"));
  for (const char* p : {"cublas", "product", "a-first", "b-first"}) {
    const RecipeResult o = in.run(
        block_config(Recipe::te_block,
                     (std::string("hw:k=32,frac=13,inter=13,chunk=128,promote=") + p).c_str()));
    INFO(p);
    check_equal(o.y, te.y, "y");
    check_equal(o.x_grad, te.x_grad, "x_grad");
    check_equal(o.w_grad, te.w_grad, "w_grad");
  }
  // cublas-sm90 with tile scales is the measured hw:k=32,frac=13,inter=13,chunk=128,
  // promote=cublas (SEMANTICS 15.7).
  const RecipeResult cu = in.run(block_config(Recipe::te_block, "cublas-sm90"));
  check_equal(cu.y, te.y, "cublas-sm90 y");
}

TEST_CASE("te-mxfp8: 1x32 E8M0 blocks along each GEMM's K, rowwise and columnwise copies",
          "[layer][recipe][te-mxfp8]") {
  const std::size_t b = 64, n = 96, m = 32;
  std::vector<float> x = values(b, n, 31, 1.0f), w = values(m, n, 32, 0.05f),
                     g = values(b, m, 33, 1e-3f);
  for (std::size_t k = 32; k < 64; ++k)
    w[3 * n + k] = 2e-38f * static_cast<float>(k % 3);  // code 0
  RecipeConfig c = block_config(Recipe::te_mxfp8, "fp32-seq");
  for (const bool hybrid : {false, true}) {
    c.te_hybrid = hybrid;
    INFO("hybrid " << hybrid);
    const RecipeResult r = run_recipe(c, {b, n, m}, view_of(x.data(), b, n),
                                      view_of(w.data(), m, n), view_of(g.data(), b, m));
    // MXFP8 rowwise cast of v (rows x cols): code = float_to_e8m0(amax * (float)(1 / fmax)),
    // elements cvt.satfinite(RN32(x exp2f_rcp(code))); value = element * 2^(code - 127).
    struct Mx {
      std::vector<float> v;  // RN32(element value * scale): what the fp32-seq chains multiply
      std::vector<std::uint8_t> e;
    };
    const auto mx = [](const std::vector<float>& v, std::size_t rows, std::size_t cols,
                       const Fp8& f) {
      Mx o;
      o.v.resize(rows * cols);
      const float rcp = static_cast<float>(1.0 / f.max());
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t blk = 0; blk < cols / 32; ++blk) {
          float amax = 0.0f;
          for (std::size_t k = 0; k < 32; ++k)
            amax = std::fmax(amax, std::fabs(v[r * cols + blk * 32 + k]));
          const float val = amax * rcp;
          std::uint32_t u;
          std::memcpy(&u, &val, 4);
          std::uint32_t e = u >> 23, mant = u & 0x7FFFFFu;
          if (val == 0.0f)
            e = 0;
          else if (mant > 0 && e != 0xFE && !(e == 0 && mant <= 0x400000u))
            ++e;
          o.e.push_back(static_cast<std::uint8_t>(e));
          const float factor =
              e == 254 ? std::ldexp(1.0f, -127) : std::ldexp(1.0f, 127 - static_cast<int>(e));
          for (std::size_t k = 0; k < 32; ++k) {
            const std::size_t i = r * cols + blk * 32 + k;
            const double q = f.value(f.encode(v[i] * factor));
            o.v[i] = static_cast<float>(q * std::ldexp(1.0, static_cast<int>(e) - 127));
          }
        }
      return o;
    };
    const Fp8& fg = hybrid ? kE5 : kE4;
    const Mx X = mx(x, b, n, kE4), W = mx(w, m, n, kE4), G = mx(g, b, m, fg);
    const Mx Wt = mx(transpose_f(w, m, n), n, m, kE4), Gt = mx(transpose_f(g, b, m), m, b, fg),
             Xt = mx(transpose_f(x, b, n), n, b, kE4);
    const auto mm = [](const Mx& A, const Mx& B, std::size_t M, std::size_t N, std::size_t K) {
      std::vector<float> out(M * N);
      for (std::size_t i = 0; i < M; ++i)
        for (std::size_t j = 0; j < N; ++j)
          out[i * N + j] =
              bf16(dot([&](std::size_t r, std::size_t k) { return A.v[r * K + k]; },
                       [&](std::size_t r, std::size_t k) { return B.v[r * K + k]; }, i, j, K));
      return out;
    };
    check_equal(r.y, mm(X, W, b, m, n), "y");
    check_equal(r.x_grad, mm(G, Wt, b, n, m), "x_grad");
    check_equal(r.w_grad, mm(Gt, Xt, m, n, b), "w_grad");
    REQUIRE(r.state.size() == 6);
    CHECK(r.state[0].codes == X.e);
    CHECK(r.state[1].codes == W.e);
    CHECK(r.state[2].codes == G.e);
    CHECK(r.state[3].codes == Wt.e);
    CHECK(r.state[4].codes == Gt.e);
    CHECK(r.state[5].codes == Xt.e);
    CHECK(W.e[3 * (n / 32) + 1] == 0);  // the tiny block: code 0, elements scaled by 2^127
  }
}

TEST_CASE("te-block and te-mxfp8 refuse shapes TE's quantizers refuse", "[layer][recipe]") {
  std::vector<float> x(64 * 128, 1.0f), w(128 * 128, 1.0f), g(64 * 128, 1.0f);
  // b = 64 is not a multiple of 128 (Float8BlockQuantizer.is_quantizable).
  REQUIRE_THROWS_AS(run_recipe(block_config(Recipe::te_block, "fp32-seq"), {64, 128, 128},
                               view_of(x.data(), 64, 128), view_of(w.data(), 128, 128),
                               view_of(g.data(), 64, 128)),
                    InputError);
  std::vector<float> x2(32 * 48, 1.0f), w2(32 * 48, 1.0f), g2(32 * 32, 1.0f);
  REQUIRE_THROWS_AS(run_recipe(block_config(Recipe::te_mxfp8, "fp32-seq"), {32, 48, 32},
                               view_of(x2.data(), 32, 48), view_of(w2.data(), 32, 48),
                               view_of(g2.data(), 32, 32)),
                    InputError);
  REQUIRE(recipe_name(parse_recipe("te-block")) == "te-block");
  REQUIRE(recipe_name(parse_recipe("te-mxfp8")) == "te-mxfp8");
}
