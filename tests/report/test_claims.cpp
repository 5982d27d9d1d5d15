// The claim table's kinds (reports/claims.hpp): a check or an arithmetic restatement never says
// "reproduced", a proxy says "consistent" at most; claims.csv is RFC 4180 CSV with a kind column.
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "../io/rfc4180_parse.hpp"
#include "reports/claims.hpp"

using namespace exmy::reports;

namespace {
Claim row(const std::string& kind, const std::string& verdict) {
  Claim c;
  c.source = "Wortsman et al. 2023, arXiv 2304.13013";
  c.where = "appendix D.3";
  c.claim = "a claim, with a comma and a \"quote\"";
  c.kind = kind;
  c.verdict = verdict;
  return c;
}
}  // namespace

TEST_CASE("claim kinds accept only their own verdict words", "[report][claims]") {
  CHECK(claim_problem(row("reproduction", "reproduced")).empty());
  CHECK(claim_problem(row("reproduction", "not reproduced")).empty());
  CHECK(claim_problem(row("reproduction", "inconclusive (interval too wide)")).empty());
  CHECK(claim_problem(row("closed-form check", "agrees within 5%")).empty());
  CHECK(claim_problem(row("unit check", "disagrees")).empty());
  CHECK(claim_problem(row("proxy", "consistent (layer-level proxy only)")).empty());
  CHECK(claim_problem(row("arithmetic restatement", "arithmetic restatement")).empty());
  CHECK(claim_problem(row("not computable", "not computable")).empty());
  // What the table used to say (issue 35): checks and proxies called reproductions.
  CHECK_FALSE(claim_problem(row("unit check", "reproduced")).empty());
  CHECK_FALSE(claim_problem(row("closed-form check", "reproduced")).empty());
  CHECK_FALSE(claim_problem(row("proxy", "partly reproduced (layer-level proxy only)")).empty());
  CHECK_FALSE(claim_problem(row("arithmetic restatement", "reproduced")).empty());
  CHECK_FALSE(claim_problem(row("", "reproduced")).empty());       // no kind
  CHECK_FALSE(claim_problem(row("proof", "reproduced")).empty());  // unknown kind
  CHECK_FALSE(claim_problem(row("proxy", "consistently wrong")).empty());
  CHECK_THROWS_AS(require_valid_claim(row("unit check", "reproduced")), std::logic_error);
}

TEST_CASE("claims.csv: strict RFC 4180, a kind column, digits matched to the interval",
          "[report][claims]") {
  Claim a = row("reproduction", "not reproduced");
  a.measured = "Var(d) weight grad / forward, int8 row-wise, operands of the paper's shapes";
  a.set(70.71234567, 54.0123, 93.456789);
  a.expected = "51.2";
  Claim b = row("not computable", "not computable");
  b.claim = "line one\nline two";
  const auto rows = exmy::test::parse_csv_rfc4180(claims_csv({a, b}));
  REQUIRE(rows.size() == 3);
  REQUIRE(rows[0] == std::vector<std::string>{"source", "where", "claim", "measured", "kind",
                                              "value", "lo", "hi", "expected", "verdict", "link"});
  for (const auto& r : rows) REQUIRE(r.size() == 11);
  CHECK(rows[1][0] == a.source);
  CHECK(rows[1][2] == a.claim);
  CHECK(rows[1][4] == "reproduction");
  // Half-width 19.7: 2 significant digits reach the units (stats_intervals.hpp fmt_at).
  CHECK(rows[1][5] == "71");
  CHECK(rows[1][6] == "54");
  CHECK(rows[1][7] == "93");
  CHECK(rows[2][2] == "line one\nline two");
  CHECK(rows[2][5].empty());
  // Without an interval: 4 significant digits.
  Claim c = row("closed-form check", "agrees");
  c.set(0.123456789);
  CHECK(exmy::test::parse_csv_rfc4180(claims_csv({c}))[1][5] == "0.1235");
  CHECK(rows[2][9] == "not computable");
}

TEST_CASE("the kinds' rule is written into the report's method text", "[report][claims]") {
  const std::string md = claim_kinds_md();
  CHECK(md.find("could have rejected it") != std::string::npos);
  for (const auto& k : claim_kinds())
    CHECK(md.find(std::string("| ") + k.name + " |") != std::string::npos);
}
