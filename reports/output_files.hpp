// Writing report outputs without ever leaving a partial file: every file is written to a
// temporary name in the same directory and renamed over the target once complete.
#pragma once

#include <string>
#include <vector>

namespace exmy::reports {

// Creates dir (and parents); throws exmy::InputError naming it when that is impossible.
void make_directories(const std::string& dir);

// Writes content to path via path.tmp-<pid> + rename(2). Throws InputError on failure; the
// temporary is removed on every error path.
void write_file_atomic(const std::string& path, const std::string& content);

// CSV text built in memory; every field (header and rows) goes through io::append_csv_field, so
// text holding commas, quotes or line breaks is quoted as RFC 4180 says. Numbers are printed with a
// fixed printf format so that equal doubles give equal bytes (the determinism tests compare CSV
// bytes).
class Csv {
 public:
  explicit Csv(const std::vector<std::string>& header);
  Csv& row();
  Csv& add(const std::string& s);
  Csv& add(long long v);
  Csv& add(double v);        // %.10g
  Csv& add_exact(double v);  // %.17g: round-trips
  std::string text() const;  // header and rows, each ending in a newline

 private:
  void field(const std::string& s);
  std::string done_;  // header and completed rows
  std::string cur_;   // the row being built
  bool in_row_ = false;
  bool row_has_field_ = false;
};

std::string fmt_g(double v, int digits = 4);  // printf %.*g, for prose

}  // namespace exmy::reports
