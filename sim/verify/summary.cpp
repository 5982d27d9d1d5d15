// Campaign summaries (see summary.hpp).
#include "sim/verify/summary.hpp"

#include <cinttypes>
#include <cstdio>
#include <string>

namespace exmy::verify {
namespace {

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out.append(buf);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string encoded_json(const Encoded& e) {
  return "{\"code\": " + json_string(hex(e.code)) + ", \"flags\": " + std::to_string(e.flags) + "}";
}

}  // namespace

std::uint64_t total_mismatches(const std::vector<Result>& results) {
  std::uint64_t n = 0;
  for (const auto& r : results) n += r.mismatches;
  return n;
}

bool any_interrupted(const std::vector<Result>& results) {
  for (const auto& r : results) {
    if (r.interrupted) return true;
  }
  return false;
}

std::string summary_text(const std::vector<Result>& results) {
  std::string out;
  char buf[256];
  std::uint64_t checks = 0;
  for (const auto& r : results) {
    checks += r.checks;
    std::snprintf(buf, sizeof buf,
                  "%-12s %12" PRIu64 " checks  %8" PRIu64 " mismatches  %6" PRIu64
                  " configurations  %7.1fs%s\n",
                  r.name.c_str(), r.checks, r.mismatches, r.configurations, r.seconds,
                  r.interrupted ? "  INTERRUPTED" : "");
    out += buf;
    if (!r.by_label.empty()) {
      // Campaigns with named input classes (steps): checks/mismatches per class, and the class
      // of the oracle's output value.
      out += "    input class:";
      for (const auto& l : r.by_label) {
        std::snprintf(buf, sizeof buf, " %s %" PRIu64 "/%" PRIu64, l.label.c_str(), l.checks,
                      l.mismatches);
        out += buf;
      }
      out += "\n    output value:";
      for (int c = 0; c < kClasses; ++c) {
        std::snprintf(buf, sizeof buf, " %s %" PRIu64, class_name(static_cast<ValueClass>(c)),
                      r.by_input_class[c]);
        out += buf;
      }
      out += "\n";
      for (const auto& m : r.first) out += "    MISMATCH " + describe(m) + "\n";
      continue;
    }
    out += "    input class:";
    for (int c = 0; c < kClasses; ++c) {
      std::snprintf(buf, sizeof buf, " %s %" PRIu64, class_name(static_cast<ValueClass>(c)),
                    r.by_input_class[c]);
      out += buf;
    }
    out += "\n    outcome:    ";
    for (int o = 0; o < kOutcomes; ++o) {
      std::snprintf(buf, sizeof buf, " %s %" PRIu64, outcome_name(static_cast<Outcome>(o)),
                    r.by_outcome[o]);
      out += buf;
    }
    out += "\n";
    for (const auto& m : r.first) out += "    MISMATCH " + describe(m) + "\n";
  }
  const std::uint64_t bad = total_mismatches(results);
  std::snprintf(buf, sizeof buf, "%s: %" PRIu64 " checks, %" PRIu64 " mismatches%s\n",
                bad == 0 && !any_interrupted(results) ? "PASS" : "FAIL", checks, bad,
                any_interrupted(results) ? " (interrupted)" : "");
  out += buf;
  return out;
}

std::string summary_json(const std::vector<Result>& results) {
  std::uint64_t checks = 0;
  for (const auto& r : results) checks += r.checks;
  const std::uint64_t bad = total_mismatches(results);
  std::string out = "{\"ok\": ";
  out += (bad == 0 && !any_interrupted(results)) ? "true" : "false";
  out += ", \"checks\": " + std::to_string(checks) + ", \"mismatches\": " + std::to_string(bad);
  out += ", \"interrupted\": ";
  out += any_interrupted(results) ? "true" : "false";
  out += ", \"campaigns\": [";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    if (i) out += ", ";
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f", r.seconds);
    out += "{\"name\": " + json_string(r.name) + ", \"checks\": " + std::to_string(r.checks) +
           ", \"mismatches\": " + std::to_string(r.mismatches) +
           ", \"configurations\": " + std::to_string(r.configurations) + ", \"seconds\": " + secs +
           ", \"interrupted\": " + (r.interrupted ? "true" : "false") + ", \"by_input_class\": {";
    for (int c = 0; c < kClasses; ++c) {
      if (c) out += ", ";
      out += json_string(class_name(static_cast<ValueClass>(c))) + ": " +
             std::to_string(r.by_input_class[c]);
    }
    out += "}, \"by_outcome\": {";
    for (int o = 0; o < kOutcomes; ++o) {
      if (o) out += ", ";
      out += json_string(outcome_name(static_cast<Outcome>(o))) + ": " +
             std::to_string(r.by_outcome[o]);
    }
    out += "}, \"by_label\": {";
    for (std::size_t k = 0; k < r.by_label.size(); ++k) {
      if (k) out += ", ";
      out += json_string(r.by_label[k].label) +
             ": {\"checks\": " + std::to_string(r.by_label[k].checks) +
             ", \"mismatches\": " + std::to_string(r.by_label[k].mismatches) + "}";
    }
    out += "}, \"first_mismatches\": [";
    for (std::size_t k = 0; k < r.first.size(); ++k) {
      const Mismatch& m = r.first[k];
      if (k) out += ", ";
      out += "{\"check\": " + json_string(m.check) + ", \"from\": " + json_string(m.from) +
             ", \"to\": " + json_string(m.to) + ", \"rounding\": " + json_string(m.rounding) +
             ", \"input\": " + json_string(hex(m.input)) +
             ", \"rand\": " + json_string(hex(m.rand)) + ", \"native\": " + encoded_json(m.native) +
             ", \"oracle\": " + encoded_json(m.oracle) + ", \"detail\": " + json_string(m.detail) +
             "}";
    }
    out += "]}";
  }
  out += "]}\n";
  return out;
}

}  // namespace exmy::verify
