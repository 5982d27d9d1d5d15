// exmy golden: golden corpora for other backends' CI (docs/SEMANTICS.md 13.7), in four
// sub-commands: generate (write a corpus, or one shard of it), merge (the per-shard manifests into
// manifest.json), check (compare a backend's outputs with the corpus) and run (write a backend
// plugin's outputs in check's layout). Each has its option table below (`exmy golden SUB --help`).
// check exits 0 when every result agrees, 1 on a mismatch or a case without results, 2 for bad
// input (a corrupt corpus, a malformed result file). run writes a backend plugin's outputs for
// the cast cases in check's layout (the plugin runs in a child process: a crash is reported).
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "cli/backend_host.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/common/shard.hpp"
#include "sim/golden/corpus.hpp"
#include "sim/io/files.hpp"
#include "sim/io/npy.hpp"
#include "sim/io/pending_paths.hpp"

namespace exmy::cli {
namespace {

namespace fs = std::filesystem;

// The arguments of each sub-command, as given.
struct GenerateArgs {
  golden::GenerateOptions o;
  bool json = false;
};
struct MergeArgs {
  std::string corpus;
  bool json = false;
};
struct CheckArgs {
  golden::CheckOptions o;
  bool json = false;
};
struct RunArgs {
  std::string library, corpus, out, suite = "cast";
  int timeout = 600;  // seconds the plugin may take to load and per case
  bool device = false;
  bool json = false;
};

// The option tables, one per sub-command; args[0] (the sub-command's name) is not theirs.
Options generate_options(GenerateArgs& g) {
  golden::GenerateOptions& o = g.o;
  Options opts("exmy golden generate --out DIR [OPTIONS]",
               "Writes the golden corpus (or one shard of it) into DIR (docs/SEMANTICS.md 13.7).",
               "exmy golden generate --out corpus");
  opts.value({"--out"}, "DIR", "the corpus directory (replaced only once the new one is complete)",
             Options::kRequired, [&](const std::string& v) { o.out = v; })
      .value({"--suite"}, "cast|quantize|step|all", "the cases to write", o.suite,
             [&](const std::string& v) { o.suite = v; })
      .value({"--seed"}, "S", "seed of the random inputs (recorded in the manifest)",
             std::to_string(o.seed),
             [&](const std::string& v) { o.seed = parse_uint(v, "--seed", ~std::uint64_t{0}); })
      .value({"--shard"}, "i/N", "write shard i of N (0 <= i < N); merge the shards' manifests",
             "0/1 (everything)", [&](const std::string& v) { o.shard = parse_shard(v); })
      .flag({"--quiet"}, "no progress on stderr", [&] { o.progress = false; })
      .flag({"--json"}, "print the summary as JSON", [&] { g.json = true; });
  return opts;
}

Options merge_options(MergeArgs& m) {
  Options opts("exmy golden merge DIR",
               "Merges the per-shard manifests of DIR (exmy golden generate --shard) into "
               "manifest.json.",
               "exmy golden merge corpus");
  opts.positional("DIR", "the corpus directory the shards were written into", Options::kRequired,
                  [&](const std::string& v) { m.corpus = v; })
      .flag({"--json"}, "print the summary as JSON", [&] { m.json = true; });
  return opts;
}

Options check_options(CheckArgs& c) {
  Options opts("exmy golden check DIR --results RDIR [OPTIONS]",
               "Compares your backend's outputs (RDIR, laid out like the corpus) with the corpus "
               "DIR: exit 0 when every result agrees, 1 on a mismatch or a case without results.",
               "exmy golden check corpus --results results --suite cast --allow-missing");
  opts.positional("DIR", "the corpus directory", Options::kRequired,
                  [&](const std::string& v) { c.o.corpus = v; })
      .value({"--results"}, "RDIR", "the directory of your outputs, laid out like the corpus",
             Options::kRequired, [&](const std::string& v) { c.o.results = v; })
      .value({"--suite"}, "cast|quantize|step|all", "check only the cases of one suite", c.o.suite,
             [&](const std::string& v) { c.o.suite = v; })
      .flag({"--strict-nan"}, "fp32 NaNs compare by bits, not as a class",
            [&] { c.o.strict_nan = true; })
      .flag({"--allow-missing"}, "cases without results are listed, not failed",
            [&] { c.o.allow_missing = true; })
      .value(
          {"--max-reported"}, "N", "first mismatches printed per case (0..1000)",
          std::to_string(c.o.max_reported),
          [&](const std::string& v) { c.o.max_reported = parse_uint(v, "--max-reported", 1000); })
      .flag({"--json"}, "print JSON instead of the table", [&] { c.json = true; });
  return opts;
}

Options run_options(RunArgs& r) {
  Options opts("exmy golden run --backend LIB.so DIR --out RDIR [OPTIONS]",
               "Runs the cast cases of the corpus DIR through a backend plugin (in a child "
               "process: a crash is reported) and writes its outputs in check's layout.",
               "exmy golden run --backend ./libmine.so corpus --out results");
  opts.positional("DIR", "the corpus directory", Options::kRequired,
                  [&](const std::string& v) { r.corpus = v; })
      .value({"--backend"}, "LIB.so", "the plugin library (backend ABI 1)", Options::kRequired,
             [&](const std::string& v) { r.library = v; })
      .value({"--out"}, "RDIR", "the results directory", Options::kRequired,
             [&](const std::string& v) { r.out = v; })
      .value({"--suite"}, "cast|quantize|step|all", "the cases to run (ABI 1 runs casts)", r.suite,
             [&](const std::string& v) { r.suite = v; })
      .value({"--entry"}, "host|device",
             "the plugin's entry point (as verify --backend and fuzz): device calls "
             "exmy_backend_cast_f32_device on device copies of the buffers",
             "host",
             [&](const std::string& v) {
               if (v != "host" && v != "device") {
                 throw InputError("--entry '" + v + "': expected host or device");
               }
               r.device = v == "device";
             })
      .flag({"--device"}, "the older spelling of --entry device", [&] { r.device = true; })
      .value({"--timeout"}, "SECONDS",
             "the most the plugin may take to load, and per case (1 to 86400; as verify "
             "--backend)",
             std::to_string(r.timeout),
             [&](const std::string& v) {
               r.timeout = static_cast<int>(parse_uint(v, "--timeout", 86400));
               if (r.timeout < 1) throw InputError("--timeout '0': expected 1 to 86400 seconds");
             })
      .flag({"--json"}, "print the summary as JSON", [&] { r.json = true; });
  return opts;
}

// The operand of a sub-command that has one (Options does not enforce positional operands).
void require_operand(const std::string& value, const Options& opts) {
  if (value.empty()) throw InputError("expected the corpus directory DIR; " + opts.usage_hint());
}

// `exmy golden --help`: the sub-commands' usage lines, from their tables.
int overview() {
  GenerateArgs g;
  MergeArgs m;
  CheckArgs c;
  RunArgs r;
  std::printf("usage: exmy golden generate|merge|check|run ...\n\n");
  for (const Options& o :
       {generate_options(g), merge_options(m), check_options(c), run_options(r)}) {
    std::printf("  %s\n", o.usage().c_str());
  }
  std::printf("\nexmy golden SUB --help lists the options of SUB with their defaults.\n");
  return 0;
}

// The summary of generate and merge (a corpus written); seed only for generate.
void print_corpus(const golden::GenerateResult& r, const char* what, const std::uint64_t* seed,
                  bool json) {
  if (json) {
    std::printf("{\"cases\":%zu,\"files\":%zu,", r.cases, r.files);
    if (seed) std::printf("\"seed\":%llu,", static_cast<unsigned long long>(*seed));
    std::printf("\"corpus_sha256\":%s,\"manifest\":%s}\n", json_string(r.corpus_sha256).c_str(),
                json_string(r.manifest_path).c_str());
    return;
  }
  std::printf("%s: %zu cases, %zu files, ", what, r.cases, r.files);
  if (seed) std::printf("seed %llu, ", static_cast<unsigned long long>(*seed));
  std::printf("corpus_sha256 %s\n  %s\n", r.corpus_sha256.c_str(), r.manifest_path.c_str());
}

int generate(const Args& args) {
  GenerateArgs g;
  const Options opts = generate_options(g);
  if (!opts.parse(Args(args.begin() + 1, args.end()))) return 0;
  const golden::GenerateResult r = golden::generate(g.o);
  print_corpus(r, "golden corpus", &g.o.seed, g.json);
  return 0;
}

int merge(const Args& args) {
  MergeArgs m;
  const Options opts = merge_options(m);
  if (!opts.parse(Args(args.begin() + 1, args.end()))) return 0;
  require_operand(m.corpus, opts);
  const golden::GenerateResult r = golden::merge(m.corpus);
  print_corpus(r, "golden corpus merged", nullptr, m.json);
  return 0;
}

int check(const Args& args) {
  CheckArgs a;
  const Options opts = check_options(a);
  if (!opts.parse(Args(args.begin() + 1, args.end()))) return 0;
  require_operand(a.o.corpus, opts);
  const golden::CheckOptions& o = a.o;
  const bool json = a.json;
  if (!fs::is_directory(o.results)) {
    throw InputError("--results '" + o.results +
                     "': expected a directory laid out like the corpus");
  }
  const golden::CheckReport r = golden::check(o);
  if (json) {
    std::printf(
        "{\"ok\": %s, \"checks\": %llu, \"mismatches\": %llu, \"missing\": %llu, \"cases\": [",
        r.mismatches == 0 && (r.missing == 0 || o.allow_missing) ? "true" : "false",
        static_cast<unsigned long long>(r.checks), static_cast<unsigned long long>(r.mismatches),
        static_cast<unsigned long long>(r.missing));
    for (std::size_t k = 0; k < r.cases.size(); ++k) {
      const auto& c = r.cases[k];
      std::printf("%s{\"id\": %s, \"checks\": %llu, \"mismatches\": %llu, \"missing\": %s}",
                  k ? ", " : "", json_string(c.id).c_str(),
                  static_cast<unsigned long long>(c.checks),
                  static_cast<unsigned long long>(c.mismatches), c.missing ? "true" : "false");
    }
    std::printf("]}\n");
  } else {
    // Mismatching cases first (what a user must read), then the clean ones; the cases without
    // any results are one summary line (a corpus checked against a backend that covers a few
    // formats would otherwise bury the verdict under hundreds of "no results" lines).
    std::vector<const golden::CaseReport*> none;
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto& c : r.cases) {
        if (c.missing && c.checks == 0) {
          if (pass == 0) none.push_back(&c);
          continue;
        }
        if ((pass == 0) != (c.mismatches > 0)) continue;
        std::printf("%-48s %10llu checks %8llu mismatches%s\n", c.id.c_str(),
                    static_cast<unsigned long long>(c.checks),
                    static_cast<unsigned long long>(c.mismatches),
                    c.missing ? " (some outputs missing)" : "");
        for (const auto& line : c.first) std::printf("    %s\n", line.c_str());
      }
    }
    if (!none.empty()) {
      std::string names;
      for (std::size_t k = 0; k < none.size() && k < 3; ++k) names += (k ? ", " : "") + none[k]->id;
      std::printf("%zu cases without results (%s%s; --json lists each)%s\n", none.size(),
                  names.c_str(), none.size() > 3 ? ", ..." : "",
                  o.allow_missing ? ": allowed by --allow-missing" : "");
    }
    std::printf("%s: %zu cases, %llu checks, %llu mismatches, %llu cases without results\n",
                r.mismatches == 0 && (r.missing == 0 || o.allow_missing) ? "PASS" : "FAIL",
                r.cases.size(), static_cast<unsigned long long>(r.checks),
                static_cast<unsigned long long>(r.mismatches),
                static_cast<unsigned long long>(r.missing));
  }
  const bool ok = r.mismatches == 0 && (r.missing == 0 || o.allow_missing);
  return ok ? 0 : 1;
}

std::atomic<bool> g_golden_stop{false};
extern "C" void golden_on_sigint(int) {
  g_golden_stop.store(true);
  io::restore_sigint_cleanup();
}
bool golden_stopped() {
  return g_golden_stop.load();
}

// The cast cases of a corpus through a backend plugin, written in check's layout.
int run(const Args& args) {
  RunArgs a;
  const Options opts = run_options(a);
  if (!opts.parse(Args(args.begin() + 1, args.end()))) return 0;
  require_operand(a.corpus, opts);
  const std::string &library = a.library, &corpus = a.corpus, &out = a.out, &suite = a.suite;
  const bool device = a.device;
  std::size_t ran = 0, unsupported = 0, crashed = 0, skipped = 0;
  // Ctrl-C ends the plugin (its whole process group) and the run, with the summary of the
  // cases written so far (exit 130); a second Ctrl-C goes to the signal cleanup.
  g_golden_stop.store(false);
  std::signal(SIGINT, golden_on_sigint);
  struct Restore {
    ~Restore() { io::restore_sigint_cleanup(); }
  } restore;
  bool interrupted = false;
  for (const golden::CaseInfo& c : golden::list_cases(corpus, suite)) {
    if (golden_stopped()) {
      interrupted = true;
      break;
    }
    if (c.op != "cast") {
      ++skipped;  // ABI 1 plugins implement casts; other entry points are reserved
      continue;
    }
    const io::NpyArray x = io::read_npy((fs::path(c.dir) / "x.npy").string());
    const std::vector<float> xs = io::as_f32(x, c.dir + "/x.npy");
    const Rounding r = parse_backend_rounding(c.round + "+" + c.overflow);
    std::optional<BackendProcess> loaded;
    try {
      loaded.emplace(library, c.format, backend_rounding_text(r), xs.size(), device, a.timeout,
                     golden_stopped);
    } catch (const BackendInterrupted&) {
      interrupted = true;
      break;
    }
    BackendProcess& backend = *loaded;
    const BackendCall call = backend.call(xs.data(), xs.size(), c.seed, nullptr, golden_stopped);
    if (golden_stopped()) {
      interrupted = true;
      break;
    }
    if (call.status == BackendCall::Status::crashed ||
        call.status == BackendCall::Status::input_written ||
        call.status == BackendCall::Status::out_of_bounds) {
      std::fprintf(stderr, "%s: the backend %s (%s)\n", c.id.c_str(),
                   call.status == BackendCall::Status::crashed ? "crashed" : "misbehaved",
                   call.crash.c_str());
      ++crashed;
      continue;
    }
    if (call.status == BackendCall::Status::returned_nonzero) {
      ++unsupported;
      continue;
    }
    const fs::path dir = fs::path(out) / c.id;
    io::ensure_output_directory(dir.string(), "--out");
    if (backend.code_bytes() == 1) {
      std::vector<std::uint8_t> codes(backend.codes(), backend.codes() + xs.size());
      io::write_npy((dir / "codes.npy").string(), io::make_npy(codes));
    } else {
      std::vector<std::uint16_t> codes(xs.size());
      std::memcpy(codes.data(), backend.codes(), xs.size() * 2);
      io::write_npy((dir / "codes.npy").string(), io::make_npy(codes));
    }
    ++ran;
  }
  if (a.json) {
    std::printf(
        "{\"written\":%zu,\"out\":%s,\"unsupported\":%zu,\"crashed\":%zu,\"skipped\":%zu}\n", ran,
        json_string(out).c_str(), unsupported, crashed, skipped);
  } else {
    std::printf(
        "golden run: %zu cast cases written to %s, %zu unsupported by the backend, %zu "
        "crashed, %zu other cases skipped (ABI 1 runs casts)\n",
        ran, out.c_str(), unsupported, crashed, skipped);
  }
  if (interrupted) {
    std::fprintf(stderr,
                 "golden run: INTERRUPTED (Ctrl-C): the summary counts the cases before it\n");
    return 130;
  }
  return crashed == 0 ? 0 : 1;
}

int run_golden(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") return overview();
  if (args[0] == "generate") return generate(args);
  if (args[0] == "merge") return merge(args);
  if (args[0] == "check") return check(args);
  if (args[0] == "run") return run(args);
  throw InputError("'" + args[0] +
                   "': expected generate, merge, check or run (exmy golden --help lists them)");
}

}  // namespace

EXMY_COMMAND("golden", run_golden,
             "golden corpora for your CI: generate, check your outputs, run a backend plugin");

}  // namespace exmy::cli
