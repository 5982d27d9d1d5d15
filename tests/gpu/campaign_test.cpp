// The exhaustive cast campaign (gpu/verify/verify.hpp) as tests: a slice over the top binades
// (large normals, inf, NaN) and the subnormal/zero region in the default run, the designed inputs
// of `--depth ci` (every input class present, shards adding up, the CLI's --gpus merge keeping
// per-class inputs), and the full 2^32 sweep as the hidden test "[.campaign]" (the same as `exmy
// verify --device cuda --depth full`), which writes its table to $EXMY_CAMPAIGN_OUT when set.
#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "gpu/common/runtime.hpp"
#include "gpu/verify/verify.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;
using namespace exmy::gpu;

namespace {

void require_software_clean(const std::vector<CampaignCase>& cases) {
  for (const auto& c : cases) {
    INFO(c.backend << " " << c.format << " " << c.rounding);
    if (c.backend.rfind("cast", 0) == 0) {
      REQUIRE(c.mismatches == 0);
    } else {
      // Hardware differences are findings: only NaN inputs may differ (SEMANTICS 7, GPU kernels).
      for (int k = 0; k < 4; ++k) REQUIRE(c.class_mismatches[k] == 0);
    }
    REQUIRE(c.inputs > 0);
  }
}

}  // namespace

TEST_CASE("GPU cast campaign on slices of fp32 codes (zero, 1.0, top binade, inf, NaN)",
          "[gpu][campaign]") {
  // 2^20 inputs from each start: zero and the smallest subnormals; around 1.0; the top fp32
  // binade through +inf into the NaNs; the same for negative values.
  for (const std::uint64_t first : {std::uint64_t{0}, std::uint64_t{0x3F780000u},
                                    std::uint64_t{0x7F7F0000u}, std::uint64_t{0xFF7F0000u}}) {
    CampaignOptions o;
    o.first = first;
    o.count = std::uint64_t{1} << 20;
    o.progress = false;
    const auto cases = run_cast_campaign(o);
    std::printf("%s", campaign_markdown(cases).c_str());
    require_software_clean(cases);
  }
}

// Regression (2026-12-02, found running docs/tutorials/probe-a-gpu.md): `--depth ci` was the 2^26
// codes up to the last positive NaN, so every cast row read "0/0" for zero and subnormal inputs
// and no input fell inside any narrow format's range: a rounding bug could not fail it. The
// designed inputs hold every class, both signs' worth of normals, and agree with the CPU.
TEST_CASE("GPU cast campaign at --depth ci: designed inputs of every class", "[gpu][campaign]") {
  CampaignOptions o;
  o.designed = true;
  o.designed_random = std::uint64_t{1} << 20;
  o.progress = false;
  o.formats = {*parse_float_format("e4m3fn"), *parse_float_format("e2m1fn"),
               *parse_float_format("e5m2")};
  o.roundings = {Rounding{RoundMode::rne}, Rounding{RoundMode::sr, 8}};
  const auto whole = run_cast_campaign(o);
  std::printf("%s", campaign_markdown(whole).c_str());
  require_software_clean(whole);
  for (const auto& c : whole) {
    INFO(c.backend << " " << c.format << " " << c.rounding);
    if (c.backend.rfind("cast", 0) != 0 && c.backend != "hw-f32") continue;
    for (int k = 0; k < 5; ++k) CHECK(c.class_inputs[k] > 0);  // zero .. nan all present
  }
  // Three shards add up to the whole, class by class.
  std::vector<CampaignCase> sum;
  for (std::uint64_t k = 0; k < 3; ++k) {
    CampaignOptions s = o;
    s.shard_index = k;
    s.shard_count = 3;
    const auto part = run_cast_campaign(s);
    require_software_clean(part);
    if (sum.empty()) {
      sum = part;
      continue;
    }
    for (std::size_t i = 0; i < part.size(); ++i) {
      if (part[i].backend == "hw-f16" || part[i].backend == "hw-decode") continue;
      sum[i].inputs += part[i].inputs;
      for (int v = 0; v < 5; ++v) sum[i].class_inputs[v] += part[i].class_inputs[v];
    }
  }
  REQUIRE(sum.size() == whole.size());
  for (std::size_t i = 0; i < sum.size(); ++i) {
    INFO(whole[i].backend << " " << whole[i].format << " " << whole[i].rounding);
    CHECK(sum[i].inputs == whole[i].inputs);
    CHECK(sum[i].class_inputs == whole[i].class_inputs);
  }
}

// Regression (issue 37: "the merged table prints 0/0 in every per-class column"): the shards'
// JSON carried no per-class input counts, so `--gpus N` merged none. Two children on one GPU
// share it round-robin; the merged table must equal the one-process table.
TEST_CASE("exmy verify --device cuda --gpus 2 merges per-class inputs", "[gpu][campaign]") {
  if (exmy::testing::cli().empty()) FAIL("exmy not found: set EXMY_CLI to the exmy executable");
  const std::string d = exmy::testing::make_tmpdir("exmy_gpus_merge");
  REQUIRE(!d.empty());
  const std::string base =
      "verify --device cuda --campaign casts --formats e4m3fn --modes rne,sr:8 ";
  for (const char* depth : {"--depth ci", "--first 0 --count 1048576"}) {
    INFO(depth);
    REQUIRE(exmy::testing::run(base + depth + " --quiet --out " + d + "/one.md") == 0);
    REQUIRE(exmy::testing::run(base + depth + " --quiet --gpus 2 --out " + d + "/two.md") == 0);
    // The tables without the seconds column.
    auto rows = [](const std::string& text) {
      std::string out;
      std::size_t at = 0;
      while (at < text.size()) {
        std::size_t nl = text.find('\n', at);
        if (nl == std::string::npos) nl = text.size();
        std::string line = text.substr(at, nl - at);
        if (line.rfind("| cast", 0) == 0)
          out += line.substr(0, line.rfind(" | ", line.size() - 3)) + "\n";
        at = nl + 1;
      }
      return out;
    };
    const std::string one = rows(exmy::testing::slurp(d + "/one.md"));
    const std::string two = rows(exmy::testing::slurp(d + "/two.md"));
    INFO(one << "---\n" << two);
    CHECK(!one.empty());
    CHECK(one == two);
    // Every class holds inputs at ci; the range (codes 0 .. 2^20 - 1) has no normal/inf/NaN.
    if (std::string(depth) == "--depth ci") CHECK(one.find("| 0/0 |") == std::string::npos);
  }
}

// --reference device: the same counts as the CPU reference on a range, every cast row clean, a
// cast-reference row per case (the GPU's native::convert against the CPU's on designed inputs);
// and the comparator can fail: a kernel casting under rtz compared with rne counts exactly the
// inputs where the two differ (counted here on the CPU).
TEST_CASE("GPU cast campaign with the reference on the device", "[gpu][campaign]") {
  CampaignOptions o;
  o.first = 0x3F000000u;  // [0.5, 2^65): in range, then overflowing, for every narrow format
  o.count = std::uint64_t{1} << 22;
  o.progress = false;
  o.designed_random = std::uint64_t{1} << 16;
  o.formats = {*parse_float_format("e4m3fn"), *parse_float_format("e2m1fn")};
  o.roundings = {Rounding{RoundMode::rne}, Rounding{RoundMode::sr, 8}};
  const auto cpu = run_cast_campaign(o);
  o.device_reference = true;
  const auto dev = run_cast_campaign(o);
  std::printf("%s", campaign_markdown(dev).c_str());
  require_software_clean(dev);
  std::size_t refs = 0, i = 0;
  for (const auto& c : dev) {
    if (c.backend == "cast-reference") {
      ++refs;
      CHECK(c.inputs > 0);
      continue;
    }
    REQUIRE(i < cpu.size());
    INFO(c.backend << " " << c.format << " " << c.rounding);
    CHECK(c.backend == cpu[i].backend);
    CHECK(c.class_inputs == cpu[i].class_inputs);
    ++i;
  }
  CHECK(refs == 4 + (cpu.size() > 4 ? 2 : 0));  // 2 formats x 2 modes, + e4m3 / e5m2 hw rows
  const FloatFormat f = *parse_float_format("e4m3fn");
  const Rounding rne{RoundMode::rne}, rtz{RoundMode::rtz};
  const std::uint64_t first = 0x3F800000u, count = std::uint64_t{1} << 20;
  std::uint64_t differ = 0;
  for (std::uint64_t x = first; x < first + count; ++x) {
    differ += native::convert(formats::fp32, f, rne, x).code !=
              native::convert(formats::fp32, f, rtz, x).code;
  }
  const CampaignCase bad = device_reference_probe(f, rtz, rne, first, count, 1);
  CHECK(differ > 0);
  CHECK(bad.mismatches == differ);
  CHECK(device_reference_probe(f, rne, rne, first, count, 1).mismatches == 0);
}

TEST_CASE("GPU cast campaign over all 2^32 fp32 inputs", "[.campaign]") {
  CampaignOptions o;
  const auto cases = run_cast_campaign(o);
  const std::string text =
      "# exmy GPU cast campaign on " + device_name() + "\n\n" + campaign_markdown(cases);
  std::printf("%s", text.c_str());
  if (const char* path = std::getenv("EXMY_CAMPAIGN_OUT")) std::ofstream(path) << text;
  require_software_clean(cases);
}

#endif  // EXMY_HAVE_CUDA
