// Text and JSON summaries of campaign results (shared by `exmy verify` and `exmy selfcheck`).
#pragma once

#include <string>
#include <vector>

#include "sim/verify/campaign.hpp"

namespace exmy::verify {

// Human-readable: one line per campaign, then per-class and per-outcome counts and the first
// mismatches.
std::string summary_text(const std::vector<Result>& results);
// {"ok": bool, "checks": N, "mismatches": N, "interrupted": bool, "campaigns": [...]}
std::string summary_json(const std::vector<Result>& results);

std::uint64_t total_mismatches(const std::vector<Result>& results);
bool any_interrupted(const std::vector<Result>& results);

}  // namespace exmy::verify
