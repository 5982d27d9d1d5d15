// Section 5's rows beyond figure 6 (issue 35), Lewandowski and Kosson, "Memory efficient mixed
// precision optimizers": stochastic rounding against basic extra bits (a reproduction whose
// interval can fail), bf16+16 and fp16+13 against fp32 master weights (bit-exact check), the
// memory rows through `exmy memory`'s own code (optim::memory_breakdown) and a short training of
// the report's MLP with bf16+k / fp16+k weights. docs/SEMANTICS.md 14.5.
#pragma once

#include <string>
#include <vector>

#include "reports/report_context.hpp"
#include "reports/sections.hpp"

namespace exmy::reports {

// Writes DIR/extrabits/{sr_vs_basic,master_exact,memory,training}.csv (dir = the section's
// folder), appends the claim rows and returns the index.md part.
std::string extrabits_rows(const ReportContext& ctx, const std::string& dir,
                           std::vector<Claim>& claims);

}  // namespace exmy::reports
