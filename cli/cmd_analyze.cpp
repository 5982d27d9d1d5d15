// exmy analyze --tensors DIR --out-dir OUT [OPTIONS] (exmy analyze --help): the quantization
// error of a user's own tensors under each format x scale granularity (docs/SEMANTICS.md 18).
// Parsing and printing only; the computation is reports/analyze.hpp's. Exit 0 on success (also
// when matplotlib is missing: the CSV and index.md are complete and say so), 2 on bad input
// (one line, nothing written), 130 when interrupted (nothing written).
#include <cstdio>
#include <string>

#include "cli/command.hpp"
#include "cli/options.hpp"
#include "reports/analyze.hpp"
#include "reports/report_context.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/io/pending_paths.hpp"

namespace exmy::cli {
namespace {

int run_analyze_cmd(const Args& args) {
  reports::AnalyzeOptions o;
  Options opts(
      "exmy analyze --tensors DIR --out-dir OUT [OPTIONS]",
      "Quantizes every .npy tensor of DIR (<f4 fp32, <f2 fp16, <u2 bf16 bit patterns) under each "
      "format x scale granularity with exmy's quantizer and writes OUT/analyze.csv (relative "
      "MSE, noise-to-signal, SNR, max abs error, underflow and saturation per tensor; the "
      "relative error of each matmul's products), OUT/index.md and a figure. A matmul NAME is "
      "the files NAME.x.npy (b x n) and NAME.w.npy (m x n), with NAME.g.npy (b x m) for the "
      "backward products; other files are tensors on their own. OUT must not exist; it appears "
      "whole or not at all.",
      "exmy analyze --tensors captured --out-dir analysis --formats int8,e4m3fn,nvfp4");
  opts.value({"--tensors"}, "DIR", "the directory of .npy tensors", Options::kRequired,
             [&](const std::string& v) { o.tensors_dir = v; })
      .value({"--out-dir", "--out"}, "OUT", "the directory to write (must not exist)",
             Options::kRequired, [&](const std::string& v) { o.out_dir = v; })
      .value({"--formats"}, "LIST",
             "comma-separated: int8, float formats of <= 8 bits (e4m3fn, e5m2, e2m1fn, ...) "
             "scaled by each scheme, mx:F (OCP MX, E8M0 scales per 32), nvfp4 (e2m1fn, E4M3 "
             "scales per 16 under a per-tensor fp32 scale), nvfp4:one-level (the block scales "
             "alone), bf16 and fp16 (RNE casts, no scale)",
             o.formats, [&](const std::string& v) { o.formats = v; })
      .value({"--schemes"}, "LIST",
             "comma-separated scale granularities for int8 and float formats: tensor, rowwise, "
             "colwise, block:B, block:RxC (invalid pairs are skipped and named in index.md)",
             o.schemes, [&](const std::string& v) { o.schemes = v; })
      .value({"--matmul-rows"}, "N",
             "products: evaluate at most N evenly spaced output rows (0: every row)",
             std::to_string(o.matmul_rows),
             [&](const std::string& v) {
               o.matmul_rows = number::parse_u64(v, "--matmul-rows", 1ull << 40, false);
             })
      .value({"--threads"}, "N",
             "worker threads (1 to 1024); analyze.csv is the same bytes for every N",
             "OMP_NUM_THREADS if set, else every usable core",
             [&](const std::string& v) {
               o.threads = static_cast<int>(number::parse_u64(v, "--threads", 1024, false));
               if (o.threads == 0) throw InputError("--threads 0: expected at least 1");
             })
      .flag({"--no-figures"}, "skip the figure (the CSV and index.md are written)",
            [&] { o.figures = false; })
      .flag({"--quiet"}, "no progress lines on stderr", [&] { o.quiet = true; });
  if (!opts.parse(args)) return 0;
  o.command_line = "exmy analyze";
  for (const std::string& a : args) o.command_line += " " + a;
  reports::AnalyzeResult r;
  try {
    r = reports::run_analyze(o);
  } catch (const reports::Interrupted&) {
    std::fprintf(stderr, "exmy analyze: interrupted; nothing was written\n");
    io::restore_sigint_cleanup();
    return 130;
  }
  if (o.figures && !r.figure_note.empty())
    std::fprintf(stderr, "exmy analyze: warning: %s\n", r.figure_note.c_str());
  std::fprintf(stderr, "exmy analyze: wrote %s/analyze.csv (%zu rows) and %s/index.md\n",
               o.out_dir.c_str(), r.rows, o.out_dir.c_str());
  return 0;
}

}  // namespace
}  // namespace exmy::cli

EXMY_COMMAND("analyze", exmy::cli::run_analyze_cmd,
             "error analysis of your own .npy tensors: noise-to-signal per format x scale "
             "granularity, per tensor and per matmul");
