// Reading the --help text that cli/options.hpp generates: the entries of its "options:" section,
// and whether an entry states its default. One copy for the help tests of tests/cli.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace exmy::testing {

// The entries of the "options:" section of a help text, one string each: a line "  --name ..."
// with the lines indented under it (a long option's description is on the next line) joined to
// it by a space.
inline std::vector<std::string> option_entries(const std::string& help) {
  std::vector<std::string> out;
  std::istringstream in(help);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line == "options:") {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.empty()) break;  // the blank line before "example:"
    if (line.rfind("  -", 0) == 0) {
      out.push_back(line);
    } else if (!out.empty()) {
      out.back() += " " + line;
    }
  }
  return out;
}

// True when an entry ends by naming its default: "(required)" or "(default: X)" with X not
// empty (an empty default text would print "(default: )", which says nothing).
inline bool states_default(const std::string& entry) {
  if (entry.find("(required)") != std::string::npos) return true;
  const auto d = entry.rfind("(default: ");
  return d != std::string::npos && d + 10 < entry.size() && entry[d + 10] != ')';
}

}  // namespace exmy::testing
