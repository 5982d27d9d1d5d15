// The bug zoo (examples/backend_zoo/README.md): every zoo plugin is the reference plugin with one
// classic bug, and for its exposing format and rounding
//   exmy verify --backend LIB --op cast --format F --round R --depth ci --threads 1|2 --quiet
//   exmy fuzz --backend LIB --op cast --format F --round R
// must all exit 1, while the correct reference plugin passes the same three (exit 0) for every
// format and rounding of the table (docs/SEMANTICS.md 13.5; issue 30). The buffer bugs
// (dequantize_in_place: input written; write_past_end: codes[n] written) are caught only by
// verify's and fuzz's buffer isolation (a pristine input copy checked after each call, guard bytes
// after the output). About 90 s on 2 cores.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/cli_run.hpp"

namespace {

using exmy::testing::cli;
using exmy::testing::slurp;

using Output = exmy::testing::Captured;

// Runs `exmy ARGS`, capturing stdout and stderr; status -1 when exmy did not exit normally (a
// signal killed it), which no test here accepts.
Output exmy_run(const std::string& args) {
  return exmy::testing::run_captured(args, "exmy_backend_zoo");
}

// One zoo plugin (examples/backend_zoo/NAME.c, built as libexmy_zoo_NAME) and the format and
// rounding that expose its bug.
struct Zoo {
  const char* name;
  const char* format;
  const char* round;
};
constexpr Zoo kZoo[] = {
    {"ties_away", "e4m3fn", "rne"},
    {"subnormal_ties_away", "e5m2", "rne"},
    {"ties_to_odd", "e5m2", "rne"},
    {"lost_neg_zero", "e5m2", "rtz"},
    {"ftz", "e5m2", "rne"},
    {"daz", "bf16", "rne"},
    {"nan_to_max", "e4m3fn", "rne"},
    {"overflow_tie", "e4m3fn", "rne"},
    {"sat_nan_swapped", "e4m3fn", "rne+satfinite"},
    {"fnuz_bias", "e4m3fnuz", "rne"},
    {"philox_next_word", "e5m2", "sr:8"},
    {"philox_counter_i", "e4m3fn", "sr:8"},
    {"sr_low_bits", "e5m2", "sr:16"},
    {"dequantize_in_place", "e4m3fn", "rne"},
    {"write_past_end", "e4m3fn", "rne"},
};

std::string zoo_library(const std::string& name) {
  return std::string(EXMY_ZOO_DIR) + "/libexmy_zoo_" + name + EXMY_ZOO_SUFFIX;
}

std::string verify(const std::string& lib, const Zoo& z, int threads) {
  return "verify --backend '" + lib + "' --op cast --format " + z.format + " --round " + z.round +
         " --depth ci --threads " + std::to_string(threads) + " --quiet";
}
std::string fuzz(const std::string& lib, const Zoo& z) {
  return "fuzz --backend '" + lib + "' --op cast --format " + z.format + " --round " + z.round;
}

// The three runs of one library on one format and rounding, each with its exit status.
void check_all_three(const std::string& lib, const Zoo& z, int want) {
  for (const std::string& args : {verify(lib, z, 1), verify(lib, z, 2), fuzz(lib, z)}) {
    const Output o = exmy_run(args);
    INFO("exmy " << args);
    INFO("stdout: " << o.out.substr(0, 2000));
    INFO("stderr: " << o.err.substr(0, 2000));
    CHECK(o.status == want);
  }
}

}  // namespace

TEST_CASE("bug zoo: the reference plugin passes every zoo format and rounding", "[backend][zoo]") {
  std::set<std::pair<std::string, std::string>> seen;
  for (const Zoo& z : kZoo) {
    if (!seen.emplace(z.format, z.round).second) continue;
    check_all_three(EXMY_PLUGIN_REFERENCE, z, 0);
  }
  CHECK(seen.size() == 9);
}

// One test case per plugin, so that a report names the bug that got through.
#define EXMY_ZOO_CASE(NAME)                                                          \
  TEST_CASE("bug zoo: verify --depth ci and fuzz reject " #NAME, "[backend][zoo]") { \
    for (const Zoo& z : kZoo) {                                                      \
      if (std::string(z.name) == #NAME) check_all_three(zoo_library(z.name), z, 1);  \
    }                                                                                \
  }
EXMY_ZOO_CASE(ties_away)
EXMY_ZOO_CASE(subnormal_ties_away)
EXMY_ZOO_CASE(ties_to_odd)
EXMY_ZOO_CASE(lost_neg_zero)
EXMY_ZOO_CASE(ftz)
EXMY_ZOO_CASE(daz)
EXMY_ZOO_CASE(nan_to_max)
EXMY_ZOO_CASE(overflow_tie)
EXMY_ZOO_CASE(sat_nan_swapped)
EXMY_ZOO_CASE(fnuz_bias)
EXMY_ZOO_CASE(philox_next_word)
EXMY_ZOO_CASE(philox_counter_i)
EXMY_ZOO_CASE(sr_low_bits)
EXMY_ZOO_CASE(dequantize_in_place)
EXMY_ZOO_CASE(write_past_end)

TEST_CASE("bug zoo: every plugin of the table is tested and built", "[backend][zoo]") {
  CHECK(sizeof kZoo / sizeof kZoo[0] == 15);
  for (const Zoo& z : kZoo) {
    INFO(z.name);
    CHECK(exmy::testing::exists(zoo_library(z.name)));
  }
}
