#include "reports/spikes.hpp"

#include <cmath>
#include <deque>
#include <limits>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"

namespace exmy::reports {

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      f.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  f.push_back(cur);
  for (auto& x : f) {
    while (!x.empty() && x.front() == ' ') x.erase(x.begin());
    while (!x.empty() && x.back() == ' ') x.pop_back();
  }
  return f;
}

double parse_value(const std::string& s, const std::string& what) {
  if (s == "nan" || s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf" || s == "Infinity") return std::numeric_limits<double>::infinity();
  if (s == "-inf" || s == "-Infinity") return -std::numeric_limits<double>::infinity();
  return number::parse_f64(s, what);
}

// Cluster starts: an event joins the cluster whose start lies within `dedup` steps before it.
// Returns (start, events in the cluster) pairs.
std::vector<std::pair<long, int>> clusters(const std::vector<long>& events, int dedup) {
  std::vector<std::pair<long, int>> c;
  for (long s : events) {
    if (!c.empty() && s - c.back().first < dedup) {
      ++c.back().second;
    } else {
      c.push_back({s, 1});
    }
  }
  return c;
}

}  // namespace

Trace parse_trace_csv(const std::string& text, const std::string& source,
                      const std::string& loss_col, const std::string& rms_col) {
  Trace t;
  std::size_t pos = 0, line_no = 0;
  int i_step = -1, i_loss = -1, i_rms = -1;
  std::size_t ncols = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.empty() || line == "\r") continue;
    const auto f = split_csv_line(line);
    const std::string where = source + " line " + std::to_string(line_no);
    if (ncols == 0) {
      ncols = f.size();
      for (std::size_t i = 0; i < f.size(); ++i) {
        if (f[i] == "step") i_step = static_cast<int>(i);
        if (f[i] == loss_col) i_loss = static_cast<int>(i);
        if (!rms_col.empty() && f[i] == rms_col) i_rms = static_cast<int>(i);
      }
      if (i_loss < 0) {
        throw InputError(source + ": no column named '" + loss_col +
                         "' in the header (expected a CSV header naming the loss column; "
                         "--loss-col sets the name)");
      }
      if (!rms_col.empty() && i_rms < 0) {
        throw InputError(source + ": no column named '" + rms_col +
                         "' in the header (--rms-col sets the name; --rms-col '' analyses the "
                         "loss alone)");
      }
      continue;
    }
    if (f.size() != ncols) {
      throw InputError(where + ": " + std::to_string(f.size()) + " fields, expected " +
                       std::to_string(ncols) + " as in the header");
    }
    const long step =
        i_step >= 0 ? static_cast<long>(number::parse_i64(f[static_cast<std::size_t>(i_step)],
                                                          where + " column step", 0, (1LL << 53)))
                    : static_cast<long>(t.step.size());
    if (!t.step.empty() && step <= t.step.back()) {
      throw InputError(where + ": step " + std::to_string(step) +
                       " does not increase (expected strictly increasing steps)");
    }
    t.step.push_back(step);
    t.loss.push_back(
        parse_value(f[static_cast<std::size_t>(i_loss)], where + " column " + loss_col));
    if (i_rms >= 0) {
      t.rms.push_back(
          parse_value(f[static_cast<std::size_t>(i_rms)], where + " column " + rms_col));
    }
  }
  if (ncols == 0) throw InputError(source + ": empty (expected a CSV header and rows)");
  if (t.step.empty()) throw InputError(source + ": a header but no rows");
  return t;
}

double binomial_tail(long n, long x, double p) {
  if (x <= 0) return 1.0;
  if (x > n) return 0.0;
  if (p <= 0) return 0.0;
  if (p >= 1) return 1.0;
  double s = 0;
  for (long k = x; k <= n; ++k) {
    const double lg = std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) +
                      k * std::log(p) + (n - k) * std::log1p(-p);
    s += std::exp(lg);
  }
  return s < 1.0 ? s : 1.0;
}

SpikeResult detect_spikes(const Trace& t, const SpikeOptions& o) {
  SpikeResult r;
  if (t.step.empty()) return r;
  const long from = t.step.front() + o.ignore_first;
  // Loss deviations against the mean and sample std of the previous `window` finite losses
  // (the window includes the ignored prefix: the statistics warm up there).
  std::vector<long> dev, rms_ev;
  std::deque<double> win;
  double s = 0, ss = 0;
  for (std::size_t i = 0; i < t.step.size(); ++i) {
    const double x = t.loss[i];
    const bool analysed = t.step[i] >= from;
    if (analysed) ++r.analysed_steps;
    if (analysed) {
      bool deviates = !std::isfinite(x);
      if (!deviates && static_cast<int>(win.size()) == o.window && o.window > 1) {
        const double n = static_cast<double>(win.size());
        const double mean = s / n;
        const double var = std::max(0.0, (ss - s * s / n) / (n - 1));
        deviates = x > mean + o.sigma * std::sqrt(var);
      }
      if (deviates) dev.push_back(t.step[i]);
      if (!t.rms.empty()) {
        const double q = t.rms[i];
        if (!(q < o.rms_threshold)) rms_ev.push_back(t.step[i]);  // NaN counts as a spike
      }
    }
    if (std::isfinite(x)) {
      win.push_back(x);
      s += x;
      ss += x * x;
      if (static_cast<int>(win.size()) > o.window) {
        s -= win.front();
        ss -= win.front() * win.front();
        win.pop_front();
      }
    }
  }
  for (const auto& [start, n] : clusters(dev, o.dedup)) {
    if (n >= o.min_loss_deviations) r.loss_spikes.push_back(start);
  }
  for (const auto& c : clusters(rms_ev, o.dedup)) r.rms_spikes.push_back(c.first);
  // Preceded: an RMS spike (cluster start) in [t - lead_max, t - lead_min].
  for (long ls : r.loss_spikes) {
    bool p = false;
    for (long rs : r.rms_spikes) p = p || (ls - rs >= o.lead_min && ls - rs <= o.lead_max);
    r.preceded.push_back(p);
    r.preceded_count += p ? 1 : 0;
  }
  // Chance rate: analysed steps s with an RMS spike start in [s - lead_max, s - lead_min].
  if (r.analysed_steps > 0 && !t.rms.empty()) {
    long covered = 0;
    std::size_t j = 0;
    for (std::size_t i = 0; i < t.step.size(); ++i) {
      if (t.step[i] < from) continue;
      while (j < r.rms_spikes.size() && r.rms_spikes[j] < t.step[i] - o.lead_max) ++j;
      // The first spike start not before step - lead_max is covering if it is also not after
      // step - lead_min.
      covered += (j < r.rms_spikes.size() && r.rms_spikes[j] <= t.step[i] - o.lead_min) ? 1 : 0;
    }
    r.chance_rate = static_cast<double>(covered) / static_cast<double>(r.analysed_steps);
    r.p_value =
        binomial_tail(static_cast<long>(r.loss_spikes.size()), r.preceded_count, r.chance_rate);
  }
  return r;
}

}  // namespace exmy::reports
