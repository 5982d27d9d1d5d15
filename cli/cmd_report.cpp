// exmy report [all|SECTION] --out DIR [--quick] [--seed N] [--threads N] [--replace]
// Exit status: 0 on success (also when figures were skipped because matplotlib is missing: the
// CSVs and index.md are complete and say so, and a warning goes to stderr); 2 on bad arguments;
// 130 when interrupted (SIGINT/SIGTERM), leaving only complete files behind.
// --tiny runs the test-size configuration of every section (for tests: not a meaningful report).
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/options.hpp"
#include "reports/output_files.hpp"
#include "reports/plotting.hpp"
#include "reports/report_context.hpp"
#include "reports/sections.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/io/files.hpp"

namespace {

using exmy::InputError;
namespace rep = exmy::reports;

unsigned long long parse_unsigned(const std::string& flag, const std::string& v,
                                  unsigned long long max) {
  return exmy::number::parse_u64(v, flag, max, false);
}

// "all, formats, variance, ...": the names a SECTION operand may take.
std::string section_names() {
  std::string names = "all";
  for (const auto& s : rep::report_sections()) names += std::string(", ") + s.key;
  return names;
}

int run_report(const exmy::cli::Args& args) {
  rep::ReportOptions o;
  std::string section = "all";
  bool replace = false;
  exmy::cli::Options opts(
      "exmy report [all|SECTION] --out DIR [--quick] [--seed N] [--threads N] [--replace]",
      "Writes the report's sections (CSVs, figures, index.md) under DIR. Exit 0 on success (also "
      "when matplotlib is missing: the figures are skipped with a warning), 2 on bad arguments, "
      "130 when interrupted (only complete files are left).",
      "exmy report variance --out report --quick");
  opts.positional("SECTION", "what to write: one of " + section_names(), "all",
                  [&](const std::string& a) {
                    bool known = a == "all";
                    for (const auto& s : rep::report_sections()) known = known || a == s.key;
                    if (!known) {
                      throw InputError("section '" + a + "': expected one of " + section_names());
                    }
                    section = a;
                  })
      .value({"--out"}, "DIR", "the directory to write (one directory holds one run)",
             exmy::cli::Options::kRequired, [&](const std::string& v) { o.out_dir = v; })
      .flag({"--quick"},
            "the reduced configuration (about 2 minutes on 2 cores; the full report about 10)",
            [&] { o.quick = true; })
      .flag({"--tiny"}, "test size: seconds, not a meaningful report (for tests)",
            [&] { o.tiny = 1; })
      .value({"--seed"}, "N", "seed of every random input",
             std::to_string(rep::ReportOptions{}.seed),
             [&](const std::string& v) { o.seed = parse_unsigned("--seed", v, ~0ull); })
      .value({"--threads"}, "N",
             "worker threads (1 to 1024); the CSVs are byte-identical for every N",
             "OMP_NUM_THREADS if set, else every usable core",
             [&](const std::string& v) {
               o.threads = static_cast<int>(parse_unsigned("--threads", v, 1024));
               if (o.threads == 0) throw InputError("--threads 0: expected at least 1");
             })
      .flag({"--replace"},
            "remove sections that an earlier run left in DIR (otherwise refused: one directory "
            "holds one run)",
            [&] { replace = true; });
  if (!opts.parse(args)) return 0;
  std::vector<std::string> keys;
  for (const auto& s : rep::report_sections()) {
    if (section == "all" || section == s.key) keys.push_back(s.key);
  }
  const auto stale = rep::stale_sections(o.out_dir, keys);
  if (!stale.empty()) {
    std::string names;
    for (const auto& k : stale) names += (names.empty() ? "" : ", ") + k;
    if (!replace) {
      throw InputError("--out " + o.out_dir + ": holds section(s) " + names +
                       " from an earlier run; one directory holds one run (use a fresh "
                       "directory, or --replace to remove them)");
    }
  }
  for (const auto& k : keys) {
    const std::filesystem::path p = o.out_dir + "/" + k;
    std::error_code ec;
    if (std::filesystem::exists(p) && !std::filesystem::exists(p / "index.md") &&
        !(std::filesystem::is_directory(p) && std::filesystem::is_empty(p, ec))) {
      throw InputError("--out " + o.out_dir + ": " + p.string() +
                       " exists and is not an exmy report section (no index.md); refusing to "
                       "replace it");
    }
  }
  rep::make_directories(o.out_dir);
  rep::install_interrupt_handler();
  const auto t0 = std::chrono::steady_clock::now();
  rep::ReportContext ctx(o);
  std::vector<rep::SectionSummary> ran;
  // A section's figure scripts run while the next sections compute (plotting.hpp,
  // defer_figures): the scripts are single-threaded, and waiting for them left a core idle for
  // their whole run. The section is published once they are done; its staging directory lives
  // until then. Sections are published in order, each as soon as its scripts have ended and
  // those of the sections before it too: no section waits for an earlier one's figures before
  // it starts (that wait, up to 12 s behind adam-heatmap's figures on a loaded 2-core box, left
  // exmy's threads idle). (Declared before the guard: the guard stops the scripts before the
  // directory they write into goes.)
  struct Finished {
    std::unique_ptr<exmy::io::StagingDir> stage;
    std::string key;
    std::size_t index = 0;
  };
  std::deque<Finished> drawing;
  struct DeferGuard {
    DeferGuard() { rep::defer_figures(true); }
    ~DeferGuard() {
      rep::abandon_figures();
      rep::defer_figures(false);
    }
  } defer_guard;
  const auto publish = [&](Finished& f) {
    const rep::FinishedFigures ff = rep::finish_figures(f.stage->path() + "/" + f.key);
    rep::SectionSummary& s = ran[f.index];
    s.figure_cpu_seconds += ff.cpu;
    if (!ff.ok && s.figures_ok) {
      s.figures_ok = false;
      s.figures_note = ff.note;
    }
    std::fprintf(stderr, "[%s] figures done: CPU %.1f s\n", f.key.c_str(), ff.cpu);
    rep::throw_if_interrupted();
    exmy::io::publish_directory(f.stage->path() + "/" + f.key, o.out_dir + "/" + f.key, true);
  };
  try {
    for (const auto& key : keys) {
      const auto ts = std::chrono::steady_clock::now();
      const rep::CpuTimes cs = rep::cpu_times_now();
      // A section is written into a staging directory and swapped in whole when complete: no
      // figure or CSV of an earlier run survives under this run's provenance, and an interrupted
      // run leaves the earlier section as it was (and nothing half-written beside it).
      auto stage = std::make_unique<exmy::io::StagingDir>(o.out_dir);
      ctx.stage_sections_in(stage->path());
      // Quick-mode budgets, CPU seconds (user + system) of exmy's threads + of the figure
      // scripts, as index.md's section table reports them (measured 2026-12-02 on the 2-core
      // Xeon: bench/results/2026-12-02-cpu-main-job-time.md). The README's 2 minutes on 2 cores
      // hold while about (sum(exmy) + sum(figures)) / 2 <= 120 s: exmy's work items run on both
      // cores and each section's figure scripts beside the next sections (defer_figures; when
      // they ran one after another it was sum(exmy) / 2 + sum(figures)). A new section states
      // its budget here.
      if (key == "formats") ran.push_back(rep::run_formats_section(ctx));  // 1 + 4 (0.2 + 3.1)
      // variance: 22 + 22 (measured 18.2 + 20.3)
      if (key == "variance") ran.push_back(rep::run_variance_section(ctx));
      // adam-heatmap: 36 + 13 (measured 31.7 + 11.5)
      if (key == "adam-heatmap") ran.push_back(rep::run_adam_heatmap_section(ctx));
      // lm-8bit: 12 + 2, lm-mantissa: 14 + 2 (measured 11.8 and 14.3 s of exmy CPU, h/lm8bit)
      if (key == "lm-8bit") ran.push_back(rep::run_lm8bit_section(ctx));
      if (key == "lm-mantissa") ran.push_back(rep::run_lm_mantissa_section(ctx));
      // spikes: 22 + 3 (measured 19.4 + 2.1; 3 runs on 2 threads: 2/3 of it is the elapsed time)
      if (key == "spikes") ran.push_back(rep::run_spikes_section(ctx));
      // extrabits: 2 + 3 (measured 0.8 + 2.4)
      if (key == "extrabits") ran.push_back(rep::run_extrabits_section(ctx));
      // layers: 30 + 2 (measured 27.7 + 1.3)
      if (key == "layers") ran.push_back(rep::run_layers_section(ctx));
      if (key == "mx-variance") ran.push_back(rep::run_mx_variance_section(ctx));
      ran.back().seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count();
      const rep::CpuTimes ce = rep::cpu_times_now();
      ran.back().cpu_seconds = ce.self - cs.self;
      ran.back().figure_cpu_seconds = ce.children - cs.children;
      std::fprintf(stderr, "[%s] done: %.1f s elapsed, CPU %.1f s (exmy) + %.1f s (figures)\n",
                   key.c_str(), ran.back().seconds, ran.back().cpu_seconds,
                   ran.back().figure_cpu_seconds);
      rep::throw_if_interrupted();
      ctx.stage_sections_in("");
      drawing.push_back(Finished{std::move(stage), key, ran.size() - 1});
      // Earlier sections whose figures have ended (never waiting for one still drawing).
      while (!drawing.empty() &&
             rep::figures_finished(drawing.front().stage->path() + "/" + drawing.front().key)) {
        publish(drawing.front());
        drawing.pop_front();
      }
    }
    for (; !drawing.empty(); drawing.pop_front()) publish(drawing.front());
    // --replace: the earlier run's other sections go once this run is complete (an interrupted
    // run deletes nothing).
    for (const auto& k : stale) {
      const exmy::io::StagingDir trash(o.out_dir);
      exmy::io::publish_directory(o.out_dir + "/" + k, trash.path() + "/" + k, false);
    }
    if (!stale.empty()) {
      std::string names;
      for (const auto& k : stale) names += (names.empty() ? "" : ", ") + k;
      std::fprintf(stderr, "exmy report: removed the earlier run's section(s) %s\n", names.c_str());
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rep::write_top_index(ctx, ran, secs);
  } catch (const rep::Interrupted&) {
    std::fprintf(stderr, "exmy report: interrupted; only complete files were written\n");
    exmy::io::restore_sigint_cleanup();
    return 130;
  }
  for (const auto& s : ran) {
    if (!s.figures_ok) std::fprintf(stderr, "exmy report: warning: %s\n", s.figures_note.c_str());
  }
  std::fprintf(stderr, "exmy report: wrote %s/index.md\n", o.out_dir.c_str());
  return 0;
}

}  // namespace

EXMY_COMMAND("report", run_report,
             "reports: inner-product variance vs k, Adam 8-bit error heatmaps, format profiles");
