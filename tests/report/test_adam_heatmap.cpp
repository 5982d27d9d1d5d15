// Section 2 (Adam error heatmaps): training determinism, grid bookkeeping, and the CSV bytes
// across thread counts, on the tiny configuration.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "reports/adam_error_grid.hpp"
#include "reports/mlp_adam.hpp"
#include "reports/report_context.hpp"
#include "reports/sections.hpp"

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
  for (const char* f : {"summary.csv", "top_cells.csv", "train.csv", "grid_dynamic_block256.csv",
                        "grid_linear_tensor.csv"}) {
    INFO(f);
    const std::string a = slurp(dirs[0] + "/adam-heatmap/" + f);
    REQUIRE(!a.empty());
    REQUIRE(a == slurp(dirs[1] + "/adam-heatmap/" + f));
  }
  const std::string md = slurp(dirs[0] + "/adam-heatmap/index.md");
  REQUIRE(md.find("Claim \"dynamic beats linear\"") != std::string::npos);
  REQUIRE(md.find("Claim \"block-wise beats tensor-wise\"") != std::string::npos);
  std::filesystem::remove_all(base);
}
