// `exmy probe sfu` (cli/probe_sfu.cpp), dispatched from `exmy probe` (cli/cmd_probe.cpp).
#pragma once

#include <string>

#include "cli/command.hpp"

namespace exmy::cli {
// args: what follows `exmy probe sfu`.
int run_probe_sfu(const Args& args);
// Its synopsis, for `exmy probe --help`.
std::string probe_sfu_usage();
}  // namespace exmy::cli
