// exmy: command-line entry point. Dispatches to the subcommands registered in cli/cmd_*.cpp.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <string>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "cli/command.hpp"
#include "sim/common/error.hpp"
#include "sim/common/threads.hpp"
#include "sim/io/build_info.hpp"
#include "sim/io/pending_paths.hpp"

namespace exmy::cli {
std::map<std::string, Command>& commands() {
  static std::map<std::string, Command> table;
  return table;
}
}  // namespace exmy::cli

namespace {
void usage(std::FILE* out) {
  std::fprintf(out, "exmy %s (%s): bit-exact low-precision numerics\nusage: exmy COMMAND [ARGS]\n",
               EXMY_VERSION, exmy::build_git_sha());
  for (const auto& [name, cmd] : exmy::cli::commands()) {
    std::fprintf(out, "  %-12s %s\n", name.c_str(), cmd.summary.c_str());
  }
}
// What went to stdout (a --json object, a table, --help) must have arrived whole: a full disk
// or a closed pipe is an error, never exit 0 with half an object.
int checked_exit(const std::string& name, int rc) {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr,
                 "exmy %s: cannot write to standard output (%s); the output is incomplete\n",
                 name.c_str(), errno != 0 ? std::strerror(errno) : "write error");
    return 2;
  }
  return rc;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return checked_exit(name, 0);
  }
  if (name == "--version") {
    std::printf("exmy %s (%s)\n", EXMY_VERSION, exmy::build_git_sha());
    return checked_exit(name, 0);
  }
  const auto it = exmy::cli::commands().find(name);
  if (it == exmy::cli::commands().end()) {
    std::fprintf(stderr, "exmy: unknown command '%s' (try exmy --help)\n", name.c_str());
    return 2;
  }
  // Temporaries and staging directories are removed when a signal ends the run
  // (sim/io/pending_paths.hpp); commands with an orderly Ctrl-C put this back after theirs.
  exmy::io::install_signal_cleanup();
  // OMP_NUM_THREADS above the --threads range would crash the OpenMP runtime: held to it.
  if (exmy::env_threads_above_max(std::getenv("OMP_NUM_THREADS"))) {
#if defined(_OPENMP)
    omp_set_num_threads(exmy::kMaxThreads);
#endif
    std::fprintf(stderr,
                 "exmy %s: OMP_NUM_THREADS=%s is above %d, the most threads exmy runs: "
                 "using %d\n",
                 name.c_str(), std::getenv("OMP_NUM_THREADS"), exmy::kMaxThreads,
                 exmy::kMaxThreads);
  }
  int rc = 0;
  try {
    rc = it->second.run(exmy::cli::Args(argv + 2, argv + argc));
  } catch (const exmy::InputError& e) {
    std::fprintf(stderr, "exmy %s: %s\n", name.c_str(), e.what());
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A file where a directory is expected, a symlink loop, a name too long, a read-only file
    // system: the path and the system's reason, as for any unusable input.
    const std::string path = e.path1().empty() ? std::string("a path") : e.path1().string();
    std::fprintf(stderr, "exmy %s: %s: %s\n", name.c_str(), path.c_str(),
                 e.code().message().c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "exmy %s: out of memory (the inputs need more memory than this machine "
                 "has)\n",
                 name.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exmy %s: internal error: %s\n", name.c_str(), e.what());
    return 1;
  }
  return checked_exit(name, rc);
}
