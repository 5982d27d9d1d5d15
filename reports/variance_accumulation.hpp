// The variance section's accumulation panel: the quantized inner product's error under exact
// summation against the Hopper tensor-core models (sim/gemm, SEMANTICS 15).
#pragma once

#include <string>
#include <vector>

#include "reports/report_context.hpp"
#include "reports/sections.hpp"

namespace exmy::reports {

// Writes dir/accumulation.csv (and its figure), appends its claim, returns its index.md text.
std::string run_accumulation_panel(const ReportContext& ctx, const std::string& dir,
                                   std::vector<Claim>& claims);

}  // namespace exmy::reports
