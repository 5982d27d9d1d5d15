// One option table per subcommand: parsing, `--help` (each option with its value, description
// and default), usage lines in error messages and old spellings kept as aliases all come from the
// same declarations, so the help text cannot drift from what the parser accepts.
//
//   Options opts("exmy memory --params N --optimizer NAME[,NAME...] [OPTIONS]",
//                "Training memory per parameter ...", "exmy memory --params 7e9 --optimizer
//                adamw");
//   opts.value({"--params"}, "N", "parameter count", Options::kRequired,
//              [&](const std::string& v) { ... });
//   opts.flag({"--json"}, "print JSON", [&] { json = true; });
//   if (!opts.parse(args)) return 0;  // --help was printed
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "cli/command.hpp"

namespace exmy::cli {

class Options {
 public:
  // Printed as the default of an option that must be given.
  static constexpr const char* kRequired = "required";

  // usage: the synopsis line after "usage: "; about: what the subcommand does (may be empty);
  // example: one command line a user can copy (may be empty).
  Options(std::string usage, std::string about, std::string example);

  // An option that takes a value (`--name V` or `--name=V`). names[0] is the spelling --help
  // prints; the others are aliases (older or other subcommands' spellings). `def` is the default
  // as --help prints it: a value ("rne"), a sentence ("every format"), or kRequired, which makes
  // parse() refuse a command line without it.
  Options& value(std::initializer_list<const char*> names, std::string meta, std::string help,
                 std::string def, std::function<void(const std::string&)> on);
  // A switch without value; --help prints its default as "off".
  Options& flag(std::initializer_list<const char*> names, std::string help,
                std::function<void()> on);
  // Positional operands, in order (meta as --help prints it, e.g. "FORMAT"); `count` of them at
  // most (0: any number). Without a positional declaration, an operand is refused.
  Options& positional(std::string meta, std::string help, std::string def,
                      std::function<void(const std::string&)> on, std::size_t count = 1);

  // Applies args in order. Returns false after printing help() for --help or -h (the caller
  // exits 0). Throws InputError for an unknown option (naming the closest known one), a missing
  // value, an extra operand or a missing required option.
  bool parse(const Args& args) const;

  std::string help() const;
  const std::string& usage() const { return usage_; }
  // "usage: exmy ...; try --help": the tail of error messages about the command line.
  std::string usage_hint() const;
  // Every spelling of every option (for tests: no spelling twice, every one documented).
  std::vector<std::string> spellings() const;

 private:
  struct Entry {
    std::vector<std::string> names;
    std::string meta;  // empty: a flag
    std::string help;
    std::string def;
    std::function<void(const std::string&)> on_value;
    std::function<void()> on_flag;
  };
  struct Positional {
    std::string meta, help, def;
    std::function<void(const std::string&)> on;
    std::size_t count;
  };
  const Entry* find(const std::string& name) const;
  std::string closest(const std::string& name) const;

  std::string usage_, about_, example_;
  std::vector<Entry> entries_;
  std::vector<Positional> positionals_;
};

}  // namespace exmy::cli
