// Golden corpora (sim/golden/corpus.hpp, docs/SEMANTICS.md 13.7): SHA-256 against FIPS 180-4's
// examples; generate → check round trips; a flipped result bit, a corrupted corpus file, an
// edited manifest and missing results each reported as documented; shards merge to the same
// corpus; the default suite's content hash pinned (a change is a deliberate version bump); the
// CLI's exit codes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim/common/error.hpp"
#include "sim/golden/corpus.hpp"
#include "sim/io/files.hpp"
#include "sim/io/flat_json.hpp"
#include "sim/io/npy.hpp"
#include "sim/io/sha256.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;
namespace fs = std::filesystem;
using exmy::testing::make_tmpdir;

namespace {

// The expected outputs of a corpus copied into check's results layout.
void copy_expected(const std::string& corpus, const std::string& results) {
  for (const auto& e : fs::recursive_directory_iterator(corpus)) {
    if (!e.is_regular_file() || e.path().parent_path().filename() != "expected") continue;
    const fs::path rel = fs::relative(e.path().parent_path().parent_path(), corpus);
    fs::create_directories(fs::path(results) / rel);
    fs::copy_file(e.path(), fs::path(results) / rel / e.path().filename());
  }
}

golden::GenerateResult gen(const std::string& suite, const std::string& out,
                           Shard shard = Shard{}) {
  golden::GenerateOptions o;
  o.suite = suite;
  o.out = out;
  o.shard = shard;
  o.progress = false;
  return golden::generate(o);
}

}  // namespace

TEST_CASE("sha256: FIPS 180-4 examples", "[golden][sha256]") {
  CHECK(io::sha256_hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(io::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(io::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(io::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("golden corpus: generate, check, and every documented failure", "[golden]") {
  const std::string dir = make_tmpdir("exmy_golden"), corpus = dir + "/c", res = dir + "/r";
  const golden::GenerateResult g = gen("quantize", corpus);
  CHECK(g.cases == 254);
  CHECK(fs::exists(corpus + "/manifest.json"));
  copy_expected(corpus, res);
  golden::CheckOptions o;
  o.corpus = corpus;
  o.results = res;
  {
    const golden::CheckReport r = golden::check(o);
    CHECK(r.cases.size() == 254);
    CHECK(r.mismatches == 0);
    CHECK(r.missing == 0);
    CHECK(r.checks > 100000);
  }
  SECTION("a flipped bit in a result is one mismatch, reported with its index") {
    const std::string f = res + "/quantize/int8-rowwise-div-mul/codes.npy";
    io::NpyArray a = io::read_npy(f);
    a.data[10] ^= 1;
    io::write_npy(f, a);
    const golden::CheckReport r = golden::check(o);
    CHECK(r.mismatches == 1);
    bool seen = false;
    for (const auto& c : r.cases) {
      if (c.id == "quantize/int8-rowwise-div-mul") {
        REQUIRE(c.first.size() == 1);
        CHECK(c.first[0].find("codes[10]") != std::string::npos);
        seen = true;
      }
    }
    CHECK(seen);
  }
  SECTION("a result of another dtype is bad input") {
    io::write_npy(res + "/quantize/int8-rowwise-div-mul/codes.npy",
                  io::make_npy(std::vector<float>(32 * 256, 0.0f)));
    CHECK_THROWS_AS(golden::check(o), InputError);
  }
  SECTION("missing results are counted, not mismatches") {
    fs::remove_all(res + "/quantize/nvfp4-te");
    const golden::CheckReport r = golden::check(o);
    CHECK(r.missing == 1);
    CHECK(r.mismatches == 0);
  }
  SECTION("a corrupted corpus file fails its hash") {
    std::ofstream(corpus + "/quantize/mx-e4m3fn-ocp-floor/expected/codes.npy",
                  std::ios::binary | std::ios::app)
        << 'x';
    CHECK_THROWS_WITH(golden::check(o), Catch::Contains("corrupted corpus file"));
  }
  SECTION("an edited manifest (a file dropped from its list) fails the corpus hash") {
    std::string m = exmy::testing::slurp(corpus + "/manifest.json");
    const auto pos = m.find("  \"file:quantize/nvfp4-te/x.npy\"");
    REQUIRE(pos != std::string::npos);
    m.erase(pos, m.find('\n', pos) - pos + 1);
    std::ofstream(corpus + "/manifest.json", std::ios::trunc) << m;
    CHECK_THROWS_WITH(golden::check(o), Catch::Contains("corpus_sha256"));
  }
  fs::remove_all(dir);
}

TEST_CASE("golden corpus: shards merge into the unsharded corpus", "[golden][shard]") {
  const std::string dir = make_tmpdir("exmy_golden_shard");
  const golden::GenerateResult whole = gen("step", dir + "/whole");
  std::size_t cases = 0;
  for (std::uint64_t i = 0; i < 3; ++i) cases += gen("step", dir + "/sharded", Shard{i, 3}).cases;
  CHECK(cases == whole.cases);
  const golden::GenerateResult merged = golden::merge(dir + "/sharded");
  CHECK(merged.cases == whole.cases);
  CHECK(merged.corpus_sha256 == whole.corpus_sha256);
  // A missing shard is named.
  gen("step", dir + "/partial", Shard{0, 2});
  CHECK_THROWS_WITH(golden::merge(dir + "/partial"), Catch::Contains("shard 1 of 2 is missing"));
  fs::remove_all(dir);
}

TEST_CASE("golden corpus: the default suite is pinned", "[golden][pinned]") {
  // The content hash of the default corpus (every file's sha256, sorted by path). A change here
  // changes what users' CI compares against: bump golden::kCorpusVersion, say why in
  // docs/SEMANTICS.md 13.7, and update this value.
  const std::string dir = make_tmpdir("exmy_golden_pin");
  const golden::GenerateResult g = gen("all", dir + "/c");
  CHECK(g.cases == 796);
  CHECK(g.corpus_sha256 == "138bb29a9ffc7df16f39796c8732f7fa54c7f71e11dd06c6a5c4a216762f6d1d");
  CHECK(golden::kCorpusVersion == 8);
  fs::remove_all(dir);
}

TEST_CASE("exmy golden: exit codes", "[golden][cli]") {
  REQUIRE_FALSE(exmy::testing::cli().empty());
  const std::string dir = make_tmpdir("exmy_golden_cli");
  using exmy::testing::run;
  CHECK(run("golden generate --suite step --out " + dir + "/c --quiet") == 0);
  CHECK(run("golden generate --suite step --out " + dir + "/x --shard 3/2") == 2);
  CHECK(run("golden generate --suite nope --out " + dir + "/x") == 2);
  copy_expected(dir + "/c", dir + "/r");
  CHECK(run("golden check " + dir + "/c --results " + dir + "/r") == 0);
  io::NpyArray a = io::read_npy(dir + "/r/step/adamw8bit-fp32/params.npy");
  a.data[0] ^= 1;
  io::write_npy(dir + "/r/step/adamw8bit-fp32/params.npy", a);
  CHECK(run("golden check " + dir + "/c --results " + dir + "/r") == 1);
  fs::remove_all(dir + "/r/step/stableadamw-fp32");
  CHECK(run("golden check " + dir + "/c --results " + dir + "/r --suite step") == 1);
  CHECK(run("golden check " + dir + "/c --results " + dir + "/missing") == 2);
  CHECK(run("golden check " + dir + "/nothing --results " + dir + "/r") == 2);
  CHECK(run("golden --help") == 0);
  CHECK(run("golden check --help") == 0);
  fs::remove_all(dir);
}

TEST_CASE("golden corpus: the block:RxC and nf4/fp4 cases are what the CLI writes",
          "[golden][cli][block2d][bnb4]") {
  // The corpus computes these cases through the library calls (quant::quantize, bnb4_quantize);
  // users reproduce them with the case's command line. Each is run through exmy here and its
  // outputs checked against the case's expected arrays by `exmy golden check`.
  REQUIRE_FALSE(exmy::testing::cli().empty());
  const std::string dir = make_tmpdir("exmy_golden_q"), corpus = dir + "/c", res = dir + "/r";
  gen("quantize", corpus);
  const std::string cli = "'" + exmy::testing::cli() + "'";
  std::size_t ran = 0;
  for (const auto& e : fs::directory_iterator(corpus + "/quantize")) {
    const std::string name = e.path().filename().string();
    const bool tile = name.rfind("e4m3fn-tile", 0) == 0;
    const bool bnb4 = name.rfind("nf4-", 0) == 0 || name.rfind("fp4-", 0) == 0;
    if (!tile && !bnb4) continue;
    const std::string cj = (e.path() / "case.json").string();
    const io::FlatJson c(io::read_small_file(cj, 1 << 20, "case.json"), cj);
    const std::string out = res + "/quantize/" + name;
    fs::create_directories(out);
    fs::copy_file(e.path() / "x.npy", fs::path(out) / "x.npy");
    std::string cmd;
    if (bnb4) {  // the case's own command line, exmy replaced by the binary under test
      std::string line = c.str("cli");
      for (std::size_t p = 0; (p = line.find("exmy ", p)) != std::string::npos;) {
        if (p == 0 || line[p - 1] == ' ') {
          line.replace(p, 4, cli);
          p += cli.size();
        } else {
          p += 5;
        }
      }
      cmd = line;
    } else {
      std::string args = c.str("args"), deq = args;
      deq.replace(deq.find("--to"), 4, "--from");
      if (const auto f = deq.find(" --in-format bf16"); f != std::string::npos) deq.erase(f, 17);
      cmd = cli + " quantize " + args + " --in x.npy --out codes.npy --state-out state.npy && " +
            cli + " dequantize " + deq + " --in codes.npy --state-in state.npy --out dequant.npy";
    }
    INFO(name << ": " << cmd);
    CHECK(std::system(("cd '" + out + "' && " + cmd + " >/dev/null").c_str()) == 0);
    ++ran;
  }
  CHECK(ran == 18 + 48);
  golden::CheckOptions o;
  o.corpus = corpus;
  o.results = res;
  o.allow_missing = true;  // only these cases ran
  const golden::CheckReport r = golden::check(o);
  std::size_t checked = 0;
  for (const auto& cr : r.cases) checked += cr.missing ? 0 : 1;
  CHECK(r.mismatches == 0);
  CHECK(checked == ran);
  fs::remove_all(dir);
}

// Issue 34: `golden check` against a backend that covers a few cases printed one "no results"
// line per missing case before the verdict, and its mismatch lines were hex only. Now the
// mismatching cases come first, their codes carry values and classes, and the missing cases are
// one summary line.
TEST_CASE("exmy golden check: mismatches first, values with classes, one line for missing cases",
          "[golden][cli]") {
  REQUIRE_FALSE(exmy::testing::cli().empty());
  const std::string dir = make_tmpdir("exmy_golden_lines");
  using exmy::testing::run;
  REQUIRE(run("golden generate --suite cast --out " + dir + "/c --quiet") == 0);
  // Results for one case only, with one flipped code: e4m3fn rne element 0.
  const std::string id = "cast/e4m3fn/rne-none";
  fs::create_directories(dir + "/r/" + id);
  io::NpyArray a = io::read_npy(dir + "/c/" + id + "/expected/codes.npy");
  a.data[0] ^= 1;
  io::write_npy(dir + "/r/" + id + "/codes.npy", a);
  const auto c = exmy::testing::run_captured(
      "golden check " + dir + "/c --results " + dir + "/r --allow-missing",
      "exmy_golden_lines_run");
  CHECK(c.status == 1);
  CHECK(c.out.find("no results") == std::string::npos);
  const auto first = c.out.find(id), summary = c.out.find("cases without results (");
  REQUIRE(first != std::string::npos);
  REQUIRE(summary != std::string::npos);
  CHECK(first < summary);
  CHECK(c.out.find("allowed by --allow-missing") != std::string::npos);
  // "codes[0]: expected 0xNN (value, class), got 0xMM (value, class) (x = 0x... (value, class))"
  const auto line = c.out.find("codes[0]: expected 0x");
  REQUIRE(line != std::string::npos);
  const std::string l = c.out.substr(line, c.out.find('\n', line) - line);
  CHECK(std::count(l.begin(), l.end(), '(') >= 4);
  CHECK((l.find("normal") != std::string::npos || l.find("zero") != std::string::npos ||
         l.find("nan") != std::string::npos || l.find("inf") != std::string::npos));
  fs::remove_all(dir);
}
