// exmy memory --params N --optimizer NAME[,NAME...] [--weights fp32|bf16|fp16] [--master]
//             [--extra-bits K [--sr]] [--grads fp32|bf16|fp16] [--fused-backward] [--block B]
//             [--json]
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
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/optim/memory.hpp"

namespace exmy::cli {
namespace {

constexpr const char* kUsage =
    "usage: exmy memory --params N --optimizer NAME[,NAME...] [--weights fp32|bf16|fp16] "
    "[--master] [--extra-bits K [--sr]] [--grads fp32|bf16|fp16] [--fused-backward] [--block B] "
    "[--json]";

int dtype_bytes(const std::string& s, const char* what) {
  if (s == "fp32") return 4;
  if (s == "bf16" || s == "fp16") return 2;
  throw InputError(std::string(what) + " '" + s + "': expected fp32, bf16 or fp16");
}

int run_memory(const Args& args) {
  optim::MemoryConfig base;
  std::vector<std::string> optimizers;
  bool json = false, have_params = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s\n", kUsage);
      return 0;
    } else if (a == "--params") {
      // A count of parameters: a positive whole number (1.5e9 is one), at most 2^53 so that
      // every count is exact in the double the byte totals are computed in.
      const std::string& v = option_value(args, i);
      base.params = number::parse_f64(v, "--params");
      if (!(base.params >= 1 && base.params <= 9007199254740992.0 &&
            std::floor(base.params) == base.params)) {
        throw InputError("--params '" + v +
                         "': expected a whole number of parameters in [1, 2^53] (e.g. 1.5e9)");
      }
      have_params = true;
    } else if (a == "--optimizer") {
      std::string v = option_value(args, i);
      std::size_t pos = 0;
      while (pos <= v.size()) {
        const auto comma = v.find(',', pos);
        optimizers.push_back(
            v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    } else if (a == "--weights") {
      base.weight_bytes = dtype_bytes(option_value(args, i), "--weights");
    } else if (a == "--grads") {
      base.grad_bytes = dtype_bytes(option_value(args, i), "--grads");
    } else if (a == "--master") {
      base.master = true;
    } else if (a == "--extra-bits") {
      base.extra_bits = static_cast<int>(parse_uint(option_value(args, i), "--extra-bits", 16));
    } else if (a == "--sr") {
      base.sr = true;
    } else if (a == "--fused-backward") {
      base.fused_backward = true;
    } else if (a == "--block") {
      base.block = static_cast<int>(parse_uint(option_value(args, i), "--block", 1u << 20));
    } else if (a == "--json") {
      json = true;
    } else {
      throw InputError("unknown option '" + a + "' (" + kUsage +
                       "; NAME: " + optim::memory_optimizer_names() + ")");
    }
  }
  if (!have_params) throw InputError("--params is required (e.g. --params 1.5e9)");
  if (optimizers.empty()) throw InputError("--optimizer is required (e.g. --optimizer adamw)");
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
