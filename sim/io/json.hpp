// A small JSON reader (RFC 8259: objects, arrays, strings with escapes, numbers as text, true,
// false, null) for the records exmy writes and reads back whole: the --json outputs of `exmy
// verify` that `exmy verify merge` adds up. Strict: trailing garbage, duplicate keys, depth > 64
// and malformed text are InputError naming the source and the byte offset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace exmy::io {

struct Json {
  enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
  std::string text;         // string contents, number text, true/false
  std::vector<Json> items;  // array
  // Object members in order, as two parallel vectors: std::pair<std::string, Json> would need
  // Json complete inside its own definition (clang rejects it; vector<Json> is allowed).
  std::vector<std::string> keys;
  std::vector<Json> values;

  // Object member (nullptr when absent or not an object).
  const Json* find(std::string_view key) const;
  // Typed access; InputError naming `what` otherwise.
  const Json& at(std::string_view key, const std::string& what) const;
  std::uint64_t u64(const std::string& what) const;
  double f64(const std::string& what) const;
  bool boolean(const std::string& what) const;
  const std::string& str(const std::string& what) const;
};

Json parse_json(std::string_view text, const std::string& source);

}  // namespace exmy::io
