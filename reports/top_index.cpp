// DIR/index.md: links every section index present under DIR (this run's and earlier ones').
#include <filesystem>

#include "reports/output_files.hpp"
#include "reports/plotting.hpp"
#include "reports/sections.hpp"

namespace exmy::reports {

void write_top_index(const ReportContext& ctx, const std::vector<SectionSummary>& ran,
                     double seconds) {
  const std::string dir = ctx.options().out_dir;
  struct Known {
    const char* key;
    const char* title;
  };
  const Known known[] = {
      {"variance", "Variance of quantized inner products vs inner dimension (seed 000, app. D)"},
      {"adam-heatmap", "Adam quantization-error heatmaps (seed 002, error analysis)"},
      {"formats", "Format error profiles"}};
  std::string md = "# exmy report\n\n";
  for (const auto& k : known) {
    if (!std::filesystem::exists(dir + "/" + k.key + "/index.md")) continue;
    md += "## [" + std::string(k.title) + "](" + k.key + "/index.md)\n\n";
    bool this_run = false;
    for (const auto& s : ran) {
      if (s.key != k.key) continue;
      this_run = true;
      for (const auto& h : s.headlines) md += "- " + h + "\n";
      if (!s.figures_ok) md += "- " + s.figures_note + "\n";
    }
    if (!this_run) md += "(from an earlier run; see its provenance)\n";
    md += "\n";
  }
  md += provenance_md(ctx, seconds);
  write_file_atomic(dir + "/index.md", md);
}

}  // namespace exmy::reports
