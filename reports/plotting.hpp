// Figures are drawn by matplotlib scripts (reports/plot/*.py) from the CSVs; C++ never draws.
// Interpreter: $EXMY_PYTHON, else /usr/bin/python3 (Debian's python3-matplotlib; the pyenv
// python3 first on PATH has no numpy). Scripts: $EXMY_PLOT_DIR, else the source tree's
// reports/plot (compile definition EXMY_REPORT_PLOT_DIR).
#pragma once

#include <string>

#include "reports/report_context.hpp"

namespace exmy::reports {

struct FigureResult {
  bool ok = false;
  std::string note;  // why not, when !ok
};

// Runs `python SCRIPT SECTION_DIR`; the script reads the CSVs there and writes PNG+SVG next to
// them (each via a temporary name and os.replace). Exit code 3 from the script means "matplotlib
// is not importable". Throws Interrupted if the run was interrupted meanwhile.
FigureResult run_plot_script(const ReportContext& ctx, const std::string& script,
                             const std::string& section_dir);

// Markdown for a figure: the PNG embedded, the SVG linked; or a note when figures were skipped.
std::string figure_md(const FigureResult& fr, const std::string& stem, const std::string& caption);

// The provenance block of an index.md.
std::string provenance_md(const ReportContext& ctx, double seconds);

}  // namespace exmy::reports
