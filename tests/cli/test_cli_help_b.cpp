// Issue 31, second half of the subcommands (cast, table, diagnose, verify, verify --backend,
// verify-cuda, layer, fuzz, report, probe, selfcheck): their option tables (cli/options.hpp).
// --help of every (sub-)command exits 0 and gives each option a default or says it is required;
// a misspelt option is refused (exit 2) naming the option meant; old spellings work as aliases;
// the --json and --quiet added to diagnose, layer and fuzz do what their help says.
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/io/json.hpp"
#include "sim/io/npy.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/help_text.hpp"

using namespace exmy;
namespace fs = std::filesystem;

namespace {

using testing::option_entries;
using testing::states_default;

// A fresh directory per test case, removed at the end.
struct Dir : testing::TempDir {
  Dir() : testing::TempDir("exmy_help_b") {}
};

testing::Captured exmy_run(const std::string& args) {
  return testing::run_captured(args, "exmy_help_b_run");
}

std::size_t lines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

// The sub-commands of this half, each as its --help command line. verify --backend is the
// hidden verify-backend (the library need not exist to print the help).
const std::vector<std::string> kHelpCommands = {
    "cast",   "table",        "diagnose",           "diagnose spikes", "diagnose sharpness",
    "verify", "verify merge", "verify --backend x", "layer",           "fuzz",
    "report", "probe",        "probe gemm",         "probe sfu",       "selfcheck",
    "analyze"};

}  // namespace

TEST_CASE("help_b: --help of every sub-command lists each option with its default", "[cli][help]") {
  std::vector<std::string> commands = kHelpCommands;
  // verify --device cuda's own table exists only in CUDA builds.
  if (exmy_run("verify-cuda --help").status == 0) commands.push_back("verify-cuda");
  for (const std::string& c : commands) {
    INFO("exmy " << c << " --help");
    const auto r = exmy_run(c + " --help");
    CHECK(r.status == 0);
    CHECK(r.out.rfind("usage: exmy", 0) == 0);
    const auto entries = option_entries(r.out);
    CHECK(entries.size() >= 1);  // at least -h, --help
    for (const std::string& e : entries) {
      INFO(e);
      CHECK(states_default(e));
    }
  }
}

TEST_CASE("help_b: a misspelt option is refused naming the option meant", "[cli][help]") {
  struct Case {
    std::string args, meant;
  };
  const std::vector<Case> cases = {
      {"cast e4m3fn --rond rne 1", "--round"},
      {"table e4m3fn --jsn", "--json"},
      {"diagnose spikes --trace x.csv --sigm 3", "--sigma"},
      {"diagnose sharpness --logits a --labels b --ep 1", "--eps"},
      {"verify --campain fp16", "--campaign"},
      {"verify merge a.json --jsn", "--json"},
      {"verify --backend x --op cast --format e4m3fn --round rne --timout 5", "--timeout"},
      {"layer --kinf plain", "--kind"},
      {"fuzz --backend x --cases 5 --sed 1", "--seed"},
      {"report --out /tmp/x --quik", "--quick"},
      {"probe gemm --shape 1x1x1", "--shapes"},
      {"probe sfu --ot d", "--out"},
      {"selfcheck --dept ci", "--depth"},
      {"analyze --tensors d --out-dir o --matmul-row 4", "--matmul-rows"},
  };
  for (const Case& c : cases) {
    INFO("exmy " << c.args);
    const auto r = exmy_run(c.args);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("did you mean " + c.meant + "?") != std::string::npos);
    CHECK(lines(r.err) == 1);
    CHECK(r.out.empty());
  }
}

TEST_CASE("help_b: required options and the sub-command dispatchers", "[cli][help]") {
  const auto trace = exmy_run("diagnose spikes");
  CHECK(trace.status == 2);
  CHECK(trace.err.find("--trace is required") != std::string::npos);
  const auto sweep = exmy_run("verify --backend x --op cast --format e4m3fn");
  CHECK(sweep.status == 2);
  CHECK(sweep.err.find("--round is required") != std::string::npos);
  for (const char* c : {"diagnose", "probe"}) {
    INFO(c);
    const auto bare = exmy_run(c);
    CHECK(bare.status == 2);
    CHECK(bare.out.find("usage: exmy") != std::string::npos);
    const auto unknown = exmy_run(std::string(c) + " nosuch");
    CHECK(unknown.status == 2);
    CHECK(unknown.err.find("'nosuch'") != std::string::npos);
  }
}

TEST_CASE("help_b: --name=value and the spellings of --name value agree", "[cli][help]") {
  const auto spaced = exmy_run("cast e4m3fn --round rtz --json 1.1 -0.3");
  const auto joined = exmy_run("cast e4m3fn --round=rtz --json 1.1 -0.3");
  REQUIRE(spaced.status == 0);
  CHECK(joined.status == 0);
  CHECK(joined.out == spaced.out);
}

// Regression: cast looked for --help among all its arguments before parsing, so a VALUE "--help"
// after "--" printed the usage and exited 0 instead of being refused as a number.
TEST_CASE("cast_help_after_double_dash: after --, --help is a VALUE, not the help", "[cli][help]") {
  const auto r = exmy_run("cast e4m3fn -- --help");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find("--help") != std::string::npos);
  CHECK(lines(r.err) == 1);
}

TEST_CASE("help_b: layer --out-dir is an alias of --out; --json names what was written",
          "[cli][help]") {
  const Dir d;
  io::write_npy(d / "x.npy", io::make_npy(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}));
  io::write_npy(d / "w.npy", io::make_npy(std::vector<float>(12, 0.5f), {3, 4}));
  io::write_npy(d / "g.npy", io::make_npy(std::vector<float>{1, -1, 2, -2, 3, -3}, {2, 3}));
  const std::string in = "--kind plain --dtype fp32 --x " + (d / "x.npy") + " --w " +
                         (d / "w.npy") + " --g " + (d / "g.npy");
  const auto canonical = exmy_run("layer " + in + " --out " + (d / "a"));
  REQUIRE(canonical.status == 0);
  CHECK(canonical.out.empty());  // without --json, nothing on stdout as before
  const auto alias = exmy_run("layer " + in + " --out-dir " + (d / "b"));
  REQUIRE(alias.status == 0);
  for (const char* f : {"y.npy", "x_grad.npy", "w_grad.npy"}) {
    INFO(f);
    CHECK(testing::file_bytes(d / "a/" + f) == testing::file_bytes(d / "b/" + f));
  }
  const auto json = exmy_run("layer " + in + " --out " + (d / "c") + " --json");
  REQUIRE(json.status == 0);
  const io::Json doc = io::parse_json(json.out, "layer --json");
  CHECK(doc.at("out", "out").str("out") == d / "c");
  CHECK(doc.at("b", "b").u64("b") == 2);
  CHECK(doc.at("n", "n").u64("n") == 4);
  CHECK(doc.at("m", "m").u64("m") == 3);
  const std::string y = doc.at("files", "files").at("y", "y").str("y");
  CHECK(y == d / "c/y.npy");
  CHECK(testing::file_bytes(y) == testing::file_bytes(d / "a/y.npy"));
}

TEST_CASE("help_b: diagnose --quiet prints the verdict line, --json one object", "[cli][help]") {
  const Dir d;
  std::string csv = "step,loss,rms\n";
  for (int i = 0; i < 400; ++i) {
    // A flat loss with a little noise, one loss spike at 300 (two deviations: a spike needs
    // SpikeOptions' min_loss_deviations = 2 in its cluster) preceded by an RMS spike at 297.
    const double loss = i == 300 || i == 301 ? 9.0 : 2.0 + 0.01 * (i % 7);
    const double rms = i == 297 ? 3.0 : 1.0;
    csv += std::to_string(i) + "," + std::to_string(loss) + "," + std::to_string(rms) + "\n";
  }
  std::ofstream(d / "t.csv") << csv;
  const std::string base = "diagnose spikes --trace " + (d / "t.csv") + " --ignore-first 50";
  const auto text = exmy_run(base);
  REQUIRE(text.status == 0);
  CHECK(lines(text.out) > 1);
  const auto quiet = exmy_run(base + " --quiet");
  REQUIRE(quiet.status == 0);
  CHECK(quiet.out.rfind("1 loss spikes, 1 preceded by an RMS spike (p = ", 0) == 0);
  CHECK(lines(quiet.out) == 1);
  const auto json = exmy_run(base + " --json");
  REQUIRE(json.status == 0);
  const io::Json doc = io::parse_json(json.out, "diagnose --json");
  CHECK(doc.at("preceded", "preceded").u64("preceded") == 1);
  REQUIRE(doc.at("loss_spikes", "loss_spikes").items.size() == 1);
  CHECK(doc.at("loss_spikes", "loss_spikes").items[0].u64("step") == 300);

  io::write_npy(d / "l.npy", io::make_npy(std::vector<float>{1, 2, 3, 0, 0, 5}, {2, 3}));
  io::write_npy(d / "y.npy", io::make_npy(std::vector<std::int32_t>{2, 0}));
  const std::string sharp =
      "diagnose sharpness --logits " + (d / "l.npy") + " --labels " + (d / "y.npy");
  const auto sq = exmy_run(sharp + " --quiet");
  REQUIRE(sq.status == 0);
  CHECK(sq.out.rfind("logit sharpness mean ", 0) == 0);
  CHECK(lines(sq.out) == 1);
}

TEST_CASE("help_b: fuzz --quiet prints the verdict line, --json one object", "[cli][help]") {
  // The reference plugin in the build tree, two levels above the exmy binary (BUILD/cli/).
  const fs::path lib = fs::path(testing::cli()).parent_path().parent_path() /
                       "examples/backend_reference/libexmy_backend_reference.so";
  if (!fs::exists(lib)) {
    WARN("no " << lib.string() << " (EXMY_EXAMPLES off): skipped");
    return;
  }
  const std::string base =
      "fuzz --backend '" + lib.string() + "' --op cast --format e4m3fn --round rne --cases 50";
  const auto quiet = exmy_run(base + " --quiet");
  INFO(quiet.err);
  REQUIRE(quiet.status == 0);
  CHECK(quiet.out.rfind("PASS: 50 cases", 0) == 0);
  CHECK(lines(quiet.out) == 1);
  const auto json = exmy_run(base + " --json --seed 3");
  REQUIRE(json.status == 0);
  const io::Json doc = io::parse_json(json.out, "fuzz --json");
  CHECK(doc.at("verdict", "verdict").str("verdict") == "PASS");
  CHECK(doc.at("cases", "cases").u64("cases") == 50);
  CHECK(doc.at("seed", "seed").u64("seed") == 3);
  CHECK(doc.at("failure", "failure").kind == io::Json::Kind::null);
  // --device cuda names --entry device, the plugin's device entry point.
  const auto dev = exmy_run(base + " --device cuda");
  CHECK(dev.status == 2);
  CHECK(dev.err.find("--entry device") != std::string::npos);
}
