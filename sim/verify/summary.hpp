// Text and JSON summaries of campaign results (shared by `exmy verify` and `exmy selfcheck`).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/verify/campaign.hpp"

namespace exmy::verify {

// Human-readable: one line per campaign, then per-class and per-outcome counts and the first
// mismatches.
std::string summary_text(const std::vector<Result>& results);
// The identity of a campaign (docs/SEMANTICS.md 13.4): what must be equal for two shard files to
// belong to one run — op, format, rounding, depth, backend hash, exmy version, shard count, ...
// as ordered (key, value) pairs.
using Identity = std::vector<std::pair<std::string, std::string>>;

// {"ok": bool, "checks": N, "mismatches": N, "interrupted": bool, ["shard": "i/N",]
//  ["identity": {...},] "campaigns": [...]}; the shard field only for a sharded run.
std::string summary_json(const std::vector<Result>& results, const Shard& shard = Shard{},
                         const Identity& identity = {});

// The results of one `exmy verify --json` output (`source` names it in messages), the shard it
// says it ran ({0, 1} when whole) and its identity (empty when the file has none).
std::vector<Result> results_from_json(const std::string& text, const std::string& source,
                                      Shard& shard, Identity* identity = nullptr);
// Adds up the results of the shards of one run, campaign by campaign (by name): counts summed,
// the first mismatches kept up to `max_reported`, interrupted if any part was.
std::vector<Result> merge_results(const std::vector<std::vector<Result>>& parts,
                                  std::size_t max_reported = 20);

std::uint64_t total_mismatches(const std::vector<Result>& results);
bool any_interrupted(const std::vector<Result>& results);

}  // namespace exmy::verify
