// `exmy probe sfu` (cli/probe_sfu.cpp), dispatched from `exmy probe` (cli/cmd_probe.cpp).
#pragma once

#include "cli/command.hpp"

namespace exmy::cli {
int run_probe_sfu(const Args& args);
}
