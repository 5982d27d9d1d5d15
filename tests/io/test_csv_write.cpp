// The one CSV field writer (sim/io/csv_write.hpp): quoting exactly where RFC 4180 requires it,
// and every byte string read back unchanged by a strict RFC 4180 reader written from the RFC
// (rfc4180_parse.hpp), whatever commas, quotes and line breaks it holds.
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "rfc4180_parse.hpp"
#include "sim/io/csv_write.hpp"

using exmy::io::append_csv_record;
using exmy::io::csv_field;
using exmy::test::parse_csv_rfc4180;

TEST_CASE("csv_field quotes exactly the fields RFC 4180 says must be quoted", "[io][csv]") {
  CHECK(csv_field("") == "");
  CHECK(csv_field("plain text") == "plain text");
  CHECK(csv_field("1.5e-03") == "1.5e-03");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("\"") == "\"\"\"\"");
  CHECK(csv_field("line\nbreak") == "\"line\nbreak\"");
  CHECK(csv_field("cr\rx") == "\"cr\rx\"");
  CHECK(csv_field(" spaces kept ") == " spaces kept ");
}

// Regression (issue 35): claims.csv joined fields with bare commas, so a claim such as "between
// 51.2x to 12.8x more noisy ... in LLM int8 training between 4x and 16x" split into extra columns.
TEST_CASE("a record with commas, quotes and line breaks reads back as its fields", "[io][csv]") {
  const std::vector<std::string> rec{"Wortsman et al. 2023, arXiv 2304.13013",
                                     "appendix D.3",
                                     "51.2, 12.8; 4, 16",
                                     "a \"quoted\" word",
                                     "two\nlines",
                                     "",
                                     "last"};
  std::string text;
  append_csv_record(text, {"a", "b", "c", "d", "e", "f", "g"});
  append_csv_record(text, rec);
  const auto rows = parse_csv_rfc4180(text);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1] == rec);
  // A record of one empty field is not an empty line.
  std::string one;
  append_csv_record(one, {""});
  CHECK(one == "\"\"\n");
  CHECK(parse_csv_rfc4180(one) == exmy::test::CsvRows{{""}});
}

TEST_CASE("random byte strings round-trip through the writer and a strict reader", "[io][csv]") {
  const unsigned seed = 35;
  INFO("seed " << seed);
  std::mt19937 gen(seed);
  const std::string alphabet = "ab ,\"\r\n\t;x\x01\xff";
  for (int t = 0; t < 2000; ++t) {
    std::vector<std::string> rec(1 + gen() % 5);
    for (auto& f : rec) {
      const int len = static_cast<int>(gen() % 6);
      for (int c = 0; c < len; ++c) f += alphabet[gen() % alphabet.size()];
    }
    std::string text;
    append_csv_record(text, rec);
    const auto rows = parse_csv_rfc4180(text);
    INFO("trial " << t);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0] == rec);
  }
}

TEST_CASE("the strict reader rejects malformed CSV", "[io][csv]") {
  CHECK_THROWS(parse_csv_rfc4180("a,b\"c\n"));     // quote inside an unquoted field
  CHECK_THROWS(parse_csv_rfc4180("\"ab\"c,d\n"));  // text after the closing quote
  CHECK_THROWS(parse_csv_rfc4180("\"ab,d\n"));     // unterminated
  CHECK_THROWS(parse_csv_rfc4180("a\rb\n"));       // lone CR
  CHECK(parse_csv_rfc4180("a,b\r\nc,d\n") == exmy::test::CsvRows{{"a", "b"}, {"c", "d"}});
}
