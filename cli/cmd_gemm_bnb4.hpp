// exmy gemm with a bitsandbytes 4-bit weight (--b-format nf4|fp4 --compat bnb-cuda): QLoRA's
// matmul_4bit (docs/SEMANTICS.md 7.17). cmd_gemm.cpp hands such command lines here.
#pragma once

#include "cli/command.hpp"

namespace exmy::cli {

// True when the command line names a 4-bit bitsandbytes weight (--b-format nf4|fp4).
bool is_bnb4_gemm(const Args& args);
int run_gemm_bnb4(const Args& args);

}  // namespace exmy::cli
