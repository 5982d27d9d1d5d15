// The rounding-mode registry (sim/format/rounding_names.hpp).
#include "sim/format/rounding_names.hpp"

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"

namespace exmy {
namespace {

constexpr struct {
  RoundMode mode;
  const char* name;
} kModes[] = {{RoundMode::rne, "rne"}, {RoundMode::rna, "rna"}, {RoundMode::rtz, "rtz"},
              {RoundMode::rup, "rup"}, {RoundMode::rdn, "rdn"}, {RoundMode::rto, "rto"},
              {RoundMode::sr, "sr"}};
constexpr RoundMode kModeList[] = {RoundMode::rne, RoundMode::rna, RoundMode::rtz, RoundMode::rup,
                                   RoundMode::rdn, RoundMode::rto, RoundMode::sr};
constexpr std::string_view kSrPrefix = "sr:";
constexpr int kSrMaxBits = 32;

constexpr struct {
  Overflow policy;
  const char* name;
} kPolicies[] = {
    {Overflow::none, "none"}, {Overflow::satfinite, "satfinite"}, {Overflow::sat, "sat"}};

constexpr struct {
  TieRule tie;
  const char* name;
} kTies[] = {
    {TieRule::even_index, "even"}, {TieRule::lower_index, "lower"}, {TieRule::bnb_cpu, "bnb-cpu"}};

std::string sr_expected(std::string_view mode) {
  return "rounding mode '" + std::string(mode) + "': expected sr:R with R = 1.." +
         std::to_string(kSrMaxBits);
}

}  // namespace

const char* round_mode_name(RoundMode m) {
  for (const auto& e : kModes) {
    if (e.mode == m) return e.name;
  }
  return "?";
}

std::span<const RoundMode> round_modes() {
  return kModeList;
}

std::vector<Rounding> rounding_sweep(std::initializer_list<int> sr_bits) {
  std::vector<Rounding> v;
  for (const RoundMode m : kModeList) {
    if (m != RoundMode::sr) v.push_back(Rounding{m});
  }
  for (const int r : sr_bits) v.push_back(Rounding{RoundMode::sr, r});
  return v;
}

const char* overflow_name(Overflow p) {
  for (const auto& e : kPolicies) {
    if (e.policy == p) return e.name;
  }
  return "?";
}

const char* tie_name(TieRule t) {
  for (const auto& e : kTies) {
    if (e.tie == t) return e.name;
  }
  return "?";
}

std::string rounding_name(const Rounding& r) {
  if (r.mode == RoundMode::sr) return std::string(kSrPrefix) + std::to_string(r.sr_bits);
  return round_mode_name(r.mode);
}

std::string rounding_text(const Rounding& r, std::string_view sep) {
  std::string s = rounding_name(r);
  if (r.overflow != Overflow::none) s.append(sep).append(overflow_name(r.overflow));
  return s;
}

std::string round_mode_list(std::string_view sep) {
  std::string s;
  for (const auto& e : kModes) {
    if (!s.empty()) s.append(sep);
    s += e.mode == RoundMode::sr ? std::string(kSrPrefix) + "R" : std::string(e.name);
  }
  return s;
}

std::string overflow_list(std::string_view sep) {
  std::string s;
  for (const auto& e : kPolicies) s.append(s.empty() ? "" : sep).append(e.name);
  return s;
}

std::string tie_list(std::string_view sep) {
  std::string s;
  for (const auto& e : kTies) s.append(s.empty() ? "" : sep).append(e.name);
  return s;
}

Rounding parse_rounding(std::string_view mode) {
  Rounding r;
  if (mode.substr(0, kSrPrefix.size()) == kSrPrefix) {
    r.mode = RoundMode::sr;
    const std::string_view bits = mode.substr(kSrPrefix.size());
    if (bits.empty() || bits.size() > 2 || bits.find_first_not_of("0123456789") != bits.npos) {
      throw InputError(sr_expected(mode));
    }
    r.sr_bits = static_cast<int>(number::parse_u64(bits, "rounding mode sr:R", 99, false));
    if (r.sr_bits < 1 || r.sr_bits > kSrMaxBits) throw InputError(sr_expected(mode));
    return r;
  }
  for (const auto& e : kModes) {
    if (e.mode != RoundMode::sr && mode == e.name) {
      r.mode = e.mode;
      return r;
    }
  }
  throw InputError("unknown rounding mode '" + std::string(mode) + "' (expected " +
                   round_mode_list(", ") + " or mask[:outer=..,inner=..])");
}

RoundSpec parse_round_spec(std::string_view text) {
  RoundSpec s;
  if (text.substr(0, 4) != "mask") {
    s.rounding = parse_rounding(text);
    return s;
  }
  s.mask = true;
  s.rounding.mode = RoundMode::rtz;  // the mantissa bitmask is rtz at M bits
  std::string_view rest = text.substr(4);
  if (rest.empty()) return s;
  const std::string bad = "rounding mode '" + std::string(text) +
                          "': expected mask[:outer=clamp|keep][,inner=min|zero|keep]";
  if (rest[0] != ':') throw InputError(bad);
  rest.remove_prefix(1);
  // "mask:" with nothing after the colon is a typo, not the defaults (those are plain "mask").
  if (rest.empty()) throw InputError(bad);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (item == "outer=clamp") {
      s.outer = MaskOuter::clamp;
    } else if (item == "outer=keep") {
      s.outer = MaskOuter::keep;
    } else if (item == "inner=min") {
      s.inner = MaskInner::min;
    } else if (item == "inner=zero") {
      s.inner = MaskInner::zero;
    } else if (item == "inner=keep") {
      s.inner = MaskInner::keep;
    } else {
      throw InputError(bad);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
    if (rest.empty()) throw InputError(bad);
  }
  return s;
}

Overflow parse_overflow(std::string_view text) {
  for (const auto& e : kPolicies) {
    if (text == e.name) return e.policy;
  }
  throw InputError("overflow policy '" + std::string(text) + "': expected none, satfinite or sat");
}

Rounding parse_rounding_text(std::string_view text, std::string_view what) {
  const std::size_t plus = text.find('+');
  try {
    Rounding r = parse_rounding(text.substr(0, plus));
    if (plus != std::string_view::npos) r.overflow = parse_overflow(text.substr(plus + 1));
    return r;
  } catch (const InputError&) {
    throw InputError(std::string(what) + " '" + std::string(text) +
                     "': expected MODE or MODE+POLICY, MODE " + round_mode_list("|") + " (R = 1.." +
                     std::to_string(kSrMaxBits) + "), POLICY " + overflow_list("|"));
  }
}

TieRule parse_tie(std::string_view text) {
  for (const auto& e : kTies) {
    if (text == e.name) return e.tie;
  }
  throw InputError("tie rule '" + std::string(text) + "': expected even, lower or bnb-cpu");
}

}  // namespace exmy
