// Text and JSON summaries of campaign results (shared by `exmy verify` and `exmy selfcheck`).
#pragma once

#include <string>
#include <vector>

#include "sim/verify/campaign.hpp"

namespace exmy::verify {

// Human-readable: one line per campaign, then per-class and per-outcome counts and the first
// mismatches.
std::string summary_text(const std::vector<Result>& results);
// {"ok": bool, "checks": N, "mismatches": N, "interrupted": bool, ["shard": "i/N",]
//  "campaigns": [...]}; the shard field only for a sharded run.
std::string summary_json(const std::vector<Result>& results, const Shard& shard = Shard{});

// The results of one `exmy verify --json` output (`source` names it in messages), and the shard
// it says it ran ({0, 1} when whole).
std::vector<Result> results_from_json(const std::string& text, const std::string& source,
                                      Shard& shard);
// Adds up the results of the shards of one run, campaign by campaign (by name): counts summed,
// the first mismatches kept up to `max_reported`, interrupted if any part was.
std::vector<Result> merge_results(const std::vector<std::vector<Result>>& parts,
                                  std::size_t max_reported = 20);

std::uint64_t total_mismatches(const std::vector<Result>& results);
bool any_interrupted(const std::vector<Result>& results);

}  // namespace exmy::verify
