// exmy cast FORMAT --compat amd-gfx950 with its scale, seed and decode options (AMD gfx950's OCP
// conversions, docs/SEMANTICS.md 12.1). cmd_cast.cpp hands the command line here.
#pragma once

#include "cli/command.hpp"

namespace exmy::cli {

bool is_amd_cast(const Args& args);  // --compat amd-gfx950 before any "--"
int run_cast_amd(const Args& args);

}  // namespace exmy::cli
