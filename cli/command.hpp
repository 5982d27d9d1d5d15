// Subcommand registry: each cli/cmd_*.cpp registers itself with EXMY_COMMAND, so adding a
// subcommand never touches main.cpp.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace exmy::cli {

using Args = std::vector<std::string>;  // arguments after the subcommand name
using CommandFn = std::function<int(const Args&)>;

struct Command {
  CommandFn run;
  std::string summary;  // one line for `exmy --help`
};

std::map<std::string, Command>& commands();

struct Registrar {
  Registrar(const std::string& name, CommandFn fn, const std::string& summary) {
    commands()[name] = Command{std::move(fn), summary};
  }
};

}  // namespace exmy::cli

#define EXMY_CLI_CONCAT2(a, b) a##b
#define EXMY_CLI_CONCAT(a, b) EXMY_CLI_CONCAT2(a, b)
// EXMY_COMMAND("name", fn, "summary"): fn is int(const exmy::cli::Args&); it may throw
// exmy::InputError, which main turns into "exmy NAME: message" and exit code 2.
#define EXMY_COMMAND(name, fn, summary) \
  static ::exmy::cli::Registrar EXMY_CLI_CONCAT(exmy_cli_registrar_, __LINE__)(name, fn, summary)
