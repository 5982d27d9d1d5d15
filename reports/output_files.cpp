#include "reports/output_files.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "sim/common/error.hpp"
#include "sim/io/csv_write.hpp"
#include "sim/io/files.hpp"

namespace exmy::reports {

void make_directories(const std::string& dir) {
  io::ensure_output_directory(dir, "--out");  // one rule for every output directory
}

void write_file_atomic(const std::string& path, const std::string& content) {
  io::write_text_atomic(path, content);  // one commit path for every output (sim/io/files.hpp)
}

Csv::Csv(const std::vector<std::string>& header) {
  io::append_csv_record(done_, header);
}

Csv& Csv::row() {
  if (in_row_) done_ += cur_ + "\n";
  cur_.clear();
  in_row_ = true;
  row_has_field_ = false;
  return *this;
}

void Csv::field(const std::string& s) {
  if (row_has_field_) cur_ += ",";
  io::append_csv_field(cur_, s);  // RFC 4180 quoting: the one CSV writer (sim/io/csv_write.hpp)
  row_has_field_ = true;
}

std::string Csv::text() const {
  return in_row_ ? done_ + cur_ + "\n" : done_;
}

Csv& Csv::add(const std::string& s) {
  field(s);
  return *this;
}
Csv& Csv::add(long long v) {
  field(std::to_string(v));
  return *this;
}
namespace {
// printf text of v; NaN as "nan" whatever its sign bit (printf writes "-nan" for some NaNs,
// which would make the bytes depend on how the NaN arose).
std::string number_text(double v, int digits) {
  if (v != v) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}
}  // namespace

Csv& Csv::add(double v) {
  field(number_text(v, 10));
  return *this;
}
Csv& Csv::add_exact(double v) {
  field(number_text(v, 17));
  return *this;
}

std::string fmt_g(double v, int digits) {
  return number_text(v, digits);
}

}  // namespace exmy::reports
