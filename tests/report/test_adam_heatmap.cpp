// Section 2 (Adam error heatmaps): training determinism, grid bookkeeping, and the CSV bytes
// across thread counts, on the tiny configuration.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "reports/adam_error_grid.hpp"
#include "reports/mlp_adam.hpp"
#include "reports/report_context.hpp"
#include "reports/sections.hpp"
#include "sim/format/codebook.hpp"
#include "sim/native/codebook_lookup.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_codebook.hpp"

using namespace exmy::reports;

namespace {
MlpConfig tiny_mlp() {
  MlpConfig c;
  c.hidden = 32;
  c.batch = 16;
  c.steps = 40;
  c.snapshot_steps = {20, 40};
  return c;
}
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("fp32 Adam training is a pure function of the seed and learns", "[adam]") {
  TrainLog l1, l2;
  const auto a = train_mlp_adam(tiny_mlp(), 5, l1);
  const auto b = train_mlp_adam(tiny_mlp(), 5, l2);
  REQUIRE(a.size() == 2);
  REQUIRE(a[0].step == 20);
  REQUIRE(a[1].step == 40);
  for (std::size_t s = 0; s < a.size(); ++s) {
    REQUIRE(a[s].m == b[s].m);
    REQUIRE(a[s].v == b[s].v);
  }
  REQUIRE(l1.loss == l2.loss);
  // Mean of the first and last three logged losses: the run learns.
  REQUIRE(l1.loss.back() < l1.loss.front());
  // Second moments are non-negative; they span decades (the regime seed 002 analyses).
  float vmin = 1e30f, vmax = 0;
  for (float v : a[1].v[0]) {
    REQUIRE(v >= 0.0f);
    if (v > 0) vmin = std::min(vmin, v);
    vmax = std::max(vmax, v);
  }
  REQUIRE(vmax / vmin > 1e3f);
}

TEST_CASE("error grid: every element lands in one cell; dynamic/block beats linear/tensor",
          "[adam]") {
  TrainLog log;
  const auto snaps = train_mlp_adam(tiny_mlp(), 11, log);
  std::int64_t n = 0;
  for (const auto& s : snaps) {
    for (const auto& t : s.m) n += static_cast<std::int64_t>(t.size());
  }
  const auto methods = state_quant_methods();
  REQUIRE(methods.size() == 3);
  double lin_tensor = 0, dyn_block = 0;
  for (const auto& m : methods) {
    for (int block : {0, 2048, 256}) {
      const ErrorGrid g = adam_error_grid(snaps, m, block, 1e-8f);
      INFO(m.name << " block " << block);
      REQUIRE(g.elements == n);
      REQUIRE(std::accumulate(g.count.begin(), g.count.end(), std::int64_t{0}) == n);
      // dynamic_tree quantizes v >= 0 with the signed map: only its upper half is reachable.
      if (m.name == "dynamic_tree") {
        for (int c = 0; c < 65536; ++c) {
          if (g.count[c] != 0) REQUIRE(m.v_book->values[c % 256] >= 0.0f);
        }
      }
      const double mean = g.total_abs / g.elements;
      if (m.name == "linear" && block == 0) lin_tensor = mean;
      if (m.name == "dynamic" && block == 256) dyn_block = mean;
    }
  }
  REQUIRE(dyn_block < lin_tensor);
}

TEST_CASE("adam-heatmap section: identical CSV bytes for 1 and 3 threads", "[adam]") {
  const auto base =
      std::filesystem::temp_directory_path() / ("exmy_test_adam_" + std::to_string(::getpid()));
  std::filesystem::remove_all(base);
  std::string dirs[2] = {(base / "a").string(), (base / "b").string()};
  for (int i = 0; i < 2; ++i) {
    ReportOptions o;
    o.out_dir = dirs[i];
    o.seed = 3;
    o.threads = i == 0 ? 1 : 3;
    o.tiny = 1;
    o.figures = false;
    run_adam_heatmap_section(ReportContext(o));
  }
  for (const char* f : {"summary.csv", "top_cells.csv", "train.csv", "train_summary.csv",
                        "grid_dynamic_block256.csv", "grid_linear_tensor.csv"}) {
    INFO(f);
    const std::string a = slurp(dirs[0] + "/adam-heatmap/" + f);
    REQUIRE(!a.empty());
    REQUIRE(a == slurp(dirs[1] + "/adam-heatmap/" + f));
  }
  const std::string md = slurp(dirs[0] + "/adam-heatmap/index.md");
  REQUIRE(md.find("\"Dynamic beats linear\"") != std::string::npos);
  REQUIRE(md.find("\"Block-wise beats tensor-wise\"") != std::string::npos);
  REQUIRE(md.find("| v^=0 rate |") != std::string::npos);
  std::filesystem::remove_all(base);
}

// The v^ = 0 artefact, by construction: one block whose second state spans more than the
// codebook's range, so the small v quantize to 0 while their m do not.
TEST_CASE("error grid counts v^=0 elements and their error; tails are order statistics", "[adam]") {
  AdamSnapshot s;
  s.step = 1;
  s.names = {"w"};
  std::vector<float> m(256), v(256);
  for (int i = 0; i < 256; ++i) {
    m[i] = 1e-3f * static_cast<float>((i % 7) + 1);
    // 4 small v: sqrt(1e-12) = 1e-6 >> eps keeps u32 = m / 1e-6 moderate, while 1e-12 / 5e-4
    // is below every map's smallest positive value, so u8 = m^ / eps.
    v[i] = i < 4 ? 1e-12f : 1e-4f * static_cast<float>((i % 5) + 1);
  }
  s.m = {m};
  s.v = {v};
  const auto methods = state_quant_methods();
  for (const auto& meth : methods) {
    const ErrorGrid g = adam_error_grid({s}, meth, 256, 1e-8f);
    INFO(meth.name);
    REQUIRE(g.elements == 256);
    REQUIRE(g.abs_err.size() == 256);
    REQUIRE(g.vzero == 4);
    const ErrorTails t = error_tails(g);
    REQUIRE(t.vzero_rate == Approx(4.0 / 256));
    // Each v^=0 element has u8 = m^/eps >= ~1e5 while the others stay below 1: they carry
    // almost all of the error.
    REQUIRE(t.vzero_abs_share > 0.99);
    REQUIRE(t.max >= 1e4);
    REQUIRE(t.p50 < 1.0);
    REQUIRE(t.mean_abs_without_vzero < 1.0);
    REQUIRE(t.p50 <= t.p99);
    REQUIRE(t.p99 <= t.p9999);
    REQUIRE(t.p9999 <= t.max);
  }
}

TEST_CASE("8-bit state training: no codebook is fp32 Adam bit for bit; m/eps updates counted",
          "[adam]") {
  MlpConfig c = tiny_mlp();
  TrainLog a, b;
  const auto sa = train_mlp_adam(c, 5, a);
  MlpConfig c8 = c;
  c8.m_book = nullptr;
  c8.v_book = nullptr;
  c8.fp32_first_layer = true;  // no effect without codebooks
  const auto sb = train_mlp_adam(c8, 5, b);
  REQUIRE(a.loss == b.loss);
  REQUIRE(sa.back().v == sb.back().v);
  REQUIRE(a.eps_updates == 0);
  // With 8-bit states every stored state is a codebook value times its block's absmax.
  const auto methods = state_quant_methods();
  MlpConfig q = c;
  q.m_book = methods[2].m_book;
  q.v_book = methods[2].v_book;
  q.state_block = 256;
  q.min_8bit_size = 1;
  // Three steps, before the tiny run can diverge (the report's v^=0 finding), so that every
  // stored state is finite and the identity below is checked on all of them.
  q.steps = 3;
  q.snapshot_steps = {3};
  TrainLog l8;
  const auto s8 = train_mlp_adam(q, 5, l8);
  const std::vector<float>& vv = s8.back().v[0];
  std::vector<std::uint8_t> codes;
  std::vector<float> deq;
  quantize_state(vv, *q.v_book, 256, codes, deq);
  // Already on the grid: requantizing is the identity.
  std::size_t finite = 0;
  for (std::size_t i = 0; i < vv.size(); ++i) {
    if (!std::isfinite(vv[i])) continue;
    ++finite;
    REQUIRE(deq[i] == vv[i]);
  }
  REQUIRE(finite == vv.size());
  INFO("finite states: " << finite << " eps updates: " << l8.eps_updates);
  REQUIRE(s8.back().step == 3);
}

// quantize_state's table-narrowed search and per-block reciprocal (the report's main-job speed-up,
// bench/results/2026-12-02-cpu-main-job-time.md) against the per-element definition written from
// SEMANTICS 14.2: n = codebook_normalize(x, a, recip_mul), code = codebook_nearest(values, n,
// even_index), x^ = codebook_dequant(values, code, a). Every midpoint and its fp32 neighbours,
// signed zeros, subnormals, infinities, NaN and weighted random words; printed seed.
TEST_CASE("quantize_state equals the per-element codebook quantization", "[adam]") {
  const std::uint64_t seed = 0x51A7E5EEDull;
  INFO("seed " << seed);
  for (const exmy::Codebook* cb : {&exmy::dynamic_codebook(true), &exmy::dynamic_codebook(false),
                                   &exmy::linear_codebook(true), &exmy::linear_codebook(false)}) {
    // The midpoints and their fp32 neighbours with absmax 1 (an element 1.0 in every group of
    // 7, so every group's normalisation is exact and the midpoints are hit exactly), then
    // weighted random words (every fourth near 1, the rest any finite or special word), then
    // signed zeros, subnormals, infinities and NaN.
    std::vector<float> x;
    const auto push = [&](float v) {
      if (x.size() % 7 == 0) x.push_back(1.0f);
      x.push_back(v);
    };
    for (int k = 0; k + 1 < 256; ++k) {
      const float m = exmy::native::codebook_midpoint(cb->values.data(), k);
      for (float v : {m, std::nextafter(m, -1.0f), std::nextafter(m, 2.0f), cb->values[k]}) {
        push(v);
        push(-v);
      }
    }
    const std::size_t boundary = x.size();
    std::uint64_t s = seed;
    for (int i = 0; i < 20000; ++i) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      std::uint32_t u = static_cast<std::uint32_t>(s >> 32);
      if (i % 4 == 0) u = (u & 0x807FFFFFu) | (static_cast<std::uint32_t>(118 + i % 10) << 23);
      x.push_back(exmy::native::float_of(u));
    }
    for (float v : {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-39f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN,
                    3.4e38f, -3.4e38f}) {
      x.push_back(v);
    }
    const std::vector<float> xb(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(boundary));
    for (int block : {0, 256, 2048, 7, -1}) {
      // block -1: the boundary values alone, tensor-wise (absmax 1).
      const std::vector<float>& xs = block < 0 ? xb : x;
      if (block < 0) block = 0;
      std::vector<std::uint8_t> codes;
      std::vector<float> deq;
      quantize_state(xs, *cb, block, codes, deq);
      const std::size_t g = block > 0 ? static_cast<std::size_t>(block) : xs.size();
      for (std::size_t start = 0; start < xs.size(); start += g) {
        const std::size_t end = std::min(xs.size(), start + g);
        float a = exmy::native::kAbsmaxInit;
        for (std::size_t i = start; i < end; ++i) {
          a = exmy::native::absmax_combine(a, xs[i], exmy::native::NanPolicy::propagate);
        }
        for (std::size_t i = start; i < end; ++i) {
          const float n =
              exmy::native::codebook_normalize(xs[i], a, exmy::native::NormOrder::recip_mul);
          const std::uint8_t c =
              exmy::codebook_nearest(cb->values.data(), n, exmy::TieRule::even_index);
          INFO(cb->name << " block " << block << " element " << i << " x " << xs[i]);
          REQUIRE(codes[i] == c);
          REQUIRE(exmy::native::bits_of(deq[i]) ==
                  exmy::native::bits_of(exmy::native::codebook_dequant(cb->values.data(), c, a)));
        }
      }
    }
  }
}

namespace {
std::vector<std::uint32_t> bits(const std::vector<float>& v) {
  std::vector<std::uint32_t> u(v.size());
  std::memcpy(u.data(), v.data(), v.size() * sizeof(float));
  return u;
}
}  // namespace

// The training step's batch kernels (every layer over the whole batch, W's rows shared by blocks
// of samples, SSE2/AVX2) against the per-sample loops they replace (MlpConfig::per_sample): the
// header's rule is one defined fp32 order per element, so every logged value, count and snapshot
// must have the same bits, on every optimizer, the dense task (leaky ReLU), late features, unit
// scales, a batch that is not a multiple of the sample block and widths that are not multiples
// of the column block or the lanes.
TEST_CASE("MLP training: the batch kernels give the per-sample loops' bits", "[adam][batch]") {
  using Opt = MlpConfig::Optimizer;
  struct Case {
    const char* name;
    Opt opt;
    bool codebook, dense, late, unit, first32;
    std::string split;
  };
  const std::vector<Case> cases{
      {"adam", Opt::adam, false, false, false, false, false, ""},
      {"adam 8-bit codebooks", Opt::adam, true, false, false, false, false, ""},
      {"adam 8-bit, fp32 first layer", Opt::adam, true, false, false, false, true, ""},
      {"adam dense", Opt::adam, false, true, false, false, false, ""},
      {"bnb_adam8", Opt::bnb_adam8, false, false, false, false, false, ""},
      {"bnb_adam8 dense", Opt::bnb_adam8, false, true, false, false, true, ""},
      {"torch_adamw late features", Opt::torch_adamw, false, false, true, false, false, ""},
      {"stable_adamw unit scales", Opt::stable_adamw, false, false, false, true, false, ""},
      {"split_adamw bf16+8", Opt::split_adamw, false, false, false, true, false, "bf16+8"}};
  for (const auto& k : cases) {
    for (const int batch : {16, 13}) {
      MlpConfig c;
      // 136 = two 64-column blocks and 8 columns more; 10 classes: the last columns alone.
      c.hidden = batch == 16 ? 136 : 40;
      c.classes = 10;
      c.batch = batch;
      c.steps = 12;
      c.log_every = 1;
      c.snapshot_steps = {6, 12};
      c.optimizer = k.opt;
      c.split = k.split;
      c.dense = k.dense;
      c.unit_scales = k.unit;
      c.fp32_first_layer = k.first32;
      c.min_8bit_size = 256;
      c.state_block = 256;
      if (k.codebook) {
        c.m_book = &exmy::dynamic_codebook(true);
        c.v_book = &exmy::dynamic_codebook(false);
      }
      if (k.late) c.late_onsets = {4, 8};
      if (k.opt != Opt::adam) c.wd = 0.01f;
      MlpConfig ref = c;
      ref.per_sample = true;
      TrainLog la, lb;
      const auto sa = train_mlp_adam(c, 11, la);
      const auto sb = train_mlp_adam(ref, 11, lb);
      INFO(k.name << ", batch " << batch);
      REQUIRE(la.step == lb.step);
      REQUIRE(bits(la.loss) == bits(lb.loss));
      REQUIRE(bits(la.accuracy) == bits(lb.accuracy));
      REQUIRE(bits(la.rms1) == bits(lb.rms1));
      REQUIRE(bits(la.sharpness) == bits(lb.sharpness));
      REQUIRE(la.eps_updates == lb.eps_updates);
      REQUIRE(sa.size() == sb.size());
      for (std::size_t s = 0; s < sa.size(); ++s) {
        for (std::size_t t = 0; t < sa[s].m.size(); ++t) {
          REQUIRE(bits(sa[s].m[t]) == bits(sb[s].m[t]));
          REQUIRE(bits(sa[s].v[t]) == bits(sb[s].v[t]));
        }
      }
    }
  }
}
