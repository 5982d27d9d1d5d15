// Campaign summaries (see summary.hpp).
#include "sim/verify/summary.hpp"

#include <cinttypes>
#include <cstdio>
#include <string>

#include "sim/common/number.hpp"
#include "sim/io/json.hpp"
#include "sim/io/json_write.hpp"

namespace exmy::verify {
namespace {

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

using io::json_string;

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
    for (const auto& note : r.notes) out += "    " + note + "\n";
    if (!r.by_label.empty() && !r.label_title.empty()) {
      out += "    " + r.label_title + ":";
      for (const auto& l : r.by_label) {
        std::snprintf(buf, sizeof buf, " %s %" PRIu64 "/%" PRIu64, l.label.c_str(), l.checks,
                      l.mismatches);
        out += buf;
      }
      out += "\n";
    }
    if (!r.by_label.empty() && r.label_title.empty()) {
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

std::string summary_json(const std::vector<Result>& results, const Shard& shard,
                         const Identity& identity) {
  std::uint64_t checks = 0;
  for (const auto& r : results) checks += r.checks;
  const std::uint64_t bad = total_mismatches(results);
  std::string out = "{\"ok\": ";
  out += (bad == 0 && !any_interrupted(results)) ? "true" : "false";
  out += ", \"checks\": " + std::to_string(checks) + ", \"mismatches\": " + std::to_string(bad);
  out += ", \"interrupted\": ";
  out += any_interrupted(results) ? "true" : "false";
  if (!shard.whole()) out += ", \"shard\": " + json_string(shard.text());
  if (!identity.empty()) {
    out += ", \"identity\": {";
    for (std::size_t i = 0; i < identity.size(); ++i) {
      out +=
          (i ? ", " : "") + json_string(identity[i].first) + ": " + json_string(identity[i].second);
    }
    out += "}";
  }
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
    out += "}, \"label_title\": " + json_string(r.label_title) + ", \"notes\": [";
    for (std::size_t k = 0; k < r.notes.size(); ++k)
      out += (k ? ", " : "") + json_string(r.notes[k]);
    out += "], \"first_mismatches\": [";
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

namespace {
std::uint64_t hex_field(const io::Json& j, const std::string& what) {
  return number::parse_u64(j.str(what), what, ~std::uint64_t{0}, true);
}
Encoded encoded_of(const io::Json& j, const std::string& what) {
  Encoded e;
  e.code = hex_field(j.at("code", what), what + ".code");
  e.flags = static_cast<std::uint32_t>(j.at("flags", what).u64(what + ".flags"));
  return e;
}
}  // namespace

std::vector<Result> results_from_json(const std::string& text, const std::string& source,
                                      Shard& shard, Identity* identity) {
  const io::Json doc = io::parse_json(text, source);
  shard = Shard{};
  if (const io::Json* s = doc.find("shard")) shard = parse_shard(s->str(source + ": shard"));
  if (identity != nullptr) {
    identity->clear();
    if (const io::Json* id = doc.find("identity")) {
      for (std::size_t k = 0; k < id->keys.size(); ++k) {
        identity->emplace_back(id->keys[k], id->values[k].str(source + ": identity"));
      }
    }
  }
  std::vector<Result> out;
  for (const io::Json& c : doc.at("campaigns", source).items) {
    const std::string w = source + ": campaign";
    Result r;
    r.name = c.at("name", w).str(w + ".name");
    r.checks = c.at("checks", w).u64(w + ".checks");
    r.mismatches = c.at("mismatches", w).u64(w + ".mismatches");
    r.configurations = c.at("configurations", w).u64(w + ".configurations");
    r.seconds = c.at("seconds", w).f64(w + ".seconds");
    r.interrupted = c.at("interrupted", w).boolean(w + ".interrupted");
    const io::Json& bc = c.at("by_input_class", w);
    for (int k = 0; k < kClasses; ++k) {
      r.by_input_class[k] = bc.at(class_name(static_cast<ValueClass>(k)), w).u64(w);
    }
    const io::Json& bo = c.at("by_outcome", w);
    for (int k = 0; k < kOutcomes; ++k) {
      r.by_outcome[k] = bo.at(outcome_name(static_cast<Outcome>(k)), w).u64(w);
    }
    const io::Json& bl = c.at("by_label", w);
    for (std::size_t li = 0; li < bl.keys.size(); ++li) {
      const io::Json& v = bl.values[li];
      r.by_label.push_back({bl.keys[li], v.at("checks", w).u64(w), v.at("mismatches", w).u64(w)});
    }
    if (const io::Json* t = c.find("label_title")) r.label_title = t->str(w + ".label_title");
    if (const io::Json* ns = c.find("notes")) {
      for (const io::Json& n : ns->items) r.notes.push_back(n.str(w + ".notes"));
    }
    for (const io::Json& m : c.at("first_mismatches", w).items) {
      Mismatch x;
      x.check = m.at("check", w).str(w);
      x.from = m.at("from", w).str(w);
      x.to = m.at("to", w).str(w);
      x.rounding = m.at("rounding", w).str(w);
      x.input = hex_field(m.at("input", w), w + ".input");
      x.rand = static_cast<std::uint32_t>(hex_field(m.at("rand", w), w + ".rand"));
      x.native = encoded_of(m.at("native", w), w + ".native");
      x.oracle = encoded_of(m.at("oracle", w), w + ".oracle");
      x.detail = m.at("detail", w).str(w);
      r.first.push_back(std::move(x));
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<Result> merge_results(const std::vector<std::vector<Result>>& parts,
                                  std::size_t max_reported) {
  std::vector<Result> out;
  for (const auto& part : parts) {
    for (const Result& r : part) {
      Result* m = nullptr;
      for (auto& o : out) {
        if (o.name == r.name) m = &o;
      }
      if (!m) {
        out.push_back(Result{});
        m = &out.back();
        m->name = r.name;
        m->configurations = r.configurations;
        m->label_title = r.label_title;
        m->notes = r.notes;
      }
      m->checks += r.checks;
      m->mismatches += r.mismatches;
      m->interrupted = m->interrupted || r.interrupted;
      m->seconds += r.seconds;  // CPU-side seconds of all parts
      for (int k = 0; k < kClasses; ++k) m->by_input_class[k] += r.by_input_class[k];
      for (int k = 0; k < kOutcomes; ++k) m->by_outcome[k] += r.by_outcome[k];
      for (const auto& l : r.by_label) {
        bool found = false;
        for (auto& ml : m->by_label) {
          if (ml.label == l.label) {
            ml.checks += l.checks;
            ml.mismatches += l.mismatches;
            found = true;
          }
        }
        if (!found) m->by_label.push_back(l);
      }
      for (const auto& x : r.first) {
        if (m->first.size() < max_reported) m->first.push_back(x);
      }
    }
  }
  return out;
}

}  // namespace exmy::verify
