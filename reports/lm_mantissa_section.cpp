// Section lm-mantissa: "To FP8 and back again"'s mantissa sweep on the small decoder language
// model (reports/lm/lm_model.hpp): every GEMM operand (forward, dgrad and wgrad, every site) cast
// to E8M3 ... E8M7 by masking (the paper's simulation: the low mantissa bits cleared, section 3.2)
// or by round-to-nearest-even, against fp32; final eval loss and divergence over seeds. Masking
// and RNE at the same M separate truncation bias from precision. Beside the sweep: the paper's
// inner/outer clamp ablation (reports/lm/mantissa_formats.hpp), run at the exponent width where
// its outer clamp binds in this model (the fp32 runs' matmul-input range decides it,
// reports/lm/operand_range.hpp; the paper's E7M7 never clamps here), and the logit sharpness
// trajectories of every run (section 3.1's metric, reports/sharpness.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "reports/lm/corpus.hpp"
#include "reports/lm/lm_section_common.hpp"
#include "reports/lm/lm_train.hpp"
#include "reports/lm/mantissa_formats.hpp"
#include "reports/lm/operand_range.hpp"
#include "reports/output_files.hpp"
#include "reports/plotting.hpp"
#include "reports/sections.hpp"
#include "reports/variance_stats.hpp"

namespace exmy::reports {

namespace {

struct MPlan {
  lm::CorpusConfig corpus;
  lm::TrainConfig train;
  int seeds = 6;
  int ablation_seeds = 2;  // the EbM7 variants: seeds 0 .. ablation_seeds - 1 (<= seeds)
  int eval_seqs = 64;
  std::string size;
};

MPlan make_mplan(bool quick, int tiny) {
  MPlan p;
  lm::TrainConfig& t = p.train;
  t.model.heads = 2;
  t.model.layers = 2;
  t.beta2 = 0.995;
  t.min_8bit_size = 1 << 30;  // fp32 states everywhere: only the matmul inputs change
  if (tiny) {
    p.corpus.vocab = t.model.vocab = 32;
    p.corpus.marginal_tokens = 1 << 14;
    t.model.d = 16;
    t.model.seq = 8;
    t.batch = 8;
    t.steps = 20;
    t.warmup = 2;
    t.log_every = 5;
    t.sharpness_every = 5;
    p.seeds = 2;
    p.ablation_seeds = 2;
    p.eval_seqs = 16;
    p.size = "tiny test";
  } else {
    p.corpus.vocab = t.model.vocab = 128;
    p.corpus.marginal_tokens = 1 << 18;
    t.model.d = 32;
    t.model.seq = 16;
    t.batch = 16;
    t.steps = quick ? 60 : 150;
    t.warmup = t.steps / 10;
    t.log_every = 10;
    t.sharpness_every = 10;
    p.seeds = quick ? 2 : 18;
    p.ablation_seeds = quick ? 2 : 6;
    p.size = quick ? "--quick" : "full";
  }
  // A learning rate at which paired runs stay close: a paired difference then measures the
  // format, not the chaos of a marginal run (at 6e-3 and above, runs of one seed that differ
  // only in the last mantissa bit of the matmul inputs already end +-0.05 nats apart at this
  // size). The --quick run stops near the unigram floor; the full run passes it.
  t.lr = 3e-3;
  return p;
}

// One run of the section: a format and a seed.
struct Run {
  std::size_t format;
  int seed;
};

// Per format, the paired per-seed quantity of its runs minus the fp32 run's (same seed), the
// divergences, and the limit-region tallies of its runs summed.
struct FormatStats {
  std::vector<double> diff, final_loss;
  MeanCi diff_ci;
  int diverged = 0;
  lm::MaskLimitCounts counts;
};

// The mean sharpness over the logged steps both trajectories have (index-aligned: every run logs
// the same steps until it stops).
double mean_common(const std::vector<double>& a, std::size_t n) {
  double s = 0;
  for (std::size_t k = 0; k < n; ++k) s += a[k] / static_cast<double>(n);
  return s;
}

}  // namespace

SectionSummary run_lm_mantissa_section(const ReportContext& ctx) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dir = ctx.section_dir("lm-mantissa");
  make_directories(dir);
  const MPlan plan = make_mplan(ctx.options().quick, ctx.options().tiny);
  const lm::TrainConfig& base = plan.train;
  const std::uint64_t seed0 = ctx.options().seed;
  const lm::Corpus corpus(plan.corpus, seed0);
  const std::vector<int> eval = lm::eval_tokens(corpus, base.model.seq, plan.eval_seqs);
  const double uni = corpus.unigram_loss(eval, base.model.seq);
  std::vector<lm::MatmulFormat> fm = lm::sweep_formats();
  const std::size_t nsweep = fm.size();
  // Runs in format order, seeds within; run_at[f] is the index of format f's seed 0. The sweep
  // (fp32 first) runs first: its fp32 runs' matmul-input range chooses the ablation's width,
  // whose runs follow.
  std::vector<Run> runs_list;
  std::vector<std::size_t> run_at;
  const auto add_runs = [&](std::size_t f) {
    run_at.push_back(runs_list.size());
    const int ns = fm[f].ablation ? plan.ablation_seeds : plan.seeds;
    for (int sd = 0; sd < ns; ++sd) runs_list.push_back({f, sd});
  };
  for (std::size_t f = 0; f < nsweep; ++f) add_runs(f);
  const std::size_t nsweep_runs = runs_list.size();
  const auto seeds_of = [&](std::size_t f) {
    return fm[f].ablation ? plan.ablation_seeds : plan.seeds;
  };
  ctx.progress("lm-mantissa",
               std::to_string(nsweep_runs) + " sweep runs (" + std::to_string(nsweep) +
                   " matmul-input formats x " + std::to_string(plan.seeds) + " seeds), then " +
                   std::to_string(lm::ablation_formats(7).size()) + " clamp ablation variants x " +
                   std::to_string(plan.ablation_seeds) + " seeds");
  std::vector<lm::TrainResult> res(nsweep_runs);
  std::vector<lm::MaskLimitCounts> counts(nsweep_runs);
  // The fp32 runs' matmul-input histograms (every operand before any cast: the range a format
  // would meet), one per run, summed below in run order (integer sums: any order is the same).
  std::vector<lm::RangeHistograms> range(static_cast<std::size_t>(plan.seeds));
  const auto run_one = [&](std::size_t i) {
    const lm::MatmulFormat& f = fm[runs_list[i].format];
    lm::GemmPolicy pol = lm::GemmPolicy::all(f.cast());
    // The tally costs a pass over every masked operand: the ablation's runs only, where it
    // tells whether a clamp acted at all.
    if (f.ablation) pol.counts = &counts[i];
    // fp32: the identity policy (bit-identical to none) carries the histogram.
    if (f.mode == lm::CastMode::identity)
      pol.range = &range[static_cast<std::size_t>(runs_list[i].seed)];
    lm::TrainConfig tc = base;
    tc.policy = &pol;
    res[i] = lm::train_lm(tc, corpus, seed0 + static_cast<std::uint64_t>(runs_list[i].seed), eval);
  };
  ctx.parallel_for(nsweep_runs, run_one);
  lm::RangeHistograms range_all;
  for (const auto& r : range) {
    for (std::size_t k = 0; k < r.h.size(); ++k) lm::add_histogram(range_all.h[k], r.h[k]);
  }
  const lm::OperandHistogram hist_all = lm::pass_histogram(range_all, -1);
  std::vector<lm::LimitTally> tallies;
  for (int e = lm::kRangeMinExp; e <= lm::kRangeMaxExp; ++e) {
    tallies.push_back(lm::limit_tally(hist_all, e));
  }
  const int eb = lm::binding_width(tallies, lm::kBindShare);
  const lm::LimitTally& tal_b = tallies[static_cast<std::size_t>(eb - lm::kRangeMinExp)];
  const lm::LimitTally& tal_7 = tallies[static_cast<std::size_t>(7 - lm::kRangeMinExp)];
  const std::string ebm7 = "E" + std::to_string(eb) + "M7";
  for (const auto& f : lm::ablation_formats(eb)) {
    fm.push_back(f);
    add_runs(fm.size() - 1);
  }
  const std::size_t nruns = runs_list.size();
  res.resize(nruns);
  counts.resize(nruns);
  ctx.parallel_for(nruns - nsweep_runs, [&](std::size_t i) { run_one(nsweep_runs + i); });

  Csv runs({"group", "format", "mode", "exp_bits", "mantissa_bits", "outer", "inner", "seed",
            "steps_done", "final_eval_loss", "diverged", "diff_vs_fp32", "operand_elements",
            "above_max", "below_min_normal"});
  Csv summ({"group", "format", "mode", "exp_bits", "mantissa_bits", "outer", "inner", "seeds",
            "diverged", "divergence_rate", "median_final_eval_loss", "diff_vs_fp32_mean", "diff_lo",
            "diff_hi", "above_max_share", "below_min_normal_share"});
  Csv curves({"format", "seed", "step", "train_loss"});
  Csv sharp({"format", "seed", "step", "logit_sharpness_pct"});
  Csv sharp_summ({"format", "step", "seeds", "mean_logit_sharpness_pct", "lo", "hi"});
  std::vector<FormatStats> st(fm.size());
  const auto group = [&](std::size_t f) {
    return std::string(fm[f].ablation ? "ablation" : "sweep");
  };
  const auto limits = [&](std::size_t f, Csv& c) {
    c.add(fm[f].mode_name())
        .add(static_cast<long long>(fm[f].exp_bits))
        .add(static_cast<long long>(fm[f].man_bits))
        .add(std::string(fm[f].mode == lm::CastMode::mask ? lm::outer_name(fm[f].outer) : ""))
        .add(std::string(fm[f].mode == lm::CastMode::mask ? lm::inner_name(fm[f].inner) : ""));
  };
  for (std::size_t f = 0; f < fm.size(); ++f) {
    FormatStats& x = st[f];
    for (int s = 0; s < seeds_of(f); ++s) {
      const std::size_t i = run_at[f] + static_cast<std::size_t>(s);
      const lm::TrainResult& r = res[i];
      const lm::TrainResult& r32 = res[static_cast<std::size_t>(s)];
      const bool dv = lm::run_unstable(r);
      x.diverged += dv ? 1 : 0;
      const double d = r.final_eval - r32.final_eval;
      x.diff.push_back(d);
      x.final_loss.push_back(std::isfinite(r.final_eval) ? r.final_eval : 1e30);
      x.counts.elements += counts[i].elements;
      x.counts.above_max += counts[i].above_max;
      x.counts.below_min_normal += counts[i].below_min_normal;
      runs.row().add(group(f)).add(fm[f].name());
      limits(f, runs);
      runs.add(static_cast<long long>(s))
          .add(static_cast<long long>(r.steps_done))
          .add(r.final_eval)
          .add(static_cast<long long>(dv))
          .add(d)
          .add(counts[i].elements)
          .add(counts[i].above_max)
          .add(counts[i].below_min_normal);
      for (std::size_t k = 0; k < r.step.size(); ++k) {
        curves.row()
            .add(fm[f].name())
            .add(static_cast<long long>(s))
            .add(static_cast<long long>(r.step[k]))
            .add(r.loss[k]);
      }
      for (std::size_t k = 0; k < r.sharp_step.size(); ++k) {
        sharp.row()
            .add(fm[f].name())
            .add(static_cast<long long>(s))
            .add(static_cast<long long>(r.sharp_step[k]))
            .add(r.sharpness[k]);
      }
    }
    x.diff_ci = mean_ci(x.diff);
    std::vector<double> fl = x.final_loss;
    std::sort(fl.begin(), fl.end());
    const double med = fl[fl.size() / 2];
    const double el = static_cast<double>(x.counts.elements);
    summ.row().add(group(f)).add(fm[f].name());
    limits(f, summ);
    summ.add(static_cast<long long>(seeds_of(f)))
        .add(static_cast<long long>(x.diverged))
        .add(static_cast<double>(x.diverged) / seeds_of(f))
        .add(med < 1e29 ? med : NAN)
        .add(x.diff_ci.mean)
        .add(x.diff_ci.lo)
        .add(x.diff_ci.hi)
        .add(el > 0 ? static_cast<double>(x.counts.above_max) / el : NAN)
        .add(el > 0 ? static_cast<double>(x.counts.below_min_normal) / el : NAN);
    // Sharpness over seeds at each logged step, over the runs still going at that step.
    const std::vector<int>& steps0 = res[run_at[f]].sharp_step;
    std::size_t longest = 0;
    for (int s = 0; s < seeds_of(f); ++s) {
      longest = std::max(longest, res[run_at[f] + static_cast<std::size_t>(s)].sharp_step.size());
    }
    for (std::size_t k = 0; k < longest; ++k) {
      std::vector<double> v;
      int step = 0;
      for (int s = 0; s < seeds_of(f); ++s) {
        const lm::TrainResult& r = res[run_at[f] + static_cast<std::size_t>(s)];
        if (k < r.sharpness.size()) {
          v.push_back(r.sharpness[k]);
          step = r.sharp_step[k];
        }
      }
      const MeanCi m = mean_ci(v);
      sharp_summ.row()
          .add(fm[f].name())
          .add(static_cast<long long>(k < steps0.size() ? steps0[k] : step))
          .add(static_cast<long long>(v.size()))
          .add(m.mean)
          .add(v.size() > 1 ? m.lo : NAN)
          .add(v.size() > 1 ? m.hi : NAN);
    }
  }
  write_file_atomic(dir + "/runs.csv", runs.text());
  write_file_atomic(dir + "/summary.csv", summ.text());
  write_file_atomic(dir + "/curves.csv", curves.text());
  write_file_atomic(dir + "/sharpness.csv", sharp.text());
  write_file_atomic(dir + "/sharpness_summary.csv", sharp_summ.text());
  write_file_atomic(dir + "/operand_range.csv", lm::operand_range_csv(range_all, eb));
  write_file_atomic(dir + "/operand_hist.csv", lm::operand_hist_csv(range_all));
  const FigureResult fig = run_plot_script(ctx, "plot_lm_mantissa.py", dir);

  // The masking penalty in mantissa bits: for masked E8Mk, the RNE mantissa count (interpolated
  // linearly in log2 of the loss excess between neighbouring M) with the same mean excess over
  // fp32; penalty = k - that count. Only where both RNE intervals lie above 0 and bracket it.
  auto idx = [&](lm::CastMode m, int man) {
    for (std::size_t f = 0; f < nsweep; ++f) {
      if (fm[f].mode == m && fm[f].man_bits == man) return f;
    }
    return std::size_t{0};
  };
  // Final eval loss of format f's seed s.
  auto final_of = [&](std::size_t f, int s) {
    return res[run_at[f] + static_cast<std::size_t>(s)].final_eval;
  };
  std::vector<double> penalties;
  std::string pen_text;
  for (int k = 3; k <= 7; ++k) {
    const double em = st[idx(lm::CastMode::mask, k)].diff_ci.mean;
    if (!(em > 0) || !std::isfinite(em)) continue;
    for (int j = 3; j < 7; ++j) {
      const double a = st[idx(lm::CastMode::rne, j)].diff_ci.mean;
      const double b = st[idx(lm::CastMode::rne, j + 1)].diff_ci.mean;
      // Both RNE excesses resolved from 0 (interval above 0), else the count is noise.
      if (!(st[idx(lm::CastMode::rne, j)].diff_ci.lo > 0 &&
            st[idx(lm::CastMode::rne, j + 1)].diff_ci.lo > 0) ||
          !std::isfinite(a) || !std::isfinite(b)) {
        continue;
      }
      if ((em <= a && em >= b) || (em >= a && em <= b)) {
        const double la = std::log2(a), lb = std::log2(b), le = std::log2(em);
        const double m = la == lb ? j : j + (le - la) / (lb - la);
        penalties.push_back(k - m);
        pen_text += (pen_text.empty() ? "" : ", ") + std::string("E8M") + std::to_string(k) +
                    " ~ RNE E8M" + fmt_g(m, 2);
        break;
      }
    }
  }

  double fp32_mean = 0;
  for (int s = 0; s < plan.seeds; ++s) fp32_mean += res[static_cast<std::size_t>(s)].final_eval;
  fp32_mean /= plan.seeds;
  SectionSummary sum;
  sum.key = "lm-mantissa";
  sum.title =
      "Mantissa sweep on a small decoder language model (To FP8 and back again, 2024: masked "
      "E8M3-E8M7 against round-to-nearest)";
  sum.figures_ok = fig.ok;
  sum.figures_note = fig.note;
  const bool pre = ctx.options().quick || ctx.options().tiny;
  const char* kLee = "To FP8 and back again (2024)";
  sum.headlines.push_back("fp32 matmul inputs reach a final eval loss of " + fmt_g(fp32_mean, 4) +
                          " nats/token (mean of " + std::to_string(plan.seeds) +
                          " seeds) against the unigram floor " + fmt_g(uni, 4));
  std::string table;
  for (std::size_t f = 1; f < fm.size(); ++f) {
    const std::string what =
        fm[f].ablation ? fm[f].name() + " (" + fm[f].variant() + ")" : fm[f].name();
    const double el = static_cast<double>(st[f].counts.elements);
    const std::string lim =
        fm[f].ablation ? fmt_g(static_cast<double>(st[f].counts.above_max) / el, 2) + " / " +
                             fmt_g(static_cast<double>(st[f].counts.below_min_normal) / el, 2)
                       : "not tallied";
    table += "| " + what + " | " + std::to_string(st[f].diverged) + "/" +
             std::to_string(seeds_of(f)) + " | " + lm::mean_ci_text(st[f].diff_ci) + " | " + lim +
             " |\n";
  }
  {
    // Fewer mantissa bits: masked E8M3 against masked E8M7, paired by seed.
    std::vector<double> d;
    for (int s = 0; s < plan.seeds; ++s) {
      d.push_back(final_of(idx(lm::CastMode::mask, 3), s) -
                  final_of(idx(lm::CastMode::mask, 7), s));
    }
    const MeanCi m = mean_ci(d);
    const int dv3 = st[idx(lm::CastMode::mask, 3)].diverged;
    const int dv7 = st[idx(lm::CastMode::mask, 7)].diverged;
    Claim c;
    c.source = kLee;
    c.where = "section 4 (mantissa sweep)";
    c.claim =
        "fewer mantissa bits in the matmul inputs destabilise and degrade training "
        "(paraphrase)";
    c.measured =
        "final eval loss (nats/token) of masked E8M3 minus masked E8M7 matmul inputs, "
        "paired over " +
        std::to_string(plan.seeds) + " seeds (diverged " + std::to_string(dv3) + " vs " +
        std::to_string(dv7) + "); small LM, lr " + fmt_g(base.lr, 2);
    c.set(m.mean, m.lo, m.hi);
    c.has_ci = plan.seeds > 1;
    c.expected = "> 0, or more E8M3 divergences";
    c.kind = "proxy";
    c.verdict = dv3 > dv7                ? "consistent (more divergences at E8M3)"
                : (c.has_ci && m.lo > 0) ? "consistent"
                : (c.has_ci && m.hi < 0) ? "inconsistent"
                                         : "inconclusive (interval contains 0)";
    if (pre) c.verdict = lm::preliminary_verdict(c.verdict, plan.size);
    c.link = "lm-mantissa/summary.csv";
    sum.claims.push_back(c);
    sum.headlines.push_back("Masked E8M3 minus masked E8M7: " + lm::mean_ci_text(m) +
                            " nats/token; divergences " + std::to_string(dv3) + " vs " +
                            std::to_string(dv7) + " of " + std::to_string(plan.seeds));
  }
  {
    // Masking against RNE at equal M: mean over M of the paired per-seed differences.
    std::vector<double> d;
    for (int s = 0; s < plan.seeds; ++s) {
      double x = 0;
      for (int k = 3; k <= 7; ++k) {
        x += final_of(idx(lm::CastMode::mask, k), s) - final_of(idx(lm::CastMode::rne, k), s);
      }
      d.push_back(x / 5);
    }
    const MeanCi m = mean_ci(d);
    Claim c;
    c.source = kLee;
    c.where = "section 3.2 (masking simulation)";
    c.claim =
        "masking (truncation toward zero) adds a bias that costs more than rounding to "
        "nearest at the same mantissa width (paraphrase)";
    c.measured =
        "final eval loss, masked minus RNE at the same M, mean over M = 3..7, paired "
        "over seeds" +
        std::string(penalties.empty() ? "" : "; penalty in bits: " + pen_text);
    c.set(m.mean, m.lo, m.hi);
    c.has_ci = plan.seeds > 1;
    c.expected = "> 0 (exmy's variance data: a penalty of about 1.2-1.4 mantissa bits)";
    c.kind = "proxy";
    c.verdict = !c.has_ci  ? "inconclusive (one seed)"
                : m.lo > 0 ? "consistent"
                : m.hi < 0 ? "inconsistent"
                           : "inconclusive (interval contains 0)";
    if (pre) c.verdict = lm::preliminary_verdict(c.verdict, plan.size);
    c.link = "lm-mantissa/summary.csv";
    sum.claims.push_back(c);
    sum.headlines.push_back(
        "Masked minus RNE at equal M (mean over M 3-7): " + lm::mean_ci_text(m) + " nats/token" +
        (penalties.empty() ? std::string("; masking penalty in bits not resolved (no two "
                                         "neighbouring RNE excesses above 0 "
                                         "with their intervals)")
                           : "; masking penalty: " + pen_text));
  }
  {
    // The EbM7 ablation: outer only against inner only, paired by seed.
    const std::size_t both = nsweep, inner_only = nsweep + 1, outer_only = nsweep + 2;
    // Paired over the seeds where neither run diverged (a diverged run's loss is NaN or
    // meaningless; the divergences are counted apart, ablation_verdict).
    std::vector<double> d;
    for (int s = 0; s < plan.ablation_seeds; ++s) {
      const auto& ro = res[run_at[outer_only] + static_cast<std::size_t>(s)];
      const auto& ri = res[run_at[inner_only] + static_cast<std::size_t>(s)];
      if (lm::run_unstable(ro) || lm::run_unstable(ri)) continue;
      d.push_back(final_of(outer_only, s) - final_of(inner_only, s));
    }
    MeanCi m = mean_ci(d);
    if (d.size() < 2) m.lo = m.hi = std::numeric_limits<double>::quiet_NaN();  // no interval
    if (d.empty()) m.mean = std::numeric_limits<double>::quiet_NaN();
    // Each clamp's hits in the two runs the verdict compares: the elements the outer clamp
    // changed in the outer-only runs (above max) and the inner clamp in the inner-only runs
    // (below min normal), before any of that run's casts.
    const lm::MaskLimitCounts& ko = st[outer_only].counts;
    const lm::MaskLimitCounts& ki = st[inner_only].counts;
    const std::string hits = "outer clamp hits (above the " + ebm7 + " max) " +
                             std::to_string(ko.above_max) + " of " + std::to_string(ko.elements) +
                             " matmul inputs in the outer-only runs, inner clamp hits (below its "
                             "min normal) " +
                             std::to_string(ki.below_min_normal) + " of " +
                             std::to_string(ki.elements) + " in the inner-only runs";
    const auto share_text = [](const lm::LimitTally& t) {
      return fmt_g(t.above_share(), 2) + " above max (" + std::to_string(t.above_max) + ") and " +
             fmt_g(t.below_share(), 2) + " below min normal (" +
             std::to_string(t.below_min_normal) + ")";
    };
    const bool binds = lm::outer_binds(tal_b, lm::kBindShare);
    const std::string width_why =
        binds ? ebm7 + " is the widest E in " + std::to_string(lm::kRangeMinExp) + ".." +
                    std::to_string(lm::kRangeMaxExp) +
                    " whose max the fp32 runs' matmul inputs exceed at a share >= " +
                    fmt_g(lm::kBindShare, 2)
              : "no E in " + std::to_string(lm::kRangeMinExp) + ".." +
                    std::to_string(lm::kRangeMaxExp) +
                    " has a share of the fp32 runs' matmul inputs above its max >= " +
                    fmt_g(lm::kBindShare, 2) + ", so the narrowest, " + ebm7 + ", is run";
    // With no outer hit the outer-only runs are the sweep's masked E8M7 runs bit for bit (keep
    // inner, M = 7 truncation; mantissa_formats.hpp), which the table shows.
    Claim c;
    c.source = kLee;
    c.where = "section 4.2 (E7M7 inner/outer clamp ablation, figure 5; run here at " + ebm7 + ")";
    c.claim =
        "models with only their inner exponent ranges clamped train normally while models with "
        "only their outer exponent ranges clamped do not";
    c.measured = "final eval loss (nats/token) of masked " + ebm7 +
                 " with the outer clamp only minus the inner clamp only, paired over the " +
                 std::to_string(d.size()) + " of " + std::to_string(plan.ablation_seeds) +
                 " seeds where neither run diverged (diverged " +
                 std::to_string(st[outer_only].diverged) + " vs " +
                 std::to_string(st[inner_only].diverged) + "); " + hits + "; " + width_why +
                 "; at the paper's E7M7 those inputs have " + share_text(tal_7);
    c.set(m.mean, m.lo, m.hi);
    c.has_ci = d.size() > 1;
    c.expected = "> 0, or significantly more divergences with the outer clamp only";
    c.kind = "proxy";
    c.verdict = lm::ablation_verdict(eb, st[outer_only].diverged, st[inner_only].diverged,
                                     plan.ablation_seeds, m, ko.above_max);
    if (pre) c.verdict = lm::preliminary_verdict(c.verdict, plan.size);
    c.link = "lm-mantissa/summary.csv";
    sum.claims.push_back(c);
    sum.headlines.push_back(
        "Matmul-input range of the fp32 runs (" + std::to_string(plan.seeds) + " seeds, " +
        std::to_string(tal_7.elements) +
        " operand elements, every site and pass): at the "
        "paper's E7M7 (max (2 - 2^-7) 2^63, min normal 2^-62) " +
        share_text(tal_7) + "; " + width_why + " (max " + fmt_g(tal_b.max, 4) + ", min normal 2^" +
        std::to_string(1 - tal_b.bias) + "): " + share_text(tal_b) +
        (tal_b.below_min_normal > tal_b.above_max
             ? " - at this width the inner clamp acts on more matmul inputs than the outer "
               "one (operand_range.csv)"
             : " (operand_range.csv)"));
    sum.headlines.push_back(
        ebm7 + " clamp ablation (masked, " + std::to_string(plan.ablation_seeds) +
        " seeds): diverged both clamped " + std::to_string(st[both].diverged) + ", inner only " +
        std::to_string(st[inner_only].diverged) + ", outer only " +
        std::to_string(st[outer_only].diverged) + "; outer only minus inner only " +
        lm::mean_ci_text(m) + " nats/token; " + hits);
  }
  {
    // Sharpness (section 4.3: "The E8M3 and E8M4 models show much higher sharpness values"):
    // per seed, the mean over the logged steps both runs reached, masked E8M3 minus E8M7.
    const std::size_t f3 = idx(lm::CastMode::mask, 3), f7 = idx(lm::CastMode::mask, 7);
    std::vector<double> d;
    double first32 = 0, last32 = 0, last3 = 0;
    for (int s = 0; s < plan.seeds; ++s) {
      const lm::TrainResult& a = res[run_at[f3] + static_cast<std::size_t>(s)];
      const lm::TrainResult& b = res[run_at[f7] + static_cast<std::size_t>(s)];
      const std::size_t n = std::min(a.sharpness.size(), b.sharpness.size());
      if (n == 0) continue;
      d.push_back(mean_common(a.sharpness, n) - mean_common(b.sharpness, n));
      const lm::TrainResult& r32 = res[static_cast<std::size_t>(s)];
      first32 += r32.sharpness.front() / plan.seeds;
      last32 += r32.sharpness.back() / plan.seeds;
      last3 += a.sharpness.back() / plan.seeds;
    }
    const MeanCi m = mean_ci(d);
    Claim c;
    c.source = kLee;
    c.where = "section 4.3 (loss-landscape sharpness, figures 7-8)";
    c.claim = "models with fewer mantissa bits show higher logit sharpness (paraphrase)";
    c.measured =
        "logit sharpness (eqs. 1-2, eps 5e-4, percent) of the training batch averaged over the "
        "logged steps, masked E8M3 minus masked E8M7, paired over " +
        std::to_string(d.size()) + " seeds";
    c.set(m.mean, m.lo, m.hi);
    c.has_ci = d.size() > 1;
    c.expected = "> 0";
    c.kind = "proxy";
    c.verdict = !c.has_ci  ? "inconclusive (one seed)"
                : m.lo > 0 ? "consistent"
                : m.hi < 0 ? "inconsistent"
                           : "inconclusive (interval contains 0)";
    if (pre) c.verdict = lm::preliminary_verdict(c.verdict, plan.size);
    c.link = "lm-mantissa/sharpness_summary.csv";
    sum.claims.push_back(c);
    sum.headlines.push_back(
        "Logit sharpness (percent): fp32 runs go from " + fmt_g(first32, 3) + " at step 1 to " +
        fmt_g(last32, 3) + " at their last logged step (mean of seeds), masked E8M3 ends at " +
        fmt_g(last3, 3) + "; masked E8M3 minus E8M7 over the trajectory " + lm::mean_ci_text(m));
  }
  std::string md = "# " + sum.title + "\n\n";
  md += "Size: " + plan.size + ". The lm-8bit section's model and corpus (V " +
        std::to_string(base.model.vocab) + ", d " + std::to_string(base.model.d) + ", " +
        std::to_string(base.model.layers) + " layers, T " + std::to_string(base.model.seq) + ", " +
        std::to_string(base.batch * base.model.seq) + " tokens per batch, " +
        std::to_string(base.steps) + " steps, warmup + cosine, AdamW lr " + fmt_g(base.lr, 2) +
        " with fp32 states). Every GEMM operand (A and B of forward, dgrad and wgrad at every "
        "site: QKV, scores, values, attention output, MLP up/down, head) is cast elementwise "
        "before the fp32 product: mask = the low 23 - M mantissa bits cleared, outer clamp to "
        "+-max, inner kept (docs/SEMANTICS.md 2.1); rne = round to nearest even E8M, saturating. "
        "Seeds: " +
        std::to_string(plan.seeds) +
        ". The clamp ablation (section 4.2 of the paper, figure 5, run there at E7M7): masked "
        "EbM7 (bias 2^(Eb-1) - 1, max (2 - 2^-7) 2^bias, min normal 2^(1 - bias)) with the "
        "outer rule clamp (|x| > max to +-max) or keep and the inner rule min (0 < |x| < min "
        "normal to +-min normal: the paper's threshold), zero (flushed to +-0) or keep; neither "
        "clamp is the sweep's masked E8M7 on every finite value. The paper's E7M7 (max 2^63, "
        "min normal 2^-62) clamps nothing in this small model, so Eb is chosen from the fp32 "
        "runs' matmul inputs (every operand of every site and pass, training and evaluation, "
        "before any cast; integer tallies per binade): the widest Eb in " +
        std::to_string(lm::kRangeMinExp) + ".." + std::to_string(lm::kRangeMaxExp) +
        " at which at least a share " + fmt_g(lm::kBindShare, 2) +
        " of them lies above max (else the narrowest), fixed before any ablation run; here Eb = " +
        std::to_string(eb) + ". The variants run on seeds 0-" +
        std::to_string(plan.ablation_seeds - 1) +
        " of the sweep, and their runs tally the matmul-input elements in each limit region. "
        "Sharpness: the logit sharpness of eqs. 1-2 (eps 5e-4, percent; reports/sharpness.hpp) "
        "of each run's training batch, in that step's forward pass, at step 1 and every " +
        std::to_string(base.sharpness_every) + " steps. Unigram floor " + fmt_g(uni, 4) +
        " nats/token. Diverged: a non-finite loss, a training loss above 20 nats, or the last "
        "window more than 1 nat above the run's best.\n\n## Findings\n\n";
  for (const auto& h : sum.headlines) md += "- " + h + ".\n";
  md +=
      "\n| matmul inputs | diverged | final eval loss minus fp32 [95% CI] | share of matmul "
      "inputs above max / below min normal |\n|---|---|---|---|\n" +
      table + "\n";
  {
    // The fp32 runs' range against each width's limits (operand_range.csv).
    std::vector<std::vector<lm::LimitTally>> by_pass(lm::kPasses);
    for (int p = 0; p < lm::kPasses; ++p) {
      const lm::OperandHistogram h = lm::pass_histogram(range_all, p);
      for (int e = lm::kRangeMinExp; e <= lm::kRangeMaxExp; ++e) {
        by_pass[static_cast<std::size_t>(p)].push_back(lm::limit_tally(h, e));
      }
    }
    md += "Matmul-input range of the fp32 runs against masked EM7 limits (share of the " +
          std::to_string(tal_7.elements) +
          " operand elements; below min normal also per pass, each of its own pass's elements; "
          "the ablation's width in bold):\n\n| E | max | min normal | above max | below min "
          "normal | below min normal fwd / dgrad / wgrad |\n|---|---|---|---|---|---|\n";
    for (std::size_t k = 0; k < tallies.size(); ++k) {
      const lm::LimitTally& t = tallies[k];
      const std::string e = "E" + std::to_string(t.exp_bits) + "M7";
      md += "| " + (t.exp_bits == eb ? "**" + e + "**" : e) + " | " + fmt_g(t.max, 4) + " | 2^" +
            std::to_string(1 - t.bias) + " | " + fmt_g(t.above_share(), 3) + " (" +
            std::to_string(t.above_max) + ") | " + fmt_g(t.below_share(), 3) + " (" +
            std::to_string(t.below_min_normal) + ") | " + fmt_g(by_pass[0][k].below_share(), 2) +
            " / " + fmt_g(by_pass[1][k].below_share(), 2) + " / " +
            fmt_g(by_pass[2][k].below_share(), 2) + " |\n";
    }
    md += "\n";
  }
  md += figure_md(fig, "lm_mantissa",
                  "final eval loss minus fp32 (nats/token, paired by seed; median and seeds) "
                  "against mantissa bits, masked and RNE; divergence rate below");
  md += figure_md(fig, "lm_mantissa_sharpness",
                  "logit sharpness (percent, eqs. 1-2 of the paper, eps 5e-4) of the training "
                  "batch against the training step, masked and RNE panels on one y axis; line: "
                  "mean over seeds, band: its 95% interval; fp32 in grey on both");
  md +=
      "## Data\n\n- [runs.csv](runs.csv), [summary.csv](summary.csv), "
      "[curves.csv](curves.csv), [sharpness.csv](sharpness.csv), "
      "[sharpness_summary.csv](sharpness_summary.csv), [operand_range.csv](operand_range.csv) "
      "(the fp32 runs' matmul inputs against each width's limits, all and per pass), "
      "[operand_hist.csv](operand_hist.csv) (their binade histogram per site, pass and "
      "operand).\n\n";
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  md += provenance_md(ctx, secs);
  write_file_atomic(dir + "/index.md", md);
  return sum;
}

}  // namespace exmy::reports
