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
// (--shard 0/N ... N-1/N, each exactly once) added up; exit as the whole run would. Shards of
// another campaign (their identities differ: op, format, rounding, depth, backend hash, exmy
// version, shard count, ...) and missing shards are refused with exit 1, naming them
// (docs/SEMANTICS.md 13.4); a shard given twice or an unreadable file is exit 2.
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
  verify::Identity first_id;
  const auto id_text = [](const verify::Identity& id) {
    std::string t;
    for (const auto& [k, v] : id) t += (t.empty() ? "" : ", ") + k + " " + v;
    return t.empty() ? std::string("no identity (written by an older exmy)") : t;
  };
  for (std::size_t fi = 0; fi < files.size(); ++fi) {
    const std::string& f = files[fi];
    Shard sh;
    verify::Identity id;
    parts.push_back(verify::results_from_json(
        io::read_small_file(f, std::size_t{256} << 20, "the --json output of exmy verify"), f, sh,
        &id));
    if (fi == 0) {
      count = sh.count;
      seen.assign(count, 0);
      first_id = id;
    }
    if (id != first_id || sh.count != count) {
      // Name the first field that differs.
      std::string why;
      for (const auto& [k, v] : first_id) {
        std::string other = "(absent)";
        for (const auto& [k2, v2] : id) {
          if (k2 == k) other = v2;
        }
        if (other != v) {
          why = k + " '" + other + "' where '" + files[0] + "' has '" + v + "'";
          break;
        }
      }
      if (why.empty() && sh.count != count) {
        why = "shard " + sh.text() + " is one of " + std::to_string(sh.count) + ", '" + files[0] +
              "' one of " + std::to_string(count);
      }
      if (why.empty()) why = "identity {" + id_text(id) + "} vs {" + id_text(first_id) + "}";
      std::fprintf(stderr,
                   "exmy verify merge: '%s' is a shard of another campaign: %s; nothing merged\n",
                   f.c_str(), why.c_str());
      return 1;
    }
    if (seen[sh.index]++) throw InputError("'" + f + "': shard " + sh.text() + " given twice");
  }
  std::string missing;
  std::uint64_t n_missing = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (seen[i]) continue;
    if (n_missing++ < 16) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(i) + "/" + std::to_string(count);
    }
  }
  if (n_missing > 0) {
    std::fprintf(stderr,
                 "exmy verify merge: %llu of %llu shards missing (%s%s): the merge would not be "
                 "the whole run; nothing merged\n",
                 static_cast<unsigned long long>(n_missing), static_cast<unsigned long long>(count),
                 missing.c_str(), n_missing > 16 ? ", ..." : "");
    return 1;
  }
  const auto results = verify::merge_results(parts);
  std::fputs(
      (json ? verify::summary_json(results, Shard{}, first_id) : verify::summary_text(results))
          .c_str(),
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
  // What makes shard files one run (verify merge compares it).
  const verify::Identity identity = {
      {"op", "verify"},
      {"campaign", campaign},
      {"steps_ops", opts.op.empty() ? "all" : opts.op},
      {"depth", opts.depth == verify::Depth::ci ? "ci" : "full"},
      {"exmy", std::string(EXMY_VERSION) + " (" + EXMY_GIT_SHA + ")"},
      {"shard_count", std::to_string(opts.shard.count)}};
  const std::string out =
      json ? verify::summary_json(results, opts.shard, identity) : verify::summary_text(results);
  std::fputs(out.c_str(), stdout);
  if (verify::any_interrupted(results)) return 130;
  return verify::total_mismatches(results) == 0 ? 0 : 1;
}

}  // namespace

EXMY_COMMAND("verify", run_verify,
             "native engine vs MPFR oracle campaigns (--campaign "
             "decode|bf16|fp16|fp32-sample|fp32-top16|steps|all)");

}  // namespace exmy::cli
