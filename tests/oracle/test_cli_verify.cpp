// `exmy verify` / `exmy selfcheck` end to end: exit codes, JSON summary, interruption. Uses the
// binary named by EXMY_CLI (set by ctest); skipped when it is not set.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

namespace {

const char* cli() {
  return std::getenv("EXMY_CLI");
}

struct Run {
  int status = -1;
  std::string out, err;
};

// Runs the CLI with `args`, stdout and stderr captured; after `interrupt_after_ms` (if
// nonnegative) sends SIGINT.
Run run_cli(const std::vector<std::string>& args, int interrupt_after_ms = -1) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  const std::string err_path = "/tmp/exmy_test_cli_verify_err." + std::to_string(getpid());
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<std::string> argv_s = {cli()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, cli(), &actions, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (interrupt_after_ms >= 0) {
    usleep(static_cast<useconds_t>(interrupt_after_ms) * 1000);
    kill(pid, SIGINT);
  }
  Run r;
  std::array<char, 4096> buf;
  ssize_t n;
  while ((n = read(fds[0], buf.data(), buf.size())) > 0)
    r.out.append(buf.data(), static_cast<std::size_t>(n));
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  if (FILE* f = std::fopen(err_path.c_str(), "r")) {
    while ((n = static_cast<ssize_t>(std::fread(buf.data(), 1, buf.size(), f))) > 0)
      r.err.append(buf.data(), static_cast<std::size_t>(n));
    std::fclose(f);
  }
  std::remove(err_path.c_str());
  return r;
}

}  // namespace

TEST_CASE("exmy verify: JSON summary and exit status", "[oracle][cli]") {
  if (cli() == nullptr) {
    WARN("EXMY_CLI not set: skipped");
    return;
  }
  const Run ok =
      run_cli({"verify", "--campaign", "fp32-sample", "--depth", "ci", "--json", "--threads", "2"});
  CHECK(ok.status == 0);
  CHECK(ok.out.find("\"ok\": true") != std::string::npos);
  CHECK(ok.out.find("\"name\": \"fp32-sample\"") != std::string::npos);
  CHECK(ok.out.find("\"mismatches\": 0") != std::string::npos);
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"verify", "--campaign", "fp8"},
        std::vector<std::string>{"verify", "--threads", "0"},
        std::vector<std::string>{"verify", "--depth", "half"},
        std::vector<std::string>{"verify", "--bogus"},
        std::vector<std::string>{"selfcheck", "--threads"}}) {
    INFO(bad[1]);
    CHECK(run_cli(bad).status == 2);
  }
}

TEST_CASE("exmy verify: SIGINT stops early with status 130", "[oracle][cli]") {
  if (cli() == nullptr) {
    WARN("EXMY_CLI not set: skipped");
    return;
  }
  const Run r = run_cli({"verify", "--campaign", "all", "--threads", "1"}, 1500);
  CHECK(r.status == 130);
  CHECK(r.out.find("INTERRUPTED") != std::string::npos);
  CHECK(r.out.find("FAIL") != std::string::npos);
}

TEST_CASE("exmy verify merge: shards of one run, each once", "[oracle][cli][shard]") {
  if (cli() == nullptr) {
    WARN("EXMY_CLI not set: skipped");
    return;
  }
  char dir[] = "/tmp/exmy_merge_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string d = dir;
  std::vector<std::string> files;
  for (int i = 0; i < 2; ++i) {
    const Run r = run_cli({"verify", "--campaign", "fp16", "--depth", "ci", "--json", "--quiet",
                           "--shard", std::to_string(i) + "/2"});
    CHECK(r.status == 0);
    CHECK(r.out.find("\"shard\": \"" + std::to_string(i) + "/2\"") != std::string::npos);
    files.push_back(d + "/s" + std::to_string(i) + ".json");
    FILE* f = std::fopen(files.back().c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs(r.out.c_str(), f);
    std::fclose(f);
  }
  const Run whole = run_cli({"verify", "--campaign", "fp16", "--depth", "ci", "--json", "--quiet"});
  const Run merged = run_cli({"verify", "merge", files[0], files[1], "--json"});
  CHECK(merged.status == 0);
  const auto checks = [](const std::string& s) { return s.substr(s.find("\"checks\""), 30); };
  CHECK(checks(merged.out) == checks(whole.out));
  // Shard 1/2 missing: refused, exit 1, naming it.
  const Run missing = run_cli({"verify", "merge", files[0]});
  CHECK(missing.status == 1);
  CHECK(missing.err.find("1/2") != std::string::npos);
  CHECK(missing.out.empty());
  CHECK(run_cli({"verify", "merge", files[0], files[0]}).status == 2);  // given twice
  // A shard of another campaign (bf16, not fp16) with the right index: refused, exit 1, naming
  // the field that differs.
  const Run other = run_cli(
      {"verify", "--campaign", "bf16", "--depth", "ci", "--json", "--quiet", "--shard", "1/2"});
  files.push_back(d + "/foreign.json");
  {
    FILE* f = std::fopen(files.back().c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs(other.out.c_str(), f);
    std::fclose(f);
  }
  const Run foreign = run_cli({"verify", "merge", files[0], files[2]});
  CHECK(foreign.status == 1);
  CHECK(foreign.err.find("another campaign") != std::string::npos);
  CHECK(foreign.err.find("campaign 'bf16'") != std::string::npos);
  CHECK(foreign.out.empty());
  CHECK(run_cli({"verify", "--campaign", "fp16", "--shard", "3/2"}).status == 2);
  std::system(("rm -rf '" + d + "'").c_str());
}
