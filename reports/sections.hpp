// The report sections. Each writes DIR/<key>/ (CSVs, figures, index.md) and returns what the
// top-level index links to.
#pragma once

#include <string>
#include <vector>

#include "reports/report_context.hpp"

namespace exmy::reports {

// One row of the claim table (DIR/index.md, DIR/report.html, DIR/claims.csv): a statement of a
// paper (or a closed form this report derives) next to the number exmy measures for it.
struct Claim {
  std::string source;    // "Wortsman et al. 2023 (arXiv 2304.13013)" or "closed form"
  std::string where;     // section / equation / figure of the source
  std::string claim;     // the statement, quoted or paraphrased (paraphrases say so)
  std::string measured;  // what exmy computes for it, in words
  double value = 0;
  bool has_value = false;
  double lo = 0, hi = 0;  // 95% interval
  bool has_ci = false;
  std::string expected;  // the paper's or the closed form's value, as text
  // reproduction | closed-form check | unit check | proxy | arithmetic restatement |
  // not computable (reports/claims.hpp: what each means and the verdicts it may use)
  std::string kind;
  // A verdict of the kind's words (claims.hpp): a check says agrees/disagrees, a proxy
  // consistent/inconsistent; only a reproduction says "reproduced".
  std::string verdict;
  std::string link;  // figure or CSV, relative to DIR
  // The verdict's rule when it came from an interval against an expected value with a
  // tolerance factor (judge below): a quick run labels the verdict "preliminary" unless the
  // interval decides it (stats_intervals.hpp interval_decides, claims.hpp label_preliminary).
  bool has_rule = false;
  double rule_expected = 0, rule_near = 0;

  void set(double v) {
    value = v;
    has_value = true;
  }
  void set(double v, double l, double h) {
    set(v);
    lo = l;
    hi = h;
    has_ci = true;
  }
};

struct SectionSummary {
  std::string key;  // directory name under DIR
  std::string title;
  std::vector<std::string> headlines;  // one-line findings for DIR/index.md
  bool figures_ok = false;
  std::string figures_note;       // why figures were skipped, when they were
  double seconds = 0;             // the section's run time (set by the driver)
  double cpu_seconds = 0;         // CPU time of exmy's threads in the section (set by the driver)
  double figure_cpu_seconds = 0;  // CPU time of its figure scripts (set by the driver)
  std::vector<Claim> claims;
};

// Verdict of a measured value against an expected one: the interval contains the expected value
// -> `yes` (or "inconclusive (interval too wide)" when it is wider than |expected|); else the
// point estimate within a factor `near` of it -> `partly`; else `no`.
std::string verdict_for(double lo, double hi, double value, double expected, double near,
                        const char* yes, const char* partly, const char* no);

// c.verdict = verdict_for(c.lo, c.hi, c.value, expected, near, ...), recording the rule (expected,
// near) on the row for label_preliminary. c.set(v, lo, hi) must have been called.
void judge(Claim& c, double expected, double near, const char* yes, const char* partly,
           const char* no);

// The sections `exmy report` knows, in run order: directory name and title.
struct SectionInfo {
  const char* key;
  const char* title;
};
const std::vector<SectionInfo>& report_sections();

// Section directories under dir that hold an index.md but are not in `keys` (left by an earlier
// run). The driver refuses to mix them with this run unless told to remove them.
std::vector<std::string> stale_sections(const std::string& dir,
                                        const std::vector<std::string>& keys);

SectionSummary run_variance_section(const ReportContext& ctx);
SectionSummary run_adam_heatmap_section(const ReportContext& ctx);
SectionSummary run_lm8bit_section(const ReportContext& ctx);
SectionSummary run_lm_mantissa_section(const ReportContext& ctx);
SectionSummary run_formats_section(const ReportContext& ctx);
SectionSummary run_spikes_section(const ReportContext& ctx);
SectionSummary run_extrabits_section(const ReportContext& ctx);
SectionSummary run_layers_section(const ReportContext& ctx);
SectionSummary run_mx_variance_section(const ReportContext& ctx);

// Writes DIR/index.md linking every section directory that holds an index.md.
void write_top_index(const ReportContext& ctx, const std::vector<SectionSummary>& ran,
                     double seconds);

}  // namespace exmy::reports
