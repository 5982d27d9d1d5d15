// The CSV field quoting of csv_write.hpp (RFC 4180 section 2).
#include "sim/io/csv_write.hpp"

namespace exmy::io {

void append_csv_field(std::string& out, std::string_view s) {
  // Rule 6: fields containing line breaks (CR or LF), double quotes or commas are enclosed in
  // double quotes. Rule 7: a double quote inside such a field is escaped by another one.
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
    out.append(s);
    return;
  }
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

std::string csv_field(std::string_view s) {
  std::string out;
  append_csv_field(out, s);
  return out;
}

void append_csv_record(std::string& out, const std::vector<std::string>& fields) {
  // A record of one empty field would be an empty line, which readers skip: quote it.
  if (fields.size() == 1 && fields[0].empty()) {
    out += "\"\"\n";
    return;
  }
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    append_csv_field(out, fields[i]);
  }
  out += '\n';
}

}  // namespace exmy::io
