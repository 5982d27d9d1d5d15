// Bytes per parameter and totals of each configuration (docs/SEMANTICS.md 9.8). NAME is an
// optimizer of the registry (sim/optim/registry.hpp; a split name such as adamw-bf16+8 fixes the
// weights) or none (no optimizer state). Every NAME is checked before anything is printed.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/optim/memory.hpp"

namespace exmy::cli {
namespace {

int dtype_bytes(const std::string& s, const char* what) {
  if (s == "fp32") return 4;
  if (s == "bf16" || s == "fp16") return 2;
  throw InputError(std::string(what) + " '" + s + "': expected fp32, bf16 or fp16");
}

int run_memory(const Args& args) {
  optim::MemoryConfig base;
  std::vector<std::string> optimizers;
  bool json = false;
  Options opts("exmy memory --params N --optimizer NAME[,NAME...] [OPTIONS]",
               "Bytes per parameter and totals of each configuration (docs/SEMANTICS.md 9.8).",
               "exmy memory --params 7e9 --optimizer adamw,adamw8bit --weights bf16 --master");
  opts.value({"--params"}, "N", "parameter count: a whole number in [1, 2^53] (1.5e9 is one)",
             Options::kRequired,
             [&](const std::string& v) {
               // At most 2^53, so that every count is exact in the double the totals use.
               base.params = number::parse_f64(v, "--params");
               if (!(base.params >= 1 && base.params <= 9007199254740992.0 &&
                     std::floor(base.params) == base.params)) {
                 throw InputError("--params '" + v +
                                  "': expected a whole number of parameters in [1, 2^53] "
                                  "(e.g. 1.5e9)");
               }
             })
      .value({"--optimizer"}, "NAME[,NAME...]",
             "optimizers of the registry, or none: " + optim::memory_optimizer_names(),
             Options::kRequired,
             [&](const std::string& v) {
               for (auto& n : split_commas(v)) optimizers.push_back(n);
             })
      .value({"--weights"}, "fp32|bf16|fp16", "storage of the weights",
             "fp32, or the 16-bit format a split NAME such as adamw-bf16+8 names",
             [&](const std::string& v) { base.weight_bytes = dtype_bytes(v, "--weights"); })
      .value({"--grads"}, "fp32|bf16|fp16", "storage of the gradients",
             "fp32 with fp32 weights or --master, else 16-bit",
             [&](const std::string& v) { base.grad_bytes = dtype_bytes(v, "--grads"); })
      .flag({"--master"}, "keep an fp32 master copy of 16-bit weights", [&] { base.master = true; })
      .value({"--extra-bits"}, "K", "extra bits per 16-bit weight (0..16)", "none",
             [&](const std::string& v) {
               base.extra_bits = static_cast<int>(parse_uint(v, "--extra-bits", 16));
             })
      .flag({"--sr"}, "stochastic rounding of the weights (with --extra-bits)",
            [&] { base.sr = true; })
      .flag({"--fused-backward"}, "gradients freed as the optimizer consumes them",
            [&] { base.fused_backward = true; })
      .value({"--block"}, "B", "block size of block-wise optimizer states",
             std::to_string(optim::MemoryConfig{}.block),
             [&](const std::string& v) {
               base.block = static_cast<int>(parse_uint(v, "--block", 1u << 20));
             })
      .flag({"--amsgrad"}, "Adam/AdamW with amsgrad=True: max_exp_avg_sq, a fourth state",
            [&] { base.amsgrad = true; })
      .value({"--shape"}, "D0xD1[x...]",
             "the parameters' shape (Adafactor keeps R + C states per R x C matrix)", "1-d",
             [&](const std::string& v) {
               base.shape.clear();
               std::size_t start = 0;
               while (start <= v.size()) {
                 const std::size_t x = v.find('x', start);
                 const std::string d = v.substr(start, x == std::string::npos ? x : x - start);
                 base.shape.push_back(parse_uint(d, "--shape", 1ull << 53));
                 if (x == std::string::npos) break;
                 start = x + 1;
               }
             })
      .flag({"--json"}, "print JSON instead of tables", [&] { json = true; });
  if (!opts.parse(args)) return 0;
  std::vector<std::vector<optim::MemoryRow>> all;
  for (const std::string& name : optimizers) {
    optim::MemoryConfig c = base;
    c.optimizer = name;
    all.push_back(optim::memory_breakdown(c));
  }
  if (json) std::printf("[");
  for (std::size_t k = 0; k < optimizers.size(); ++k) {
    optim::MemoryConfig c = base;
    c.optimizer = optimizers[k];
    const auto& rows = all[k];
    const double per = optim::memory_total_per_param(rows);
    if (json) {
      std::printf("%s{\"optimizer\":%s,\"params\":%.17g,\"rows\":[", k ? "," : "",
                  json_string(c.optimizer).c_str(), c.params);
      for (std::size_t r = 0; r < rows.size(); ++r) {
        std::printf("%s{\"item\":%s,\"bytes_per_param\":%.17g,\"bytes\":%.17g}", r ? "," : "",
                    json_string(rows[r].item).c_str(), rows[r].bytes_per_param,
                    rows[r].bytes_per_param * c.params);
      }
      std::printf("],\"bytes_per_param\":%.17g,\"bytes\":%.17g}", per, per * c.params);
    } else {
      std::printf("%s%s, %.6g parameters\n", k ? "\n" : "", c.optimizer.c_str(), c.params);
      std::printf("  %-48s %12s %14s %12s\n", "item", "bytes/param", "GB (1e9 B)", "GiB");
      for (const auto& r : rows) {
        const double b = r.bytes_per_param * c.params;
        std::printf("  %-48s %12.6g %14.6g %12.6g\n", r.item.c_str(), r.bytes_per_param, b / 1e9,
                    b / 1073741824.0);
      }
      const double b = per * c.params;
      std::printf("  %-48s %12.6g %14.6g %12.6g\n", "total", per, b / 1e9, b / 1073741824.0);
    }
  }
  if (json) std::printf("]\n");
  return 0;
}

}  // namespace

EXMY_COMMAND("memory", run_memory,
             "training memory per parameter: weights, master copy, extra bits, grads, states");

}  // namespace exmy::cli
