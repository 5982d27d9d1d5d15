// CSV text out (RFC 4180): the one field quoting of every CSV exmy writes (the report's tables,
// claims.csv among them). A field that holds a comma, a double quote, CR or LF is enclosed in
// double quotes with each of its double quotes doubled (RFC 4180 section 2, rules 5-7); any other
// field is written as it is. Records end in LF, not RFC 4180's CRLF: every CSV reader in use
// (Python's csv, pandas, R, spreadsheets) accepts both, and the report's files stay byte-equal
// to the ones earlier versions wrote wherever no field needed quoting.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace exmy::io {

// `s` as one CSV field: quoted (and its quotes doubled) exactly when it must be.
std::string csv_field(std::string_view s);

// Appends csv_field(s) to `out`.
void append_csv_field(std::string& out, std::string_view s);

// Appends one record: the fields, comma-separated, then "\n". A record of one empty field is
// written as "" (an empty line would be skipped by readers).
void append_csv_record(std::string& out, const std::vector<std::string>& fields);

}  // namespace exmy::io
