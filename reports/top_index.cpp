// DIR/index.md: the run's sections with their headlines and run times, then the provenance.
#include <filesystem>

#include "reports/output_files.hpp"
#include "reports/plotting.hpp"
#include "reports/sections.hpp"

namespace exmy::reports {

const std::vector<SectionInfo>& report_sections() {
  static const std::vector<SectionInfo> s{
      {"formats", "Format error profiles"},
      {"variance",
       "Variance of quantized inner products vs inner dimension (Wortsman et al., Stable and "
       "low-precision training for large-scale vision-language models, appendix D)"},
      {"adam-heatmap",
       "Adam quantization-error heatmaps (Dettmers et al., 8-bit optimizers via block-wise "
       "quantization, error analysis)"}};
  return s;
}

std::vector<std::string> stale_sections(const std::string& dir,
                                        const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  for (const auto& s : report_sections()) {
    bool ours = false;
    for (const auto& k : keys) ours = ours || k == s.key;
    if (!ours && std::filesystem::exists(dir + "/" + s.key + "/index.md")) out.push_back(s.key);
  }
  return out;
}

void write_top_index(const ReportContext& ctx, const std::vector<SectionSummary>& ran,
                     double seconds) {
  const std::string dir = ctx.options().out_dir;
  std::string md = "# exmy report\n\n";
  md += "| section | run time |\n|---|---|\n";
  for (const auto& s : ran) {
    md += "| [" + s.title + "](" + s.key + "/index.md) | " + fmt_g(s.seconds, 3) + " s |\n";
  }
  md += "\n";
  for (const auto& s : ran) {
    md += "## [" + s.title + "](" + s.key + "/index.md)\n\n";
    for (const auto& h : s.headlines) md += "- " + h + "\n";
    if (!s.figures_ok) md += "- " + s.figures_note + "\n";
    md += "\n";
  }
  md += provenance_md(ctx, seconds);
  write_file_atomic(dir + "/index.md", md);
}

}  // namespace exmy::reports
