// The CLI's option-table parser (cli/options.hpp, issue 36: "fuzz targets for every new parser
// of this batch"): a command line made of the input's NUL-separated words, parsed by a table with
// every kind of entry every subcommand uses (required values, aliases, flags, positionals of one
// and of any count, --name=value). Only InputError may escape parse(); a value callback that
// rejects (as the subcommands' do) throws InputError too. cli/options.cpp is compiled into the
// target (parse-only; it reads no file and starts no command).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "sim/common/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using exmy::cli::Options;
  exmy::cli::Args args;
  std::string w;
  for (std::size_t i = 0; i < size && args.size() < 64; ++i) {
    if (data[i] == 0) {
      args.push_back(w);
      w.clear();
    } else {
      w.push_back(static_cast<char>(data[i]));
    }
  }
  if (!w.empty()) args.push_back(w);
  std::string a, b, pos;
  std::vector<std::string> rest;
  bool f = false;
  Options o("exmy fuzz-target --a A [--b B] [--flag] X [Y...]", "a table of every entry kind",
            "exmy fuzz-target --a 1 x");
  o.value({"--a", "--alias-a"}, "A", "required value", Options::kRequired,
          [&](const std::string& v) { a = v; })
      .value({"--b"}, "B", "a value the callback checks", "none",
             [&](const std::string& v) {
               if (v.empty() || v.size() > 16) throw exmy::InputError("--b: expected 1..16 chars");
               b = v;
             })
      .flag({"--flag", "-f"}, "a switch", [&] { f = true; })
      .positional("X", "one operand", Options::kRequired, [&](const std::string& v) { pos = v; })
      .positional(
          "Y", "any number", "none", [&](const std::string& v) { rest.push_back(v); }, 0);
  try {
    (void)o.parse(args);
  } catch (const exmy::InputError&) {
  }
  (void)o.help();
  (void)o.usage_hint();
  return 0;
}
