// exmy verify: the native engine (and the host fast path) against the MPFR oracle.
//   exmy verify [--campaign decode|bf16|fp16|fp32-sample|fp32-top16|steps|all] [--op NAME]
//               [--threads N] [--depth full|ci] [--json] [--quiet] [--device cpu|cuda]
// --op NAME[,NAME...] runs those ops of the steps campaign (their names: verify::step_op_names()).
// Exit status: 0 all agree, 1 any mismatch, 130 interrupted (SIGINT), 2 bad arguments.
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <string>

#include "cli/command.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/common/shard.hpp"
#include "sim/io/files.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/summary.hpp"

namespace exmy::cli {
namespace {

extern "C" void verify_on_sigint(int) {
  // First Ctrl-C: finish the chunks in flight and print what was checked; a second one kills.
  verify::request_stop();
  std::signal(SIGINT, SIG_DFL);
}

constexpr const char* kUsage =
    "usage: exmy verify [--campaign decode|bf16|fp16|fp32-sample|fp32-top16|steps|all] "
    "[--op NAME[,NAME...]] [--threads N] [--depth full|ci] [--shard i/N] [--json] [--quiet] "
    "[--device cpu|cuda]\n       exmy verify merge SHARD.json... [--json]";

int parse_threads(const std::string& text) {
  const std::uint64_t n = number::parse_u64(text, "--threads", 4096, false);
  if (n < 1) throw InputError("--threads '" + text + "': expected 1 to 4096");
  return static_cast<int>(n);
}

// `--device cuda` hands every other argument to the device campaign (the hidden command
// "verify-cuda", cli/cmd_verify_gpu.cpp), which has options of its own (--formats, --modes,
// --out, ...); so it is decided before the CPU options are parsed.
int forward_to_device(const Args& args) {
#if EXMY_HAVE_CUDA
  const auto it = commands().find("verify-cuda");
  if (it == commands().end()) {
    throw InputError("--device cuda: this build has no device verification campaign");
  }
  Args rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--device") {
      ++i;
      continue;
    }
    rest.push_back(args[i]);
  }
  return it->second.run(rest);
#else
  (void)args;
  throw InputError("--device cuda: this build has no CUDA (configure with EXMY_CUDA=ON and nvcc)");
#endif
}

// exmy verify merge A.json B.json ... [--json]: the --json outputs of the N shards of one run
// (--shard 0/N ... N-1/N, each exactly once) added up; exit as the whole run would.
int run_merge(const Args& args) {
  bool json = false;
  std::vector<std::string> files;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--json") {
      json = true;
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::printf("usage: exmy verify merge SHARD.json... [--json]\n");
      return 0;
    } else {
      files.push_back(args[i]);
    }
  }
  if (files.empty()) throw InputError("merge: expected the --json outputs of the shards");
  std::vector<std::vector<verify::Result>> parts;
  std::vector<int> seen;
  std::uint64_t count = 0;
  for (const std::string& f : files) {
    Shard sh;
    parts.push_back(verify::results_from_json(
        io::read_small_file(f, std::size_t{256} << 20, "the --json output of exmy verify"), f, sh));
    if (count == 0) {
      count = sh.count;
      seen.assign(count, 0);
    }
    if (sh.count != count) {
      throw InputError("'" + f + "': shard " + sh.text() + " is not one of " +
                       std::to_string(count) + " like the others");
    }
    if (seen[sh.index]++) throw InputError("'" + f + "': shard " + sh.text() + " given twice");
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!seen[i]) {
      throw InputError("shard " + std::to_string(i) + "/" + std::to_string(count) +
                       " is missing: the merge would not be the whole run");
    }
  }
  const auto results = verify::merge_results(parts);
  std::fputs((json ? verify::summary_json(results) : verify::summary_text(results)).c_str(),
             stdout);
  if (verify::any_interrupted(results)) return 130;
  return verify::total_mismatches(results) == 0 ? 0 : 1;
}

int run_verify(const Args& args) {
  if (!args.empty() && args[0] == "merge") return run_merge(args);
  // --backend LIB.so sweeps a backend plugin instead (cli/cmd_verify_backend.cpp).
  for (const std::string& a : args) {
    if (a == "--backend") return commands().at("verify-backend").run(args);
  }
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::printf(
          "%s\n       exmy verify --backend LIB.so --op cast --format F --round MODE "
          "[--depth full|ci] [--shard i/N] ...\n",
          kUsage);
      return 0;
    }
  }
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--device" && args[i + 1] == "cuda") return forward_to_device(args);
  }
  std::string campaign = "all", device = "cpu";
  verify::Options opts;
  bool json = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw InputError("option " + a + " needs a value");
      return args[++i];
    };
    if (a == "--campaign") {
      campaign = value();
    } else if (a == "--threads") {
      opts.threads = parse_threads(value());
    } else if (a == "--depth") {
      const std::string& d = value();
      if (d == "full") {
        opts.depth = verify::Depth::full;
      } else if (d == "ci") {
        opts.depth = verify::Depth::ci;
      } else {
        throw InputError("--depth '" + d + "': expected full or ci");
      }
    } else if (a == "--op") {
      opts.op = value();
    } else if (a == "--shard") {
      opts.shard = parse_shard(value());
    } else if (a == "--json") {
      json = true;
    } else if (a == "--quiet") {
      opts.progress = false;
    } else if (a == "--device") {
      device = value();
      if (device != "cpu" && device != "cuda") {
        throw InputError("--device '" + device + "': expected cpu or cuda");
      }
    } else {
      throw InputError("unknown argument '" + a + "' (" + kUsage + ")");
    }
  }
  verify::clear_stop();
  std::signal(SIGINT, verify_on_sigint);
  const auto results = verify::run_campaigns(campaign, opts);
  std::signal(SIGINT, SIG_DFL);
  const std::string out =
      json ? verify::summary_json(results, opts.shard) : verify::summary_text(results);
  std::fputs(out.c_str(), stdout);
  if (verify::any_interrupted(results)) return 130;
  return verify::total_mismatches(results) == 0 ? 0 : 1;
}

}  // namespace

EXMY_COMMAND("verify", run_verify,
             "native engine vs MPFR oracle campaigns (--campaign "
             "decode|bf16|fp16|fp32-sample|fp32-top16|steps|all)");

}  // namespace exmy::cli
