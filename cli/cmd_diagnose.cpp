// exmy diagnose spikes --trace T.csv [--loss-col loss] [--rms-col rms] [--rms-threshold 2.3]
//                      [--sigma 3.2] [--window 100] [--ignore-first 1000] [--dedup 10]
//                      [--lead 1:8] [--out EVENTS.csv] [--json]
// Loss spikes and RMS spikes in a training log, by the heuristics of Wortsman et al. 2023
// (appendix E), and how often an RMS spike precedes a loss spike by 1-8 steps against the rate
// expected by chance (docs/SEMANTICS.md 14.4). The trace is a CSV with a header: a loss column,
// optionally an RMS column (RMS_t = sqrt(mean(g^2 / u)) of the patch-embedding layer) and a step
// column. Exit 0 after a report; 2 on bad input (named, nothing written).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "reports/sharpness.hpp"
#include "reports/spikes.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/io/files.hpp"
#include "sim/io/npy.hpp"

namespace exmy::cli {
namespace {

constexpr const char* kSharpUsage =
    "usage: exmy diagnose sharpness --logits L.npy --labels T.npy [--eps 5e-4] [--json]";

// Integer labels of any NumPy integer dtype, each in [0, classes).
std::vector<std::size_t> read_labels(const std::string& path, std::size_t rows,
                                     std::size_t classes) {
  const io::NpyArray a = io::read_npy(path);
  const std::string& d = a.descr;
  const bool sgn = d == "<i8" || d == "<i4" || d == "<i2" || d == "|i1";
  const bool uns = d == "<u8" || d == "<u4" || d == "<u2" || d == "|u1";
  if (!sgn && !uns) {
    throw InputError(path + ": dtype " + d +
                     " (expected integer labels: int8..int64, uint8..uint64)");
  }
  if (a.count() != rows || a.shape.size() > 1) {
    throw InputError(path + ": " + std::to_string(a.count()) + " labels in " +
                     std::to_string(a.shape.size()) + " dimensions (expected a 1-d array of " +
                     std::to_string(rows) + ", one per row of the logits)");
  }
  const std::size_t w = a.item_size();
  std::vector<std::size_t> out(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    std::uint64_t u = 0;
    for (std::size_t b = 0; b < w; ++b)
      u |= static_cast<std::uint64_t>(a.data[i * w + b]) << (8 * b);
    std::int64_t v = static_cast<std::int64_t>(u);
    if (sgn && w < 8 && ((u >> (8 * w - 1)) & 1u))
      v = static_cast<std::int64_t>(u | (~0ull << (8 * w)));
    if (v < 0 || static_cast<std::uint64_t>(v) >= classes) {
      throw InputError(path + ": label " + std::to_string(v) + " at index " + std::to_string(i) +
                       " (expected a class in [0, " + std::to_string(classes) + "))");
    }
    out[i] = static_cast<std::size_t>(v);
  }
  return out;
}

int run_sharpness(const Args& args) {
  std::string logits, labels;
  double eps = 5e-4;
  bool json = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s\n", kSharpUsage);
      return 0;
    } else if (a == "--logits") {
      logits = option_value(args, i);
    } else if (a == "--labels") {
      labels = option_value(args, i);
    } else if (a == "--eps") {
      const std::string v = option_value(args, i);
      eps = number::require_range(number::parse_f64(v, "--eps"), v, "--eps", 0.0, true, 1e6, false);
    } else if (a == "--json") {
      json = true;
    } else {
      throw InputError("argument '" + a + "': unexpected (" + kSharpUsage + ")");
    }
  }
  if (logits.empty() || labels.empty()) {
    throw InputError(std::string("--logits and --labels: required (") + kSharpUsage + ")");
  }
  const io::NpyArray l = io::read_npy(logits);
  io::require_c_order(l, logits);
  if (l.shape.size() != 2 || l.shape[1] < 2) {
    throw InputError(logits + ": " + std::to_string(l.shape.size()) +
                     "-d array (expected 2-d logits, rows x classes, at least 2 classes)");
  }
  const std::vector<double> y =
      l.descr == "<f4" ? [&] {
        const auto f = io::as_f32(l, logits);
        return std::vector<double>(f.begin(), f.end());
      }()
                       : io::as_f64(l, logits);
  const std::size_t rows = l.shape[0], v = l.shape[1];
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      throw InputError(logits + ": element " + std::to_string(i) +
                       " is not finite (expected finite logits)");
    }
  }
  const auto lab = read_labels(labels, rows, v);
  double sum = 0, mx = 0;
  std::vector<double> phi(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    phi[r] = reports::logit_sharpness(std::span<const double>(y.data() + r * v, v), lab[r], eps);
    sum += phi[r];
    mx = std::max(mx, phi[r]);
  }
  if (json) {
    std::printf(
        "{\"rows\": %zu, \"classes\": %zu, \"eps\": %.17g, \"mean\": %.17g, \"max\": %.17g}\n",
        rows, v, eps, rows ? sum / rows : 0.0, mx);
  } else {
    std::printf(
        "%zu rows x %zu classes, eps %g: logit sharpness mean %.6g, max %.6g (closed form: "
        "the box maximum is the vertex lowering the label's logit and raising the others)\n",
        rows, v, eps, rows ? sum / rows : 0.0, mx);
  }
  return 0;
}

constexpr const char* kUsage =
    "usage: exmy diagnose spikes --trace T.csv [--loss-col loss] [--rms-col rms] "
    "[--rms-threshold 2.3] [--sigma 3.2] [--window 100] [--ignore-first 1000] [--dedup 10] "
    "[--lead 1:8] [--out EVENTS.csv] [--json]";

std::string steps_json(const std::vector<long>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int run_diagnose(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf("%s\n", kUsage);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "sharpness") return run_sharpness(args);
  if (args[0] != "spikes") {
    throw InputError("diagnose '" + args[0] + "': expected spikes or sharpness (" + kUsage + "; " +
                     kSharpUsage + ")");
  }
  reports::SpikeOptions o;
  std::string trace, out, loss_col = "loss", rms_col = "rms";
  bool json = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s\n", kUsage);
      return 0;
    } else if (a == "--trace") {
      trace = option_value(args, i);
    } else if (a == "--loss-col") {
      loss_col = option_value(args, i);
      if (loss_col.empty()) throw InputError("--loss-col '': expected a column name");
    } else if (a == "--rms-col") {
      rms_col = option_value(args, i);
    } else if (a == "--rms-threshold") {
      const std::string v = option_value(args, i);
      o.rms_threshold = number::require_range(number::parse_f64(v, "--rms-threshold"), v,
                                              "--rms-threshold", 0.0, true, 1e300, false);
    } else if (a == "--sigma") {
      const std::string v = option_value(args, i);
      o.sigma = number::require_range(number::parse_f64(v, "--sigma"), v, "--sigma", 0.0, false,
                                      1e300, false);
    } else if (a == "--window") {
      o.window =
          static_cast<int>(number::parse_u64(option_value(args, i), "--window", 1u << 24, false));
      if (o.window < 2) throw InputError("--window: expected at least 2 (a standard deviation)");
    } else if (a == "--ignore-first") {
      o.ignore_first = static_cast<long>(
          number::parse_u64(option_value(args, i), "--ignore-first", 1ull << 53, false));
    } else if (a == "--dedup") {
      o.dedup =
          static_cast<int>(number::parse_u64(option_value(args, i), "--dedup", 1u << 24, false));
      if (o.dedup < 1) throw InputError("--dedup: expected at least 1");
    } else if (a == "--lead") {
      const std::string v = option_value(args, i);
      const auto colon = v.find(':');
      if (colon == std::string::npos) throw InputError("--lead '" + v + "': expected MIN:MAX");
      o.lead_min =
          static_cast<int>(number::parse_u64(v.substr(0, colon), "--lead MIN", 1u << 24, false));
      o.lead_max =
          static_cast<int>(number::parse_u64(v.substr(colon + 1), "--lead MAX", 1u << 24, false));
      if (o.lead_min < 1 || o.lead_max < o.lead_min) {
        throw InputError("--lead '" + v + "': expected 1 <= MIN <= MAX");
      }
    } else if (a == "--out") {
      out = option_value(args, i);
    } else if (a == "--json") {
      json = true;
    } else {
      throw InputError("argument '" + a + "': unexpected (" + kUsage + ")");
    }
  }
  if (trace.empty()) throw InputError(std::string("--trace T.csv: required (") + kUsage + ")");
  const std::string text = io::read_small_file(trace, std::size_t{1} << 30, "a CSV training trace");
  const reports::Trace t = reports::parse_trace_csv(text, trace, loss_col, rms_col);
  const reports::SpikeResult r = reports::detect_spikes(t, o);
  if (!out.empty()) {
    std::string csv = "step,event,preceded_by_rms_spike\n";
    std::size_t a = 0, b = 0;
    while (a < r.loss_spikes.size() || b < r.rms_spikes.size()) {
      const bool take_loss = b >= r.rms_spikes.size() ||
                             (a < r.loss_spikes.size() && r.loss_spikes[a] <= r.rms_spikes[b]);
      if (take_loss) {
        csv +=
            std::to_string(r.loss_spikes[a]) + ",loss_spike," + (r.preceded[a] ? "1" : "0") + "\n";
        ++a;
      } else {
        csv += std::to_string(r.rms_spikes[b]) + ",rms_spike,\n";
        ++b;
      }
    }
    io::write_text_atomic(out, csv);
  }
  const bool have_rms = !t.rms.empty();
  if (json) {
    std::printf(
        "{\"trace\": %s, \"steps\": %zu, \"analysed_steps\": %ld, \"loss_spikes\": %s, "
        "\"rms_spikes\": %s, \"preceded\": %ld, \"chance_rate\": %.6g, \"p_value\": %.6g}\n",
        json_string(trace).c_str(), t.step.size(), r.analysed_steps,
        steps_json(r.loss_spikes).c_str(), have_rms ? steps_json(r.rms_spikes).c_str() : "null",
        r.preceded_count, r.chance_rate, r.p_value);
    return 0;
  }
  std::printf("%s: %zu steps, %ld analysed (the first %ld ignored)\n", trace.c_str(), t.step.size(),
              r.analysed_steps, o.ignore_first);
  std::printf("loss spikes: %zu%s\n", r.loss_spikes.size(),
              r.loss_spikes.empty() ? "" : (" at " + steps_json(r.loss_spikes)).c_str());
  if (!have_rms) {
    std::printf("no RMS column: precedence not analysed\n");
    return 0;
  }
  std::printf("RMS spikes (RMS >= %g): %zu\n", o.rms_threshold, r.rms_spikes.size());
  std::printf(
      "loss spikes preceded by an RMS spike %d-%d steps earlier: %ld of %zu (chance rate %.3g "
      "per loss spike; P(at least this many by chance) = %.3g)\n",
      o.lead_min, o.lead_max, r.preceded_count, r.loss_spikes.size(), r.chance_rate, r.p_value);
  return 0;
}

}  // namespace

EXMY_COMMAND("diagnose", run_diagnose,
             "training diagnostics: loss/RMS spikes (Wortsman et al. appendix E), logit sharpness "
             "(To FP8 and back again, eqs. 1-2)");

}  // namespace exmy::cli
