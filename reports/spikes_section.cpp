// Section 4 (Wortsman et al. 2023, section 3.4-3.5 and appendix E): training traces of the
// report's MLP with AdamW (beta2 0.999 and 0.99) and with StableAdamW (AdamW + update clipping),
// RMS_t of the input layer every step, and the appendix-E spike analysis of each trace
// (reports/spikes.hpp, the same code as `exmy diagnose spikes`).
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "reports/mlp_adam.hpp"
#include "reports/output_files.hpp"
#include "reports/plotting.hpp"
#include "reports/sections.hpp"
#include "reports/spikes.hpp"

namespace exmy::reports {

namespace {

struct SpikeRun {
  std::string name;
  MlpConfig::Optimizer opt;
  float beta2;
};

}  // namespace

SectionSummary run_spikes_section(const ReportContext& ctx) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dir = ctx.section_dir("spikes");
  make_directories(dir);
  const int steps = ctx.options().tiny ? 200 : ctx.options().quick ? 2000 : 4000;
  const std::vector<SpikeRun> runs{
      {"adamw_b2_0.999", MlpConfig::Optimizer::torch_adamw, 0.999f},
      {"adamw_b2_0.99", MlpConfig::Optimizer::torch_adamw, 0.99f},
      {"stableadamw_b2_0.999", MlpConfig::Optimizer::stable_adamw, 0.999f}};
  MlpConfig base;
  if (ctx.options().tiny) {
    base.hidden = 32;
    base.batch = 16;
  }
  base.steps = steps;
  base.log_every = 1;
  // Three times the heatmap section's learning rate (appendix E's spikes need a large learning
  // rate and a high beta2; at 1e-2 and above the toy network's ReLUs die instead).
  base.lr = 3e-3f;
  // Three groups of 8 input features, silent until 40%, 60% and 80% of the run: the learning
  // signal of their input-layer weights changes suddenly, the situation appendix E describes.
  base.late_onsets = {steps * 2 / 5, steps * 3 / 5, steps * 4 / 5};
  base.wd = 0.1f;
  ctx.progress("spikes", std::to_string(runs.size()) + " training runs of " +
                             std::to_string(steps) +
                             " steps, loss and input-layer RMS_t every step");
  std::vector<TrainLog> logs(runs.size());
  ctx.parallel_for(runs.size(), [&](std::size_t i) {
    MlpConfig c = base;
    c.optimizer = runs[i].opt;
    c.beta2 = runs[i].beta2;
    train_mlp_adam(c, ctx.options().seed, logs[i]);
  });
  SpikeOptions so;
  so.ignore_first = std::min<long>(1000, steps / 4);
  Csv summary({"run", "steps", "analysed_steps", "loss_spikes", "rms_spikes", "preceded",
               "chance_rate", "p_value", "rms_steps_above_threshold", "rms_max", "final_loss"});
  std::vector<long> above(runs.size(), 0);
  std::vector<double> final_loss(runs.size(), 0.0);  // mean of the last tenth of the losses
  std::vector<double> rmax(runs.size(), 0.0);
  std::vector<SpikeResult> results;
  long total_loss = 0, total_preceded = 0;
  double worst_p = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const TrainLog& log = logs[i];
    Csv trace({"step", "loss", "rms"});
    Trace tr;
    for (std::size_t j = 0; j < log.step.size(); ++j) {
      trace.row()
          .add(static_cast<long long>(log.step[j]))
          .add(static_cast<double>(log.loss[j]))
          .add(static_cast<double>(log.rms1[j]));
      tr.step.push_back(log.step[j]);
      tr.loss.push_back(log.loss[j]);
      tr.rms.push_back(log.rms1[j]);
    }
    write_file_atomic(dir + "/trace_" + runs[i].name + ".csv", trace.text());
    const SpikeResult r = detect_spikes(tr, so);
    results.push_back(r);
    for (std::size_t j = 0; j < tr.step.size(); ++j) {
      if (tr.step[j] < tr.step.front() + so.ignore_first) continue;
      above[i] += tr.rms[j] >= so.rms_threshold ? 1 : 0;
      rmax[i] = std::max(rmax[i], tr.rms[j]);
    }
    Csv ev({"step", "event", "preceded_by_rms_spike"});
    for (std::size_t k = 0; k < r.loss_spikes.size(); ++k) {
      ev.row()
          .add(static_cast<long long>(r.loss_spikes[k]))
          .add(std::string("loss_spike"))
          .add(static_cast<long long>(r.preceded[k] ? 1 : 0));
    }
    for (long s : r.rms_spikes)
      ev.row().add(static_cast<long long>(s)).add(std::string("rms_spike")).add(std::string());
    write_file_atomic(dir + "/events_" + runs[i].name + ".csv", ev.text());
    double fl = 0;
    const std::size_t n = log.loss.size(), from = n - n / 10;
    for (std::size_t j = from; j < n; ++j) fl += log.loss[j] / static_cast<double>(n - from);
    final_loss[i] = fl;
    summary.row()
        .add(runs[i].name)
        .add(static_cast<long long>(steps))
        .add(static_cast<long long>(r.analysed_steps))
        .add(static_cast<long long>(r.loss_spikes.size()))
        .add(static_cast<long long>(r.rms_spikes.size()))
        .add(static_cast<long long>(r.preceded_count))
        .add(r.chance_rate)
        .add(r.p_value)
        .add(static_cast<long long>(above[i]))
        .add(rmax[i])
        .add(fl);
    if (runs[i].opt == MlpConfig::Optimizer::torch_adamw) {
      total_loss += static_cast<long>(r.loss_spikes.size());
      total_preceded += r.preceded_count;
      worst_p = std::max(worst_p, r.chance_rate);
    }
  }
  write_file_atomic(dir + "/spikes.csv", summary.text());
  const FigureResult fig = run_plot_script(ctx, "plot_spikes.py", dir);

  SectionSummary sum;
  sum.key = "spikes";
  sum.title = "Loss spikes and RMS spikes (Wortsman et al. 2023, section 3.4-3.5 and appendix E)";
  sum.figures_ok = fig.ok;
  sum.figures_note = fig.note;
  std::string md = "# " + sum.title + "\n\n";
  md +=
      "The report's MLP (section adam-heatmap's task, with three groups of 8 small-scale input "
      "features that are silent until 40%, 60% and 80% of the run and that the teacher "
      "ignores: the learning signal of their input-layer weights changes suddenly, which is "
      "appendix E's situation, while the task does not change) trained " +
      std::to_string(steps) + " steps at lr " + fmt_g(base.lr, 3) + ", weight decay " +
      fmt_g(base.wd, 3) +
      " with exmy's AdamW (torch.optim.AdamW, SEMANTICS 9.2) at beta2 0.999 and 0.99, and "
      "with StableAdamW (AdamW + update clipping, SEMANTICS 9.5) at beta2 0.999. Every step "
      "logs the batch loss and RMS_t = sqrt(mean(g^2 / max(u, eps^2))) of the input layer's "
      "weights (the layer that sees the raw inputs, standing in for the patch embedding). "
      "The appendix-E heuristics then find the spikes (the same code as `exmy diagnose "
      "spikes`; SEMANTICS 14.4): RMS spike when RMS_t >= 2.3, loss spike when the loss "
      "exceeds the mean of the previous 100 losses by 3.2 standard deviations at least twice "
      "within 10 steps, the first " +
      std::to_string(so.ignore_first) + " steps ignored.\n\n";
  md +=
      "| run | loss spikes | RMS spikes | loss spikes preceded by an RMS spike (1-8 steps) | "
      "chance rate | P(by chance) | steps with RMS_t >= 2.3 | max RMS_t | final loss |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const SpikeResult& r = results[i];
    const double fl = final_loss[i];
    md += "| " + runs[i].name + " | " + std::to_string(r.loss_spikes.size()) + " | " +
          std::to_string(r.rms_spikes.size()) + " | " + std::to_string(r.preceded_count) + " | " +
          fmt_g(r.chance_rate, 3) + " | " + fmt_g(r.p_value, 3) + " | " + std::to_string(above[i]) +
          " | " + fmt_g(rmax[i], 3) + " | " + fmt_g(fl, 4) + " |\n";
  }
  std::string h;
  if (total_loss == 0) {
    h = "No loss spike in the AdamW traces of this toy model: the appendix-E relationship "
        "cannot be tested on it (RMS spikes: " +
        std::to_string(results[0].rms_spikes.size()) + " at beta2 0.999, " +
        std::to_string(results[1].rms_spikes.size()) + " at 0.99)";
  } else {
    h = std::to_string(total_preceded) + " of " + std::to_string(total_loss) +
        " loss spikes in the AdamW traces follow an RMS spike of the input layer by 1-8 steps "
        "(chance rate at most " +
        fmt_g(worst_p, 3) + " per spike)";
  }
  sum.headlines.push_back(h);
  md += "\n- " + h + ".\n";
  {
    Claim c;
    c.source = "Wortsman et al. 2023, arXiv 2304.13013";
    c.where = "section 3.4, appendix E";
    c.claim =
        "loss spikes follow an RMS spike of the patch-embedding layer by 1-8 iterations "
        "(28 of 30 detected loss spikes; 1% by chance)";
    c.measured = "loss spikes of the AdamW traces preceded by an input-layer RMS spike (toy MLP)";
    if (total_loss > 0) {
      c.set(static_cast<double>(total_preceded) / static_cast<double>(total_loss));
      c.expected = "about 0.93 (28/30)";
      // The paper tests 15-30 detected spikes; a handful cannot confirm or refute 28 of 30.
      c.verdict = total_loss < 5 ? "inconclusive (" + std::to_string(total_loss) +
                                       " loss spike(s): too few to test)"
                  : c.value >= 0.8 ? "consistent"
                                   : "inconsistent";
    } else {
      c.expected = "about 0.93 (28/30)";
      c.verdict = "not computable (no loss spikes in the toy traces)";
    }
    c.kind = "proxy";  // the toy MLP stands in for CLIP ViT-Huge training
    c.link = "spikes/spikes.png";
    sum.claims.push_back(c);
  }
  {
    Claim c;
    c.source = "Wortsman et al. 2023, arXiv 2304.13013";
    c.where = "section 3.4, figure 4";
    c.claim =
        "RMS_t of the embedding layer spikes when its learning signal changes (the second "
        "moment is out of date), and for lower beta2 it stays near 1";
    c.measured =
        "analysed steps with input-layer RMS_t >= 2.3, beta2 0.99 / beta2 0.999, when "
        "silent input features turn on (toy MLP)";
    c.value = above[0] > 0 ? static_cast<double>(above[1]) / static_cast<double>(above[0]) : 0.0;
    c.has_value = above[0] > 0;
    c.expected = "< 1 (and RMS spikes at the onsets)";
    c.kind = "proxy";
    c.verdict = above[0] == 0         ? "not computable (no RMS spikes at beta2 0.999)"
                : above[1] < above[0] ? "consistent"
                                      : "inconsistent";
    c.link = "spikes/spikes.png";
    sum.claims.push_back(c);
    const std::string h2 =
        "Input-layer RMS_t spikes when silent features turn on (steps " +
        std::to_string(base.late_onsets[0]) + ", " + std::to_string(base.late_onsets[1]) + ", " +
        std::to_string(base.late_onsets[2]) + "): " + std::to_string(above[0]) +
        " steps >= 2.3 at beta2 0.999 (max " + fmt_g(rmax[0], 3) + "), " +
        std::to_string(above[1]) + " at beta2 0.99 (max " + fmt_g(rmax[1], 3) + ")";
    sum.headlines.push_back(h2);
    md += "- " + h2 + ".\n";
  }
  {
    const std::size_t a = results[0].loss_spikes.size(), s = results[2].loss_spikes.size();
    Claim c;
    c.source = "Wortsman et al. 2023, arXiv 2304.13013";
    c.where = "section 3.5, figure 5";
    c.claim = "adding update clipping to AdamW (StableAdamW) mitigates loss spikes";
    c.measured = "loss spikes, StableAdamW vs AdamW at beta2 0.999 (toy MLP, one seed)";
    c.set(static_cast<double>(s));
    c.expected = "fewer than AdamW's " + std::to_string(a);
    c.kind = "proxy";
    c.verdict = a == 0  ? "not computable (no loss spikes without clipping)"
                : s < a ? "consistent"
                        : "inconsistent";
    c.link = "spikes/spikes.png";
    sum.claims.push_back(c);
  }
  md += "\n" + figure_md(fig, "spikes",
                         "batch loss (top) and input-layer RMS_t (bottom) per run; markers: "
                         "detected loss spikes (red) and RMS spikes (orange); dashed: 2.3");
  md +=
      "## Data\n\n- [spikes.csv](spikes.csv): one row per run\n- trace_RUN.csv (step, loss, "
      "rms: the input of `exmy diagnose spikes --trace`), events_RUN.csv\n\n";
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  md += provenance_md(ctx, secs);
  write_file_atomic(dir + "/index.md", md);
  return sum;
}

}  // namespace exmy::reports
