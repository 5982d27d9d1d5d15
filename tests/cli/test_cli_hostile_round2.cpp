// Issue 36 (faults, signals and hostile input, round 2) through the exmy executable: signals in
// the middle of a write, temporaries of dead processes, concurrent writers of the same outputs,
// outputs that are devices, a full stdout, huge OMP_NUM_THREADS, GEMM shapes whose size wraps,
// layer's staging, golden corpora. Each TEST_CASE is named after the problem it pins.
//
// Signals are sent at a known point, never after a guessed delay: the fault-injection hooks of
// sim/io/files.cpp (EXMY_FAULT_PAUSE_AT_COMMIT, EXMY_FAULT_HOLD_COMMIT) make exmy create a file
// when it reaches the point and wait there; the tests wait for that file (up to 5 minutes, for a
// loaded 2-core machine) and reap every process they start.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "sim/io/npy.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;
namespace fs = std::filesystem;

namespace {

struct Dir : testing::TempDir {
  Dir() : testing::TempDir("exmy_hostile36") {}
};

bool have_cli() {
  if (std::getenv("EXMY_CLI") != nullptr) return true;
  WARN("EXMY_CLI not set (run through ctest): skipped");
  return false;
}

// `ENV exmy ARGS` started in the background (stdout and stderr to files in d).
pid_t spawn(const Dir& d, const std::string& args, const std::string& env) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string cmd = env + " exec '" + testing::cli() + "' " + args + " >'" + d.path +
                            "/spawn.out' 2>'" + d.path + "/spawn.err'";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Waits up to 5 minutes for `path` to exist; false if `pid` ended first or time ran out.
bool wait_for_file(const std::string& path, pid_t pid) {
  for (int i = 0; i < 3000; ++i) {
    if (testing::exists(path)) return true;
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) return testing::exists(path);
    usleep(100 * 1000);
  }
  return false;
}

// The status of `pid` (waiting up to 5 minutes, then killing it: no process is left behind).
int reap(pid_t pid) {
  int st = 0;
  for (int i = 0; i < 3000; ++i) {
    const pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return st;
    if (r < 0) return -1;
    usleep(100 * 1000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  FAIL("exmy did not end within 5 minutes of the signal");
  return st;
}

// Names in `dir` that are exmy temporaries (.exmy-tmp.*, .exmy-stage.*, .exmy-prev.*).
std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(".exmy-", 0) == 0 || n.find(".tmp") != std::string::npos) found.push_back(n);
  }
  return found;
}

std::string f32_file(const Dir& d, const std::string& name, std::vector<float> v,
                     std::vector<std::size_t> shape = {}) {
  const std::string p = d / name;
  io::write_npy(p, io::make_npy(v, std::move(shape)));
  return p;
}

}  // namespace

TEST_CASE("signal_mid_write_leaves_no_temporary: SIGINT/SIGTERM at cast's commit",
          "[cli][hostile][signals]") {
  if (!have_cli()) return;
  for (const int sig : {SIGINT, SIGTERM}) {
    INFO("signal " << sig);
    const Dir d;
    const std::string x = f32_file(d, "x.npy", std::vector<float>(4096, 1.5f));
    std::ofstream(d / "y.npy") << "previous";
    const std::string ready = d / "ready";
    const pid_t pid = spawn(d, "cast e4m3fn --in '" + x + "' --out '" + (d / "y.npy") + "'",
                            "EXMY_FAULT_PAUSE_AT_COMMIT='" + ready + "'");
    REQUIRE(wait_for_file(ready, pid));
    kill(pid, sig);
    const int st = reap(pid);
    CHECK(WIFSIGNALED(st));
    CHECK(WTERMSIG(st) == sig);
    CHECK(temporaries(d.path).empty());
    CHECK(testing::slurp(d / "y.npy") == "previous");
  }
}

TEST_CASE("signal_mid_write_layer: SIGTERM at layer's commit leaves no staging directory",
          "[cli][hostile][signals]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string x = f32_file(d, "x.npy", {1, 2, 3, 4}, {2, 2});
  const std::string ready = d / "ready";
  const pid_t pid = spawn(d,
                          "layer --kind plain --dtype fp32 --x '" + x + "' --w '" + x + "' --g '" +
                              x + "' --out '" + (d / "out") + "'",
                          "EXMY_FAULT_PAUSE_AT_COMMIT='" + ready + "'");
  REQUIRE(wait_for_file(ready, pid));
  kill(pid, SIGTERM);
  const int st = reap(pid);
  CHECK(WIFSIGNALED(st));
  CHECK(temporaries(d.path).empty());
  CHECK_FALSE(testing::exists(d / "out"));
}

TEST_CASE("stale_temporaries_swept: a dead writer's temporaries go, a live one's stay",
          "[cli][hostile][signals]") {
  if (!have_cli()) return;
  const Dir d;
  // A pid that existed and is gone (reaped), and one that is alive (this test).
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const std::string dead_tmp = d / (".exmy-tmp." + std::to_string(dead) + ".0");
  const std::string dead_stage = d / (".exmy-stage." + std::to_string(dead) + ".3");
  const std::string live_tmp = d / (".exmy-tmp." + std::to_string(getpid()) + ".0");
  std::ofstream(dead_tmp) << "x";
  fs::create_directories(dead_stage + "/sub");
  std::ofstream(dead_stage + "/sub/f") << "x";
  std::ofstream(live_tmp) << "x";
  const std::string x = f32_file(d, "x.npy", {1.5f});
  CHECK(testing::run("cast e4m3fn --in '" + x + "' --out '" + (d / "y.npy") + "'") == 0);
  CHECK_FALSE(testing::exists(dead_tmp));
  CHECK_FALSE(testing::exists(dead_stage));
  CHECK(testing::exists(live_tmp));
}

TEST_CASE("concurrent_writers_never_mix: a second quantize waits for the first's commit",
          "[cli][hostile][signals]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string a = f32_file(d, "a.npy", std::vector<float>(64, 1.0f));
  const std::string b = f32_file(d, "b.npy", std::vector<float>(64, -3.0f));
  const auto args = [&](const std::string& in) {
    return "quantize --scheme tensor --to int8 --in '" + in + "' --out '" + (d / "q.npy") +
           "' --state-out '" + (d / "s.npy") + "'";
  };
  // Each run alone, for the expected pairs.
  REQUIRE(testing::run(args(a)) == 0);
  const std::string qa = testing::slurp(d / "q.npy"), sa = testing::slurp(d / "s.npy");
  REQUIRE(testing::run(args(b)) == 0);
  const std::string qb = testing::slurp(d / "q.npy"), sb = testing::slurp(d / "s.npy");
  REQUIRE(qa != qb);
  REQUIRE(sa != sb);
  // A holds its commit after its first rename; B runs meanwhile; then A goes on.
  const std::string hold = d / "hold";
  const pid_t pa = spawn(d, args(a), "EXMY_FAULT_HOLD_COMMIT='" + hold + "'");
  REQUIRE(wait_for_file(hold, pa));
  const pid_t pb = fork();
  if (pb == 0) {
    const std::string cmd = "exec '" + testing::cli() + "' " + args(b) + " >/dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  usleep(500 * 1000);  // time for B to reach its commit (the result does not depend on it)
  fs::remove(hold);
  const int sta = reap(pa), stb = reap(pb);
  CHECK((WIFEXITED(sta) && WEXITSTATUS(sta) == 0));
  CHECK((WIFEXITED(stb) && WEXITSTATUS(stb) == 0));
  const std::string q = testing::slurp(d / "q.npy"), s = testing::slurp(d / "s.npy");
  CHECK(((q == qa && s == sa) || (q == qb && s == sb)));
  CHECK(temporaries(d.path).empty());
}

TEST_CASE("out_device_node_refused: --out /dev/null is not replaced by a file", "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string x = f32_file(d, "x.npy", {1.5f});
  const std::string err = d / "err";
  CHECK(testing::run("cast e4m3fn --in '" + x + "' --out /dev/null", err) == 2);
  CHECK(testing::slurp(err).find("/dev/null: is a device") != std::string::npos);
  struct stat st {};
  REQUIRE(stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
}

TEST_CASE("stdout_write_error: output to a full device exits 2", "[cli][hostile]") {
  if (!have_cli() || !testing::exists("/dev/full")) return;
  const Dir d;
  const std::string err = d / "err";
  const std::string cmd =
      "'" + testing::cli() + "' cast e4m3fn 1.5 2.5 --json >/dev/full 2>'" + err + "'";
  const int st = std::system(cmd.c_str());
  CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 2));
  CHECK(testing::slurp(err).find("cannot write to standard output") != std::string::npos);
  const int sv = std::system(("'" + testing::cli() + "' --version >/dev/full 2>/dev/null").c_str());
  CHECK((WIFEXITED(sv) && WEXITSTATUS(sv) == 2));
}

TEST_CASE("omp_num_threads_huge: OMP_NUM_THREADS=100000 is held to 4096", "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string x = f32_file(d, "x.npy", std::vector<float>(1024, 1.5f));
  const std::string err = d / "err";
  CHECK(testing::run("cast e4m3fn --in '" + x + "' --out '" + (d / "y.npy") + "'", err,
                     "OMP_NUM_THREADS=100000") == 0);
  CHECK(testing::slurp(err).find("using 4096") != std::string::npos);
  CHECK(testing::run("cast e4m3fn --in '" + x + "' --out '" + (d / "z.npy") + "'", err,
                     "OMP_NUM_THREADS=18446744073709551617") == 0);
  CHECK(testing::slurp(d / "y.npy") == testing::slurp(d / "z.npy"));
}

TEST_CASE("gemm_shape_wrap: header-only operands whose M x N wraps or cannot fit",
          "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  // Header-only arrays (K = 0): the parser accepts them, C = M x N must still be checked.
  const auto empty = [&](const std::string& name, std::size_t rows) {
    io::NpyArray a;
    a.descr = "<f4";
    a.shape = {rows, 0};
    const std::string p = d / name;
    io::write_npy(p, a);
    return p;
  };
  const std::string wrap = empty("wrap.npy", std::size_t{1} << 32);
  const std::string big = empty("big.npy", std::size_t{1} << 20);
  const std::string tail =
      " --a-format fp32 --b-format fp32 --out-format fp32 --accum fp32-seq --out '" +
      (d / "c.npy") + "'";
  const std::string err = d / "err";
  CHECK(testing::run("gemm --a '" + wrap + "' --b '" + wrap + "'" + tail, err) == 2);
  CHECK(testing::slurp(err).find("overflows 64 bits") != std::string::npos);
  CHECK(testing::run("gemm --a '" + big + "' --b '" + big + "'" + tail, err) == 2);
  CHECK(testing::slurp(err).find("more than this machine's memory") != std::string::npos);
  CHECK_FALSE(testing::exists(d / "c.npy"));
}

TEST_CASE("gemm_scale_overflow: --scale-a 1e300 is refused by the fp32 models", "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string a = f32_file(d, "a.npy", {1, 2, 3, 4}, {2, 2});
  const std::string base = "gemm --a '" + a + "' --b '" + a +
                           "' --a-format fp32 --b-format fp32 --out-format fp32 --out '" +
                           (d / "c.npy") + "'";
  const std::string err = d / "err";
  CHECK(testing::run(base + " --accum fp32-seq --scale-a 1e300", err) == 2);
  CHECK(testing::slurp(err).find("--scale-a x --scale-b") != std::string::npos);
  CHECK(testing::run(base + " --accum fp32-seq --scale-a 1e-30 --scale-b 1e-30", err) == 2);
  CHECK(testing::run(base + " --accum fp32-seq --scale-a 1e30 --scale-b 1e-30", err) == 0);
}

TEST_CASE("layer_partial_kept: layer --out D leaves an existing D.partial alone",
          "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string x = f32_file(d, "x.npy", {1, 2, 3, 4}, {2, 2});
  const std::string args =
      "layer --kind plain --dtype fp32 --x '" + x + "' --w '" + x + "' --g '" + x + "' --out ";
  fs::create_directories(d / "D.partial");
  std::ofstream(d / "D.partial/mine.txt") << "keep";
  std::ofstream(d / "E.partial") << "keep";
  CHECK(testing::run(args + "'" + (d / "D") + "'") == 0);
  CHECK(testing::run(args + "'" + (d / "E") + "/'") == 0);
  CHECK(testing::slurp(d / "D.partial/mine.txt") == "keep");
  CHECK(testing::slurp(d / "E.partial") == "keep");
  CHECK(testing::exists(d / "D/y.npy"));
  CHECK(testing::exists(d / "E/w_grad.npy"));
  CHECK(temporaries(d.path).empty());
  // The published directory is an ordinary one (not the staging directory's 0700).
  struct stat st {};
  REQUIRE(stat((d / "D").c_str(), &st) == 0);
  CHECK((st.st_mode & 0055) != 0);
}

TEST_CASE("layer_filesystem_errors: a file as the parent, a symlink loop, a long name",
          "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string x = f32_file(d, "x.npy", {1, 2, 3, 4}, {2, 2});
  const std::string args =
      "layer --kind plain --dtype fp32 --x '" + x + "' --w '" + x + "' --g '" + x + "' --out ";
  std::ofstream(d / "file") << "x";
  fs::create_symlink(d / "loop", d / "loop");
  const std::string err = d / "err";
  for (const std::string& out :
       {d / "file/out", d / "loop/out", d / "loop", d / std::string(300, 'n') + "/out"}) {
    INFO(out);
    CHECK(testing::run(args + "'" + out + "'", err) == 2);
    const std::string e = testing::slurp(err);
    INFO(e);
    CHECK(e.find("internal error") == std::string::npos);
    CHECK(std::count(e.begin(), e.end(), '\n') == 1);
  }
}

TEST_CASE("golden_generate_suite_keeps_others: one suite over a full corpus merges",
          "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string c = d / "corpus";
  REQUIRE(testing::run("golden generate --suite all --out '" + c + "'") == 0);
  const std::string full = testing::slurp(c + "/manifest.json");
  REQUIRE(full.find("\"file:quantize/") != std::string::npos);
  REQUIRE(full.find("\"file:step/") != std::string::npos);
  REQUIRE(testing::run("golden generate --suite cast --out '" + c + "'") == 0);
  const std::string after = testing::slurp(c + "/manifest.json");
  CHECK(after.find("\"file:quantize/") != std::string::npos);
  CHECK(after.find("\"file:step/") != std::string::npos);
  CHECK(after.find("\"suite\": \"all\"") != std::string::npos);
  // The same corpus hash as the full generation: the same files, the same bytes.
  const auto hash = [](const std::string& m) {
    const std::size_t at = m.find("\"corpus_sha256\"");
    return at == std::string::npos ? std::string() : m.substr(at, 90);
  };
  CHECK(hash(after) == hash(full));
  // Another seed over it: refused (its cases would not follow from one recorded seed).
  const std::string err = d / "err";
  CHECK(testing::run("golden generate --suite cast --seed 7 --out '" + c + "'", err) == 2);
  CHECK(testing::slurp(err).find("holds a corpus of seed") != std::string::npos);
}

TEST_CASE("golden_merge_huge_shard_count: a shard count of 2^40 in a file name is one line",
          "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  std::ofstream(d / "manifest-shard-0-of-1099511627776.json") << "{}";
  const std::string err = d / "err";
  CHECK(testing::run("golden merge '" + d.path + "'", err) == 2);
  const std::string e = testing::slurp(err);
  INFO(e);
  CHECK(e.find("1 <= N <= 1048576") != std::string::npos);
  CHECK(std::count(e.begin(), e.end(), '\n') == 1);
  // A file where the corpus directory is expected, and a symlink loop: one line, exit 2.
  std::ofstream(d / "file") << "x";
  fs::create_symlink(d / "loop", d / "loop");
  for (const std::string& dir : {d / "file", d / "loop", d / "missing"}) {
    INFO(dir);
    CHECK(testing::run("golden merge '" + dir + "'", err) == 2);
    const std::string m = testing::slurp(err);
    CHECK(m.find("internal error") == std::string::npos);
    CHECK(std::count(m.begin(), m.end(), '\n') == 1);
  }
}

TEST_CASE("cast_long_decimal_line: a long exact decimal keeps its line and newline",
          "[cli][hostile]") {
  if (!have_cli()) return;
  const std::string tiny = "0." + std::string(600, '0') + "1";
  const testing::Captured c = testing::run_captured("cast e4m3fn " + tiny + " 1.5", "exmy_h36");
  REQUIRE(c.status == 0);
  // Two lines: the long input echoed whole, then 1.5 on its own line.
  CHECK(std::count(c.out.begin(), c.out.end(), '\n') == 2);
  CHECK(c.out.find(tiny + " ") == 0);
  CHECK(c.out.find("\n1.5 ") != std::string::npos);
}

TEST_CASE("probe_gemm_without_torch: one line, no Python traceback", "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  // A Python that cannot import torch (whatever this machine has installed).
  const std::string py = d / "python";
  std::ofstream(py) << "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\nexit 1\n";
  fs::permissions(py, fs::perms::owner_all);
  const std::string err = d / "err";
  CHECK(testing::run("probe gemm --device cuda --lib cublaslt --out '" + (d / "p.json") + "'", err,
                     "EXMY_PYTHON='" + py + "'") == 2);
  const std::string e = testing::slurp(err);
  INFO(e);
  CHECK(e.find("cannot import torch") != std::string::npos);
  CHECK(e.find("Traceback") == std::string::npos);
  CHECK(std::count(e.begin(), e.end(), '\n') == 1);
  CHECK_FALSE(testing::exists(d / "p.json"));
}

namespace {
// `exmy step` on 4 parameters (fp32, or fp16 codes), one gradient, into d/OUT; extra options.
int step(const Dir& d, const std::string& params, const std::string& out, const std::string& extra,
         const std::string& err = "/dev/null") {
  const std::string g = d / "g.npy";
  if (!testing::exists(g))
    io::write_npy(g, io::make_npy(std::vector<float>{0.1f, -0.2f, 0.3f, 0.4f}));
  return testing::run("step --optimizer adamw --params '" + params + "' --grads '" + g +
                          "' --out '" + (d / out) + "' " + extra,
                      err);
}
}  // namespace

TEST_CASE("step_resume_checks_settings: compat, variant and parameter storage must match",
          "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string p = f32_file(d, "p.npy", {1, 2, 3, 4});
  const std::string err = d / "err";
  REQUIRE(step(d, p, "A", "--compat torch-cuda") == 0);
  const std::string a = d / "A";
  CHECK(step(d, a + "/params.npy", "B", "--state '" + a + "'", err) == 2);
  CHECK(testing::slurp(err).find("recorded --compat torch-cuda") != std::string::npos);
  CHECK(step(d, a + "/params.npy", "B", "--state '" + a + "' --compat torch-cuda") == 0);
  REQUIRE(step(d, p, "V", "") == 0);
  const std::string v = d / "V";
  CHECK(step(d, v + "/params.npy", "W", "--state '" + v + "' --variant torch-fused", err) == 2);
  CHECK(testing::slurp(err).find("recorded --variant default") != std::string::npos);
  // An fp16 run (a <f2 P) continued from its params.npy (<f4) without --param-dtype fp16 would
  // be an fp32 run.
  io::write_npy(d / "p16.npy",
                io::make_npy(std::vector<std::uint16_t>{0x3c00, 0x4000, 0x4200, 0x4400}));
  {
    // make_npy gives <u2: the same bytes as <f2 fp16 values.
    std::string bytes = testing::slurp(d / "p16.npy");
    bytes.replace(bytes.find("<u2"), 3, "<f2");
    std::ofstream(d / "p16.npy", std::ios::binary) << bytes;
  }
  REQUIRE(step(d, d / "p16.npy", "H", "") == 0);
  const std::string h = d / "H";
  CHECK(step(d, h + "/params.npy", "H2", "--state '" + h + "'", err) == 2);
  CHECK(testing::slurp(err).find("recorded --param-dtype fp16") != std::string::npos);
  CHECK(step(d, h + "/params.npy", "H2", "--state '" + h + "' --param-dtype fp16") == 0);
}

TEST_CASE(
    "step_states_written_are_read: a scale halved to 0, a long skipped history, the step "
    "limit",
    "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string p = f32_file(d, "p1.npy", {1.0f});
  const std::string g = f32_file(d, "ginf.npy", {std::numeric_limits<float>::infinity()});
  const std::string base = "step --optimizer adamw --grads '" + g + "' --loss-scale dynamic ";
  // 100000 skipped steps: the scale halves to 0 (no floor, as GradScaler), the history is
  // bounded (the counts are whole), and the state is read back.
  REQUIRE(testing::run(base + "--params '" + p + "' --steps 100000 --out '" + (d / "S") + "'") ==
          0);
  const std::string js = testing::slurp(d / "S/state.json");
  CHECK(js.find("\"scale\":0,") != std::string::npos);
  CHECK(js.find("\"skipped_count\":100000") != std::string::npos);
  CHECK(js.size() < 64 * 1024);
  CHECK(testing::run(base + "--params '" + (d / "S/params.npy") + "' --state '" + (d / "S") +
                     "' --out '" + (d / "S2") + "'") == 0);
  // A step counter at the limit is read, and a run that would pass it is refused by name.
  std::string at_limit = js;
  at_limit.replace(at_limit.find("\"step\":0"), 8, "\"step\":4611686018427387903");
  std::ofstream(d / "S/state.json") << at_limit;
  const std::string err = d / "err";
  CHECK(testing::run(base + "--params '" + (d / "S/params.npy") + "' --state '" + (d / "S") +
                         "' --out '" + (d / "S3") + "'",
                     err) == 2);
  CHECK(testing::slurp(err).find("would pass the step counter's limit") != std::string::npos);
}

TEST_CASE("dequantize_refuses_foreign_inputs: codes and states no quantization writes",
          "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  std::vector<float> xs(32);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) * 0.25f - 3.0f;
  const std::string x = f32_file(d, "x.npy", xs);
  const std::string err = d / "err";
  const auto rewrite_last = [&](const std::string& path, std::size_t from_end,
                                const std::string& bytes) {
    std::string s = testing::slurp(path);
    s.replace(s.size() - from_end, bytes.size(), bytes);
    std::ofstream(path, std::ios::binary) << s;
  };
  // int8: -128 (0x80) is never written (saturation to [-127, 127]).
  REQUIRE(testing::run("quantize --scheme tensor --to int8 --in '" + x + "' --out '" +
                       (d / "q.npy") + "' --state-out '" + (d / "s.npy") + "'") == 0);
  const std::string deq = "dequantize --scheme tensor --from int8 --in '" + (d / "q.npy") +
                          "' --state-in '" + (d / "s.npy") + "' --out '" + (d / "y.npy") + "'";
  REQUIRE(testing::run(deq) == 0);
  rewrite_last(d / "q.npy", 1, std::string(1, '\x80'));
  CHECK(testing::run(deq, err) == 2);
  CHECK(testing::slurp(err).find("is -128") != std::string::npos);
  // A negative absmax state.
  REQUIRE(testing::run("quantize --scheme tensor --to int8 --in '" + x + "' --out '" +
                       (d / "q.npy") + "' --state-out '" + (d / "s.npy") + "'") == 0);
  rewrite_last(d / "s.npy", 1, std::string(1, '\xc0'));  // the sign bit of the one fp32 state
  CHECK(testing::run(deq, err) == 2);
  CHECK(testing::slurp(err).find("expected an absmax or scale >= 0") != std::string::npos);
  // NVFP4: a UE4M3 block scale with its sign bit set.
  REQUIRE(testing::run("quantize --scheme nvfp4 --to e2m1fn --in '" + x + "' --out '" +
                       (d / "qn.npy") + "' --state-out '" + (d / "sn.npy") + "'") == 0);
  const std::string deqn = "dequantize --scheme nvfp4 --from e2m1fn --in '" + (d / "qn.npy") +
                           "' --state-in '" + (d / "sn.npy") + "' --out '" + (d / "yn.npy") + "'";
  REQUIRE(testing::run(deqn) == 0);
  std::string sn = testing::slurp(d / "sn.npy");
  sn.back() = static_cast<char>(sn.back() | 0x80);
  std::ofstream(d / "sn.npy", std::ios::binary) << sn;
  CHECK(testing::run(deqn, err) == 2);
  CHECK(testing::slurp(err).find("sign bit set") != std::string::npos);
}

TEST_CASE("step_state_negative_exp_avg_sq: a negative second moment is refused", "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string p = f32_file(d, "p.npy", {1, 2, 3, 4});
  REQUIRE(step(d, p, "A", "") == 0);
  std::string v = testing::slurp(d / "A/state2.npy");
  v[v.size() - 1] = static_cast<char>(v.back() | 0x80);  // the last element's sign bit
  std::ofstream(d / "A/state2.npy", std::ios::binary) << v;
  const std::string err = d / "err";
  CHECK(step(d, d / "A/params.npy", "B", "--state '" + (d / "A") + "'", err) == 2);
  CHECK(testing::slurp(err).find("(exp_avg_sq), expected >= 0") != std::string::npos);
  CHECK_FALSE(testing::exists(d / "B/state.json"));
}

TEST_CASE("verify_op_without_steps: --op is refused where it does not apply", "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string err = d / "err";
  CHECK(testing::run("verify --op bogus --depth ci --quiet", err) == 2);
  CHECK(testing::slurp(err).find("--campaign steps only") != std::string::npos);
  CHECK(testing::run("verify --campaign fp16 --op adamw-fp32 --depth ci --quiet", err) == 2);
}

TEST_CASE("step_hyper_not_read: an option the optimizer does not read is refused by name",
          "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  const std::string p = f32_file(d, "p.npy", {1, 2, 3, 4});
  const std::string err = d / "err";
  CHECK(step(d, p, "A", "--momentum 0.9", err) == 2);
  CHECK(testing::slurp(err).find("--momentum: adamw does not read it") != std::string::npos);
  CHECK(step(d, p, "A", "--beta3 0.9", err) == 2);
  CHECK_FALSE(testing::exists(d / "A/state.json"));
  CHECK(step(d, p, "A", "--beta1 0.8 --beta2 0.99 --eps 1e-6 --wd 0.1 --lr 0.01") == 0);
  const std::string g = d / "g.npy";
  CHECK(testing::run("step --optimizer sgd --params '" + p + "' --grads '" + g + "' --out '" +
                     (d / "S") + "' --momentum 0.9 --nesterov --dampening 0") == 0);
  CHECK(testing::run("step --optimizer sgd --params '" + p + "' --grads '" + g + "' --out '" +
                         (d / "S2") + "' --beta1 0.9",
                     err) == 2);
}

TEST_CASE("bnb4_shape_wrap: a --shape whose product wraps is refused", "[cli][hostile]") {
  if (!have_cli()) return;
  const Dir d;
  io::NpyArray q;
  q.descr = "|u1";
  q.shape = {0};
  io::write_npy(d / "q.npy", q);
  io::NpyArray s;
  s.descr = "<f4";
  s.shape = {0};
  io::write_npy(d / "s.npy", s);
  const std::string err = d / "err";
  // 2^32 x 2^32 wraps to 0 elements, which 0 bytes of codes would "hold".
  CHECK(testing::run("dequantize --scheme block:64 --from nf4 --compat bnb-cuda --in '" +
                         (d / "q.npy") + "' --state '" + (d / "s.npy") + "' --out '" +
                         (d / "x.npy") + "' --shape 4294967296,4294967296",
                     err) == 2);
  CHECK(testing::slurp(err).find("overflows 64 bits") != std::string::npos);
  CHECK_FALSE(testing::exists(d / "x.npy"));
}
