// exmy verify: the native engine (and the host fast path) against the MPFR oracle.
//   exmy verify [--campaign NAME] [--op NAME[,NAME...]] [--threads N] [--depth full|ci]
//               [--shard i/N] [--json] [--quiet] [--device cpu|cuda]   (exmy verify --help)
//   exmy verify merge SHARD.json... [--json]
// --backend LIB.so goes to cli/cmd_verify_backend.cpp, --device cuda to cli/cmd_verify_gpu.cpp.
// Exit status: 0 all agree, 1 any mismatch, 130 interrupted (SIGINT), 2 bad arguments.
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "cli/options.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/common/shard.hpp"
#include "sim/io/build_info.hpp"
#include "sim/io/files.hpp"
#include "sim/io/pending_paths.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/summary.hpp"

namespace exmy::cli {
namespace {

extern "C" void verify_on_sigint(int) {
  // First Ctrl-C: finish the chunks in flight and print what was checked; a second one kills.
  verify::request_stop();
  io::restore_sigint_cleanup();
}

int parse_threads(const std::string& text) {
  const std::uint64_t n = number::parse_u64(text, "--threads", 4096, false);
  if (n < 1) throw InputError("--threads '" + text + "': expected 1 to 4096");
  return static_cast<int>(n);
}

// The value of option `name` in args (`name V` or `name=V`; "" when V is missing), or nullopt
// when it is not given. The options that hand the run to another command (--backend,
// --device cuda) are looked up before the option table, which does not know the other
// command's options, is parsed.
std::optional<std::string> option_text(const Args& args, const std::string& name) {
  for (std::size_t i = 0; i < args.size() && args[i] != "--"; ++i) {
    if (args[i] == name) return i + 1 < args.size() ? args[i + 1] : std::string();
    if (args[i].rfind(name + "=", 0) == 0) return args[i].substr(name.size() + 1);
  }
  return std::nullopt;
}

#if EXMY_HAVE_CUDA
// args without option `name` and its value (`name V` or `name=V`).
Args without_option(const Args& args, const std::string& name) {
  Args rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name) {
      ++i;  // and its value
    } else if (args[i].rfind(name + "=", 0) != 0) {
      rest.push_back(args[i]);
    }
  }
  return rest;
}

// `--device cuda` hands every other argument to the device campaign (the hidden command
// "verify-cuda", cli/cmd_verify_gpu.cpp), which has options of its own (--formats, --modes,
// --out, ...).
int forward_to_device(const Args& args) {
  const auto it = commands().find("verify-cuda");
  if (it == commands().end()) {
    throw InputError("--device cuda: this build has no device verification campaign");
  }
  return it->second.run(without_option(args, "--device"));
}
#endif

// --device of the CPU campaigns: cpu; cuda reaches here only in a build without CUDA (a CUDA
// build forwards it before parsing).
void check_device(const std::string& v) {
  if (v == "cpu") return;
  if (v == "cuda") {
    throw InputError(
        "--device cuda: this build has no CUDA (configure with EXMY_CUDA=ON and nvcc)");
  }
  throw InputError("--device '" + v + "': expected cpu or cuda");
}

// exmy verify merge A.json B.json ... [--json]: the --json outputs of the N shards of one run
// (--shard 0/N ... N-1/N, each exactly once) added up; exit as the whole run would. Shards of
// another campaign (their identities differ: op, format, rounding, depth, backend hash, exmy
// version, shard count, ...) and missing shards are refused with exit 1, naming them
// (docs/SEMANTICS.md 13.4); a shard given twice or an unreadable file is exit 2.
// "0-3,7,9": shard indices as a Slurm --array list (ascending runs collapsed).
std::string array_list(const std::vector<std::uint64_t>& idx) {
  std::string out;
  for (std::size_t a = 0; a < idx.size();) {
    std::size_t b = a;
    while (b + 1 < idx.size() && idx[b + 1] == idx[b] + 1) ++b;
    out += (out.empty() ? "" : ",") + std::to_string(idx[a]);
    if (b > a) out += "-" + std::to_string(idx[b]);
    a = b + 1;
  }
  return out;
}

int run_merge(const Args& args) {
  bool json = false, list_missing = false;
  std::uint64_t of = 0;  // --of N: the shard count when no shard file can say it
  std::vector<std::string> files;
  Options opts("exmy verify merge SHARD.json... [--json] | --missing [--of N] [SHARD.json...]",
               "Adds up the --json outputs of the N shards of one run (--shard 0/N ... N-1/N, "
               "each exactly once) and exits as the whole run would. Shards of another campaign "
               "and missing shards are refused with exit 1, naming them (docs/SEMANTICS.md "
               "13.4); a shard given twice or an unreadable file is exit 2. With --missing it "
               "prints the shards still to run instead, as a Slurm --array list (0-3,7; nothing "
               "when the run is complete), for a rerun that covers only those: a file that "
               "cannot be read or holds an interrupted shard (exit 130) counts as missing.",
               "exmy verify merge sweep-0.json sweep-1.json --json\n  sbatch --array=$(exmy "
               "verify merge --missing --of 64 shards/*.json) examples/slurm/verify-array.sbatch");
  opts.positional(
          "SHARD.json", "the --json output of one shard (one or more)", Options::kRequired,
          [&](const std::string& f) { files.push_back(f); }, 0)
      .flag({"--json"}, "print the merged summary as one JSON object", [&] { json = true; })
      .flag({"--missing"}, "print the shards still to run (a Slurm --array list) and exit 0",
            [&] { list_missing = true; })
      .value({"--of"}, "N", "with --missing: the run's shard count (needed when no file is read)",
             "the count the shard files record",
             [&](const std::string& v) { of = parse_shard("0/" + v, "--of").count; });
  if (!opts.parse(Args(args.begin() + 1, args.end()))) return 0;
  if (of != 0 && !list_missing) throw InputError("--of: applies only with --missing");
  if (list_missing && json) throw InputError("--json: does not apply with --missing");
  if (files.empty() && !(list_missing && of != 0)) {
    throw InputError("merge: expected the --json outputs of the shards (" + opts.usage_hint() +
                     ")");
  }
  std::vector<std::vector<verify::Result>> parts;
  std::vector<int> seen;
  std::uint64_t count = of;
  bool have_first = false;
  verify::Identity first_id;
  std::string first_file;
  const auto id_text = [](const verify::Identity& id) {
    std::string t;
    for (const auto& [k, v] : id) t += (t.empty() ? "" : ", ") + k + " " + v;
    return t.empty() ? std::string("no identity (written by an older exmy)") : t;
  };
  if (count != 0) seen.assign(count, 0);
  for (std::size_t fi = 0; fi < files.size(); ++fi) {
    const std::string& f = files[fi];
    Shard sh;
    verify::Identity id;
    std::vector<verify::Result> part;
    try {
      part = verify::results_from_json(
          io::read_small_file(f, std::size_t{256} << 20, "the --json output of exmy verify"), f, sh,
          &id);
    } catch (const InputError& e) {
      if (!list_missing) throw;
      // A shard killed mid-write, or a file that is not one: its shard is run again.
      std::fprintf(stderr, "exmy verify merge: '%s' not read (%s): counted as missing\n", f.c_str(),
                   e.what());
      continue;
    }
    if (!have_first) {
      have_first = true;
      first_id = id;
      first_file = f;
      if (count == 0) {
        count = sh.count;
        seen.assign(count, 0);
      }
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
          why = k + " '" + other + "' where '" + first_file + "' has '" + v + "'";
          break;
        }
      }
      if (why.empty() && sh.count != count && of != 0) {
        why = "shard " + sh.text() + " is one of " + std::to_string(sh.count) + ", --of says " +
              std::to_string(count);
      }
      if (why.empty() && sh.count != count) {
        why = "shard " + sh.text() + " is one of " + std::to_string(sh.count) + ", '" + first_file +
              "' one of " + std::to_string(count);
      }
      if (why.empty()) why = "identity {" + id_text(id) + "} vs {" + id_text(first_id) + "}";
      std::fprintf(stderr,
                   "exmy verify merge: '%s' is a shard of another campaign: %s; nothing merged\n",
                   f.c_str(), why.c_str());
      return 1;
    }
    if (list_missing) {
      // Listing what is left: an interrupted shard is run again; a duplicate does no harm.
      if (!verify::any_interrupted(part)) seen[sh.index] = 1;
      continue;
    }
    if (seen[sh.index]++) throw InputError("'" + f + "': shard " + sh.text() + " given twice");
    parts.push_back(std::move(part));
  }
  if (list_missing) {
    if (count == 0) throw InputError("--missing: no shard file could be read: give --of N");
    std::vector<std::uint64_t> left;
    for (std::uint64_t i = 0; i < count; ++i) {
      if (!seen[i]) left.push_back(i);
    }
    const std::string list = array_list(left);
    if (!list.empty()) std::printf("%s\n", list.c_str());
    return 0;  // main checks that stdout was written
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
  if (option_text(args, "--backend")) return commands().at("verify-backend").run(args);
#if EXMY_HAVE_CUDA
  if (option_text(args, "--device") == "cuda") return forward_to_device(args);
#endif
  std::string campaign = "all";
  verify::Options opts;
  bool json = false;
  std::string campaigns = "all";
  for (const std::string& c : verify::campaign_names()) campaigns += ", " + c;
  Options table(
      "exmy verify [--campaign NAME] [--op NAME[,NAME...]] [--threads N] [--depth full|ci] "
      "[--shard i/N] [--json] [--quiet] [--device cpu|cuda]",
      "The native engine (and the host fast path) against the MPFR oracle. Exit 0 all agree, 1 "
      "any mismatch, 130 interrupted (Ctrl-C: the chunks in flight finish and what was checked "
      "is printed), 2 bad arguments. Also: exmy verify merge SHARD.json... (merge --help); exmy "
      "verify --backend LIB.so ... (a backend plugin; --backend x --help); exmy verify --device "
      "cuda ... (the GPU campaign, with options of its own).",
      "exmy verify --campaign fp16 --depth ci --quiet");
  table
      .value({"--campaign"}, "NAME", "one of " + campaigns + " (all: every one but steps)",
             campaign, [&](const std::string& v) { campaign = v; })
      .value({"--op"}, "NAME[,NAME...]", "steps campaign: only these ops", "every op",
             [&](const std::string& v) { opts.op = v; })
      .value({"--threads"}, "N", "worker threads (1 to 4096)",
             "OMP_NUM_THREADS if set, else every core",
             [&](const std::string& v) { opts.threads = parse_threads(v); })
      .value({"--depth"}, "full|ci", "full: every input of each campaign; ci: the CI subset",
             opts.depth == verify::Depth::full ? "full" : "ci",
             [&](const std::string& d) {
               if (d != "full" && d != "ci") {
                 throw InputError("--depth '" + d + "': expected full or ci");
               }
               opts.depth = d == "full" ? verify::Depth::full : verify::Depth::ci;
             })
      .value({"--shard"}, "i/N", "run slice i of N of every campaign (SEMANTICS 13.4; merge)",
             opts.shard.text() + " (the whole run)",
             [&](const std::string& v) { opts.shard = parse_shard(v); })
      .flag({"--json"}, "print the summary as one JSON object (with the identity merge reads)",
            [&] { json = true; })
      .flag({"--quiet"}, "no progress lines on stderr (the summary still printed)",
            [&] { opts.progress = false; })
      .value({"--device"}, "cpu|cuda",
             "cpu: these campaigns; cuda: the GPU cast campaign (its options: exmy verify "
             "--device cuda --help)",
             "cpu", check_device);
  if (!table.parse(args)) return 0;
  // An option that does not apply is refused, not ignored (issue 36: --op bogus ran every
  // campaign).
  if (!opts.op.empty() && campaign != "steps") {
    throw InputError("--op '" + opts.op +
                     "': selects ops of --campaign steps only (got --campaign " + campaign + ")");
  }
  verify::clear_stop();
  std::signal(SIGINT, verify_on_sigint);
  const auto results = verify::run_campaigns(campaign, opts);
  io::restore_sigint_cleanup();
  // What makes shard files one run (verify merge compares it).
  const verify::Identity identity = {
      {"op", "verify"},
      {"campaign", campaign},
      {"steps_ops", opts.op.empty() ? "all" : opts.op},
      {"depth", opts.depth == verify::Depth::ci ? "ci" : "full"},
      {"exmy", std::string(EXMY_VERSION) + " (" + exmy::build_git_sha() + ")"},
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
