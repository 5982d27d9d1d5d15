// The rounding-mode registry (sim/format/rounding_names.hpp): every name parses to its mode and
// prints back, sr:R over its whole range, the overflow policies, the tie rules, seed 003's mask
// specs, the labels of the campaigns and the backend ABI, and the refusals.
#include <catch2/catch.hpp>
#include <string>

#include "sim/common/error.hpp"
#include "sim/format/rounding_names.hpp"

using namespace exmy;

TEST_CASE("rounding registry: every mode parses and prints back", "[format][rounding]") {
  const std::pair<const char*, RoundMode> names[] = {
      {"rne", RoundMode::rne}, {"rna", RoundMode::rna}, {"rtz", RoundMode::rtz},
      {"rup", RoundMode::rup}, {"rdn", RoundMode::rdn}, {"rto", RoundMode::rto}};
  for (const auto& [name, mode] : names) {
    const Rounding r = parse_rounding(name);
    CHECK(r.mode == mode);
    CHECK(r.overflow == Overflow::none);
    CHECK(rounding_name(r) == name);
    CHECK(std::string(round_mode_name(mode)) == name);
  }
  CHECK(round_modes().size() == 7);
  CHECK(round_mode_list("|") == "rne|rna|rtz|rup|rdn|rto|sr:R");
  CHECK(round_mode_name(RoundMode::sr) == std::string("sr"));
  for (int bits = 1; bits <= 32; ++bits) {
    const std::string text = "sr:" + std::to_string(bits);
    const Rounding r = parse_rounding(text);
    CHECK(r.mode == RoundMode::sr);
    CHECK(r.sr_bits == bits);
    CHECK(rounding_name(r) == text);
  }
  const auto sweep = rounding_sweep({8, 24});
  REQUIRE(sweep.size() == 8);
  CHECK(rounding_name(sweep[0]) == "rne");
  CHECK(rounding_name(sweep[5]) == "rto");
  CHECK(rounding_name(sweep[6]) == "sr:8");
  CHECK(rounding_name(sweep[7]) == "sr:24");
}

TEST_CASE("rounding registry: refusals name the text and what was expected", "[format][rounding]") {
  for (const char* bad : {"", "RNE", "rne ", "sr", "sr:", "sr:0", "sr:33", "sr:99", "sr:-1",
                          "sr:+8", "sr:008", "sr:8x", "sr: 8", "nearest", "rnd"}) {
    CHECK_THROWS_AS(parse_rounding(bad), InputError);
  }
  CHECK_THROWS_WITH(parse_rounding("rnd"),
                    "unknown rounding mode 'rnd' (expected rne, rna, rtz, rup, rdn, rto, sr:R or "
                    "mask[:outer=..,inner=..])");
  CHECK_THROWS_WITH(parse_rounding("sr:33"), "rounding mode 'sr:33': expected sr:R with R = 1..32");
}

TEST_CASE("rounding registry: overflow policies, labels and the ABI's MODE+POLICY",
          "[format][rounding]") {
  CHECK(parse_overflow("none") == Overflow::none);
  CHECK(parse_overflow("satfinite") == Overflow::satfinite);
  CHECK(parse_overflow("sat") == Overflow::sat);
  CHECK_THROWS_WITH(parse_overflow("saturate"),
                    "overflow policy 'saturate': expected none, satfinite or sat");
  CHECK(overflow_list("|") == "none|satfinite|sat");
  const Rounding sr8{RoundMode::sr, 8, Overflow::satfinite};
  CHECK(rounding_text(sr8, " ") == "sr:8 satfinite");
  CHECK(rounding_text(sr8, "+") == "sr:8+satfinite");
  CHECK(rounding_text(Rounding{}, "+") == "rne");
  for (const char* text : {"rne", "rtz+sat", "sr:8+satfinite", "rto+none"}) {
    const Rounding r = parse_rounding_text(text, "--round");
    CHECK(rounding_text(r, "+") == (std::string(text) == "rto+none" ? "rto" : text));
  }
  CHECK_THROWS_WITH(parse_rounding_text("rne+clamp", "--round"),
                    "--round 'rne+clamp': expected MODE or MODE+POLICY, MODE "
                    "rne|rna|rtz|rup|rdn|rto|sr:R (R = 1..32), POLICY none|satfinite|sat");
}

TEST_CASE("rounding registry: tie rules and mask specs", "[format][rounding]") {
  CHECK(parse_tie("even") == TieRule::even_index);
  CHECK(parse_tie("lower") == TieRule::lower_index);
  CHECK(parse_tie("bnb-cpu") == TieRule::bnb_cpu);
  CHECK(tie_name(TieRule::bnb_cpu) == std::string("bnb-cpu"));
  CHECK(tie_list("|") == "even|lower|bnb-cpu");
  CHECK_THROWS_AS(parse_tie("odd"), InputError);

  const RoundSpec plain = parse_round_spec("rna");
  CHECK(!plain.mask);
  CHECK(plain.rounding.mode == RoundMode::rna);
  const RoundSpec m = parse_round_spec("mask");
  CHECK(m.mask);
  CHECK(m.rounding.mode == RoundMode::rtz);
  CHECK(m.outer == MaskOuter::clamp);
  CHECK(m.inner == MaskInner::min);
  const RoundSpec k = parse_round_spec("mask:outer=keep,inner=zero");
  CHECK(k.outer == MaskOuter::keep);
  CHECK(k.inner == MaskInner::zero);
  for (const char* bad :
       {"mask:", "mask:outer=keep,", "mask:inner=max", "maskx", "mask,outer=keep"}) {
    CHECK_THROWS_AS(parse_round_spec(bad), InputError);
  }
}
