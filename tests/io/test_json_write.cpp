// The one JSON string writer (sim/io/json_write.hpp): quoting of quotes, backslashes and control
// characters, bytes from DEL up passed through, and every byte string read back unchanged by both
// of exmy's JSON readers (sim/io/json.hpp, sim/io/flat_json.hpp).
#include <catch2/catch.hpp>
#include <string>

#include "sim/io/flat_json.hpp"
#include "sim/io/json.hpp"
#include "sim/io/json_write.hpp"

using exmy::io::append_json_string;
using exmy::io::json_string;

TEST_CASE("json_string escapes quotes and backslashes", "[io][json]") {
  CHECK(json_string("") == "\"\"");
  CHECK(json_string("plain text") == "\"plain text\"");
  CHECK(json_string("a\"b") == "\"a\\\"b\"");
  CHECK(json_string("C:\\dir\\x") == "\"C:\\\\dir\\\\x\"");
  CHECK(json_string("\\\"") == "\"\\\\\\\"\"");
  CHECK(json_string("a/b") == "\"a/b\"");  // '/' may stay as it is
}

TEST_CASE("json_string escapes every control character", "[io][json]") {
  CHECK(json_string("\b\f\n\r\t") == "\"\\b\\f\\n\\r\\t\"");
  CHECK(json_string(std::string("a\0b", 3)) == "\"a\\u0000b\"");
  CHECK(json_string("\x01\x1f\x1b") == "\"\\u0001\\u001f\\u001b\"");
  for (int c = 0; c < 0x20; ++c) {
    const std::string q = json_string(std::string(1, static_cast<char>(c)));
    INFO(c);
    CHECK(q.size() > 3);  // an escape, never the raw byte
    CHECK(q.find(static_cast<char>(c)) == std::string::npos);
  }
}

TEST_CASE("json_string passes DEL and non-ASCII bytes through", "[io][json]") {
  CHECK(json_string("\x7f") == "\"\x7f\"");
  CHECK(json_string("caf\xc3\xa9 \xe2\x82\xac") == "\"caf\xc3\xa9 \xe2\x82\xac\"");  // UTF-8
  CHECK(json_string("\x80\xff") == "\"\x80\xff\"");  // not UTF-8: bytes kept as given
}

TEST_CASE("append_json_string appends", "[io][json]") {
  std::string s = "{\"k\": ";
  append_json_string(s, "v\"");
  CHECK(s == "{\"k\": \"v\\\"\"");
}

TEST_CASE("every byte reads back unchanged through both JSON readers", "[io][json]") {
  std::string all;
  for (int c = 1; c < 256; ++c) all += static_cast<char>(c);
  all += '\0';
  for (const std::string& s :
       {all, std::string("tr\"ace\\.csv"), std::string("\n"), std::string("x\x7f\xc3\xa9")}) {
    const std::string doc = "{\"k\": " + json_string(s) + "}";
    CHECK(exmy::io::parse_json(doc, "test").at("k", "k").str("k") == s);
    CHECK(exmy::io::FlatJson(doc, "test").str("k") == s);
  }
}
