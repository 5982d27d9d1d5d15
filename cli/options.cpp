#include "cli/options.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "sim/common/error.hpp"

namespace exmy::cli {

Options::Options(std::string usage, std::string about, std::string example)
    : usage_(std::move(usage)), about_(std::move(about)), example_(std::move(example)) {}

Options& Options::value(std::initializer_list<const char*> names, std::string meta,
                        std::string help, std::string def,
                        std::function<void(const std::string&)> on) {
  entries_.push_back(Entry{{names.begin(), names.end()},
                           std::move(meta),
                           std::move(help),
                           std::move(def),
                           std::move(on),
                           nullptr});
  return *this;
}

Options& Options::flag(std::initializer_list<const char*> names, std::string help,
                       std::function<void()> on) {
  entries_.push_back(
      Entry{{names.begin(), names.end()}, "", std::move(help), "off", nullptr, std::move(on)});
  return *this;
}

Options& Options::positional(std::string meta, std::string help, std::string def,
                             std::function<void(const std::string&)> on, std::size_t count) {
  positionals_.push_back(
      Positional{std::move(meta), std::move(help), std::move(def), std::move(on), count});
  return *this;
}

const Options::Entry* Options::find(const std::string& name) const {
  for (const Entry& e : entries_) {
    if (std::find(e.names.begin(), e.names.end(), name) != e.names.end()) return &e;
  }
  return nullptr;
}

namespace {
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// An operand that starts with '-' but is a number ("-1.5", "-inf", "-nan", "-0x1p-3"), not an
// option: cast and table take negative values as operands.
bool looks_like_number(const std::string& a) {
  if (a.size() < 2 || a[0] != '-') return false;
  const char c = a[1];
  return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'i' || c == 'I' ||
         c == 'n' || c == 'N';
}
}  // namespace

std::string Options::closest(const std::string& name) const {
  std::string best;
  // Suggest only near misses: at most one edit per three letters of the name (a typo in
  // --optimizer, not --bogus for --out).
  const std::size_t letters = name.size() > 2 ? name.size() - 2 : 0;
  std::size_t best_d = std::max<std::size_t>(1, letters / 3) + 1;
  for (const Entry& e : entries_) {
    for (const std::string& n : e.names) {
      const std::size_t d = edit_distance(name, n);
      if (d < best_d) best_d = d, best = n;
    }
  }
  return best;
}

std::string Options::usage_hint() const {
  return "usage: " + usage_ + "; try --help";
}

std::vector<std::string> Options::spellings() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.insert(out.end(), e.names.begin(), e.names.end());
  return out;
}

bool Options::parse(const Args& args) const {
  std::set<const Entry*> seen;
  std::size_t pos_index = 0, pos_used = 0;
  bool operands_only = false;
  auto operand = [&](const std::string& a) {
    while (pos_index < positionals_.size() && positionals_[pos_index].count != 0 &&
           pos_used >= positionals_[pos_index].count) {
      ++pos_index, pos_used = 0;
    }
    if (pos_index >= positionals_.size()) {
      throw InputError("unexpected operand '" + a + "' (" + usage_hint() + ")");
    }
    positionals_[pos_index].on(a);
    ++pos_used;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (operands_only || a.empty() || a[0] != '-' || a == "-" || looks_like_number(a)) {
      operand(a);
      continue;
    }
    if (a == "--") {
      operands_only = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    std::string name = a, inline_value;
    bool has_inline = false;
    if (const auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      name = a.substr(0, eq);
      inline_value = a.substr(eq + 1);
      has_inline = true;
    }
    const Entry* e = find(name);
    if (e == nullptr) {
      const std::string near = closest(name);
      throw InputError("unknown option '" + name + "'" +
                       (near.empty() ? std::string() : " (did you mean " + near + "?)") + "; " +
                       usage_hint());
    }
    seen.insert(e);
    if (e->on_flag) {
      if (has_inline) throw InputError("option " + name + " takes no value (got '" + a + "')");
      e->on_flag();
      continue;
    }
    if (has_inline) {
      e->on_value(inline_value);
    } else {
      if (i + 1 >= args.size()) {
        throw InputError("option " + name + " needs a value (" + e->meta + ")");
      }
      e->on_value(args[++i]);
    }
  }
  for (const Entry& e : entries_) {
    if (e.def == kRequired && !seen.count(&e)) {
      throw InputError(e.names[0] + " is required (" + e.meta + ": " + e.help + "); " +
                       usage_hint());
    }
  }
  return true;
}

std::string Options::help() const {
  std::string out = "usage: " + usage_ + "\n";
  if (!about_.empty()) out += "\n" + about_ + "\n";
  auto line = [&](std::string left, const std::string& help, const std::string& def) {
    std::string text = "  " + left;
    if (text.size() < 32) {
      text.resize(32, ' ');
    } else {
      text += "\n" + std::string(32, ' ');
    }
    text += help;
    text += def == kRequired ? " (required)" : " (default: " + def + ")";
    out += text + "\n";
  };
  if (!positionals_.empty()) {
    out += "\noperands:\n";
    for (const Positional& p : positionals_) line(p.meta, p.help, p.def);
  }
  out += "\noptions:\n";
  for (const Entry& e : entries_) {
    std::string left = e.names[0];
    if (!e.meta.empty()) left += " " + e.meta;
    std::string help = e.help;
    if (e.names.size() > 1) {
      help += " [alias:";
      for (std::size_t k = 1; k < e.names.size(); ++k) help += " " + e.names[k];
      help += "]";
    }
    line(left, help, e.def);
  }
  line("-h, --help", "print this help and exit", "off");
  if (!example_.empty()) out += "\nexample:\n  " + example_ + "\n";
  return out;
}

}  // namespace exmy::cli
