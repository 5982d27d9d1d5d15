// Figures are drawn by matplotlib scripts (reports/plot/*.py) from the CSVs; C++ never draws.
// Interpreter: $EXMY_PYTHON, else /usr/bin/python3 (Debian's python3-matplotlib; the pyenv
// python3 first on PATH has no numpy). Scripts: $EXMY_PLOT_DIR, else the source tree's
// reports/plot (compile definition EXMY_REPORT_PLOT_DIR).
#pragma once

#include <string>
#include <vector>

#include "reports/report_context.hpp"

namespace exmy::reports {

struct FigureResult {
  bool ok = false;
  std::string note;   // why not, when !ok
  long pending = -1;  // a deferred script still running (defer_figures): its id, else -1
};

// Runs `python SCRIPT SECTION_DIR`; the script reads the CSVs there and writes PNG+SVG next to
// them (each via a temporary name and os.replace). Exit code 3 from the script means "matplotlib
// is not importable". Throws Interrupted if the run was interrupted meanwhile.
// With defer_figures(true) the script is started and not waited for: the result says ok with a
// pending id, and finish_figures later waits for it (the report driver: a section's figures are
// drawn while the next section computes, on the cores its threads leave; the figures and CSVs
// are the same files either way, the scripts reading only what the section wrote before).
FigureResult run_plot_script(const ReportContext& ctx, const std::string& script,
                             const std::string& section_dir);

// Deferred figure scripts (the report driver; off by default, and for exmy analyze).
void defer_figures(bool on);
struct FinishedFigures {
  bool ok = true;
  std::string note;  // the first failure's note, when !ok
  double cpu = 0;    // CPU seconds (user + system) of the scripts
};
// Waits for the deferred scripts started for section_dir and, for each that failed, puts the
// note figure_md writes for a failed figure in place of its figure markdown in
// section_dir/index.md. Throws Interrupted if the run was interrupted meanwhile.
FinishedFigures finish_figures(const std::string& section_dir);
// Whether every deferred script started for section_dir has ended (never blocks; the ended
// ones are reaped and their status and CPU time kept for finish_figures).
bool figures_finished(const std::string& section_dir);
// Stops (SIGTERM) and reaps every deferred script still running (an interrupted or failed run).
void abandon_figures();

// Markdown for a figure: the PNG embedded, the SVG linked; or a note when figures were skipped.
std::string figure_md(const FigureResult& fr, const std::string& stem, const std::string& caption);

// The provenance block of an index.md.
std::string provenance_md(const ReportContext& ctx, double seconds);

}  // namespace exmy::reports
