// DIR/index.md: the run's sections with their headlines and run times, then the provenance.
#include <filesystem>

#include "reports/claims.hpp"
#include "reports/html_page.hpp"
#include "reports/output_files.hpp"
#include "reports/plotting.hpp"
#include "reports/sections.hpp"
#include "reports/stats_intervals.hpp"

namespace exmy::reports {

const std::vector<SectionInfo>& report_sections() {
  static const std::vector<SectionInfo> s{
      {"formats", "Format error profiles"},
      {"variance",
       "Variance of quantized inner products vs inner dimension (Wortsman et al., Stable and "
       "low-precision training for large-scale vision-language models, appendix D)"},
      {"adam-heatmap",
       "Adam quantization-error heatmaps (Dettmers et al., 8-bit optimizers via block-wise "
       "quantization, error analysis)"},
      {"lm-8bit",
       "A fair 8-bit optimizer experiment on a small decoder language model (Dettmers et al., "
       "8-bit optimizers via block-wise quantization)"},
      {"lm-mantissa",
       "Mantissa sweep on a small decoder language model (To FP8 and back again: masked and "
       "round-to-nearest E8M3-E8M7 matmul inputs)"},
      {"spikes",
       "Loss spikes and RMS spikes (Wortsman et al. 2023, section 3.4-3.5 and appendix E)"},
      {"extrabits",
       "16-bit floats with extra bits: forward error of in-place additions (Lewandowski and "
       "Kosson, figure 6)"},
      {"layers",
       "Low-precision linear layers: SwitchBack, LLM.int8(), float8 and masked layers "
       "(Wortsman et al. section 2.2; To FP8 and back again, figure 11)"},
      {"mx-variance",
       "Beyond the papers: variance laws of MX and NVFP4 block scaling (Var(d) vs k, block "
       "size, E8M0 vs E4M3 scales)"}};
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

namespace {

// A claim of the source papers that this report cannot compute at the paper's scale, and the
// section whose toy-scale proxy row stands for it (empty: none). The table covers every claim:
// where that section ran, its proxy row is the claim's row (two rows, one "not computable" and
// one "consistent", would contradict each other); otherwise the row says why it has no number.
struct NotComputed {
  Claim claim;
  const char* proxy_section;
};

std::vector<NotComputed> not_computed_claims() {
  const char* w = "Wortsman et al. 2023, arXiv 2304.13013";
  const char* lee = "To FP8 and back again (2024)";
  const char* lk = "Lewandowski and Kosson, Memory efficient mixed precision optimizers";
  auto nc = [](const char* src, const char* where, const char* claim, const char* why) {
    Claim c;
    c.source = src;
    c.where = where;
    c.claim = claim;
    c.measured = why;
    c.kind = "not computable";
    c.verdict = "not computable";
    return c;
  };
  return {{nc(w, "section 2, figures 1-3",
              "SwitchBack int8 training matches bfloat16 accuracy for "
              "CLIP ViT-Huge",
              "needs CLIP-scale training; out of a CPU report's reach"),
           ""},
          {nc(lee, "section 4", "removing mantissa bits (ExMy masking) destabilises LLM training",
              "needs LLM-scale training; the masking itself is exact in exmy (SEMANTICS 2.1); "
              "a small-LM proxy is the lm-mantissa section"),
           "lm-mantissa"},
          {nc(lk, "table 3",
              "16-bit + extra-bit training matches mixed-precision accuracy with less "
              "memory",
              "needs ResNet-scale training; out of a CPU report's reach (a toy-MLP proxy with "
              "bf16+k / fp16+k weights is in the extra-bits section)"),
           "extrabits"}};
}

// The not-computed rows whose proxy section did not run in this report.
std::vector<Claim> uncovered_claims(const std::vector<SectionSummary>& ran) {
  std::vector<Claim> out;
  for (const auto& n : not_computed_claims()) {
    bool covered = false;
    for (const auto& s : ran) {
      if (!*n.proxy_section || s.key != n.proxy_section) continue;
      for (const auto& c : s.claims)
        covered = covered || (c.kind == "proxy" && c.source == n.claim.source);
    }
    if (!covered) out.push_back(n.claim);
  }
  return out;
}

std::string claims_md(const std::vector<Claim>& claims) {
  std::string md =
      "| source | where | claim | exmy measures | kind | value [95% interval] | expected | "
      "verdict | figure / data |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& c : claims) {
    std::string v = !c.has_value ? std::string("-")
                    : c.has_ci   ? fmt_ci(c.value, c.lo, c.hi)
                                 : fmt_g(c.value, 4);
    md += "| " + c.source + " | " + c.where + " | " + c.claim + " | " + c.measured + " | " +
          c.kind + " | " + v + " | " + (c.expected.empty() ? "-" : c.expected) + " | " + c.verdict +
          " | " + (c.link.empty() ? std::string("-") : "[" + c.link + "](" + c.link + ")") + " |\n";
  }
  return md;
}

}  // namespace

void write_top_index(const ReportContext& ctx, const std::vector<SectionSummary>& ran,
                     double seconds) {
  const std::string dir = ctx.options().out_dir;
  std::vector<Claim> claims;
  for (const auto& s : ran) claims.insert(claims.end(), s.claims.begin(), s.claims.end());
  for (const auto& c : uncovered_claims(ran)) claims.push_back(c);
  label_preliminary(claims, ctx.options().quick);
  for (const auto& c : claims) require_valid_claim(c);  // a check never says "reproduced"
  write_file_atomic(dir + "/claims.csv", claims_csv(claims));

  std::string md = "# exmy report\n\n";
  md +=
      "## Claims\n\nEvery claim of the source papers next to what exmy computes for it, "
      "with a 95% interval and a verdict ([claims.csv](claims.csv); the same table, "
      "sortable, in [report.html](report.html) with every figure inline). Closed forms this "
      "report derives are marked as such; arithmetic restatements are not reproductions.\n\n";
  md += claim_kinds_md();
  md +=
      "**Statistics** (docs/SEMANTICS.md 14, reports/stats_intervals.hpp). Intervals are 95%: "
      "cluster-bootstrap percentile intervals over independent trials, widened by "
      "sqrt(n/(n-1)) for n resampled clusters (checked by simulation: a slope whose true value "
      "is 1 is covered in about 93% of simulated quick-size runs); log-scale t intervals for "
      "positive means over seeds (never a negative bound); Student-t for paired differences; "
      "the median with its order-statistic interval where a run diverged; paired bootstrap "
      "intervals for ratios. A value with an interval is printed to 2 significant digits of "
      "its half-width. " +
      std::string(ctx.options().quick
                      ? "**This is a quick run:** a verdict that depends on data is marked "
                        "\"(preliminary)\" unless its interval lies wholly inside the tolerance "
                        "band of the expected value (more data could then only move it between "
                        "\"reproduced\" and \"partly reproduced\") or wholly outside it; a "
                        "verdict from no interval is preliminary.\n\n"
                      : "Quick runs mark verdicts their intervals do not settle "
                        "\"(preliminary)\"; this full run has no such marks.\n\n");
  md += claims_md(claims) + "\n";
  // CPU time (user + system) beside the elapsed time: on a shared or larger machine the elapsed
  // time says little about another machine's; the CPU time over the cores used does.
  md +=
      "## Sections\n\n| section | run time | CPU time (exmy) | CPU time (figures) |\n"
      "|---|---|---|---|\n";
  double cpu = 0, fig = 0;
  for (const auto& s : ran) {
    md += "| [" + s.title + "](" + s.key + "/index.md) | " + fmt_g(s.seconds, 3) + " s | " +
          fmt_g(s.cpu_seconds, 3) + " s | " + fmt_g(s.figure_cpu_seconds, 3) + " s |\n";
    cpu += s.cpu_seconds;
    fig += s.figure_cpu_seconds;
  }
  md += "| total | " + fmt_g(seconds, 3) + " s | " + fmt_g(cpu, 3) + " s | " + fmt_g(fig, 3) +
        " s |\n\n";
  for (const auto& s : ran) {
    md += "### [" + s.title + "](" + s.key + "/index.md)\n\n";
    for (const auto& h : s.headlines) md += "- " + h + "\n";
    if (!s.figures_ok) md += "- " + s.figures_note + "\n";
    md += "\n";
  }
  md += provenance_md(ctx, seconds);
  write_file_atomic(dir + "/index.md", md);
  // The HTML page repeats the claim table itself, so it renders the rest of index.md.
  const std::size_t from = md.find("## Sections");
  write_report_html(dir, from == std::string::npos ? md : md.substr(from), ran, claims);
}

}  // namespace exmy::reports
