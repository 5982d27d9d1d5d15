// exmy diagnose spikes --trace T.csv [OPTIONS] | exmy diagnose sharpness --logits L --labels T
// (each option with its default: exmy diagnose spikes --help).
// Loss spikes and RMS spikes in a training log, by the heuristics of Wortsman et al. 2023
// (appendix E), and how often an RMS spike precedes a loss spike by 1-8 steps against the rate
// expected by chance (docs/SEMANTICS.md 14.4). The trace is a CSV with a header: a loss column,
// optionally an RMS column (RMS_t = sqrt(mean(g^2 / u)) of the patch-embedding layer) and a step
// column. Exit 0 after a report; 2 on bad input (named, nothing written).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "reports/sharpness.hpp"
#include "reports/spikes.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/io/files.hpp"
#include "sim/io/npy.hpp"

namespace exmy::cli {
namespace {

// A default as --help prints it: "2.3", "0.0005".
std::string num_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

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

// What `exmy diagnose sharpness` was asked for.
struct SharpnessArgs {
  static constexpr double kPaperEps = 5e-4;  // To FP8 and back again, eq. 2
  std::string logits, labels;
  double eps = kPaperEps;
  bool json = false, quiet = false;
};

Options sharpness_options(SharpnessArgs& s) {
  Options opts("exmy diagnose sharpness --logits L.npy --labels T.npy [--eps E] [--json] [--quiet]",
               "Logit sharpness phi_eps of every row (To FP8 and back again, eqs. 1-2): the "
               "largest cross-entropy change within an eps box around the logits, in closed "
               "form; prints the mean and the maximum over the rows.",
               "exmy diagnose sharpness --logits logits.npy --labels labels.npy");
  opts.value({"--logits"}, "L.npy", "logits, rows x classes (<f4 or <f8, finite, >= 2 classes)",
             Options::kRequired, [&](const std::string& v) { s.logits = v; })
      .value({"--labels"}, "T.npy", "integer labels, one per row, each in [0, classes)",
             Options::kRequired, [&](const std::string& v) { s.labels = v; })
      .value({"--eps"}, "E", "half-width of the box, in [0, 1e6)",
             num_text(SharpnessArgs::kPaperEps) + " (the paper's)",
             [&](const std::string& v) {
               s.eps = number::require_range(number::parse_f64(v, "--eps"), v, "--eps", 0.0, true,
                                             1e6, false);
             })
      .flag({"--json"}, "print one JSON object {rows, classes, eps, mean, max}",
            [&] { s.json = true; })
      .flag({"--quiet"}, "print only the mean and maximum, one line", [&] { s.quiet = true; });
  return opts;
}

int run_sharpness(const Args& args) {
  SharpnessArgs s;
  if (!sharpness_options(s).parse(args)) return 0;
  const std::string &logits = s.logits, &labels = s.labels;
  const double eps = s.eps;
  // The logits stay in the mapped file; each row is widened to fp64 where it is used (issue 36's
  // memory bound, docs/SEMANTICS.md 11.0: the file was copied twice and widened whole before).
  const io::NpyMappedFile file(logits);
  const io::NpyHeader& l = file.header();
  io::require_c_order(l, logits);
  if (l.shape.size() != 2 || l.shape[1] < 2) {
    throw InputError(logits + ": " + std::to_string(l.shape.size()) +
                     "-d array (expected 2-d logits, rows x classes, at least 2 classes)");
  }
  const bool f32 = l.descr == "<f4";
  if (!f32 && l.descr != io::kDescrF64) {
    (void)io::as_f64(io::NpyArray{l.descr, {}, false, {}}, logits);  // the reader's dtype error
  }
  const std::uint8_t* data = file.data();
  const auto value = [&](std::size_t i) {
    if (f32) {
      float f;
      std::memcpy(&f, data + 4 * i, 4);
      return static_cast<double>(f);
    }
    double d;
    std::memcpy(&d, data + 8 * i, 8);
    return d;
  };
  const std::size_t rows = l.shape[0], v = l.shape[1];
  for (std::size_t i = 0; i < rows * v; ++i) {
    if (!std::isfinite(value(i))) {
      throw InputError(logits + ": element " + std::to_string(i) +
                       " is not finite (expected finite logits)");
    }
  }
  const auto lab = read_labels(labels, rows, v);
  double sum = 0, mx = 0;
  std::vector<double> phi(rows), y(v);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < v; ++c) y[c] = value(r * v + c);
    phi[r] = reports::logit_sharpness(std::span<const double>(y.data(), v), lab[r], eps);
    sum += phi[r];
    mx = std::max(mx, phi[r]);
  }
  if (s.json) {
    std::printf(
        "{\"rows\": %zu, \"classes\": %zu, \"eps\": %.17g, \"mean\": %.17g, \"max\": %.17g}\n",
        rows, v, eps, rows ? sum / rows : 0.0, mx);
  } else if (s.quiet) {
    std::printf("logit sharpness mean %.6g, max %.6g\n", rows ? sum / rows : 0.0, mx);
  } else {
    std::printf(
        "%zu rows x %zu classes, eps %g: logit sharpness mean %.6g, max %.6g (closed form: "
        "the box maximum is the vertex lowering the label's logit and raising the others)\n",
        rows, v, eps, rows ? sum / rows : 0.0, mx);
  }
  return 0;
}

// --lead MIN:MAX into o.lead_min, o.lead_max.
void parse_lead(const std::string& v, reports::SpikeOptions& o) {
  const auto colon = v.find(':');
  if (colon == std::string::npos) throw InputError("--lead '" + v + "': expected MIN:MAX");
  o.lead_min =
      static_cast<int>(number::parse_u64(v.substr(0, colon), "--lead MIN", 1u << 24, false));
  o.lead_max =
      static_cast<int>(number::parse_u64(v.substr(colon + 1), "--lead MAX", 1u << 24, false));
  if (o.lead_min < 1 || o.lead_max < o.lead_min) {
    throw InputError("--lead '" + v + "': expected 1 <= MIN <= MAX");
  }
}

std::string steps_json(const std::vector<long>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// What `exmy diagnose spikes` was asked for.
struct SpikesArgs {
  reports::SpikeOptions o;
  std::string trace, out, loss_col = "loss", rms_col = "rms";
  bool json = false, quiet = false;
};

Options spikes_options(SpikesArgs& s) {
  const reports::SpikeOptions d;
  Options opts("exmy diagnose spikes --trace T.csv [--loss-col NAME] [--rms-col NAME] [OPTIONS]",
               "Loss spikes and RMS spikes in a training log, by the heuristics of Wortsman et al. "
               "2023 (appendix E), and how often an RMS spike precedes a loss spike against the "
               "rate expected by chance (docs/SEMANTICS.md 14.4).",
               "exmy diagnose spikes --trace log.csv --ignore-first 500 --json");
  opts.value({"--trace"}, "T.csv",
             "the training log: a CSV with a header naming a loss column, optionally an RMS "
             "column and a step column (else the row number)",
             Options::kRequired, [&](const std::string& v) { s.trace = v; })
      .value({"--loss-col"}, "NAME", "the loss column", s.loss_col,
             [&](const std::string& v) {
               if (v.empty()) throw InputError("--loss-col '': expected a column name");
               s.loss_col = v;
             })
      .value({"--rms-col"}, "NAME",
             "the RMS column (RMS_t = sqrt(mean(g^2 / u)) of the patch-embedding layer); '' "
             "analyses the loss alone",
             s.rms_col, [&](const std::string& v) { s.rms_col = v; })
      .value({"--rms-threshold"}, "X", "an RMS spike is RMS_t >= X", num_text(d.rms_threshold),
             [&](const std::string& v) {
               s.o.rms_threshold =
                   number::require_range(number::parse_f64(v, "--rms-threshold"), v,
                                         "--rms-threshold", 0.0, true, 1e300, false);
             })
      .value({"--sigma"}, "S", "a loss deviation is loss_t > mean + S std of the window",
             num_text(d.sigma),
             [&](const std::string& v) {
               s.o.sigma = number::require_range(number::parse_f64(v, "--sigma"), v, "--sigma", 0.0,
                                                 false, 1e300, false);
             })
      .value({"--window"}, "N", "running statistics over the N previous finite losses (>= 2)",
             std::to_string(d.window),
             [&](const std::string& v) {
               s.o.window = static_cast<int>(number::parse_u64(v, "--window", 1u << 24, false));
               if (s.o.window < 2) {
                 throw InputError("--window: expected at least 2 (a standard deviation)");
               }
             })
      .value({"--ignore-first"}, "N", "steps before the first step + N are ignored (warmup)",
             std::to_string(d.ignore_first),
             [&](const std::string& v) {
               s.o.ignore_first =
                   static_cast<long>(number::parse_u64(v, "--ignore-first", 1ull << 53, false));
             })
      .value({"--dedup"}, "N", "events within N steps of a cluster's start join it (>= 1)",
             std::to_string(d.dedup),
             [&](const std::string& v) {
               s.o.dedup = static_cast<int>(number::parse_u64(v, "--dedup", 1u << 24, false));
               if (s.o.dedup < 1) throw InputError("--dedup: expected at least 1");
             })
      .value({"--lead"}, "MIN:MAX",
             "an RMS spike MIN..MAX steps before a loss spike precedes it (1 <= MIN <= MAX)",
             std::to_string(d.lead_min) + ":" + std::to_string(d.lead_max),
             [&](const std::string& v) { parse_lead(v, s.o); })
      .value({"--out"}, "EVENTS.csv", "also write every event (step, kind, preceded) as CSV",
             "none", [&](const std::string& v) { s.out = v; })
      .flag({"--json"},
            "print one JSON object {trace, steps, analysed_steps, loss_spikes, rms_spikes, "
            "preceded, chance_rate, p_value}",
            [&] { s.json = true; })
      .flag({"--quiet"}, "print only the verdict line (spike counts and the p-value)",
            [&] { s.quiet = true; });
  return opts;
}

// `exmy diagnose` without a known sub-command: its help names them with their usage lines (from
// their option tables).
Options diagnose_options() {
  SpikesArgs spikes;
  SharpnessArgs sharpness;
  Options opts("exmy diagnose spikes|sharpness [OPTIONS]",
               "Training diagnostics:\n  " + spikes_options(spikes).usage() + "\n  " +
                   sharpness_options(sharpness).usage() +
                   "\n(exmy diagnose spikes --help and exmy diagnose sharpness --help list their "
                   "options)",
               "exmy diagnose spikes --trace log.csv");
  opts.positional("SUB", "spikes or sharpness", Options::kRequired, [](const std::string& sub) {
    throw InputError("diagnose '" + sub +
                     "': expected spikes or sharpness (try exmy diagnose "
                     "--help)");
  });
  return opts;
}

int run_spikes(const Args& args) {
  SpikesArgs s;
  if (!spikes_options(s).parse(args)) return 0;
  const reports::SpikeOptions& o = s.o;
  const std::string &trace = s.trace, &out = s.out;
  const std::string text = io::read_small_file(trace, std::size_t{1} << 30, "a CSV training trace");
  const reports::Trace t = reports::parse_trace_csv(text, trace, s.loss_col, s.rms_col);
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
  if (s.json) {
    std::printf(
        "{\"trace\": %s, \"steps\": %zu, \"analysed_steps\": %ld, \"loss_spikes\": %s, "
        "\"rms_spikes\": %s, \"preceded\": %ld, \"chance_rate\": %.6g, \"p_value\": %.6g}\n",
        json_string(trace).c_str(), t.step.size(), r.analysed_steps,
        steps_json(r.loss_spikes).c_str(), have_rms ? steps_json(r.rms_spikes).c_str() : "null",
        r.preceded_count, r.chance_rate, r.p_value);
    return 0;
  }
  if (s.quiet) {
    if (have_rms) {
      std::printf("%zu loss spikes, %ld preceded by an RMS spike (p = %.3g)\n",
                  r.loss_spikes.size(), r.preceded_count, r.p_value);
    } else {
      std::printf("%zu loss spikes (no RMS column)\n", r.loss_spikes.size());
    }
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

int run_diagnose(const Args& args) {
  const Args rest(args.empty() ? args.end() : args.begin() + 1, args.end());
  if (!args.empty() && args[0] == "sharpness") return run_sharpness(rest);
  if (!args.empty() && args[0] == "spikes") return run_spikes(rest);
  const Options opts = diagnose_options();
  if (!opts.parse(args)) return 0;
  // No sub-command at all: the help, and the exit status of bad usage.
  std::fputs(opts.help().c_str(), stdout);
  return 2;
}

}  // namespace

EXMY_COMMAND("diagnose", run_diagnose,
             "training diagnostics: loss/RMS spikes (Wortsman et al. appendix E), logit sharpness "
             "(To FP8 and back again, eqs. 1-2)");

}  // namespace exmy::cli
