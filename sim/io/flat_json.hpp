// A flat JSON object (RFC 8259 subset): the state.json of exmy step and other small records that
// exmy writes and reads back. Values are strings, numbers, true/false/null or arrays of numbers
// and nulls; nesting is refused. The parser is strict (no duplicate keys, nothing after the
// closing brace but whitespace), and the typed getters go through the one number parser
// (sim/common/number.hpp), so a field that is missing, of another type or out of range is an
// InputError naming the file and the field (docs/SEMANTICS.md 11.0).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace exmy::io {

struct JsonValue {
  enum class Kind { string, number, boolean, null, array } kind = Kind::null;
  std::string text;                // string: the decoded contents; number: its text; boolean
  std::vector<std::string> items;  // array: each number's text ("null" for null)
};

class FlatJson {
 public:
  // Parses `text`; `source` names the file in messages.
  FlatJson(std::string_view text, std::string source);

  bool has(const std::string& key) const { return fields_.count(key) != 0; }
  const JsonValue& value(const std::string& key) const;  // InputError when missing
  std::string str(const std::string& key) const;
  bool boolean(const std::string& key) const;
  std::uint64_t u64(const std::string& key, std::uint64_t max) const;
  std::int64_t i64(const std::string& key, std::int64_t lo, std::int64_t hi) const;
  double f64(const std::string& key) const;  // finite
  float f32(const std::string& key) const;   // finite in float32, one rounding of the decimal
  const std::string& source() const { return source_; }
  // Every field, by key (for records with open-ended keys, e.g. a corpus manifest's files).
  const std::map<std::string, JsonValue>& fields() const { return fields_; }

 private:
  const JsonValue& typed(const std::string& key, JsonValue::Kind kind, const char* what) const;
  std::map<std::string, JsonValue> fields_;
  std::string source_;
};

}  // namespace exmy::io
