// Section 2: seed 002's Adam quantization-error analysis on states from a C++ fp32 Adam run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "reports/adam_error_grid.hpp"
#include "reports/mlp_adam.hpp"
#include "reports/output_files.hpp"
#include "reports/plotting.hpp"
#include "reports/sections.hpp"

namespace exmy::reports {

namespace {

MlpConfig mlp_config(bool quick, int tiny) {
  MlpConfig c;
  if (tiny) {
    c.hidden = 32;
    c.batch = 16;
    c.steps = 20;
    c.snapshot_steps = {10, 20};
  } else if (quick) {
    c.steps = 300;
    c.snapshot_steps = {75, 150, 225, 300};
  } else {
    c.steps = 1000;
    for (int s = 125; s <= 1000; s += 125) c.snapshot_steps.push_back(s);
  }
  return c;
}

std::string blocking_name(int block) {
  return block == 0 ? "tensor" : "block" + std::to_string(block);
}

struct GridSummary {
  double mean_abs = 0, mean_rel = 0;
  long long used = 0;
  double hot_share = 0;  // share of total |error| in cells that are top-decile in usage AND
                         // top-decile in mean |error| (among used cells)
  double hot_usage = 0;  // share of elements in those cells
  std::vector<int> top;  // cells by total |error|, descending (5)
};

double decile_threshold(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(0.9 * (v.size() - 1))];
}

GridSummary summarize(const ErrorGrid& g) {
  GridSummary s;
  s.mean_abs = g.elements ? g.total_abs / g.elements : 0;
  s.mean_rel = g.total_rel_count ? g.total_rel / g.total_rel_count : 0;
  std::vector<double> usage, err;
  std::vector<int> cells;
  for (int c = 0; c < 65536; ++c) {
    if (g.count[c] == 0) continue;
    cells.push_back(c);
    usage.push_back(static_cast<double>(g.count[c]));
    err.push_back(g.sum_abs[c] / g.count[c]);
  }
  s.used = static_cast<long long>(cells.size());
  const double tu = decile_threshold(usage), te = decile_threshold(err);
  double hot = 0, hot_n = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (usage[i] >= tu && err[i] >= te) {
      hot += g.sum_abs[cells[i]];
      hot_n += usage[i];
    }
  }
  s.hot_share = g.total_abs > 0 ? hot / g.total_abs : 0;
  s.hot_usage = g.elements ? hot_n / g.elements : 0;
  std::vector<int> order = cells;
  // Descending total error; ties by cell index so the order is total.
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return g.sum_abs[a] > g.sum_abs[b]; });
  order.resize(std::min<std::size_t>(order.size(), 5));
  s.top = order;
  return s;
}

}  // namespace

SectionSummary run_adam_heatmap_section(const ReportContext& ctx) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dir = ctx.options().out_dir + "/adam-heatmap";
  make_directories(dir);
  const MlpConfig cfg = mlp_config(ctx.options().quick, ctx.options().tiny);
  ctx.progress("adam-heatmap",
               "training the MLP with fp32 Adam, " + std::to_string(cfg.steps) + " steps");
  TrainLog log;
  const auto snaps = train_mlp_adam(cfg, ctx.options().seed, log);
  const auto methods = state_quant_methods();
  const std::vector<int> blocks{0, 2048, 256};
  std::vector<ErrorGrid> grids(methods.size() * blocks.size());
  ctx.progress("adam-heatmap", std::to_string(grids.size()) + " (method, blocking) grids");
  ctx.parallel_for(grids.size(), [&](std::size_t i) {
    grids[i] =
        adam_error_grid(snaps, methods[i / blocks.size()], blocks[i % blocks.size()], cfg.eps);
  });

  Csv train({"step", "loss", "accuracy"});
  for (std::size_t i = 0; i < log.step.size(); ++i) {
    train.row()
        .add(static_cast<long long>(log.step[i]))
        .add(static_cast<double>(log.loss[i]))
        .add(static_cast<double>(log.accuracy[i]));
  }
  write_file_atomic(dir + "/train.csv", train.text());
  Csv summary({"method", "blocking", "elements", "mean_abs_err", "mean_rel_err", "cells_used",
               "hot_cells_abs_err_share", "hot_cells_usage_share"});
  Csv top({"method", "blocking", "rank", "code_m", "code_v", "m_value", "v_value", "count",
           "usage_share", "mean_abs_err", "mean_rel_err", "abs_err_share"});
  std::vector<GridSummary> sums;
  for (std::size_t i = 0; i < grids.size(); ++i) {
    const ErrorGrid& g = grids[i];
    const StateQuantMethod& m = methods[i / blocks.size()];
    const std::string bn = blocking_name(g.block);
    Csv cells({"code_m", "code_v", "m_value", "v_value", "count", "mean_abs_err", "mean_rel_err"});
    for (int c = 0; c < 65536; ++c) {
      if (g.count[c] == 0) continue;
      cells.row()
          .add(static_cast<long long>(c / 256))
          .add(static_cast<long long>(c % 256))
          .add(static_cast<double>(m.m_book->values[c / 256]))
          .add(static_cast<double>(m.v_book->values[c % 256]))
          .add(static_cast<long long>(g.count[c]))
          .add(g.sum_abs[c] / g.count[c])
          .add(g.rel_count[c] ? g.sum_rel[c] / g.rel_count[c] : 0.0);
    }
    write_file_atomic(dir + "/grid_" + g.method + "_" + bn + ".csv", cells.text());
    const GridSummary s = summarize(g);
    sums.push_back(s);
    summary.row()
        .add(g.method)
        .add(bn)
        .add(static_cast<long long>(g.elements))
        .add(s.mean_abs)
        .add(s.mean_rel)
        .add(s.used)
        .add(s.hot_share)
        .add(s.hot_usage);
    for (std::size_t r = 0; r < s.top.size(); ++r) {
      const int c = s.top[r];
      top.row()
          .add(g.method)
          .add(bn)
          .add(static_cast<long long>(r + 1))
          .add(static_cast<long long>(c / 256))
          .add(static_cast<long long>(c % 256))
          .add(static_cast<double>(m.m_book->values[c / 256]))
          .add(static_cast<double>(m.v_book->values[c % 256]))
          .add(static_cast<long long>(g.count[c]))
          .add(static_cast<double>(g.count[c]) / g.elements)
          .add(g.sum_abs[c] / g.count[c])
          .add(g.rel_count[c] ? g.sum_rel[c] / g.rel_count[c] : 0.0)
          .add(g.total_abs > 0 ? g.sum_abs[c] / g.total_abs : 0.0);
    }
  }
  write_file_atomic(dir + "/summary.csv", summary.text());
  write_file_atomic(dir + "/top_cells.csv", top.text());
  const FigureResult fig = run_plot_script(ctx, "plot_adam_heatmap.py", dir);

  // ---- findings ----------------------------------------------------------------------------
  auto at = [&](const std::string& method, int block) -> const GridSummary& {
    for (std::size_t i = 0; i < grids.size(); ++i) {
      if (grids[i].method == method && grids[i].block == block) return sums[i];
    }
    return sums.front();
  };
  SectionSummary sum;
  sum.key = "adam-heatmap";
  sum.title = "Adam quantization-error heatmaps (seed 002, error analysis)";
  sum.figures_ok = fig.ok;
  sum.figures_note = fig.note;
  std::string md = "# " + sum.title + "\n\n";
  md += "States: a 3-layer ReLU MLP (" + std::to_string(cfg.in) + "-" + std::to_string(cfg.hidden) +
        "-" + std::to_string(cfg.hidden) + "-" + std::to_string(cfg.classes) + ") trained " +
        std::to_string(cfg.steps) +
        " steps with fp32 Adam (lr 1e-3, betas 0.9/0.999, eps 1e-8, batch " +
        std::to_string(cfg.batch) +
        ") on a synthetic teacher task whose input features have "
        "log-uniform scales over 3 decades and are active with probability 1/4 (skewed, sparse "
        "gradients: second moments span several decades inside a tensor, as token-frequency "
        "skew makes them in language models). m and v of every tensor are recorded after "
        "steps";
  for (int s : cfg.snapshot_steps) md += " " + std::to_string(s);
  md += " ([train.csv](train.csv): loss " + fmt_g(log.loss.empty() ? 0 : log.loss.front(), 4) +
        " -> " + fmt_g(log.loss.empty() ? 0 : log.loss.back(), 4) + ").\n\n";
  md +=
      "Each (m, v) pair is quantized with 8-bit codebooks (bitsandbytes' maps, "
      "absmax-normalized per tensor or per block of 2048 / 256, nearest code with "
      "bitsandbytes' tie rule) and the 32-bit update u32 = m/(sqrt(v)+eps) is compared with "
      "u8 from the dequantized states. Methods: `linear` (linear maps), `dynamic_tree` "
      "(signed dynamic map for both states), `dynamic` (signed for m, unsigned for v). "
      "The 256x256 grid bins elements by (code of m, code of v).\n\n";
  md +=
      "## Summary\n\n| method | blocking | mean abs err | mean rel err | cells used | "
      "hot cells: share of abs err / of usage |\n|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < grids.size(); ++i) {
    md += "| " + grids[i].method + " | " + blocking_name(grids[i].block) + " | " +
          fmt_g(sums[i].mean_abs, 4) + " | " + fmt_g(sums[i].mean_rel, 4) + " | " +
          std::to_string(sums[i].used) + " | " + fmt_g(sums[i].hot_share, 3) + " / " +
          fmt_g(sums[i].hot_usage, 3) + " |\n";
  }
  md +=
      "\n\"Hot\" cells are those in the top decile of usage and the top decile of mean "
      "absolute error among used cells: where high usage meets high error.\n\n## Findings\n\n";
  // Claim 1: dynamic beats linear.
  int wins = 0, total = 0;
  std::string detail;
  for (int b : blocks) {
    const auto& d = at("dynamic", b);
    const auto& l = at("linear", b);
    ++total;
    if (d.mean_abs < l.mean_abs && d.mean_rel < l.mean_rel) ++wins;
    detail += " " + blocking_name(b) + ": " + fmt_g(d.mean_abs, 3) + " vs " + fmt_g(l.mean_abs, 3) +
              " abs, " + fmt_g(d.mean_rel, 3) + " vs " + fmt_g(l.mean_rel, 3) + " rel;";
  }
  std::string h = std::string("Claim \"dynamic beats linear\": ") +
                  (wins == total ? "HOLDS" : "does NOT hold everywhere") + " (" +
                  std::to_string(wins) + "/" + std::to_string(total) +
                  " blockings, mean abs and rel error, dynamic vs linear:" +
                  detail.substr(0, detail.size() - 1) + ")";
  sum.headlines.push_back(h);
  md += "- " + h + ".\n";
  // Claim 2: block-wise beats tensor-wise.
  wins = 0;
  total = 0;
  detail.clear();
  for (const auto& m : methods) {
    const auto& t = at(m.name, 0);
    const auto& b1 = at(m.name, 2048);
    const auto& b2 = at(m.name, 256);
    total += 2;
    wins += (b1.mean_abs < t.mean_abs ? 1 : 0) + (b2.mean_abs < t.mean_abs ? 1 : 0);
    detail += " " + m.name + " " + fmt_g(t.mean_abs, 3) + " -> " + fmt_g(b1.mean_abs, 3) + " -> " +
              fmt_g(b2.mean_abs, 3) + ";";
  }
  h = std::string("Claim \"block-wise beats tensor-wise\": ") +
      (wins == total ? "HOLDS" : "does NOT hold everywhere") + " (" + std::to_string(wins) + "/" +
      std::to_string(total) +
      "; mean abs err tensor -> block2048 -> block256:" + detail.substr(0, detail.size() - 1) + ")";
  sum.headlines.push_back(h);
  md += "- " + h + ".\n";
  // Claim 3: where high usage meets high error.
  const auto& lt = at("linear", 0);
  const auto& dt = at("dynamic", 256);
  h = "High usage meets high error: in linear/tensor, hot cells hold " +
      fmt_g(100 * lt.hot_usage, 3) + "% of elements and " + fmt_g(100 * lt.hot_share, 3) +
      "% of the total absolute error; in dynamic/block256 " + fmt_g(100 * dt.hot_usage, 3) +
      "% and " + fmt_g(100 * dt.hot_share, 3) + "% (top cells by total error in top_cells.csv)";
  sum.headlines.push_back(h);
  md += "- " + h + ".\n";
  if (ctx.options().tiny || ctx.options().quick) {
    md += "- Size: " + std::string(ctx.options().tiny ? "tiny test" : "--quick") +
          " configuration; the full report trains longer and records more snapshots.\n";
  }
  md += "\n" + figure_md(fig, "heatmap_usage",
                         "elements per (code m, code v) cell, log colour; axes are the "
                         "normalised state values of the codes");
  md += figure_md(fig, "heatmap_abs",
                  "mean |u32 - u8| per cell: one log colour range for all nine panels, clipped "
                  "at the 1st and 99th percentiles of the cells with at least 5 elements (black "
                  "below, magenta above); cells with fewer than 5 elements grey");
  md += figure_md(fig, "heatmap_rel",
                  "mean |u32 - u8| / |u32| per cell, same shared range, clipping and grey cells");
  md += figure_md(fig, "heatmap_overlap",
                  "where usage meets error: the abs-error heatmap with contours of the element "
                  "count (10, 100, 1000, ... per cell) and, per panel, the share of the total "
                  "error carried by the cells that hold 90% of the elements");
  md += figure_md(fig, "train_loss", "training loss of the fp32 Adam run");
  md +=
      "## Data\n\n- [summary.csv](summary.csv), [top_cells.csv](top_cells.csv)\n"
      "- grid_METHOD_BLOCKING.csv: used cells (code_m, code_v, values, count, mean errors)\n"
      "- [train.csv](train.csv)\n\n";
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  md += provenance_md(ctx, secs);
  write_file_atomic(dir + "/index.md", md);
  return sum;
}

}  // namespace exmy::reports
