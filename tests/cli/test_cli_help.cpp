// Issue 31: the option tables (cli/options.hpp) of quantize, dequantize, step, gemm and the golden
// sub-commands. --help lists every option with its default or "(required)", a misspelt option is
// refused with the nearest name, an old spelling kept as an alias is the same option, and the
// summaries added with the tables (--json, --quiet) behave as their help says.
#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "sim/golden/corpus.hpp"
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
  Dir() : testing::TempDir("exmy_help") {}
};

bool have_cli() {
  if (!testing::cli().empty()) return true;
  WARN("exmy executable not found (run through ctest): skipped");
  return false;
}

testing::Captured exmy_run(const std::string& args) {
  return testing::run_captured(args, "exmy_help");
}

const char* const kSubcommands[] = {"quantize",     "dequantize",      "step",
                                    "gemm",         "golden generate", "golden merge",
                                    "golden check", "golden run"};

// A quantization of four values (tensor scheme, e4m3fn) in d: x.npy, q.npy, s.npy.
std::string quantized(const Dir& d) {
  io::write_npy(d / "x.npy", io::make_npy(std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f}));
  const auto c = exmy_run("quantize --scheme tensor --to e4m3fn --in " + (d / "x.npy") + " --out " +
                          (d / "q.npy") + " --state-out " + (d / "s.npy"));
  REQUIRE(c.status == 0);
  return "--scheme tensor --from e4m3fn --in " + (d / "q.npy");
}

}  // namespace

TEST_CASE("help_lists_defaults: every option of quantize, dequantize, step, gemm and golden",
          "[cli][help]") {
  if (!have_cli()) return;
  for (const char* sub : kSubcommands) {
    INFO(sub);
    const auto c = exmy_run(std::string(sub) + " --help");
    CHECK(c.status == 0);
    CHECK(c.out.rfind(std::string("usage: exmy ") + sub, 0) == 0);
    const std::vector<std::string> entries = option_entries(c.out);
    CHECK(entries.size() >= 1);  // -h, --help at least
    for (const std::string& e : entries) {
      INFO(e);
      CHECK(states_default(e));
    }
  }
  // exmy golden --help: each sub-command's usage line, from its table.
  const auto g = exmy_run("golden --help");
  CHECK(g.status == 0);
  for (const char* sub : {"generate", "merge", "check", "run"}) {
    CHECK(g.out.find(std::string("  exmy golden ") + sub) != std::string::npos);
  }
}

TEST_CASE("help_near_miss: a misspelt option is refused with the nearest name", "[cli][help]") {
  if (!have_cli()) return;
  const struct {
    const char* args;
    const char* hint;
  } cases[] = {
      {"quantize --sheme tensor", "did you mean --scheme?"},
      {"dequantize --scale-mod floor", "did you mean --scale-mode?"},
      {"step --optimzer adamw", "did you mean --optimizer?"},
      {"gemm --acum sm90", "did you mean --accum?"},
      {"golden generate --sed 3", "did you mean --seed?"},
      {"golden check corpus --result r", "did you mean --results?"},
      {"golden run --backnd x.so", "did you mean --backend?"},
  };
  for (const auto& k : cases) {
    INFO(k.args);
    const auto c = exmy_run(k.args);
    INFO(c.err);
    CHECK(c.status == 2);
    CHECK(c.err.find(k.hint) != std::string::npos);
    CHECK(c.err.find("try --help") != std::string::npos);
  }
  // Operands: golden merge takes exactly one directory.
  CHECK(exmy_run("golden merge").status == 2);
  CHECK(exmy_run("golden merge a b").status == 2);
  CHECK(exmy_run("quantize stray").status == 2);
}

TEST_CASE("help_alias_state: dequantize --state (the old spelling) is --state-in", "[cli][help]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string base = quantized(d);
  const auto canonical =
      exmy_run("dequantize " + base + " --state-in " + (d / "s.npy") + " --out " + (d / "a.npy"));
  const auto alias =
      exmy_run("dequantize " + base + " --state " + (d / "s.npy") + " --out " + (d / "b.npy"));
  REQUIRE(canonical.status == 0);
  CHECK(alias.status == 0);
  CHECK(alias.out == canonical.out);
  CHECK(alias.err == canonical.err);
  CHECK(testing::slurp(d / "b.npy") == testing::slurp(d / "a.npy"));
  // --help names the alias on the canonical option's line.
  const auto h = exmy_run("dequantize --help");
  CHECK(h.out.find("--state-in S.npy") != std::string::npos);
  CHECK(h.out.find("[alias: --state]") != std::string::npos);
}

TEST_CASE("help_json_summary: quantize and dequantize --json print their summary as JSON",
          "[cli][help]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string base = quantized(d);
  const auto q = exmy_run("quantize --scheme tensor --to e4m3fn --in " + (d / "x.npy") + " --out " +
                          (d / "q2.npy") + " --state-out " + (d / "s2.npy") + " --json");
  REQUIRE(q.status == 0);
  const io::Json j = io::parse_json(q.out, "quantize --json");
  CHECK(j.at("codes", "codes").u64("codes") == 4);
  CHECK(j.at("states", "states").u64("states") == 1);
  CHECK(j.at("scheme", "scheme").str("scheme") == "tensor");
  CHECK(j.at("device", "device").str("device") == "cpu");
  CHECK(j.at("flags", "flags").kind == io::Json::Kind::array);
  // The same codes as without --json.
  CHECK(testing::slurp(d / "q2.npy") == testing::slurp(d / "q.npy"));
  const auto dq = exmy_run("dequantize " + base + " --state-in " + (d / "s.npy") + " --out " +
                           (d / "x2.npy") + " --json");
  REQUIRE(dq.status == 0);
  const io::Json k = io::parse_json(dq.out, "dequantize --json");
  CHECK(k.at("values", "values").u64("values") == 4);
  CHECK(k.at("scheme", "scheme").str("scheme") == "tensor");
}

TEST_CASE("help_step_quiet: step --quiet prints no progress", "[cli][help]") {
  if (!have_cli()) return;
  const Dir d;
  io::write_npy(d / "p.npy", io::make_npy(std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f}));
  const std::string args = "step --optimizer adamw --params " + (d / "p.npy") + " --grads " +
                           (d / "p.npy") + " --steps 3 --out ";
  // EXMY_PROGRESS_SECONDS=0: a progress line per step, unless --quiet.
  REQUIRE(testing::run(args + (d / "a"), d / "err_a", "EXMY_PROGRESS_SECONDS=0") == 0);
  CHECK(testing::slurp(d / "err_a").find("exmy step: 1/3 steps") != std::string::npos);
  REQUIRE(testing::run(args + (d / "b") + " --quiet", d / "err_b", "EXMY_PROGRESS_SECONDS=0") == 0);
  CHECK(testing::slurp(d / "err_b").empty());
  CHECK(testing::slurp(d / "b/params.npy") == testing::slurp(d / "a/params.npy"));
}

TEST_CASE("help_golden_json: golden generate, merge and run --json print their summary as JSON",
          "[cli][help]") {
  if (!have_cli()) return;
  const Dir d;
  const auto whole = exmy_run("golden generate --suite step --quiet --json --out " + (d / "c"));
  REQUIRE(whole.status == 0);
  const io::Json w = io::parse_json(whole.out, "golden generate --json");
  const std::uint64_t cases = w.at("cases", "cases").u64("cases");
  CHECK(cases > 0);
  CHECK(w.at("seed", "seed").u64("seed") == golden::kDefaultSeed);
  CHECK(fs::exists(w.at("manifest", "manifest").str("manifest")));
  // Two shards merged: the same corpus (SEMANTICS 13.4), summarized in the same fields.
  for (const char* shard : {"0/2", "1/2"}) {
    REQUIRE(exmy_run(std::string("golden generate --suite step --quiet --shard ") + shard +
                     " --out " + (d / "s"))
                .status == 0);
  }
  const auto merged = exmy_run("golden merge " + (d / "s") + " --json");
  REQUIRE(merged.status == 0);
  const io::Json m = io::parse_json(merged.out, "golden merge --json");
  CHECK(m.at("cases", "cases").u64("cases") == cases);
  CHECK(m.at("corpus_sha256", "sha").str("sha") == w.at("corpus_sha256", "sha").str("sha"));
  CHECK(m.find("seed") == nullptr);
  // run: ABI 1 runs casts only, so a step corpus loads no plugin and skips every case.
  const auto run = exmy_run("golden run --backend " + (d / "none.so") + " " + (d / "c") +
                            " --suite step --out " + (d / "r") + " --json");
  REQUIRE(run.status == 0);
  const io::Json r = io::parse_json(run.out, "golden run --json");
  CHECK(r.at("written", "written").u64("written") == 0);
  CHECK(r.at("skipped", "skipped").u64("skipped") == cases);
  CHECK(r.at("crashed", "crashed").u64("crashed") == 0);
  CHECK(r.at("out", "out").str("out") == d / "r");
}

TEST_CASE("help_golden_entry: golden run --entry host|device, --device its older spelling",
          "[cli][help]") {
  if (!have_cli()) return;
  const auto help = exmy_run("golden run --help");
  CHECK(help.status == 0);
  CHECK(help.out.find("--entry host|device") != std::string::npos);
  CHECK(help.out.find("(default: host)") != std::string::npos);
  CHECK(help.out.find("the older spelling of --entry device") != std::string::npos);
  const auto bad = exmy_run("golden run corpus --backend x.so --out r --entry gpu");
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--entry 'gpu': expected host or device") != std::string::npos);
  // Both spellings reach the same refusal of a missing corpus (the option parsed, then the run).
  const Dir d;
  const auto a = exmy_run("golden run " + (d / "none") + " --backend x.so --out " + (d / "r") +
                          " --entry device");
  const auto b =
      exmy_run("golden run " + (d / "none") + " --backend x.so --out " + (d / "r") + " --device");
  CHECK(a.status == 2);
  CHECK(a.status == b.status);
  CHECK(a.err == b.err);
}
