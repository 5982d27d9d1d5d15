// JSON text out (RFC 8259): the one string quoting of exmy's --json outputs and of the records it
// writes (verify summaries, golden manifests). The readers are json.hpp and flat_json.hpp.
#pragma once

#include <string>
#include <string_view>

namespace exmy::io {

// `s` as a JSON string, quotes included: '"' and '\' escaped, \b \f \n \r \t by their short
// escapes, the other bytes below 0x20 as \u00XX; every other byte unchanged (DEL, and bytes of
// 0x80 and above: UTF-8 passes through as written, as does any other byte sequence, so a path
// comes back byte for byte through a reader that keeps bytes).
std::string json_string(std::string_view s);

// Appends json_string(s) to `out`.
void append_json_string(std::string& out, std::string_view s);

}  // namespace exmy::io
