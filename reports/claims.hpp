// The claim table's kinds and their verdict words (issue 35: rows that cannot fail are checks,
// not reproductions), and the one claims.csv writer.
#pragma once

#include <string>
#include <vector>

#include "reports/sections.hpp"

namespace exmy::reports {

// What a row of the claim table is, and the verdict words it may use:
//   reproduction            the paper's statement tested on data where the report's own rule
//                           could reject it (data that does not behave as the paper says would
//                           give "not reproduced"): reproduced | partly reproduced |
//                           not reproduced | inconclusive
//   closed-form check       a measured value against a formula (the paper's or this report's)
//                           that the experiment's construction implies; it checks exmy and the
//                           statistics, not the paper: agrees | disagrees | inconclusive
//   unit check              a property that holds by construction of the operation (a bound of
//                           a rounding, truncation against rounding to nearest): agrees |
//                           disagrees
//   proxy                   a toy or layer-level stand-in for an experiment the paper ran at
//                           scale: consistent | inconsistent | inconclusive | not computable
//   arithmetic restatement  the paper's own arithmetic redone: arithmetic restatement
//   not computable          out of the report's reach, with the reason: not computable
struct ClaimKind {
  const char* name;
  const char* meaning;                // one sentence, for the report's method text
  std::vector<const char*> verdicts;  // allowed verdicts (a verdict may add " (...)")
};
const std::vector<ClaimKind>& claim_kinds();

// Empty when c.kind is known and c.verdict is one of its words (alone or followed by " (" or
// " within"), else what is wrong.
std::string claim_problem(const Claim& c);

// Throws std::logic_error naming the row when claim_problem(c) is not empty: a section that
// labels a check "reproduced" is a bug of the report, never a result.
void require_valid_claim(const Claim& c);

// SEMANTICS 14, "Preliminary verdicts": in a quick run, every row whose verdict depends on data
// (reproduction, closed-form check, proxy; not unit checks, restatements, not-computable or
// inconclusive rows, nor a verdict a section already marked preliminary) gets " (preliminary)"
// appended unless it carries a rule (Claim::has_rule) and its interval decides it
// (stats_intervals.hpp interval_decides). Full runs: unchanged.
void label_preliminary(std::vector<Claim>& claims, bool quick);

// claims.csv: source, where, claim, measured, kind, value, lo, hi, expected, verdict, link;
// a value with an interval is written at the interval's resolution (2 significant digits of
// the half-width, stats_intervals.hpp fmt_at), one without with 4 significant digits; fields
// quoted as RFC 4180 says (sim/io/csv_write.hpp).
std::string claims_csv(const std::vector<Claim>& claims);

// The kinds and their rule as Markdown, for DIR/index.md and report.html.
std::string claim_kinds_md();

}  // namespace exmy::reports
