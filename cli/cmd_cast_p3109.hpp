// exmy cast on an IEEE P3109 format (binary<K>p<P><s|u><e|f>): its own projection options
// (docs/SEMANTICS.md 1.2). cmd_cast.cpp hands the command line here when FORMAT is one.
#pragma once

#include "cli/command.hpp"

namespace exmy::cli {

bool is_p3109_cast(const Args& args);  // FORMAT (the first operand) names a P3109 format
int run_cast_p3109(const Args& args);

}  // namespace exmy::cli
