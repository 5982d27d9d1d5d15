// A strict CSV reader written from RFC 4180 section 2 (not from exmy's writer), for tests: it
// rejects what a lenient reader would guess at. Grammar (ABNF of the RFC, with LF accepted as
// well as CRLF as a record end):
//   file = record *(EOL record) [EOL];  record = field *(COMMA field)
//   field = escaped / non-escaped;  escaped = DQUOTE *(TEXTDATA / COMMA / CR / LF / 2DQUOTE) DQUOTE
//   non-escaped = *TEXTDATA (any byte but COMMA, DQUOTE, CR, LF)
// Errors: a double quote inside a non-escaped field, anything but a comma or a line end after
// the closing quote, an unterminated quoted field, a lone CR.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace exmy::test {

using CsvRows = std::vector<std::vector<std::string>>;

inline CsvRows parse_csv_rfc4180(const std::string& text) {
  CsvRows rows;
  std::vector<std::string> rec;
  std::size_t i = 0;
  const std::size_t n = text.size();
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("CSV record " + std::to_string(rows.size() + 1) + ", byte " +
                             std::to_string(i) + ": " + what);
  };
  if (n == 0) return rows;
  while (true) {
    std::string f;
    if (i < n && text[i] == '"') {
      ++i;
      while (true) {
        if (i >= n) fail("unterminated quoted field");
        if (text[i] == '"') {
          if (i + 1 < n && text[i + 1] == '"') {
            f += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        f += text[i++];
      }
      if (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
        fail("text after a closing quote");
      }
    } else {
      while (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
        if (text[i] == '"') fail("double quote inside an unquoted field");
        f += text[i++];
      }
    }
    rec.push_back(f);
    if (i >= n) {  // last record without a line end
      rows.push_back(rec);
      return rows;
    }
    if (text[i] == ',') {
      ++i;
      continue;
    }
    if (text[i] == '\r') {
      if (i + 1 >= n || text[i + 1] != '\n') fail("CR not followed by LF");
      ++i;
    }
    ++i;  // LF
    rows.push_back(rec);
    rec.clear();
    if (i >= n) return rows;
  }
}

}  // namespace exmy::test
