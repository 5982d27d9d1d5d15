// The report sections. Each writes DIR/<key>/ (CSVs, figures, index.md) and returns what the
// top-level index links to.
#pragma once

#include <string>
#include <vector>

#include "reports/report_context.hpp"

namespace exmy::reports {

struct SectionSummary {
  std::string key;  // directory name under DIR
  std::string title;
  std::vector<std::string> headlines;  // one-line findings for DIR/index.md
  bool figures_ok = false;
  std::string figures_note;  // why figures were skipped, when they were
};

SectionSummary run_variance_section(const ReportContext& ctx);
SectionSummary run_adam_heatmap_section(const ReportContext& ctx);
SectionSummary run_formats_section(const ReportContext& ctx);

// Writes DIR/index.md linking every section directory that holds an index.md.
void write_top_index(const ReportContext& ctx, const std::vector<SectionSummary>& ran,
                     double seconds);

}  // namespace exmy::reports
