// exmy: command-line entry point. Dispatches to the subcommands registered in cli/cmd_*.cpp.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/command.hpp"
#include "sim/common/error.hpp"

namespace exmy::cli {
std::map<std::string, Command>& commands() {
  static std::map<std::string, Command> table;
  return table;
}
}  // namespace exmy::cli

namespace {
void usage(std::FILE* out) {
  std::fprintf(out, "exmy %s (%s): bit-exact low-precision numerics\nusage: exmy COMMAND [ARGS]\n",
               EXMY_VERSION, EXMY_GIT_SHA);
  for (const auto& [name, cmd] : exmy::cli::commands()) {
    std::fprintf(out, "  %-12s %s\n", name.c_str(), cmd.summary.c_str());
  }
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
    return 0;
  }
  if (name == "--version") {
    std::printf("exmy %s (%s)\n", EXMY_VERSION, EXMY_GIT_SHA);
    return 0;
  }
  const auto it = exmy::cli::commands().find(name);
  if (it == exmy::cli::commands().end()) {
    std::fprintf(stderr, "exmy: unknown command '%s' (try exmy --help)\n", name.c_str());
    return 2;
  }
  try {
    return it->second.run(exmy::cli::Args(argv + 2, argv + argc));
  } catch (const exmy::InputError& e) {
    std::fprintf(stderr, "exmy %s: %s\n", name.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exmy %s: internal error: %s\n", name.c_str(), e.what());
    return 1;
  }
}
