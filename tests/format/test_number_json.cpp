// The one number parser (sim/common/number.hpp), the flat JSON reader (sim/io/flat_json.hpp) and
// the output set (sim/io/files.hpp): exact values from the decimal text (IEEE 754 round to
// nearest even, checked against values written from the document), the grammar's edges, and the
// errors that name the input.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/io/files.hpp"
#include "sim/io/flat_json.hpp"

using namespace exmy;

namespace {
std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
}  // namespace

TEST_CASE("number: decimals round once to the nearest float32 / float64", "[number]") {
  CHECK(number::parse_f64("0.1", "x") == 0.1);
  CHECK(number::parse_f64("-2.5e-3", "x") == -2.5e-3);
  CHECK(number::parse_f64(".5", "x") == 0.5);
  CHECK(number::parse_f64("5.", "x") == 5.0);
  CHECK(number::parse_f64("1E2", "x") == 100.0);
  // 0.1 as float32 is 0x3DCCCCCD (one rounding of the decimal; via double it is the same here).
  CHECK(bits(number::parse_f32("0.1", "x")) == 0x3DCCCCCDu);
  // 1 + 2^-24 + 2^-60: a double rounding through float64 would land on the tie 1 + 2^-24 and
  // then round to even (1.0); one rounding gives 1 + 2^-23.
  CHECK(bits(number::parse_f32("1.00000005960464477539930798", "x")) == 0x3F800001u);
  // Subnormal results are values (underflow is not an error): 2^-149 and below half of it.
  CHECK(bits(number::parse_f32("1.401298464324817e-45", "x")) == 0x00000001u);
  CHECK(bits(number::parse_f32("1e-50", "x")) == 0x00000000u);
  CHECK(number::parse_f64("-0", "x") == 0.0);
  CHECK(std::signbit(number::parse_f64("-0", "x")));
}

TEST_CASE("number: the grammar refuses everything else by name", "[number]") {
  for (const char* t : {"", "-", ".", "e5", "1e", "1e+", "+1", " 1", "1 ", "1x", "0x10", "inf",
                        "-inf", "nan", "infinity", "1,5", "1..2", "--1", "1e5.5"}) {
    INFO(t);
    CHECK_THROWS_WITH(number::parse_f64(t, "--opt"),
                      Catch::Contains(std::string("--opt '") + t + "'"));
  }
  CHECK_THROWS_WITH(number::parse_f64("1e999", "--x"), Catch::Contains("range of float64"));
  CHECK_THROWS_WITH(number::parse_f32("1e39", "--x"), Catch::Contains("range of float32"));
  CHECK(number::parse_f32("3.4028235e38", "x") == 3.4028234663852886e38f);
}

TEST_CASE("number: integers, bounds and domains", "[number]") {
  CHECK(number::parse_u64("18446744073709551615", "n", UINT64_MAX) == UINT64_MAX);
  CHECK_THROWS_AS(number::parse_u64("18446744073709551616", "n", UINT64_MAX), InputError);
  CHECK(number::parse_u64("0xff", "n", 255) == 255);
  CHECK_THROWS_AS(number::parse_u64("0xff", "n", 255, false), InputError);
  CHECK_THROWS_AS(number::parse_u64("256", "n", 255), InputError);
  CHECK_THROWS_AS(number::parse_u64("-1", "n", 255), InputError);
  CHECK_THROWS_AS(number::parse_u64("0x", "n", 255), InputError);
  CHECK(number::parse_i64("-9223372036854775808", "n", INT64_MIN, INT64_MAX) == INT64_MIN);
  CHECK_THROWS_AS(number::parse_i64("9223372036854775808", "n", INT64_MIN, INT64_MAX), InputError);
  CHECK_THROWS_AS(number::parse_i64("-9223372036854775809", "n", INT64_MIN, INT64_MAX), InputError);
  CHECK_THROWS_WITH(number::parse_i64("-3", "step", 0, 10),
                    Catch::Contains("step '-3': expected an integer in [0, 10]"));
  CHECK_THROWS_AS(number::parse_i64("-", "n", -5, 5), InputError);
  CHECK_THROWS_AS(number::parse_i64("+1", "n", -5, 5), InputError);
  CHECK_THROWS_WITH(number::require_range(1.0, "1", "--beta1", 0.0, false, 1.0, true),
                    Catch::Contains("--beta1 '1': expected a number in [0, 1)"));
  CHECK(number::require_range(0.0, "0", "--beta1", 0.0, false, 1.0, true) == 0.0);
}

TEST_CASE("flat_json: strict objects and typed fields", "[io][json]") {
  const io::FlatJson j(
      "{\"a\":\"x\\\"\\u00e9\",\"n\":42,\"f\":-1.5e3,\"t\":true,\"z\":null,\"r\":[1,null,2.5],"
      "\"e\":[]}\n",
      "s.json");
  CHECK(j.str("a") == "x\"\xc3\xa9");
  CHECK(j.u64("n", 100) == 42);
  CHECK(j.i64("n", 0, 42) == 42);
  CHECK(j.f64("f") == -1500.0);
  CHECK(j.boolean("t"));
  CHECK(j.value("r").items == std::vector<std::string>{"1", "null", "2.5"});
  CHECK(j.value("e").items.empty());
  CHECK_THROWS_WITH(j.u64("n", 41), Catch::Contains("s.json: \"n\" '42'"));
  CHECK_THROWS_WITH(j.str("n"), Catch::Contains("s.json: \"n\" is not a string"));
  CHECK_THROWS_WITH(j.u64("f", 100), Catch::Contains("\"f\" '-1.5e3'"));
  CHECK_THROWS_WITH(j.str("missing"), Catch::Contains("s.json: missing \"missing\""));
  for (const char* bad :
       {"", "{", "{}x", "{\"a\":1,}", "{\"a\":1 \"b\":2}", "{\"a\":01}", "{\"a\":1.}", "{\"a\":-}",
        "{\"a\":+1}", "{\"a\":{}}", "{\"a\":[1,]}", "{\"a\":\"\\x\"}", "{\"a\":\"\\ud800\"}",
        "{\"a\":1,\"a\":2}", "{\"a\":tru}", "{\"a\":\"x\n\"}", "{a:1}", "[1]", "{\"a\":NaN}"}) {
    INFO(bad);
    CHECK_THROWS_WITH(io::FlatJson(bad, "s.json"), Catch::Contains("s.json: malformed JSON"));
  }
  CHECK_NOTHROW(io::FlatJson(" {} \n", "s.json"));
}

TEST_CASE("output set: together or not at all", "[io][files]") {
  namespace fs = std::filesystem;
  const fs::path d = fs::temp_directory_path() / "exmy_test_output_set";
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string a = (d / "a.txt").string(), b = (d / "b.txt").string();
  {
    io::OutputSet out;
    std::ofstream(out.stage(a)) << "A";
    std::ofstream(out.stage(b)) << "B";
    CHECK_FALSE(fs::exists(a));  // nothing appears before commit()
    out.commit();
  }
  CHECK(fs::exists(a));
  CHECK(fs::exists(b));
  {
    io::OutputSet out;
    std::ofstream(out.stage(a)) << "A2";
    // Dropped without commit (an exception on the way): a.txt keeps its old contents and the
    // temporary is gone.
  }
  std::string got;
  std::ifstream(a) >> got;
  CHECK(got == "A");
  {
    io::OutputSet out;
    out.stage(a);
    CHECK_THROWS_WITH(out.stage((d / "." / "a.txt").string()), Catch::Contains("same file"));
    CHECK_THROWS_WITH(out.stage((d / "nodir" / "c.txt").string()),
                      Catch::Contains("does not exist"));
  }
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(d)) {
    (void)e;
    ++files;
  }
  CHECK(files == 2);
  CHECK_THROWS_WITH(io::read_small_file((d / "a.txt").string(), 0, "a test file"),
                    Catch::Contains("more than the 0 expected of a test file"));
  fs::remove_all(d);
}

// Regression (issue "Hostile input", the partial-publication case): a rename failing after
// earlier outputs of the set were renamed used to leave those new files in place beside the old
// others. Provoked here by removing the second temporary before commit(): the first output must
// get its old contents back, a new third output must not appear, and no temporary or backup
// may remain.
TEST_CASE("output set: a rename failing halfway is rolled back", "[io][files]") {
  namespace fs = std::filesystem;
  const fs::path d = fs::temp_directory_path() / "exmy_test_output_rollback";
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string a = (d / "a.txt").string(), b = (d / "b.txt").string(),
                    c = (d / "c.txt").string();
  std::ofstream(a) << "oldA";
  std::ofstream(b) << "oldB";
  {
    io::OutputSet out;
    std::ofstream(out.stage(c)) << "newC";  // c did not exist: renamed first, then removed
    std::ofstream(out.stage(a)) << "newA";
    const std::string tb = out.stage(b);
    std::ofstream(tb) << "newB";
    fs::remove(tb);  // the rename of b will fail
    CHECK_THROWS_WITH(out.commit(), Catch::Contains("restored"));
  }
  const auto text = [](const std::string& f) {
    std::string s;
    std::ifstream(f) >> s;
    return s;
  };
  CHECK(text(a) == "oldA");
  CHECK(text(b) == "oldB");
  CHECK_FALSE(fs::exists(c));
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(d)) {
    (void)e;
    ++files;
  }
  CHECK(files == 2);  // a.txt, b.txt: no .exmy-tmp.* or .exmy-prev.* left
  // And a successful commit leaves no backup names behind either.
  {
    io::OutputSet out;
    std::ofstream(out.stage(a)) << "A3";
    out.commit();
  }
  CHECK(text(a) == "A3");
  files = 0;
  for (const auto& e : fs::directory_iterator(d)) {
    (void)e;
    ++files;
  }
  CHECK(files == 2);
  fs::remove_all(d);
}
