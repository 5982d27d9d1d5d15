// Claim kinds, their verdict words and claims.csv (claims.hpp).
#include "reports/claims.hpp"

#include <stdexcept>

#include "reports/output_files.hpp"
#include "reports/stats_intervals.hpp"

namespace exmy::reports {

const std::vector<ClaimKind>& claim_kinds() {
  static const std::vector<ClaimKind> k{
      {"reproduction",
       "the paper's statement tested on data for which the report's own rule could have said "
       "\"not reproduced\"",
       {"reproduced", "partly reproduced", "not reproduced", "inconclusive"}},
      {"closed-form check",
       "a measured value against a formula that the experiment's own construction implies (it "
       "checks exmy and its statistics, not the paper)",
       {"agrees", "disagrees", "inconclusive"}},
      {"unit check",
       "a property that holds by construction of the operation (a rounding bound, truncation "
       "against round to nearest); it cannot fail on any data, only on a bug",
       {"agrees", "disagrees"}},
      {"proxy",
       "a toy or layer-level stand-in for an experiment the paper ran at scale: at most "
       "consistent with the paper, never a reproduction",
       {"consistent", "inconsistent", "inconclusive", "not computable"}},
      {"arithmetic restatement",
       "the paper's own arithmetic redone; no measurement",
       {"arithmetic restatement"}},
      {"not computable", "out of this report's reach; the row says why", {"not computable"}}};
  return k;
}

std::string claim_problem(const Claim& c) {
  for (const auto& k : claim_kinds()) {
    if (c.kind != k.name) continue;
    for (const char* v : k.verdicts) {
      const std::string w(v);
      if (c.verdict == w || c.verdict.rfind(w + " (", 0) == 0 ||
          c.verdict.rfind(w + " within", 0) == 0) {
        return "";
      }
    }
    std::string allowed;
    for (const char* v : k.verdicts) allowed += std::string(allowed.empty() ? "" : ", ") + v;
    return "verdict \"" + c.verdict + "\" is not one of a " + c.kind + "'s (" + allowed + ")";
  }
  return "unknown kind \"" + c.kind + "\"";
}

void require_valid_claim(const Claim& c) {
  const std::string p = claim_problem(c);
  if (!p.empty()) {
    throw std::logic_error("claim table row \"" + c.claim + "\" (" + c.where + "): " + p);
  }
}

std::string claims_csv(const std::vector<Claim>& claims) {
  Csv csv({"source", "where", "claim", "measured", "kind", "value", "lo", "hi", "expected",
           "verdict", "link"});
  for (const auto& c : claims) {
    const auto num = [&](double v) { return c.has_ci ? fmt_at(v, c.lo, c.hi) : fmt_g(v, 4); };
    csv.row().add(c.source).add(c.where).add(c.claim).add(c.measured).add(c.kind);
    csv.add(c.has_value ? num(c.value) : std::string());
    csv.add(c.has_ci ? num(c.lo) : std::string()).add(c.has_ci ? num(c.hi) : std::string());
    csv.add(c.expected).add(c.verdict).add(c.link);
  }
  return csv.text();
}

void label_preliminary(std::vector<Claim>& claims, bool quick) {
  if (!quick) return;
  for (auto& c : claims) {
    if (c.kind == "unit check" || c.kind == "arithmetic restatement" ||
        c.kind == "not computable") {
      continue;
    }
    if (c.verdict.rfind("inconclusive", 0) == 0 || c.verdict.rfind("not computable", 0) == 0) {
      continue;
    }
    // A section that applied its own quick-run label (spikes, mx-variance) is not labelled twice.
    if (c.verdict.find("preliminary") != std::string::npos) continue;
    if (c.has_rule && c.has_ci && interval_decides(c.lo, c.hi, c.rule_expected, c.rule_near)) {
      continue;
    }
    c.verdict += " (preliminary)";
  }
}

std::string claim_kinds_md() {
  std::string md =
      "**Kinds.** Each row says what it is. A row is a *reproduction* only if the report's own "
      "rule could have rejected it on data that does not behave as the paper says; a row that "
      "cannot fail on any data is a check, and a toy stand-in for an experiment at scale is a "
      "proxy:\n\n| kind | meaning | verdicts |\n|---|---|---|\n";
  for (const auto& k : claim_kinds()) {
    std::string v;
    for (const char* w : k.verdicts) v += std::string(v.empty() ? "" : ", ") + w;
    md += "| " + std::string(k.name) + " | " + k.meaning + " | " + v + " |\n";
  }
  return md + "\n";
}

}  // namespace exmy::reports
